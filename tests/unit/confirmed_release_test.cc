// The release's one window under Sentinel (lock/single.h, confirmed_release;
// docs/PROTOCOL.md "Releasing"): what is asked and sent near its deadline, and
// what the warning says, with a client whose sentinels the test answers for.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lock/single.h"

namespace rlock {
namespace {

// The sentinels name "new"; the first release went to "old". Each answer
// comes `delay` after the question (never: a negative delay).
class FakeSentinels : public Client {
 public:
  Millis confirm_delay{0};
  int confirms = 0;
  void command(Args, ReplyCallback, CallOptions) override { ADD_FAILURE() << "no command"; }
  void open_subscriber(const std::string&, Done<std::unique_ptr<Connection>>) override {}
  void masters(Done<std::vector<std::string>>) override {}
  void confirm_master(const std::string&, Done<bool> done) override {
    ++confirms;
    loop_.after(confirm_delay, [done] { done(Outcome<bool>{std::nullopt, false}); });
  }
  void named_master(Done<std::string> done) override {
    done(Outcome<std::string>{std::nullopt, "new"});
  }
  Millis command_timeout() const override { return Millis(1000); }
  std::string name() const override { return "fake"; }
  Loop& loop() override { return loop_; }

 private:
  Loop loop_;
};

struct Sends {
  std::vector<Millis> delays;  // per send; negative: never answered
  std::vector<Done<ReleaseReply>> pending;
  int count = 0;
};

Outcome<ReleaseReply> released_on(const std::string& node) {
  Outcome<ReleaseReply> o;
  o.value.state = ReleaseReply::State::Released;
  o.value.node = node;
  return o;
}

Outcome<ReleaseReply> release(FakeSentinels& c, Sends& s, Millis window) {
  std::optional<Outcome<ReleaseReply>> out;
  confirmed_release(
      c,
      [&c, &s](Done<ReleaseReply> d) {
        int i = s.count++;
        Millis delay = i < static_cast<int>(s.delays.size()) ? s.delays[i] : Millis(0);
        if (delay.count() < 0) return s.pending.push_back(std::move(d));
        c.loop().after(delay, [d, i] { d(released_on(i == 0 ? "old" : "new")); });
      },
      later(Clock::now(), window), [&out](Outcome<ReleaseReply> o) { out = std::move(o); });
  c.loop().run_until([&] { return out.has_value(); });
  return *out;
}

TEST(ConfirmedRelease, SecondSendCutByTheDeadlineSaysTheSentinelsNamedAnother) {
  FakeSentinels c;
  Sends s{.delays = {Millis(0), Millis(-1)}};
  auto o = release(c, s, Millis(300));
  EXPECT_EQ(s.count, 2);
  EXPECT_NE(o.value.unconfirmed.find("which the sentinels no longer name as the master, and "
                                     "the master they name did not answer"),
            std::string::npos)
      << o.value.unconfirmed;
}

TEST(ConfirmedRelease, NoSecondSendWithASliverOfTheWindowLeft) {
  FakeSentinels c;
  c.confirm_delay = Millis(250);  // 50 ms of 300 left: under kLeastToReleaseAgain
  Sends s;
  auto o = release(c, s, Millis(300));
  EXPECT_EQ(s.count, 1);
  EXPECT_NE(o.value.unconfirmed.find("too little of the release's window"), std::string::npos)
      << o.value.unconfirmed;
}

TEST(ConfirmedRelease, AReleaseAnsweredPastTheDeadlineAsksNothingMore) {
  FakeSentinels c;
  Sends s{.delays = {Millis(-1)}};
  std::optional<Outcome<ReleaseReply>> out;
  confirmed_release(
      c, [&s](Done<ReleaseReply> d) { s.count++, s.pending.push_back(std::move(d)); },
      later(Clock::now(), Millis(50)), [&out](Outcome<ReleaseReply> o) { out = std::move(o); });
  // The deadline passes with the release still out; then it answers (in the
  // moment between the deadline and the release's own timeout).
  bool past = false;
  c.loop().after(Millis(150), [&] { past = true; });
  c.loop().run_until([&] { return past; });
  ASSERT_FALSE(out.has_value());
  s.pending.front()(released_on("old"));
  c.loop().run_until([&] { return out.has_value(); });
  EXPECT_EQ(c.confirms, 0);
  EXPECT_EQ(s.count, 1);
  EXPECT_NE(out->value.unconfirmed.find("no sentinel confirmed"), std::string::npos)
      << out->value.unconfirmed;
}

}  // namespace
}  // namespace rlock
