#include "hold/watchdog.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/log.h"
#include "core/text.h"

namespace rlock {

namespace {

constexpr const char* kGone = "it was deleted or taken over (renewal found another token or none)";

// How late past the lease's deadline a timer must fire for the watchdog to
// count itself stopped or starved meanwhile (SIGSTOP, a suspended machine)
// rather than unable to renew: then one renewal decides whether the token
// still holds the lock (a nested run may have kept it; docs/GUIDE.md
// "Nesting"), and only a renewal that finds it gone or fails is a loss.
constexpr Millis kLate{500};

}  // namespace

Watchdog::Watchdog(Lock& lock, std::string token, const Acquired& acquired, int sync_replicas,
                   Events ev)
    : lock_(lock),
      token_(std::move(token)),
      acquired_(acquired),
      sync_replicas_(sync_replicas),
      ev_(std::move(ev)),
      deadline_(later(acquired.sent, acquired.ttl)) {}

Watchdog::~Watchdog() {
  life_.end();
  loop().cancel(renew_timer_);
  loop().cancel(lost_timer_);
}

Clock::time_point Watchdog::lost_at() const {
  return later(deadline_, -safety_margin(acquired_.ttl));
}

void Watchdog::start() {
  arm_lost_timer();
  schedule_renewal(later(acquired_.sent, acquired_.ttl / 3));
}

void Watchdog::check_late(std::function<void()> decided) {
  if (stopped_) return decided();
  late_decided_ = std::move(decided);
  late_check_ = true;
  if (!renewing_) renew();  // else the renewal in flight decides (renewal_failed)
}

void Watchdog::stop() {
  stopped_ = true;
  late_decided_ = {};
  loop().cancel(renew_timer_);
  loop().cancel(lost_timer_);
  renew_timer_ = lost_timer_ = 0;
  drop_subscription();
}

void Watchdog::arm_lost_timer() {
  loop().cancel(lost_timer_);
  lost_timer_ = loop().at(lost_at(), [this] {
    lost_timer_ = 0;
    if (late_check_ || Clock::now() - lost_at() > kLate) {
      late_check_ = true;
      if (!renewing_) renew();  // else the renewal in flight decides (renewal_failed)
      return;
    }
    report_lost(fmt::format("could not renew it before its deadline ({})",
                            last_renew_error_.empty() ? "no reply" : last_renew_error_));
  });
}

void Watchdog::schedule_renewal(Clock::time_point when) {
  loop().cancel(renew_timer_);
  renew_timer_ = loop().at(when, [this] {
    renew_timer_ = 0;
    renew();
  });
}

void Watchdog::renew() {
  if (stopped_) return;
  if (renewing_) {
    recheck_ = true;  // the renewal in flight may predate what we heard
    return;
  }
  renewing_ = true;
  auto sent = Clock::now();
  auto left = std::chrono::duration_cast<Millis>(lost_at() - sent);
  // Woken well past the deadline: this renewal decides. With the command
  // stopped until it answers (check_late) it gets a whole command's time; with
  // the command running (rlock itself was starved or frozen) only the margin
  // the lease keeps for a renewal, so that a loss is never hidden for long.
  if (-left > kLate) late_check_ = true;
  late_renewal_ = late_check_;
  Millis timeout = !late_renewal_  ? std::max(Millis(10), std::min(lock_.command_timeout(), left))
                   : late_decided_ ? lock_.command_timeout()
                                   : std::min(lock_.command_timeout(),
                                              std::max(Millis(250), safety_margin(acquired_.ttl)));
  unsigned heard = heard_count_;
  auto alive = life_.token();
  lock_.extend(
      token_, acquired_.ttl,
      [this, alive, sent, timeout, heard](Outcome<ExtendReply> o) {
        if (!alive) return;
        renewing_ = false;
        if (stopped_) return;
        lost_keys_ = o.value.failed_keys;
        if (o.error) return renewal_failed(o.error->what());
        if (!o.value.held) {
          // The release's tombstone says a release with the token removed
          // it: heard or not (another tool's layout publishes no token; a
          // quorum's release reaches the masters one by one).
          if (o.value.released) {
            heard_token_.assign(std::max<size_t>(heard_token_.size(), 1), true);
            heard_ = "it was released with its token by another process";
          }
          return not_held();
        }
        // What was heard before this renewal was sent did not cost the lease.
        if (heard == heard_count_) {
          heard_.clear();
          heard_token_.assign(heard_token_.size(), false);
        }
        if (o.value.cancelled_by && ev_.cancelled && !cancel_reported_) {
          cancel_reported_ = true;
          ev_.cancelled(*o.value.cancelled_by);
          if (stopped_) return;
        }
        Clock::time_point deadline = later(sent, std::clamp(o.value.ttl, Millis(0), acquired_.ttl));
        if (sync_replicas_ == 0) return renewed(sent, deadline);
        // Renewed only once the replicas confirm it (--sync-replicas); until
        // then it is a renewal that failed, retried until the deadline.
        renewing_ = true;
        Millis budget = std::max(
            Millis(10),
            std::min(timeout, std::chrono::duration_cast<Millis>(lost_at() - Clock::now())));
        lock_.confirm_replicas(sync_replicas_, budget, "the renewal",
                               [this, alive, sent, deadline](Outcome<bool> c) {
                                 if (!alive) return;
                                 renewing_ = false;
                                 if (stopped_) return;
                                 if (c.error) return renewal_failed(c.error->what());
                                 renewed(sent, deadline);
                               });
      },
      timeout);
}

void Watchdog::renewal_failed(const std::string& why) {
  last_renew_error_ = why;
  if (late_renewal_)
    return report_lost(fmt::format("could not renew it before its deadline ({})", why));
  log_verbose(fmt::format("renewal failed: {}; retrying", last_renew_error_));
  auto retry = Clock::now() + std::min(Millis(250), acquired_.ttl / 10);
  if (retry < lost_at())
    schedule_renewal(retry);
  else if (late_check_)
    renew();  // the deadline passed while it was in flight, late: one more decides
}

void Watchdog::renewed(Clock::time_point sent, Clock::time_point deadline) {
  // A reply to a renewal sent before the freeze says nothing of now: its new
  // deadline may be past already. Ask again; that answer decides.
  if (late_check_ && !late_renewal_ &&
      later(deadline, -safety_margin(acquired_.ttl)) <= Clock::now()) {
    deadline_ = deadline;
    return renew();
  }
  if (late_check_) log_verbose("woken past the lease's deadline, the token still holds it");
  late_check_ = late_renewal_ = false;
  deadline_ = deadline;
  arm_lost_timer();
  schedule_renewal(later(sent, acquired_.ttl / 3));
  if (ev_.renewed) ev_.renewed();
  if (auto decided = std::exchange(late_decided_, {})) decided();
  if (recheck_) {
    recheck_ = false;
    renew();
  }
}

// The renewal found the lease gone. With a `released` owner, a release with
// the token is not a loss: it publishes the token before the lease goes, so
// a release that made this renewal find it gone has been heard once the
// subscription answers a PING sent now (same connection, in order).
void Watchdog::not_held() {
  std::string why = heard_.empty() ? kGone : heard_;
  if (!ev_.released) return report_lost(why);
  if (heard_token_everywhere() || subs_.empty()) {
    if (heard_token_everywhere()) {
      stop();
      return ev_.released();
    }
    return report_lost(why);
  }
  loop().cancel(renew_timer_);
  loop().cancel(lost_timer_);
  renew_timer_ = lost_timer_ = 0;
  renewing_ = true;  // nothing else is sent meanwhile
  auto alive = life_.token();
  auto left = std::make_shared<size_t>(subs_.size());
  for (auto& subs : subs_)
    subs->barrier([this, alive, why, left] {
      if (!alive || stopped_ || --*left > 0) return;
      renewing_ = false;
      if (!heard_token_everywhere()) return report_lost(heard_.empty() ? why : heard_);
      stop();
      ev_.released();
    });
}

void Watchdog::report_lost(const std::string& why) {
  if (stopped_) return;
  auto decided = std::exchange(late_decided_, {});
  stop();
  ev_.lost(why);
  if (decided) decided();
}

void Watchdog::listen(std::function<void()> settled) {
  if (stopped_ || !subs_.empty()) return;
  lock_.stay();  // and follow failovers (Sentinel)
  size_t deployments = 0;
  for (Lock* part : lock_.parts()) deployments += part->clients().size();
  auto answers = std::make_shared<size_t>(deployments);
  auto settle = [answers, settled = std::move(settled)] {
    if (*answers == 0) return;
    if (--*answers == 0 && settled) settled();
  };
  std::vector<Lock*> parts = lock_.parts();
  heard_token_.assign(parts.size(), false);
  Subscription::Events ev;
  auto message = [this](size_t part, const std::string& what) {
    // Another tool's layout publishes neither tokens nor "break" (plain: the
    // KEY; Redisson: "0"), and only once its key was released or broken: any
    // message heard while this holds may be the news of a break.
    bool layout = lock_.parts()[part]->names().layout != Layout::Rlock;
    // A newer superseding job asks the superseding holders to stop
    // (--cancel-in-progress): the renewal says whether this is one of them.
    if (!layout && what == "cancel") {
      if (!stopped_ && ev_.cancelled && !cancel_reported_ && lock_.line_policy().supersede) renew();
      return;
    }
    if (stopped_ || (!layout && what != "break" && what != token_)) return;
    ++heard_count_;
    if (what == token_) heard_token_[part] = true;
    heard_ = layout            ? "it was released or broken by another process"
             : what == "break" ? "it was broken (rlock break)"
                               : "it was released with its token by another process";
    log_verbose(fmt::format("heard on {}: {}; checking the lease",
                            lock_.parts()[part]->names().channel, escape_text(what)));
    renew();
  };
  // A break that came before this subscription (or while it was down) was
  // not heard: check the lease once now.
  ev.ready = [this, settle] {
    settle();
    renew();
  };
  ev.failed = [this, settle](const Error& e) {
    settle();
    if (e.kind() == ErrorKind::Unavailable) {
      log_verbose(fmt::format("release channel: {}; subscribing again", e.what()));
      return;
    }
    // An ACL without the channel: the release, which publishes there, will
    // be refused too. Say so now, while the lock is held.
    log_error(fmt::format(
        "warning: {}: a break will only be noticed at the next renewal, and the release "
        "will be refused too (the ACL user needs '&{}*')",
        e.what(), escape_text(lock_.names().prefix)));
  };
  for (size_t i = 0; i < parts.size(); ++i) {
    ev.message = [message, i](const std::string& what) { message(i, what); };
    subs_.push_back(
        std::make_unique<Subscriptions>(parts[i]->clients(), parts[i]->names().channel, ev));
    subs_.back()->start();
  }
}

bool Watchdog::heard_token_everywhere() const {
  return !heard_token_.empty() &&
         std::all_of(heard_token_.begin(), heard_token_.end(), [](bool b) { return b; });
}

void Watchdog::drop_subscription() {
  // Not destroyed here: this may run inside one of their own callbacks.
  for (auto& sub : subs_) {
    std::shared_ptr<Subscriptions> subs(std::move(sub));
    loop().after(Millis(0), [subs] {});
  }
  subs_.clear();
}

}  // namespace rlock
