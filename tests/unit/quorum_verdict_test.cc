// The quorum's verdicts over the masters' replies (lock/quorum_verdict.h): the
// cases the bats suites reach only with faults (a master down, slow, restarted
// empty, a break on its way), checked without servers.
#include "lock/quorum_verdict.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace rlock {
namespace {

const std::vector<std::string> kNames{"m0", "m1", "m2", "m3", "m4", "m5", "m6"};

Outcome<AcquireReply> granted(int64_t fence, int64_t now_ms = 0) {
  Outcome<AcquireReply> o;
  o.value.state = AcquireReply::State::Acquired;
  o.value.fence = fence;
  o.value.now_ms = now_ms;
  return o;
}

Outcome<AcquireReply> taken(const std::string& by = "", int64_t done_ms = 0) {
  Outcome<AcquireReply> o;
  o.value.state = AcquireReply::State::Taken;
  if (!by.empty()) {
    Holder h;
    h.token = by;
    h.done_ms = done_ms;
    o.value.holders = {h};
    o.value.holder_count = 1;
  }
  return o;
}

template <class T>
Outcome<T> failed(ErrorKind kind = ErrorKind::Unavailable, const std::string& why = "down",
                  Cause cause = Cause::Other) {
  return Outcome<T>{Error(kind, why, -1, cause), T{}};
}

Outcome<ExtendReply> renewed(Millis ttl, int64_t fence = 1) {
  Outcome<ExtendReply> o;
  o.value.held = true;
  o.value.ttl = ttl;
  o.value.fence = fence;
  return o;
}

// Not held there; `tombstone`: "released" or "broken" (a release with the
// token or a break removed it), else none (restarted empty, expired).
Outcome<ExtendReply> not_held(const std::string& tombstone = "") {
  Outcome<ExtendReply> o;
  o.value.released = tombstone == "released";
  o.value.broken = tombstone == "broken";
  return o;
}

// A commit's reply: the counter found before it, and whether the token holds
// and owns the fence there (fence.lua).
Outcome<FenceReply> fenced(int64_t fence, int64_t found, bool owns, bool held = true) {
  Outcome<FenceReply> o;
  o.value.counter = std::max(fence, found);
  o.value.found = found;
  o.value.held = held;
  o.value.owns = held && owns;
  return o;
}

using AV = AcquireVerdict::Kind;
using EV = ExtendVerdict::Kind;
using CV = CommitVerdict::Kind;

// ---- the majority ----

TEST(QuorumVerdict, MajorityOfEvenAndOddFleets) {
  EXPECT_EQ(majority(2), 2u);
  EXPECT_EQ(majority(3), 2u);
  EXPECT_EQ(majority(4), 3u);  // half is a tie, no majority
  EXPECT_EQ(majority(5), 3u);
}

// ---- acquiring ----

TEST(QuorumVerdict, AMajorityGrantsWithTheLargestFenceOrClock) {
  auto v = acquire_verdict({granted(7), taken("other"), granted(9)}, 3, true, kNames);
  EXPECT_EQ(v.kind, AV::Granted);
  EXPECT_EQ(v.fence, 9);
  EXPECT_FALSE(v.error);
  // A granting master's clock above every fence is the fence.
  v = acquire_verdict({granted(7, 1700000000000), granted(9, 5)}, 2, true, kNames);
  EXPECT_EQ(v.kind, AV::Granted);
  EXPECT_EQ(v.fence, 1700000000000);
}

TEST(QuorumVerdict, AMinorityOfGrantsIsTakenByTheHolderMostMastersName) {
  auto v = acquire_verdict({granted(3), taken("b"), taken("a"), taken("b"), failed<AcquireReply>()},
                           5, true, kNames);
  EXPECT_EQ(v.kind, AV::Refused);
  EXPECT_EQ(v.reply.state, AcquireReply::State::Taken);
  ASSERT_EQ(v.reply.holders.size(), 1u);
  EXPECT_EQ(v.reply.holders.front().token, "b");
  EXPECT_EQ(v.reply.holder_count, 1);
}

TEST(QuorumVerdict, AHolderWithoutExpiryOnAMinorityRunsOutWithTheMajority) {
  auto left = [](long ms) {
    Outcome<AcquireReply> o = taken("a");
    o.value.holders.front().ttl_left = Millis(ms);
    return o;
  };
  // The first master has no expiry (a SET without PX, PTTL -1), the others a minute: a
  // majority holds it for a minute, then no majority does.
  auto v = acquire_verdict({left(-1), left(60000), left(60000)}, 3, true, kNames);
  ASSERT_EQ(v.reply.holders.size(), 1u);
  EXPECT_EQ(v.reply.holders.front().ttl_left, Millis(60000));
  // A majority without expiry: none.
  v = acquire_verdict({left(5000), left(-1), left(-1)}, 3, true, kNames);
  ASSERT_EQ(v.reply.holders.size(), 1u);
  EXPECT_EQ(v.reply.holders.front().ttl_left, Millis(-1));
}

TEST(QuorumVerdict, DoneOnlyWhenAMajorityKeepsItAsDone) {
  auto v = acquire_verdict({taken("a", 100), taken("a", 100), granted(1)}, 3, true, kNames);
  EXPECT_EQ(v.kind, AV::Refused);
  EXPECT_EQ(v.reply.state, AcquireReply::State::Done);
  v = acquire_verdict({taken("a", 100), taken("b"), taken("c")}, 3, true, kNames);
  EXPECT_EQ(v.reply.state, AcquireReply::State::Taken);
}

TEST(QuorumVerdict, TooFewAnswersIsUnavailableNamingTheSilentMasters) {
  auto v = acquire_verdict(
      {granted(1), failed<AcquireReply>(ErrorKind::Unavailable, "no answer in time"),
       failed<AcquireReply>(ErrorKind::Unavailable, "connection refused")},
      3, true, kNames);
  EXPECT_EQ(v.kind, AV::TooFew);
  ASSERT_TRUE(v.error);
  EXPECT_EQ(v.error->kind(), ErrorKind::Unavailable);
  EXPECT_EQ(std::string(v.error->what()),
            "cannot acquire: only 1 of 3 masters answered (a majority is 2); failed: m1, m2 "
            "(connection refused)");
}

TEST(QuorumVerdict, AllErrorsIsTooFewOrTheRefusalEveryoneGave) {
  auto v = acquire_verdict({failed<AcquireReply>(), failed<AcquireReply>(), failed<AcquireReply>()},
                           3, true, kNames);
  EXPECT_EQ(v.kind, AV::TooFew);
  EXPECT_EQ(v.error->kind(), ErrorKind::Unavailable);
  // Refused by enough masters that no majority is left: 77, what to fix.
  v = acquire_verdict(
      {failed<AcquireReply>(ErrorKind::Permission, "WRONGPASS"),
       failed<AcquireReply>(ErrorKind::Permission, "WRONGPASS"), failed<AcquireReply>()},
      3, true, kNames);
  EXPECT_EQ(v.kind, AV::TooFew);
  EXPECT_EQ(v.error->kind(), ErrorKind::Permission);
  // One refusal among outages leaves a majority to the outage: 69.
  v = acquire_verdict({failed<AcquireReply>(ErrorKind::Permission, "WRONGPASS"),
                       failed<AcquireReply>(), failed<AcquireReply>()},
                      3, true, kNames);
  EXPECT_EQ(v.error->kind(), ErrorKind::Unavailable);
  // Another program's values at the lock's keys on too many: that error.
  v = acquire_verdict(
      {failed<AcquireReply>(ErrorKind::Protocol, "WRONGTYPE", Cause::ForeignLock),
       failed<AcquireReply>(ErrorKind::Protocol, "WRONGTYPE", Cause::Foreign), granted(1)},
      3, true, kNames);
  EXPECT_EQ(v.error->kind(), ErrorKind::Protocol);
}

TEST(QuorumVerdict, AUsageRefusalFailsEvenAMajorityOfGrants) {
  auto v = acquire_verdict(
      {granted(1), failed<AcquireReply>(ErrorKind::Usage, "--limit 3 but the lock has 2"),
       granted(2)},
      3, true, kNames);
  EXPECT_EQ(v.kind, AV::Failed);
  EXPECT_EQ(std::string(v.error->what()), "--limit 3 but the lock has 2");
}

TEST(QuorumVerdict, ATieOfAnEvenFleetIsNoMajority) {
  auto v = acquire_verdict({granted(1), granted(2), taken("a"), taken("a")}, 4, true, kNames);
  EXPECT_EQ(v.kind, AV::Refused);
  EXPECT_EQ(v.reply.state, AcquireReply::State::Taken);
  v = acquire_verdict({granted(1), granted(2), failed<AcquireReply>(), failed<AcquireReply>()}, 4,
                      true, kNames);
  EXPECT_EQ(v.kind, AV::TooFew);
  EXPECT_NE(std::string(v.error->what()).find("only 2 of 4 masters answered (a majority is 3)"),
            std::string::npos);
  v = acquire_verdict({granted(1), granted(2), granted(3), taken("a")}, 4, true, kNames);
  EXPECT_EQ(v.kind, AV::Granted);
}

TEST(QuorumVerdict, AMajorityOfGrantsAfterTheValidityRanOutIsNotHeld) {
  // The validity is the TTL less the drift allowance, from before the first request.
  EXPECT_EQ(clock_drift(Millis(1000)), Millis(12));
  EXPECT_EQ(clock_drift(Millis(30000)), Millis(302));
  Clock::time_point start{};
  EXPECT_EQ(validity_end(start, Millis(1000)), start + Millis(988));
  auto v = acquire_verdict({granted(1), granted(2), taken("a")}, 3, false, kNames);
  EXPECT_EQ(v.kind, AV::Refused);  // every grant goes back
  EXPECT_EQ(v.reply.state, AcquireReply::State::Taken);
  EXPECT_EQ(v.fence, 0);
}

TEST(QuorumVerdict, TheRoundIsSettledBeforeALateGrant) {
  using A = Answers<AcquireReply>;
  // A grant could still make a majority: wait for it.
  EXPECT_FALSE(acquire_settled(A{granted(1), taken("a"), std::nullopt}, 3));
  // A majority refused: a grant arriving now is too late to count (it is
  // given back with the others), and the verdict is Taken, the silent master
  // counted as failed.
  EXPECT_TRUE(acquire_settled(A{taken("a"), taken("a"), std::nullopt}, 3));
  auto v = acquire_verdict(
      {taken("a"), taken("a"), failed<AcquireReply>(ErrorKind::Unavailable, "no answer in time")},
      3, true, kNames);
  EXPECT_EQ(v.kind, AV::Refused);
  // A majority granted: decided without the last.
  EXPECT_TRUE(acquire_settled(A{granted(1), std::nullopt, granted(2)}, 3));
  // Errors settle nothing: unavailable waits for every master (or its
  // bound), so that the message names every one that failed.
  EXPECT_FALSE(acquire_settled(A{failed<AcquireReply>(), failed<AcquireReply>(), std::nullopt}, 3));
  // An even fleet: two grants and a refusal wait for the fourth (3 of 4 needed).
  EXPECT_FALSE(acquire_settled(A{granted(1), granted(2), taken("a"), std::nullopt}, 4));
  EXPECT_TRUE(acquire_settled(A{granted(1), granted(2), taken("a"), taken("a")}, 4));
}

// ---- committing the fence ----

TEST(QuorumVerdict, AFenceCountsWhereTheTokenRaisedTheCounterToIt) {
  // Found below the fence: this commit set it there.
  EXPECT_TRUE(fence_committed(fenced(10, 9, true), 10));
  // Found at the fence, this token's record already carrying it (its own
  // commit sent again): still its own.
  EXPECT_TRUE(fence_committed(fenced(10, 10, true), 10));
  // Found at the fence another token committed: not this token's.
  EXPECT_FALSE(fence_committed(fenced(10, 10, false), 10));
  // Not held there, or no answer: counts for nothing.
  EXPECT_FALSE(fence_committed(fenced(10, 9, true, false), 10));
  EXPECT_FALSE(fence_committed(failed<FenceReply>(), 10));
}

TEST(QuorumVerdict, TwoGrantsSideBySideCannotBothOwnOneFence) {
  // Two shared holders computed fence 10 from the same counters. The first
  // commit reached masters 0 and 1 first, the second master 2: the first owns
  // it (a majority), the second is told to commit above every counter found.
  auto first =
      commit_verdict({fenced(10, 9, true), fenced(10, 9, true), fenced(10, 10, false)}, 3, 10);
  EXPECT_EQ(first.kind, CV::Owned);
  auto second =
      commit_verdict({fenced(10, 10, false), fenced(10, 10, false), fenced(10, 9, true)}, 3, 10);
  EXPECT_EQ(second.kind, CV::Collided);
  EXPECT_EQ(second.next, 11);
  // The next fence is above the largest counter any master found (another
  // grant raised one further meanwhile).
  second =
      commit_verdict({fenced(10, 14, false), fenced(10, 10, false), failed<FenceReply>()}, 3, 10);
  EXPECT_EQ(second.kind, CV::Collided);
  EXPECT_EQ(second.next, 15);
  // Its second round owns the new fence everywhere.
  EXPECT_EQ(
      commit_verdict({fenced(15, 14, true), fenced(15, 10, true), fenced(15, 10, true)}, 3, 15)
          .kind,
      CV::Owned);
}

TEST(QuorumVerdict, ACommitWithoutAMajorityHoldingFails) {
  // The grants ran out on two masters: no retry, the grant is given back.
  auto v = commit_verdict(
      {fenced(10, 10, false), fenced(10, 9, true, false), fenced(10, 9, true, false)}, 3, 10);
  EXPECT_EQ(v.kind, CV::Failed);
  // Too few answered.
  v = commit_verdict({fenced(10, 9, true), failed<FenceReply>(), failed<FenceReply>()}, 3, 10);
  EXPECT_EQ(v.kind, CV::Failed);
  // An even fleet: owned on two of four is a tie, no majority; held on all
  // four with the others owned elsewhere: another round.
  v = commit_verdict(
      {fenced(10, 9, true), fenced(10, 9, true), fenced(10, 10, false), fenced(10, 10, false)}, 4,
      10);
  EXPECT_EQ(v.kind, CV::Collided);
  EXPECT_EQ(v.next, 11);
}

TEST(QuorumVerdict, TheCommitIsSettledByAMajorityEitherWay) {
  using A = Answers<FenceReply>;
  EXPECT_TRUE(commit_settled(A{fenced(10, 9, true), std::nullopt, fenced(10, 9, true)}, 3, 10));
  EXPECT_FALSE(
      commit_settled(A{fenced(10, 9, true), std::nullopt, fenced(10, 9, true, false)}, 3, 10));
  EXPECT_TRUE(commit_settled(A{fenced(10, 10, false), std::nullopt, fenced(10, 10, false)}, 3, 10));
  EXPECT_FALSE(commit_settled(A{failed<FenceReply>(), std::nullopt, failed<FenceReply>()}, 3, 10));
  // Held on a majority, another token's fence on one of them: the next round
  // is due without the silent master (which may be down until the lease ends).
  A collided{fenced(10, 9, true), fenced(10, 10, false), std::nullopt};
  EXPECT_TRUE(commit_settled(collided, 3, 10));
  EXPECT_EQ(commit_verdict({*collided[0], *collided[1], failed<FenceReply>()}, 3, 10).kind,
            CV::Collided);
  // Not held on a majority of those heard (five masters): the silent ones
  // may still hold, and own it.
  EXPECT_FALSE(commit_settled(A{fenced(10, 9, true), fenced(10, 10, false),
                                fenced(10, 9, true, false), std::nullopt, std::nullopt},
                              5, 10));
}

// ---- renewing ----

TEST(QuorumVerdict, AMajorityRenewsWithTheShortestLeaseLessItsDrift) {
  auto v =
      extend_verdict({renewed(Millis(5000), 4), failed<ExtendReply>(), renewed(Millis(4000), 6)}, 3,
                     Millis(0), kNames);
  EXPECT_EQ(v.kind, EV::Held);
  EXPECT_TRUE(v.reply.held);
  EXPECT_EQ(v.reply.ttl, Millis(4000) - Millis(42));
  EXPECT_EQ(v.reply.fence, 6);
  EXPECT_EQ(v.grant, Millis(4000));  // no TTL asked: the shortest lease left
  EXPECT_TRUE(v.regrant.empty());
  v = extend_verdict({renewed(Millis(5000)), renewed(Millis(4000))}, 2, Millis(9000), kNames);
  EXPECT_EQ(v.grant, Millis(9000));
}

TEST(QuorumVerdict, AMasterThatLostTheLeaseIsGrantedItAgainUnlessATombstoneSaysWhy) {
  auto v = extend_verdict(
      {renewed(Millis(5000)), not_held(), renewed(Millis(5000)), not_held("released"),
       renewed(Millis(5000)), not_held("broken"), renewed(Millis(5000))},
      7, Millis(5000), kNames);
  EXPECT_EQ(v.kind, EV::Held);
  EXPECT_EQ(v.regrant, std::vector<size_t>{1});
  // The same for a reply that comes after the verdict.
  EXPECT_TRUE(wants_regrant(not_held()));
  EXPECT_FALSE(wants_regrant(not_held("released")));
  EXPECT_FALSE(wants_regrant(not_held("broken")));
  EXPECT_FALSE(wants_regrant(renewed(Millis(1))));
  EXPECT_FALSE(wants_regrant(failed<ExtendReply>()));
}

TEST(QuorumVerdict, LostOnceNoMajorityCanConfirmIt) {
  auto v = extend_verdict({renewed(Millis(5000)), not_held("released"), not_held()}, 3,
                          Millis(5000), kNames);
  EXPECT_EQ(v.kind, EV::Lost);
  EXPECT_FALSE(v.reply.held);
  EXPECT_TRUE(v.reply.released);
  EXPECT_FALSE(v.error);
  v = extend_verdict({not_held(), not_held("broken"), failed<ExtendReply>()}, 3, Millis(5000),
                     kNames);
  EXPECT_EQ(v.kind, EV::Lost);
  EXPECT_FALSE(v.reply.released);
}

TEST(QuorumVerdict, ARenewalTooFewAnsweredIsUndecided) {
  auto v = extend_verdict({renewed(Millis(5000)), failed<ExtendReply>(), failed<ExtendReply>()}, 3,
                          Millis(5000), kNames);
  EXPECT_EQ(v.kind, EV::TooFew);
  EXPECT_EQ(v.error->kind(), ErrorKind::Unavailable);
  EXPECT_NE(std::string(v.error->what()).find("cannot renew: only 1 of 3"), std::string::npos);
  v = extend_verdict({failed<ExtendReply>(), failed<ExtendReply>(), failed<ExtendReply>()}, 3,
                     Millis(5000), kNames);
  EXPECT_EQ(v.kind, EV::TooFew);
}

TEST(QuorumVerdict, ATieOfRenewalsIsLostOrUndecided) {
  auto v = extend_verdict({renewed(Millis(5000)), renewed(Millis(5000)), not_held(), not_held()}, 4,
                          Millis(5000), kNames);
  EXPECT_EQ(v.kind, EV::Lost);
  v = extend_verdict(
      {renewed(Millis(5000)), renewed(Millis(5000)), failed<ExtendReply>(), failed<ExtendReply>()},
      4, Millis(5000), kNames);
  EXPECT_EQ(v.kind, EV::TooFew);
  v = extend_verdict(
      {renewed(Millis(5000)), renewed(Millis(5000)), renewed(Millis(5000)), not_held()}, 4,
      Millis(5000), kNames);
  EXPECT_EQ(v.kind, EV::Held);
  EXPECT_EQ(v.regrant, std::vector<size_t>{3});
}

TEST(QuorumVerdict, TheRenewalIsSettledByTheFastestMajority) {
  using A = Answers<ExtendReply>;
  EXPECT_TRUE(extend_settled(A{renewed(Millis(1)), std::nullopt, renewed(Millis(1))}, 3));
  EXPECT_TRUE(extend_settled(A{not_held(), not_held(), std::nullopt}, 3));
  EXPECT_FALSE(extend_settled(A{renewed(Millis(1)), not_held(), std::nullopt}, 3));
  // Errors never settle a renewal early.
  EXPECT_FALSE(extend_settled(A{failed<ExtendReply>(), failed<ExtendReply>(), std::nullopt}, 3));
}

}  // namespace
}  // namespace rlock
