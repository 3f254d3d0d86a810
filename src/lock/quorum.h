// Quorum mode (Redlock): the lock of one KEY on N independent masters (several
// --url). Each master runs the same scripts as a single server; a lease counts
// only while a majority (N/2+1) of them grant or renew it within its validity
// (the TTL less the time the requests took and a clock drift of TTL/100 + 2 ms).
// The fence a holder gets is the largest a majority of masters gave out, or
// their clock (server ms) when that is higher, made the floor of a majority's
// counters before the lock is used, so fences grow whatever majorities grant
// them, and still after masters lost their counters while the masters' clocks
// agree (docs/PROTOCOL.md, "Fences in quorum mode").
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "core/lifetime.h"
#include "lock/lock.h"
#include "lock/quorum_verdict.h"
#include "lock/single.h"

namespace rlock {

class QuorumLock : public Lock {
 public:
  /// `masters`: one Client per independent master, at least 2 (the caller
  /// keeps them alive); `limit` must be 0 (no semaphores: one count cannot
  /// live on N masters that may disagree).
  /// `of`: the number of masters in all, when `masters` are only those that
  /// answered (list): the majority is still a majority of all.
  QuorumLock(std::vector<Client*> masters, LockNames names, size_t of = 0);
  ~QuorumLock() override;
  /// Asked before a majority's grants count: an Error (two URLs of one
  /// server) gives them back and fails the attempt with it (Session).
  void set_identity_check(std::function<std::optional<Error>()> check) {
    identity_check_ = std::move(check);
  }
  size_t unheard() const override { return *unheard_; }
  /// The per-master bound of the last acquire's TTL, as for the last releases,
  /// at most the default TTL's.
  Millis unheard_bound() const override;

 protected:
  /// Requests go to every master at once, each bounded by a share of the TTL;
  /// granted by fewer than a majority, every grant is given back before the
  /// reply: Taken when a majority answered, an unavailable Error (69) naming
  /// the masters that did not when fewer did.
  void do_acquire(const std::string& token, Millis ttl, bool queue, const HolderInfo& info,
                  long attempt, Done<AcquireReply> done, Millis timeout) override;
  /// Held while a majority renews. A master that answers that it lost the
  /// lease (restarted empty) is granted it again. Not held once no majority
  /// can confirm it any more; an unavailable Error while that is undecided.
  void do_extend(const std::string& token, Millis ttl, Done<ExtendReply> done,
                 Millis timeout) override;
  /// On every master; NotHeld when fewer than a majority still held it.
  /// Every master's release is awaited (the EVAL after NOSCRIPT included);
  /// once a majority has settled the answer, the rest get at most
  /// clamp(TTL/50, 50 ms, --command-timeout) more (TTL: of the last acquire, else
  /// the default 30 s).
  void do_release(const std::string& token, Millis min_hold, Done<ReleaseReply> done,
                  Millis timeout, int exit_status, Millis done_for,
                  const std::string& lost) override;
  void do_leave(const std::string& token, Done<bool> done, Millis timeout) override;

 public:
  /// Gives a grant back on every master without the release's tombstone
  /// (as a failed acquisition's give-back does), so that the token may be
  /// granted again: --and taking its keys again from the first.
  void give_back_grant(const std::string& token, Done<ReleaseReply> done, Millis timeout) override;
  /// Every master's view, and the quorum's: held when one token holds on a
  /// majority. An unavailable Error when fewer than a majority answer.
  void status(Done<LockStatus> done) override;
  /// On every master; an unavailable Error when fewer than a majority answer.
  /// Once a majority answered, the rest get at most the per-master bound of
  /// a release by token alone (clamp(30 s/50, 50 ms, --command-timeout): 600 ms by
  /// default) more; a master that has not answered by then is named in a
  /// warning (its request may still land there).
  void break_lock(const BreakRequest& req, Done<long> done) override;
  void forget(Done<ForgetReply> done) override;
  /// Confirmed when a majority of masters had N replicas confirm.
  void confirm_replicas(int replicas, Millis budget, const std::string& what,
                        Done<bool> done) override;
  std::vector<Client*> clients() override { return clients_; }
  bool fair() const override { return false; }
  /// Shared holds are asked of every master: a shared and an exclusive
  /// majority would share a master, which grants only one kind at a time.
  void set_shared(bool shared) override;
  void set_history(int n) override;
  void set_status_events(bool on) override;
  /// A quorum has no line: --priority, --supersede and --max-waiters are a
  /// usage Error.
  void set_line_policy(const LinePolicy& p) override;
  void set_pool(const std::string& names) override;

