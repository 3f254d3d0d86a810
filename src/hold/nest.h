// Nested holds (docs/GUIDE.md "Nesting", docs/PROTOCOL.md "nest"): a `run` let in
// through RLOCK_HELD holds the lock under the enclosing holder's token for as
// long as it runs, wherever its process group or session is. Its hold is a
// record with a lease of its own (the nest script), renewed by its watchdog
// like any lease; the lock is free only once the enclosing hold and every
// nested hold under it have ended.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lock/lock.h"
#include "lock/single.h"

namespace rlock {

/// The nested holds under `outer` on `lock` (a SingleLock of the rlock
/// layout; none for any other). Records that do not parse are skipped.
std::vector<NestedHold> nested_holds(Loop& loop, Lock& lock, const std::string& outer);

/// Calls `visit` for each live nested hold under `outer` on every key of
/// `lock` (rlock layout, single deployments), once the replies come; errors
/// are ignored (best effort).
void each_nested_hold(Lock& lock, const std::string& outer,
                      std::function<void(const NestedHold&)> visit);

/// The lock of a nested run: holds on each key's lock (`parts`, SingleLocks
/// of the rlock layout) under that key's enclosing token (`outer`, in the
/// same order). acquire joins, extend renews, release ends the nested hold;
/// "not held" means the enclosing hold is gone (lost, broken). The token is
/// the nested hold's own id.
class NestedLock : public Lock {
 public:
  NestedLock(std::unique_ptr<Lock> inner, std::vector<std::string> outer);

  /// Whether a nested hold can be recorded for `lock`: every part a single
  /// deployment's lock of the rlock layout.
  static bool supported(Lock& lock);

 protected:
  void do_acquire(const std::string& token, Millis ttl, bool queue, const HolderInfo& info,
                  long attempt, Done<AcquireReply> done, Millis timeout) override;
  void do_extend(const std::string& token, Millis ttl, Done<ExtendReply> done,
                 Millis timeout) override;
  void do_release(const std::string& token, Millis min_hold, Done<ReleaseReply> done,
                  Millis timeout, int exit_status, Millis done_for,
                  const std::string& lost) override;
  void do_leave(const std::string&, Done<bool> done, Millis) override {
    done(Outcome<bool>{std::nullopt, false});
  }

 public:
  void status(Done<LockStatus> done) override { inner_->status(std::move(done)); }
  void break_lock(const BreakRequest& req, Done<long> done) override {
    inner_->break_lock(req, std::move(done));
  }
  void forget(Done<ForgetReply> done) override { inner_->forget(std::move(done)); }
  void confirm_replicas(int replicas, Millis budget, const std::string& what,
                        Done<bool> done) override {
    inner_->confirm_replicas(replicas, budget, what, std::move(done));
  }
  std::vector<Client*> clients() override { return inner_->clients(); }

  /// Every key's fence (the enclosing holder's), from the last join.
  const std::vector<int64_t>& fences() const { return fences_; }

 private:
  struct Step {
    bool held = false;
    Millis ttl{0};
    int64_t fence = 0;
  };
  /// Runs the nest script `op` on every part in turn; a hold stops at the
  /// first part whose enclosing hold is gone.
  /// `ttl`: a hold's lease.
  void each(const std::string& op, Millis ttl, Done<std::vector<Step>> done, Millis timeout);

  std::unique_ptr<Lock> inner_;
  std::vector<Lock*> parts_;
  std::vector<std::string> outer_;
  std::string member_;
  std::vector<int64_t> fences_;
};

}  // namespace rlock
