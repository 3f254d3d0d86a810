// Taking several keys, all or nothing (`--and`): the waiting half of
// lock/multi.h. The parts are taken one by one in the global order, each in
// its own line, renewing those already held meanwhile (see multi.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/lifetime.h"
#include "hold/acquirer.h"
#include "lock/multi.h"

namespace rlock {

/// Takes every part of a MultiLock, one after another in the global order,
/// renewing the parts it holds while it waits for the next. Outcomes as
/// Acquirer's: Acquired (fence of the first key, `fences` of all in the
/// user's order, `sent` of the part whose lease ends first), or an Error;
/// parts already held are released on any failure or cancel. A part lost
/// while waiting for a later one (broken, expired, its renewals failed until
/// its deadline) makes it give every part back and start again from the
/// first, within what is left of --wait.
class MultiAcquirer : public Acquisition {
 public:
  MultiAcquirer(MultiLock& lock, std::string token, WaitSpec spec);
  ~MultiAcquirer() override;
  MultiAcquirer(const MultiAcquirer&) = delete;
  MultiAcquirer& operator=(const MultiAcquirer&) = delete;

  void start(Done<Acquired> done) override;
  void on_progress(std::function<void(const WaitProgress&)> cb) override {
    progress_ = std::move(cb);
  }
  void cancel(std::function<void()> done) override;

 private:
  struct Held {
    Lock* part;
    Acquired acquired;
    Clock::time_point deadline;  // the lease ends no earlier than this
    Clock::time_point next;      // when it is renewed next
  };
  /// Takes the next part, or finishes once every part is held.
  void next();
  void take_next();
  void finish_all();
  void got(Acquired a);
  void fail(Error e);
  /// Stops waiting (leaves the line it is in), gives back every part held,
  /// then fails with `e`.
  void give_up(Error e);
  void start_over(const Error& why);
  /// Releases every part held so far (bounded), then calls `then`. With
  /// `again` (the keys are taken again with the same token) each is given
  /// back without the release's tombstone, which would have the token's next
  /// attempt answered GONE (docs/PROTOCOL.md, acquire).
  void release_held(std::function<void()> then, bool again = false);
  void schedule_renewal();
  /// Renews every part held; `finishing`: all are, and then it is done.
  void renew(bool finishing = false);

  MultiLock& lock_;
  std::string token_;
  WaitSpec spec_;
  std::vector<Lock*> order_;
  std::vector<Held> held_;
  std::unique_ptr<Acquirer> current_;
  // One numbering of the token's attempts for every key and every start over:
  // an Acquirer taking a key again must not number its attempts from 1 where
  // the token's earlier place or grant (not yet removed) has a higher number.
  std::shared_ptr<long> attempts_ = std::make_shared<long>(0);
  Done<Acquired> done_;
  std::function<void(const WaitProgress&)> progress_;
  Clock::time_point started_;
  Loop::TimerId renew_timer_ = 0;
  bool renewing_ = false, finished_ = false;
  bool confirm_ = false;  // every part is held: confirm after the renewal in flight
  Lifetime life_;
};

}  // namespace rlock