  size_t quorum() const { return majority(total_); }

 private:
  std::function<std::optional<Error>()> identity_check_;
  template <class T>
  using Each = std::function<void(SingleLock&, Done<T>)>;
  template <class T>
  using All = std::function<void(std::vector<Outcome<T>>)>;
  /// Runs `op` on every master at once; `done` gets every outcome, in the
  /// masters' order, once all have answered (or failed), or as soon as
  /// `enough` says the outcome is decided (those that have not answered then
  /// count as failed: their requests go on, unheard). With a `linger`, those
  /// still get that long after the decision before `done` is called.
  template <class T>
  using Enough = std::function<bool(const Answers<T>&)>;
  template <class T>
  void fan_out(Each<T> op, All<T> done, Enough<T> enough = {}, Millis linger = Millis(0));
  /// quorum_decided over this lock's masters.
  template <class T, class Yes, class No>
  bool decided(const Answers<T>& rs, Yes yes, No no, bool replies_settle) const {
    return quorum_decided(rs, total_, yes, no, replies_settle);
  }

  Millis node_timeout(Millis ttl) const;
  /// How long break and forget wait for the last masters once a majority
  /// answered: the per-master bound of the default TTL, as release --token.
  Millis operator_linger() const;
  /// Enough for break and forget: a majority answered without an error.
  template <class T>
  Enough<T> majority_answered() const {
    size_t q = quorum();
    return [q](const Answers<T>& rs) {
      return static_cast<size_t>(
                 std::count_if(rs.begin(), rs.end(), [](auto& r) { return r && !r->error; })) >= q;
    };
  }
  /// A warning for each master that did not answer `what` (break, forget).
  template <class T>
  void warn_unanswered(const std::string& what, const std::vector<Outcome<T>>& rs) const;
  /// Commits `fence` for the grant of `token` (docs/PROTOCOL.md, "Why fences
  /// only grow"); `retries`: how many more rounds, each with a larger fence,
  /// when another token owns this one on too many masters.
  void commit(const std::string& token, int64_t fence, Millis ttl, Clock::time_point until,
              Done<AcquireReply> done, int retries = kFenceRetries);
  void give_back(const std::string& token, Millis ttl, std::function<void()> then);
  /// Gives `token`'s grants back on every master (no tombstone), `per` each.
  void give_back_within(const std::string& token, Millis per, std::function<void()> then);
  void regrant(size_t i, const std::string& token, Millis grant, int64_t fence, Millis per);
  /// Why fewer than a majority answered (quorum_shortfall).
  template <class T>
  Error too_few(const std::string& what, const std::vector<Outcome<T>>& rs) const {
    std::vector<std::optional<Error>> errors;
    for (auto& r : rs) errors.push_back(r.error);
    return quorum_shortfall(what, errors, names(), total_);
  }
  /// The masters' names, in their order.
  std::vector<std::string> names() const;
  /// How many masters answered without an error.
  template <class T>
  static size_t answered(const std::vector<Outcome<T>>& rs) {
    return static_cast<size_t>(
        std::count_if(rs.begin(), rs.end(), [](const Outcome<T>& r) { return !r.error; }));
  }

  std::vector<Client*> clients_;
  size_t total_;
  std::vector<std::unique_ptr<SingleLock>> locks_;
  HolderInfo info_;  // of the last acquire: a master that lost the lease is granted it again
  Millis ttl_{0};    // of the last acquire: bounds the wait for the last releases
  // fan_out's requests not answered yet (shared with their callbacks, which
  // may outlive this lock)
  std::shared_ptr<size_t> unheard_ = std::make_shared<size_t>(0);
  Lifetime life_;
};

}  // namespace rlock
