// The lease's watchdog, one for `run` and the `acquire --while-pid` keeper:
// renews every TTL/3, retries a failed renewal until the deadline (less a
// safety margin), counts a renewal only once replicas confirm it
// (--sync-replicas), and listens on the lock's release channel so that a
// `break` (or a release with the token) is heard within about a second
// instead of at the next renewal; so is a stop request of a newer job
// (--cancel-in-progress).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/lifetime.h"
#include "hold/acquirer.h"
#include "lock/lock.h"
#include "net/subscription.h"

namespace rlock {

class Watchdog {
 public:
  struct Events {
    /// The lease is lost (renewal found another token or none), or could not
    /// be renewed before its deadline: why, for people. Reported once; the
    /// watchdog has stopped by then.
    std::function<void(const std::string& why)> lost;
    /// Optional. A release with the token was heard on the channel (or,
    /// under another tool's layout, a renewal found its tombstone) and the
    /// lease is gone: its owner released it (the keeper's case). Reported
    /// instead of `lost`, once; the watchdog has stopped. Without it, such a
    /// release is a loss like any other (`run`: only the run holds its token).
    std::function<void()> released;
    /// Optional. A newer superseding job asked this holder, which asked to
    /// supersede, to stop its command (--cancel-in-progress): who that is.
    /// Heard on the channel (then checked by a renewal) or found by a renewal;
    /// reported once. The watchdog goes on renewing until stop().
    std::function<void(const std::string& by)> cancelled;
    /// Optional. A renewal succeeded: the lease now lasts until deadline().
    std::function<void()> renewed;
  };

  /// `acquired.ttl` is the lease length (already bounded by what was asked).
  Watchdog(Lock& lock, std::string token, const Acquired& acquired, int sync_replicas, Events ev);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// Arms the deadline and the first renewal (at acquisition + TTL/3).
  void start();
  /// Subscribes to the release channel of every key (once; again by itself
  /// after an outage). `settled` (optional) runs once every deployment of
  /// every key has answered the first subscription, subscribed or refused.
  void listen(std::function<void()> settled = {});
  /// Renews now (after a renewal in flight, if there is one).
  void renew();
  /// Woken past the deadline (a SIGCONT after a stop): one renewal, given a
  /// whole command's time, decides whether the token still holds the lock;
  /// `decided` runs once it has (after `lost`, if it is lost).
  void check_late(std::function<void()> decided);
  /// Nothing more is renewed or reported; the subscription ends.
  void stop();

  /// The time past which the lease counts as lost if it was not renewed.
  Clock::time_point lost_at() const;
  /// When the lease ends unless renewed (lost_at() is a safety margin earlier).
  Clock::time_point deadline() const { return deadline_; }
  /// Several keys (--and): the keys a reported loss is about, those found not
  /// held or whose last renewal failed. Empty: every key (or the one key).
  const std::vector<std::string>& lost_keys() const { return lost_keys_; }
  bool stopped() const { return stopped_; }

 private:
  Loop& loop() { return lock_.loop(); }
  void arm_lost_timer();
  void schedule_renewal(Clock::time_point when);
  void renewal_failed(const std::string& why);
  void renewed(Clock::time_point sent, Clock::time_point deadline);
  void not_held();
  void report_lost(const std::string& why);
  void drop_subscription();

  Lock& lock_;
  std::string token_;
  Acquired acquired_;
  int sync_replicas_;
  Events ev_;
  Clock::time_point deadline_;
  std::vector<std::unique_ptr<Subscriptions>> subs_;  // one per key (`--and`)
  Loop::TimerId renew_timer_ = 0, lost_timer_ = 0;
  bool renewing_ = false, recheck_ = false, stopped_ = false, cancel_reported_ = false;
  // Woken well past the deadline (kLate in watchdog.cc): the next renewal
  // decides (late_check_), and the one in flight was sent so (late_renewal_).
  bool late_check_ = false, late_renewal_ = false;
  std::function<void()> late_decided_;  // check_late()
  // The keys (parts) on whose channel a release with the token was heard:
  // released only once it was heard for every one (`--and`: one key
  // released alone is a loss of the lock).
  std::vector<bool> heard_token_;
  std::vector<std::string> lost_keys_;  // lost_keys()
  bool heard_token_everywhere() const;
  // What the channel said (heard_: why, for people), and how many messages
  // were heard: a renewal sent before the last one cannot clear it.
  std::string last_renew_error_, heard_;
  unsigned heard_count_ = 0;
  Lifetime life_;
};

}  // namespace rlock
