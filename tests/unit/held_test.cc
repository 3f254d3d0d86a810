// RLOCK_HELD's line format (hostile input is skipped, never trusted) and the process
// facts nesting and --while-pid rely on (a reused PID is told apart by its start time).
#include "hold/held.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "hold/keeper.h"
#include "proc/procinfo.h"

namespace rlock {
namespace {

TEST(Held, RoundTrip) {
  std::vector<HeldEntry> in{{"tok1", "a key", "lock:", "redis://h:1/0"},
                            {"tok2", "b", "p:", "redis://x:2/0 redis://y:3/0", 4242, 77, true}};
  auto out = parse_held(format_held(in).c_str());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].key, "a key");
  EXPECT_EQ(out[1].where, "redis://x:2/0 redis://y:3/0");
  EXPECT_EQ(out[1].keeper, 4242);
  EXPECT_EQ(out[1].keeper_start, 77u);
  EXPECT_TRUE(out[1].nested);
  EXPECT_FALSE(out[0].nested);
}

TEST(Held, MalformedLinesAreSkipped) {
  auto out = parse_held(
      "only-two\tfields\n"
      "t\tk\tp\tw\tkeeper=abc\n"
      "t\tk\tp\tw\tkeeper=12\n"
      "t\tk\tp\tw\tkeeper=12:x\n"
      "t\tk\tp\tw\tkeeper=12:5\tdeeper\n"
      "t\tk\tp\tw\tnot-a-keeper=5\n"
      "\tk\tp\tw\n"
      "t\t\tp\tw\n"
      "t\tk\tp\tw\x01\n"
      "good\tk\tp\tw\n"
      "pid1\tk\tp\tw\tkeeper=1:5");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].token, "good");
  EXPECT_EQ(out[1].keeper, 1);  // a container's entrypoint may be pid 1
}

TEST(Held, TooLongIsIgnoredWhole) {
  std::string big(kMaxHeldBytes + 10, 'x');
  EXPECT_TRUE(parse_held(big.c_str()).empty());
  EXPECT_TRUE(parse_held(nullptr).empty());
}

TEST(Held, HeldWithReplacesTheSameLock) {
  std::vector<HeldEntry> in{{"old", "k", "lock:", "w"}, {"x", "j", "lock:", "w"}};
  auto out = parse_held(held_with(in, {"new", "k", "lock:", "w"}).c_str());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].key, "j");
  EXPECT_EQ(out[1].token, "new");
}

TEST(ProcInfo, SelfAndAncestors) {
  if (!kProcInfoKnown) GTEST_SKIP() << "no process information on this system";
  auto me = proc_info(getpid());
  ASSERT_TRUE(me.has_value());
  EXPECT_EQ(me->ppid, getppid());
  EXPECT_TRUE(is_ancestor(getppid(), getpid()));
  EXPECT_TRUE(is_ancestor(getpid(), getpid()));
  EXPECT_FALSE(is_ancestor(getpid(), getppid()));
  EXPECT_FALSE(proc_info(0).has_value());
}

TEST(ProcInfo, ReusedPidIsNotTheWatchedProcess) {
  if (!kProcInfoKnown) GTEST_SKIP() << "no process information on this system";
  auto me = proc_info(getpid());
  ASSERT_TRUE(me.has_value());
  EXPECT_TRUE(watched_alive(getpid(), me->start));
  // Another start time under the same PID: a process that reused it.
  EXPECT_FALSE(watched_alive(getpid(), me->start + 1));
}

TEST(ProcInfo, AnEndedProcessIsNotAlive) {
  if (!kProcInfoKnown) GTEST_SKIP() << "no process information on this system";
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  int st = 0;
  waitpid(child, &st, 0);
  EXPECT_FALSE(watched_alive(child, 0));
}

}  // namespace
}  // namespace rlock
