// Several keys, all or nothing (`--and`, docs/GUIDE.md "Several keys, all or
// nothing"): one token holds every key; the command starts only once it holds
// them all.
//
// Keys live where their names put them (a Cluster spreads them over slots),
// so no one script can take them together. They are taken one after another
// in one global order (byte order of their Redis names), each waiting in its
// own line like a single lock: two runs that name the same keys in opposite
// orders take them in the same order and cannot deadlock, and a waiter keeps
// its place in each line it reaches, so holders of single keys cannot starve
// it. The price: while it waits for a later key it holds the earlier ones
// (renewed meanwhile), as any ordered locking does.
#pragma once

#include <memory>
#include <vector>

#include "lock/lock.h"

namespace rlock {

/// The lock of several KEYs as one: every operation acts on every part at
/// once, with one token. Parts are kept in the user's order (the first is
/// RLOCK_KEY's); acquire() is not one operation here: see MultiAcquirer
/// (hold/multi_acquirer.h).
class MultiLock : public Lock {
 public:
  /// `parts`: at least two locks of distinct keys on the same deployment(s).
  explicit MultiLock(std::vector<std::unique_ptr<Lock>> parts);

 protected:
  /// Not one step for several keys: fails (a protocol Error). MultiAcquirer
  /// takes the parts one by one.
  void do_acquire(const std::string& token, Millis ttl, bool queue, const HolderInfo& info,
                  long attempt, Done<AcquireReply> done, Millis timeout) override;
  /// Held while every part is; the shortest TTL any part confirmed. Not held
  /// as soon as one part says so; an Error when a part failed and none said so.
  void do_extend(const std::string& token, Millis ttl, Done<ExtendReply> done,
                 Millis timeout) override;
  /// Every part; NotHeld when any part was no longer held (the others are
  /// released all the same); an Error when a part failed.
  void do_release(const std::string& token, Millis min_hold, Done<ReleaseReply> done,
                  Millis timeout, int exit_status, Millis done_for,
                  const std::string& lost) override;
  void do_leave(const std::string& token, Done<bool> done, Millis timeout) override;

 public:
  /// The first part's.
  void status(Done<LockStatus> done) override;
  void break_lock(const BreakRequest& req, Done<long> done) override;
  void forget(Done<ForgetReply> done) override;
  void confirm_replicas(int replicas, Millis budget, const std::string& what,
                        Done<bool> done) override;
  std::vector<Client*> clients() override;
  bool fair() const override;
  std::vector<Lock*> parts() override;
  void set_shared(bool shared) override;
  void set_history(int n) override;
  void set_line_policy(const LinePolicy& p) override;

  /// The parts in the order they are taken (byte order of their lock names).
  std::vector<Lock*> in_order();

 private:
  template <class T>
  using Combine = std::function<Outcome<T>(std::vector<Outcome<T>>&)>;
  /// Runs `op` on every part at once; `combine` turns their outcomes (in the
  /// parts' order) into one, once all have answered.
  template <class T>
  void each(std::function<void(Lock&, Done<T>)> op, Combine<T> combine, Done<T> done);

  /// The parts' keys, in the parts' order (as given).
  std::vector<std::string> keys();
  /// release() on every part at once.
  void release_all(const std::string& token, Millis min_hold, Done<ReleaseReply> done,
                   Millis timeout, int exit_status, Millis done_for, const std::string& lost);

  std::vector<std::unique_ptr<Lock>> parts_;
};

}  // namespace rlock
