// The lease clock (src/core/loop.h): on Linux it reads CLOCK_BOOTTIME, which goes on
// while the machine is suspended, and no poll() of the loop waits longer than
// kLongestPoll, since poll's own timeout stops during a suspend: a timer that fell
// due while the machine slept is found within that much of the resume.
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>

#include "core/loop.h"

namespace rlock {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

#ifdef CLOCK_BOOTTIME
TEST(LeaseClock, ReadsTheClockThatCountsASuspend) {
  timespec before{}, after{};
  ASSERT_EQ(clock_gettime(CLOCK_BOOTTIME, &before), 0);
  auto now = Clock::now().time_since_epoch();
  ASSERT_EQ(clock_gettime(CLOCK_BOOTTIME, &after), 0);
  EXPECT_GE(now, seconds(before.tv_sec) + nanoseconds(before.tv_nsec));
  EXPECT_LE(now, seconds(after.tv_sec) + nanoseconds(after.tv_nsec));
}
#endif

TEST(LeaseClock, NoWaitOfTheLoopIsLongerThanItsLongestPoll) {
  Loop loop;
  bool fired = false;
  loop.after(milliseconds(60'000), [&fired] { fired = true; });
  auto t0 = Clock::now();
  loop.run_once(milliseconds(120'000));  // nothing else to wait for
  auto took = duration_cast<milliseconds>(Clock::now() - t0);
  EXPECT_FALSE(fired);
  EXPECT_GE(took, kLongestPoll - milliseconds(50));
  // Generous: a loaded machine or a sanitizer build may wake late, never 58s late.
  EXPECT_LT(took, kLongestPoll + milliseconds(20'000));
}

}  // namespace
}  // namespace rlock
