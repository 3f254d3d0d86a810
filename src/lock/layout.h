// Locks in other tools' layouts (--layout plain, --layout redisson): the same
// Lock operations on the keys the seeds' services use, so that rlock and such
// a service exclude each other and wake each other's waiters. Each operation is
// one self-contained script (src/lock/lua/plain_*.lua, redisson_*.lua); what the
// layout cannot carry (a line, fences, holder details, a history) is refused
// by the commands before anything is sent (check_layout_options, cli/options.h).
#pragma once

#include <string>

#include "lock/lock.h"
#include "lock/single.h"

namespace rlock {

/// A lock in the plain or Redisson layout on one deployment. It has no line
/// (fair() is false): a waiter listens on the layout's release channel and
/// tries again when it hears one, or when the holder's lease runs out.
class LayoutLock : public SingleLock {
 public:
  LayoutLock(Client& client, LockNames names) : SingleLock(client, std::move(names)) {}

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
  void confirm_master(const std::string& token, const AcquireReply& granted, Done<bool> done,
                      Millis cleanup) override;
  bool fair() const override { return false; }
  std::string fresh_token(long holder_pid) const override;

 private:
  Layout layout() const { return names_.layout; }
  /// The ttl a renewal with ttl 0 ("as acquired") uses.
  Millis acquired_ttl_{30000};
};

/// The key a release of `token` leaves behind for a short while (its
/// tombstone: the release id, PX), in the lock's Cluster slot: plain
/// PREFIXrlock-released:{PREFIXKEY}:TOKEN, Redisson
/// redisson_unlock_latch:{KEY}:ID (as Redisson names its unlock latch). A
/// retried release finds it (AlreadyReleased), and a renewal tells a release
/// with the token from a loss (ExtendReply::released).
std::string layout_tombstone(const LockNames& n, const std::string& token);

/// The Redis keys of KEY under the layouts other than `layout` that hold a
/// lock right now, each as "--layout NAME (key K)": status warns of them,
/// since two layouts for one name are two different locks. Best effort: a key
/// that cannot be read is left out.
std::vector<std::string> other_layouts_held(Client& client, const std::string& key, Layout layout,
                                            const std::string& prefix);

}  // namespace rlock
