#include "core/lifetime.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/loop.h"

namespace rlock {
namespace {

TEST(Lifetime, TokenIsTrueWhileTheOwnerLives) {
  Lifetime life;
  Alive alive = life.token();
  EXPECT_TRUE(life.alive());
  EXPECT_TRUE(alive);
}

TEST(Lifetime, TokenOutlivesItsOwnerAndTurnsFalse) {
  Alive alive;
  {
    Lifetime life;
    alive = life.token();
    ASSERT_TRUE(alive);
  }
  EXPECT_FALSE(alive);  // the flag itself is still there: no dangling read
}

TEST(Lifetime, EndTurnsEveryTokenFalseBeforeTheDestructor) {
  Lifetime life;
  Alive a = life.token(), b = life.token();
  life.end();
  EXPECT_FALSE(life.alive());
  EXPECT_FALSE(a);
  EXPECT_FALSE(b);
  EXPECT_FALSE(life.token());  // a token taken after the end is not alive either
}

TEST(Lifetime, DefaultTokenIsNeverAlive) {
  EXPECT_FALSE(Alive());
}

TEST(Lifetime, GuardRunsTheCallbackWithItsArgumentsWhileAlive) {
  Lifetime life;
  std::string got;
  std::function<void(const std::string&, int)> cb =
      life.guard([&got](const std::string& s, int n) { got = s + std::to_string(n); });
  cb("x", 3);
  EXPECT_EQ(got, "x3");
}

TEST(Lifetime, GuardSkipsTheCallbackOnceTheOwnerDied) {
  int calls = 0;
  std::function<void()> cb;
  {
    Lifetime life;
    cb = life.guard([&calls] { ++calls; });
    cb();
  }
  cb();
  EXPECT_EQ(calls, 1);
}

TEST(Lifetime, GuardKeepsMoveOnlyStateAndMutates) {
  Lifetime life;
  int total = 0;
  auto cb = life.guard([&total, n = std::make_unique<int>(0)]() mutable { total = ++*n; });
  cb();
  cb();
  EXPECT_EQ(total, 2);
}

// What the owners do: a timer set by an object that is destroyed before the
// timer fires runs nothing of it.
class Ticker {
 public:
  Ticker(Loop& loop, int& ticks) : loop_(loop), ticks_(ticks) {}
  ~Ticker() { life_.end(); }
  void later() {
    loop_.after(Millis(0), life_.guard([this] { ++ticks_; }));
  }

 private:
  Loop& loop_;
  int& ticks_;
  Lifetime life_;
};

TEST(Lifetime, ALoopCallbackOfADestroyedOwnerDoesNothing) {
  Loop loop;
  int ticks = 0;
  auto kept = std::make_unique<Ticker>(loop, ticks);
  auto gone = std::make_unique<Ticker>(loop, ticks);
  kept->later();
  gone->later();
  gone.reset();
  bool done = false;
  loop.after(Millis(1), [&done] { done = true; });
  loop.run_until([&done] { return done; });
  EXPECT_EQ(ticks, 1);
}

}  // namespace
}  // namespace rlock
