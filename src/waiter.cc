#include "waiter.h"

#include <fmt/format.h>

#include <algorithm>

#include "duration.h"
#include "output.h"
#include "subscription.h"

namespace rlock {

namespace {

// The head of the line re-checks at least this often, so a release that
// published nothing (a foreign client, an expiry) is noticed quickly.
constexpr Millis kHeadRecheck{1000};

}  // namespace

Acquirer::Acquirer(Lock& lock, std::string token, WaitSpec spec)
    : lock_(lock), token_(std::move(token)), spec_(std::move(spec)) {
  if (spec_.wait && spec_.wait->count() == 0) spec_.no_wait = true;
}

Acquirer::~Acquirer() {
  *alive_ = false;
  Loop& loop = lock_.client().loop();
  loop.cancel(retry_timer_);
  loop.cancel(deadline_timer_);
}

void Acquirer::start(Done<Acquired> done) {
  done_ = std::move(done);
  started_ = Clock::now();
  // First one plain try: a free lock costs one round trip and no second
  // connection. Only if it is taken do we subscribe, then try again (so no
  // release can slip between the two unnoticed) and join the line.
  attempt();
}

void Acquirer::start_waiting() {
  probing_ = false;
  lock_.client().stay();
  auto alive = alive_;
  Loop& loop = lock_.client().loop();
  if (spec_.wait) {
    deadline_timer_ = loop.after(*spec_.wait, [this, alive] {
      if (!*alive || finished_) return;
      deadline_timer_ = 0;
      std::string who = last_ ? " (" + holder_text(*last_) + ")" : "";
      Error e(ErrorKind::NotAcquired,
              fmt::format("gave up waiting for '{}' after {}{}", lock_.names().key,
                          format_duration(*spec_.wait), who));
      cancel([this, alive, e] {
        if (*alive) done_(Outcome<Acquired>{e, {}});
      });
    });
  }
  subscribe();
}

void Acquirer::subscribe() {
  auto alive = alive_;
  Subscription::Events ev;
  ev.message = [this, alive](const std::string&) {
    if (!*alive || finished_) return;
    log_verbose(fmt::format("woken on {}", sub_->channel()));
    attempt();
  };
  ev.ready = [this, alive] {
    if (!*alive || finished_) return;
    outage_since_.reset();
    attempt();  // nothing can have been missed before this
  };
  ev.failed = [this, alive](const Error& e) {
    if (!*alive || finished_) return;
    log_verbose(fmt::format("wake-up channel: {}", e.what()));
    if (ride_out(e, [this] { sub_->start(); })) return;
    fail_with_cleanup(e);
  };
  sub_ = std::make_unique<Subscription>(lock_.client(), lock_.names().waiter_channel(token_),
                                        std::move(ev));
  sub_->start();
}

void Acquirer::attempt() {
  if (finished_) return;
  if (in_flight_) {
    again_ = true;
    return;
  }
  lock_.client().loop().cancel(retry_timer_);
  retry_timer_ = 0;
  in_flight_ = true;
  sent_ = Clock::now();
  auto alive = alive_;
  lock_.acquire(token_, spec_.ttl, !spec_.no_wait && !probing_, spec_.info, ++attempts_,
                [this, alive](Outcome<AcquireReply> o) {
                  if (*alive) on_reply(std::move(o));
                });
}

void Acquirer::on_reply(Outcome<AcquireReply> o) {
  in_flight_ = false;
  if (finished_) return;
  if (o.error) {
    // The attempt may have reached the server before the failure: clean up.
    if (ride_out(*o.error, [this] { attempt(); })) return;
    if (o.error->kind() == ErrorKind::Unavailable || o.error->kind() == ErrorKind::Protocol)
      return fail_with_cleanup(*o.error);
    return finish({o.error, {}});
  }
  outage_since_.reset();
  const AcquireReply& a = o.value;
  if (a.state == AcquireReply::State::Acquired) {
    if (spec_.sync_replicas == 0) return granted(a);
    // Not a grant until the replicas confirm it: a failover to one that had
    // not seen it would give the lock away again.
    auto alive = alive_;
    Millis budget = std::max(Millis(1), std::min(lock_.client().command_timeout(), a.ttl / 2));
    return lock_.confirm_replicas(spec_.sync_replicas, budget, "the lease",
                                  [this, alive, a](Outcome<bool> o) {
                                    if (!*alive || finished_) return;
                                    if (o.error) return fail_with_cleanup(*o.error);
                                    granted(a);
                                  });
  }
  if (a.state == AcquireReply::State::Taken && !spec_.no_wait) {
    last_ = a;
    return start_waiting();
  }
  if (a.state == AcquireReply::State::Taken) {
    return finish({Error(ErrorKind::NotAcquired,
                         fmt::format("'{}' is {}", lock_.names().key, holder_text(a))),
                   {}});
  }
  last_ = a;
  waited_ = true;
  report(WaitProgress::Kind::Waiting, &a);
  if (again_) {
    again_ = false;
    return attempt();
  }
  bool turn_near = a.position >= 0 && a.position < std::max<long>(a.free, 1);
  Millis delay = kQueueLease / 3;
  if (turn_near) {
    delay = kHeadRecheck;
    for (auto& h : a.holders)
      if (h.ttl_left.count() >= 0) delay = std::min(delay, h.ttl_left + Millis(5));
    delay = std::max(delay, Millis(20));
  }
  schedule(delay);
}

void Acquirer::granted(const AcquireReply& a) {
  if (waited_) report(WaitProgress::Kind::Acquired, &a, a.fence);
  finish({std::nullopt, Acquired{a.fence, a.ttl, sent_}});
}

void Acquirer::schedule(Millis delay) {
  auto alive = alive_;
  retry_timer_ = lock_.client().loop().after(delay, [this, alive] {
    if (!*alive) return;
    retry_timer_ = 0;
    attempt();
  });
}

void Acquirer::finish(Outcome<Acquired> o) {
  if (finished_) return;
  stop();
  done_(std::move(o));
}

bool Acquirer::ride_out(const Error& e, std::function<void()> retry) {
  // Only once waiting: a first contact that fails is reported at once (69).
  if (probing_ || spec_.no_wait || e.kind() != ErrorKind::Unavailable) return false;
  auto now = Clock::now();
  if (!outage_since_) outage_since_ = now;
  auto down = std::chrono::duration_cast<Millis>(now - *outage_since_);
  if (down >= kOutageBudget) return false;
  Millis backoff = std::clamp(down / 4, Millis(250), Millis(2000));
  log_verbose(fmt::format("Redis unavailable while waiting ({}); retrying in {}", e.what(),
                          format_duration(backoff)));
  auto alive = alive_;
  lock_.client().loop().cancel(retry_timer_);
  retry_timer_ = lock_.client().loop().after(backoff, [this, alive, retry = std::move(retry)] {
    if (!*alive || finished_) return;
    retry_timer_ = 0;
    retry();
  });
  return true;
}

void Acquirer::stop() {
  finished_ = true;
  Loop& loop = lock_.client().loop();
  loop.cancel(retry_timer_);
  loop.cancel(deadline_timer_);
  report(WaitProgress::Kind::Stopped);
  if (sub_) {
    // Not destroyed here: this may run inside one of its own callbacks.
    std::shared_ptr<Subscription> sub(std::move(sub_));
    loop.after(Millis(0), [sub] {});
  }
}

void Acquirer::fail_with_cleanup(Error e) {
  if (finished_) return;
  auto alive = alive_;
  cancel([this, alive, e] {
    if (*alive) done_(Outcome<Acquired>{e, {}});
  });
}

void Acquirer::cancel(std::function<void()> done) {
  if (finished_) return;
  stop();
  // Release too: an attempt in flight may have been granted after all. Both
  // are no-ops for a token that holds and waits for nothing. They are sent,
  // but waited for only briefly: giving up on a server that does not answer
  // must not take a second --timeout (a timed-out attempt's own undo already
  // follows it on its connection; anything left expires with its lease).
  Millis bound = std::min(lock_.client().command_timeout(), kCleanupBound);
  auto remaining = std::make_shared<int>(2);
  auto step = [remaining, done = std::move(done)](auto&&) {
    if (--*remaining == 0) done();
  };
  lock_.release(
      token_, Millis(0), [step](Outcome<ReleaseReply> o) mutable { step(o); }, bound);
  lock_.leave(
      token_, [step](Outcome<bool> o) mutable { step(o); }, bound);
}

std::string Acquirer::holder_text(const AcquireReply& a) const {
  return describe_holders(a, lock_.limit());
}

void Acquirer::report(WaitProgress::Kind kind, const AcquireReply* a, int64_t fence) {
  if (!progress_) return;
  WaitProgress p;
  p.kind = kind;
  p.reply = a;
  p.started = started_;
  p.replied = Clock::now();
  p.fence = fence;
  progress_(p);
}

}  // namespace rlock
