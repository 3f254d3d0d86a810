// The lock protocol in C++ terms: the Lock interface that every kind of lock
// implements (SingleLock, lock/single.h: one deployment; QuorumLock,
// lock/quorum.h; MultiLock, lock/multi.h; LayoutLock, lock/layout.h). Every
// operation is asynchronous on the event loop; `wait_for` (core/async.h) turns
// one into a blocking call for the scriptable commands. A Lock is a value:
// names, a client, and the --limit. Its records are in lock/records.h.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/async.h"
#include "lock/history.h"
#include "lock/key.h"
#include "lock/records.h"
#include "net/redis.h"

namespace rlock {

/// The current process's host, user and pid, with `cmd` as given (each cut
/// to kMaxHolderField bytes).
HolderInfo local_holder_info(std::string cmd, long pid);

/// The lock of one KEY: on one Redis deployment (SingleLock: a server, a
/// Cluster, Sentinel's master), or on a quorum of independent masters
/// (QuorumLock, quorum.h: Redlock). Every operation is asynchronous on the
/// event loop and calls `done` exactly once.
class Lock {
 public:
  Lock(LockNames names, int limit) : names_(std::move(names)), limit_(limit) {}
  virtual ~Lock() = default;
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

  // acquire, extend, release and leave take their defaults here, once, and
  // call the lock's own do_acquire, do_extend, do_release and do_leave: a
  // caller gets the same defaults through any type of lock.

  /// One attempt. With `queue`, a waiter that is not served joins (or keeps)
  /// its place in the line; without, it is told the lock is taken. A
  /// `--limit` mismatch yields a usage Error. `attempt` numbers the attempts
  /// of one token (1, 2, …): if this one times out, an undo of exactly this
  /// attempt follows it on the same connection, and a later attempt's grant
  /// is out of its reach. A token that already holds gets its lease renewed.
  /// The reply's ttl is how long after the attempt was sent the lease is
  /// certain to last.
  void acquire(const std::string& token, Millis ttl, bool queue, const HolderInfo& info,
               long attempt, Done<AcquireReply> done, Millis timeout = Millis(0)) {
    do_acquire(token, ttl, queue, info, attempt, std::move(done), timeout);
  }
  /// Renews the lease of `token` by `ttl` (0 = the TTL it was acquired with).
  void extend(const std::string& token, Millis ttl, Done<ExtendReply> done,
              Millis timeout = Millis(0)) {
    do_extend(token, ttl, std::move(done), timeout);
  }
  /// Releases (or, with min_hold, shortens to acquisition + min_hold). A
  /// release that fails because the connection broke is retried on a new one
  /// until `timeout` (0: the command timeout) has passed since the first try;
  /// the release leaves a tombstone so that a retry whose first try did
  /// release reports AlreadyReleased, not NotHeld.
  /// `exit_status` (0-255, -1 = not known) is how the command ended: a lease
  /// kept for min_hold is marked with it, so that status can say so. With
  /// `done_for` and an exit status of 0 the lease is kept that long (or
  /// until acquisition + min_hold, if later) and marked done (KeptAsDone).
  /// `lost`: why its holder knows the lease was lost (recorded in the history
  /// when the release finds it gone), or empty.
  void release(const std::string& token, Millis min_hold, Done<ReleaseReply> done,
               Millis timeout = Millis(0), int exit_status = -1, Millis done_for = Millis(0),
               const std::string& lost = "") {
    do_release(token, min_hold, std::move(done), timeout, exit_status, done_for, lost);
  }
  /// Gives back a grant of `token` that its attempt could not stand by (the
  /// sentinels could not be asked whether its master is still theirs), as
  /// release() does but without a tombstone where the lock's acquire answers
  /// GONE to a token that has one (docs/PROTOCOL.md, acquire): the token's
  /// next attempt may be granted. By default, release().
  virtual void give_back_grant(const std::string& token, Done<ReleaseReply> done, Millis timeout) {
    release(token, Millis(0), std::move(done), timeout);
  }
  /// Leaves the line; true if the token had a place.
  void leave(const std::string& token, Done<bool> done, Millis timeout = Millis(0)) {
    do_leave(token, std::move(done), timeout);
  }
  virtual void status(Done<LockStatus> done) = 0;
  /// Removes every holder and waiter; returns how many holders there were.
  /// With `req.token`: removes that holder only and wakes whoever's turn it
  /// then is; returns 1, or 0 when the token holds nothing.
  virtual void break_lock(const BreakRequest& req, Done<long> done) = 0;
  /// Removes every key of a free lock nobody waits on, its fence counter
  /// included (housekeeping: its fences start again).
  virtual void forget(Done<ForgetReply> done) = 0;
  /// WAIT for `replicas` replicas to confirm this client's writes so far (the
  /// lease just granted or renewed), on the lock's server, within `budget`.
  /// The outcome is an unavailable Error (69) naming `what` when fewer
  /// confirmed in time (--sync-replicas).
  virtual void confirm_replicas(int replicas, Millis budget, const std::string& what,
                                Done<bool> done) = 0;

