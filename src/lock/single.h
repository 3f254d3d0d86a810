// The lock on one Redis deployment (a server, a Cluster, Sentinel's master):
// each operation is one script there (lock/lua/, docs/PROTOCOL.md).
#pragma once

#include <string>
#include <vector>

#include "lock/lock.h"

namespace rlock {

/// The lock on one Redis deployment: each operation is one script there.
/// `done`, called only once a renewal that held is confirmed as a grant is
/// (Client::confirm_master): under Sentinel, the sentinels asked after its
/// reply still name the master that made it. A renewal made on a master they
/// no longer name (a planned failover promotes a replica while the old master
/// still takes writes) is lost with that master: it is reported as an
/// unavailable Error, so the holder's deadline stays that of its last
/// confirmed renewal and it renews again, on the master they name. Without
/// Sentinel `done` gets the reply at once.
Done<ExtendReply> confirmed_renewal(Client& client, Done<ExtendReply> done);

/// A release that, under Sentinel, ends with the master the sentinels name
/// (docs/PROTOCOL.md, "Sentinel"): `send` sends the release (and may be called
/// twice: each call sends it again, with the same arguments); the sentinels
/// are asked at the same time which master they name. When they name the one
/// that took it, `done` gets its reply: no round trip more than the slower of
/// the two. When they name another, they are asked again
/// (Client::confirm_master, which moves rlock there) and, if the master
/// did change, the release is sent again, to the master they name: its reply
/// is the outcome, with ReleaseReply::moved_from set (NotHeld then: a
/// failover lost the hold). No sentinel to answer: ReleaseReply::unconfirmed.
/// Without Sentinel `send` is called once and its reply is the outcome.
/// All of it ends by `until` (the release's window, which `send` keeps too):
/// what is not confirmed by then is ReleaseReply::unconfirmed, and nothing
/// is asked or sent past it; nor is the release sent again with less than
/// kLeastToReleaseAgain of it left.
void confirmed_release(Client& client, std::function<void(Done<ReleaseReply>)> send,
                       Clock::time_point until, Done<ReleaseReply> done);

/// The least of a release's window worth a second send to the master the
/// sentinels name: a shorter one would only time out (and a timeout closes
/// the connection, with the other commands waiting on it).
inline constexpr Millis kLeastToReleaseAgain{100};

/// How long a release's tombstone lives, for a release retried within
/// `window`: through confirmed_release's two sentinel surveys (each within
/// the command timeout, at most `window`) and a second window on the master
/// they name, and 5 s more.
inline Millis release_tombstone(Millis window) {
  return 3 * window + Millis(5000);
}

class SingleLock : public Lock {
 public:
  SingleLock(Client& client, LockNames names, int limit = 0)
      : Lock(std::move(names), limit), client_(client) {}

 protected:
  void do_acquire(const std::string& token, Millis ttl, bool queue, const HolderInfo& info,
                  long attempt, Done<AcquireReply> done, Millis timeout) override;
  void do_extend(const std::string& token, Millis ttl, Done<ExtendReply> done,
                 Millis timeout) override;
  void do_release(const std::string& token, Millis min_hold, Done<ReleaseReply> done,
                  Millis timeout, int exit_status, Millis done_for,
                  const std::string& lost) override;
  void do_leave(const std::string& token, Done<bool> done, Millis timeout) override;

 public:
  void status(Done<LockStatus> done) override;
  void break_lock(const BreakRequest& req, Done<long> done) override;
  void forget(Done<ForgetReply> done) override;
  void confirm_replicas(int replicas, Millis budget, const std::string& what,
                        Done<bool> done) override;
  void confirm_master(const std::string& token, const AcquireReply& granted, Done<bool> done,
                      Millis cleanup) override;
  std::vector<Client*> clients() override { return {&client_}; }

  /// Quorum mode: gives back a grant that won no majority (token-checked,
  /// retried on a new connection within `timeout`, as release() is). Unlike release() it leaves no
  /// tombstone: the token's next attempt may win here or elsewhere, and a tombstone would tell that
  /// holder's renewals (a keeper's) that its owner released it.
  void give_back(const std::string& token, Done<ReleaseReply> done, Millis timeout);
  void give_back_grant(const std::string& token, Done<ReleaseReply> done, Millis timeout) override {
    give_back(token, std::move(done), timeout);
  }
  /// Quorum mode: grants a holder's lease again here (acquire in mode
  /// `regrant`: a try), unless a release with the token or a break removed it
  /// here (its tombstone): Gone then. The renewal answer that asked for it
  /// ("not held") may be older than that release or break.
  void regrant(const std::string& token, Millis ttl, const HolderInfo& info,
               Done<AcquireReply> done, Millis timeout);
  /// Quorum mode: raises the fence counter to at least `fence` and, if
  /// `token` holds, records that fence as its own; with `claim` (an
  /// acquisition's commit) only where the token owns it (docs/PROTOCOL.md,
  /// "Why fences only grow"), else always (a regrant of the holder's fence).
  void commit_fence(const std::string& token, int64_t fence, bool claim, Done<FenceReply> done,
                    Millis timeout);
  Client& client() { return client_; }
  /// Quorum mode: the history on this master is trimmed exactly, as on the
  /// others, so that every master keeps the same newest events and the merged
  /// history does not count older ones on fewer masters (docs/PROTOCOL.md,
  /// "History": a negative cap).
  void trim_history_exactly() { exact_history_ = true; }

 private:
  void acquire_in(const char* mode, const std::string& token, Millis ttl, const HolderInfo& info,
                  long attempt, Done<AcquireReply> done, Millis timeout);

  // The history cap as the scripts take it: negative to trim exactly.
  int history_arg() const { return exact_history_ ? -history_ : history_; }

  Client& client_;
  bool exact_history_ = false;
};

}  // namespace rlock