  /// Whether the grant `granted` of `token` stands: under Sentinel, whether
  /// the sentinels, asked now, still name the master that made it (see
  /// Client::confirm_master). When they do not, it is void: released there
  /// (token-checked, within `cleanup`), and the outcome is false; the next
  /// attempt goes to the master they name. Without Sentinel (and for a
  /// quorum): true at once.
  virtual void confirm_master(const std::string& /*token*/, const AcquireReply& /*granted*/,
                              Done<bool> done, Millis /*cleanup*/) {
    done(Outcome<bool>{std::nullopt, true});
  }

  /// The deployments the lock lives on: one, or every master of a quorum (in
  /// the URLs' order).
  virtual std::vector<Client*> clients() = 0;
  /// Waiters line up first come, first served. A quorum has no line (the
  /// masters' lines could disagree): its waiters try again when they hear a
  /// release.
  virtual bool fair() const { return true; }
  /// The locks of the single keys this is made of (`--and`: several, in the
  /// user's order; else this one).
  virtual std::vector<Lock*> parts() { return {this}; }
  /// Quorum mode: requests to masters that had not answered when their
  /// round's outcome was decided (they go on, unheard), and how long a caller
  /// about to exit waits for them (settle_unheard). None elsewhere.
  virtual size_t unheard() const { return 0; }
  virtual Millis unheard_bound() const { return Millis(0); }
  /// A new token for a holder of this lock, process `holder_pid` (the pid a
  /// nested run finds among its ancestors): new_token(); Redisson's layout has
  /// ids of its own form, which end in that pid.
  virtual std::string fresh_token(long holder_pid) const;

  Loop& loop() { return clients().front()->loop(); }
  Millis command_timeout() { return clients().front()->command_timeout(); }
  /// This process holds or waits for a while: watch for failovers.
  void stay() {
    for (Client* c : clients()) c->stay();
  }
  const LockNames& names() const { return names_; }
  int limit() const { return limit_; }
  /// Whether acquire asks for a shared hold (--shared) rather than the
  /// exclusive one.
  bool shared() const { return shared_; }
  virtual void set_shared(bool shared) { shared_ = shared; }
  /// How acquire stands in the line; a policy a lock without a line (a
  /// quorum) cannot keep is a usage Error.
  const LinePolicy& line_policy() const { return line_; }
  virtual void set_line_policy(const LinePolicy& p) { line_ = p; }
  /// A named pool (--limit NAME,...): its names, comma-separated; limit() is
  /// their count. "" (the default): a count.
  const std::string& pool() const { return pool_; }
  virtual void set_pool(const std::string& names) { pool_ = names; }
  /// How many events the lock's history keeps (--history; 0: none recorded).
  int history() const { return history_; }
  virtual void set_history(int n) { history_ = n; }
  /// Whether status() reads the newest events of the history (list --json,
  /// which leaves them out, says no: a third of a status's server time).
  bool status_events() const { return status_events_; }
  virtual void set_status_events(bool on) { status_events_ = on; }

 protected:
  /// What acquire, extend, release and leave do (above), without defaults.
  virtual void do_acquire(const std::string& token, Millis ttl, bool queue, const HolderInfo& info,
                          long attempt, Done<AcquireReply> done, Millis timeout) = 0;
  virtual void do_extend(const std::string& token, Millis ttl, Done<ExtendReply> done,
                         Millis timeout) = 0;
  virtual void do_release(const std::string& token, Millis min_hold, Done<ReleaseReply> done,
                          Millis timeout, int exit_status, Millis done_for,
                          const std::string& lost) = 0;
  virtual void do_leave(const std::string& token, Done<bool> done, Millis timeout) = 0;

  LockNames names_;
  int limit_;
  bool shared_ = false;
  LinePolicy line_;
  std::string pool_;
  int history_ = kDefaultHistory;
  bool status_events_ = true;
};

/// A new token: 128 random bits from the OS, as 32 hex digits.
std::string new_token();

}  // namespace rlock
