#include "hold/acquirer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

#include "core/duration.h"
#include "core/log.h"
#include "core/text.h"
#include "net/subscription.h"

namespace rlock {

namespace {

// The head of the line re-checks at least this often, so a release that
// published nothing (a foreign client, an expiry) is noticed quickly.
constexpr Millis kHeadRecheck{1000};
// How soon a waiter's list is waited on again after a Cluster redirect.
constexpr Millis kMovedRetry{250};
// A wake-up list whose connection keeps failing (a server at its maxclients)
// is tried again after this, doubled with each failure in a row up to
// kListRetryDoublings times (0.25, 0.5, 1, 2 s).
constexpr Millis kListRetry{250};
constexpr int kListRetryDoublings = 3;

// Quorum mode: the most a waiter waits, at random, before it tries after a
// release or a failed vote.
constexpr Millis kRetryJitter{100};

// Grants that did not count (made on a master the sentinels no longer name,
// or whose lease ran out before it could be renewed) in a row: past this many
// the deployment is not settling, and waiting on is pointless (69).
constexpr int kMaxRegrants = 8;

}  // namespace

Acquirer::Acquirer(Lock& lock, std::string token, WaitSpec spec)
    : lock_(lock),
      token_(std::move(token)),
      spec_(std::move(spec)),
      rng_(static_cast<unsigned>(std::hash<std::string>{}(token_))) {
  if (spec_.wait && spec_.wait->count() == 0) spec_.no_wait = true;
}

Millis Acquirer::jitter(Millis most) {
  if (most.count() <= 0) return Millis(0);
  return Millis(std::uniform_int_distribution<Millis::rep>(0, most.count())(rng_));
}

// The transitions the diagram in acquirer.h draws.
bool Acquirer::allowed(Phase from, Phase to) {
  using P = Phase;
  switch (from) {
    case P::Probing:
      return to == P::OnList || to == P::OnChannel || to == P::Finished;
    case P::OnList:
      return to == P::OnChannel || to == P::Finished;
    case P::OnChannel:
      return to == P::Finished;
    case P::Finished:
      return false;
  }
  return false;
}

void Acquirer::enter(Phase next) {
  assert(allowed(phase_, next));
  phase_ = next;
}

Acquirer::~Acquirer() {
  life_.end();
  Loop& loop = lock_.loop();
  loop.cancel(retry_timer_);
  loop.cancel(resubscribe_timer_);
  loop.cancel(deadline_timer_);
}

void Acquirer::start(Done<Acquired> done) {
  done_ = std::move(done);
  started_ = Clock::now();
  // A free lock costs one round trip and no second connection. Taken, a
  // line's waiter has joined the line with that same attempt and waits on
  // its list (watch_list): a turn pushed before its BLPOP is there when it
  // blocks, so nothing needs trying again. Without the list (a quorum, or
  // BLPOP refused) it subscribes, then tries again (so no release can slip
  // between the two unnoticed).
  attempt();
}

bool Acquirer::joins() const {
  return !spec_.no_wait && lock_.fair();
}

void Acquirer::start_waiting() {
  bool in_line = last_ && last_->state == AcquireReply::State::Queued;
  enter(in_line ? Phase::OnList : Phase::OnChannel);
  lock_.stay();
  // Armed already when the first contact had to be retried: the wait
  // counts from the start.
  if (spec_.wait && !deadline_timer_) arm_deadline(*spec_.wait);
  if (in_line) return watch_list();
  subscribe();
}

void Acquirer::watch_list() {
  auto alive = life_.token();
  Subscription::Events ev;
  ev.message = [this, alive](const std::string& what) {
    if (!alive || finished()) return;
    log_verbose(fmt::format("woken ({})", escape_text(truncate_text(what, 32))));
    list_failures_ = 0;  // it answered: the list works again
    attempt();
  };
  ev.ready = [this, alive] {
    if (!alive || finished()) return;
    outage_over();
    // The first: the attempt that joined the line has just been answered.
    // Later ones follow a lost connection (a failover): what was pushed to
    // the old server may be gone, so the lock is checked now.
    if (!list_ready_) {
      list_ready_ = true;
      return;
    }
    attempt();
  };
  ev.failed = [this, alive](const Error& e) {
    if (!alive || finished()) return;
    log_verbose(fmt::format("wake-up list: {}", e.what()));
    if (e.kind() != ErrorKind::Unavailable) {
      // An ACL without BLPOP, or a list BLPOP cannot wait on (a foreign
      // value: WRONGTYPE, an item too large to take): its channel then, as
      // before lists. The list only wakes the waiter: its loss alone does not
      // end the wait.
      enter(Phase::OnChannel);
      std::shared_ptr<Subscription> old(std::move(sub_));
      lock_.loop().after(Millis(0), [old] {});
      return subscribe();
    }
    if (sub_ && sub_->moved()) {
      // A slot moved or migrating (a Cluster answers BLPOP with MOVED or
      // ASK): no outage, however long it lasts; the re-checks go on meanwhile.
      lock_.loop().cancel(resubscribe_timer_);
      resubscribe_timer_ = lock_.loop().after(kMovedRetry, [this, alive] {
        if (!alive || finished()) return;
        resubscribe_timer_ = 0;
        sub_->start();
      });
      return;
    }
    // Lost before its first ready() too: the next one re-checks (a restart
    // may have lost what was pushed).
    list_ready_ = true;
    // The outage's backoff restarts whenever a re-check gets through, and a
    // server at its maxclients lets the connection in before it refuses the
    // BLPOP: the list's own failures in a row back off too.
    Millis at_least = kListRetry * (1 << std::min(list_failures_++, kListRetryDoublings));
    if (ride_out(
            e, resubscribe_timer_, [this] { sub_->start(); }, at_least))
      return;
    fail_with_cleanup(e);
  };
  sub_ = std::make_unique<Subscription>(*lock_.clients().front(),
                                        lock_.names().waiter_channel(token_), std::move(ev));
  sub_->use_list(lock_.names().waiter_list(token_));
  sub_->start();
}

void Acquirer::arm_deadline(Millis after) {
  auto alive = life_.token();
  Loop& loop = lock_.loop();
  {
    wait_deadline_ = later(Clock::now(), after);
    deadline_timer_ = loop.after(after, [this, alive] {
      if (!alive || finished()) return;
      deadline_timer_ = 0;
      std::string who = last_ ? " (" + holder_text(*last_) + ")" : "";
      // Still unable to reach Redis (fewer than a majority of a quorum's
      // masters): that is the reason, 69, not "someone else has it".
      Error e = outage_error_ && outage_since_
                    ? Error(ErrorKind::Unavailable,
                            fmt::format("gave up waiting for '{}' after {}: {}", lock_.names().key,
                                        format_duration(*spec_.wait), outage_error_->what()))
                    : Error(ErrorKind::NotAcquired,
                            fmt::format("gave up waiting for '{}' after {}{}", lock_.names().key,
                                        format_duration(*spec_.wait), who));
      cancel(life_.guard([this, e] { done_(Outcome<Acquired>{e, {}}); }));
    });
  }
}

void Acquirer::subscribe() {
  if (!lock_.fair()) return listen_for_releases();
  auto alive = life_.token();
  Subscription::Events ev;
  ev.message = [this, alive](const std::string&) {
    if (!alive || finished()) return;
    log_verbose(fmt::format("woken on {}", sub_->channel()));
    attempt();
  };
  ev.ready = [this, alive] {
    if (!alive || finished()) return;
    outage_over();
    attempt();  // nothing can have been missed before this
  };
  ev.failed = [this, alive](const Error& e) {
    if (!alive || finished()) return;
    log_verbose(fmt::format("wake-up channel: {}", e.what()));
    if (ride_out(e, resubscribe_timer_, [this] { sub_->start(); })) return;
    fail_with_cleanup(e);
  };
  sub_ = std::make_unique<Subscription>(*lock_.clients().front(),
                                        lock_.names().waiter_channel(token_), std::move(ev));
  // A server that said it is no Cluster node publishes with PUBLISH only.
  sub_->classic_only(last_ && last_->cluster == 0);
  sub_->start();
}

// A quorum has no line: a waiter listens for releases on every master (any
// release may free the lock) and tries again when it hears one, or when its
// re-check comes, after a random pause so that waiters woken together do not
// split the masters' votes forever (the Redlock paper's randomised retry).
void Acquirer::listen_for_releases() {
  auto alive = life_.token();
  Subscription::Events ev;
  ev.message = [this, alive](const std::string&) {
    if (!alive || finished()) return;
    log_verbose(fmt::format("heard a release on {}", lock_.names().channel));
    // Waiters of several masters spread out (split votes); on one deployment
    // (another tool's layout) the first SET NX wins anyway.
    schedule(lock_.clients().size() > 1 ? jitter(kRetryJitter) : Millis(0));
  };
  ev.ready = [this, alive] {
    if (!alive || finished()) return;
    attempt();  // nothing can have been missed before this
  };
  ev.failed = [this, alive](const Error& e) {
    if (!alive || finished()) return;
    log_verbose(fmt::format("release channel: {}", e.what()));
    // An outage is ridden out by the attempts (and the subscription comes
    // back by itself). A refusal is not going away, but a minority of
    // masters that refuse (an ACL without the channel) only costs their
    // wake-ups: the re-checks still come. Once a majority refuses, the
    // release would be refused too: say so now.
    if (e.kind() == ErrorKind::Unavailable) return;
    size_t n = lock_.clients().size();
    if (++refusals_ > n - (n / 2 + 1)) return fail_with_cleanup(e);
    WaitProgress p;
    p.kind = WaitProgress::Kind::Warning;
    p.started = started_;
    p.note = fmt::format("{}; waiting without its wake-ups", e.what());
    if (progress_) progress_(p);
  };
  subs_ = std::make_unique<Subscriptions>(lock_.clients(), lock_.names().channel, std::move(ev));
  subs_->start();
}

void Acquirer::attempt() {
  if (finished()) return;
  if (in_flight_) {
    again_ = true;
    return;
  }
  lock_.loop().cancel(retry_timer_);
  retry_timer_ = 0;
  in_flight_ = true;
  sent_ = Clock::now();
  lock_.acquire(token_, spec_.ttl, joins(), spec_.info, ++*attempts_,
                life_.guard([this](Outcome<AcquireReply> o) { on_reply(std::move(o)); }));
}

void Acquirer::on_reply(Outcome<AcquireReply> o) {
  in_flight_ = false;
  if (finished()) return;
  if (o.error) {
    // The attempt may have reached the server before the failure: clean up.
    if (retry_first_contact(*o.error)) return;
    if (ride_out(*o.error, retry_timer_, [this] { attempt(); })) return;
    // A refusal (an ACL taking a command the acquire script needs, while the
    // waiter waits in line) leaves the line too, where leaving is allowed: a
    // dead place would hold up everyone behind it for the rest of its lease.
    if (o.error->kind() == ErrorKind::Unavailable || o.error->kind() == ErrorKind::Protocol ||
        o.error->kind() == ErrorKind::Permission)
      return fail_with_cleanup(*o.error);
    return finish({o.error, {}});
  }
  outage_over();
  const AcquireReply& a = o.value;
  if (a.state == AcquireReply::State::Acquired) {
    if (spec_.sync_replicas == 0) return confirm(a);
    // Not a grant until the replicas confirm it: a failover to one that had
    // not seen it would give the lock away again.
    auto alive = life_.token();
    Millis budget = std::max(Millis(1), std::min(lock_.command_timeout(), a.ttl / 2));
    return lock_.confirm_replicas(spec_.sync_replicas, budget, "the lease",
                                  [this, alive, a](Outcome<bool> o) {
                                    if (!alive || finished()) return;
                                    if (o.error) return fail_with_cleanup(*o.error);
                                    confirm(a);
                                  });
  }
  regrants_ = 0;
  if (a.state == AcquireReply::State::Done) {
    // run --done-for: the job was done for this period; waiting on is pointless.
    Error e(ErrorKind::NotAcquired, fmt::format("'{}' was already done for this period: {}",
                                                lock_.names().key, holder_text(a)));
    if (phase_ == Phase::Probing) return finish({e, {}});
    return fail_with_cleanup(e);  // leaves the line (the script left it already)
  }
  if (a.state == AcquireReply::State::Gone)
    // An earlier attempt of this token was granted and then given back (a
    // release with the token, or a break) before its reply came: never
    // granted again (docs/PROTOCOL.md, acquire: GONE).
    return finish(
        {Error(ErrorKind::NotAcquired,
               fmt::format("'{}' was granted to this attempt and {} before the grant "
                           "was heard of",
                           lock_.names().key, a.broken ? "broken" : "released with its token")),
         {}});
  if (a.state == AcquireReply::State::Superseded)
    return fail_with_cleanup(
        Error(ErrorKind::NotAcquired,
              fmt::format("no longer waiting for '{}': superseded by {} (--supersede)",
                          lock_.names().key, escape_text(truncate_text(a.by, kMaxLabel))),
              -1, Cause::Superseded));
  if (a.state == AcquireReply::State::Full)
    return fail_with_cleanup(
        Error(ErrorKind::NotAcquired,
              fmt::format("'{}' has {} or more waiters already (--max-waiters {}); it is {}",
                          lock_.names().key, lock_.line_policy().max_waiters,
                          lock_.line_policy().max_waiters, holder_text(a))));
  if (a.state == AcquireReply::State::Taken && !spec_.no_wait && phase_ == Phase::Probing) {
    last_ = a;
    return start_waiting();
  }
  if (a.state == AcquireReply::State::Queued && phase_ == Phase::Probing) {
    // Joined the line with the first attempt: wait on the list from now.
    last_ = a;
    start_waiting();
  } else if (a.state == AcquireReply::State::Queued && phase_ == Phase::OnList) {
    sub_->rearm();  // woken, and still not its turn: wait for the next notice
  }
  if (a.state == AcquireReply::State::Taken && spec_.no_wait) {
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
  // Without a line (a quorum) every waiter re-checks like the head of one,
  // with a random part.
  bool turn_near = !lock_.fair() || (a.position >= 0 && a.position < std::max<long>(a.free, 1));
  Millis delay = kQueueLease / 3;
  if (turn_near) {
    delay = kHeadRecheck;
    for (auto& h : a.holders)
      if (h.ttl_left.count() >= 0) delay = std::min(delay, h.ttl_left + Millis(5));
    delay = std::max(delay, Millis(20));
  }
  schedule(lock_.fair() || lock_.clients().size() == 1 ? delay : delay + jitter(kRetryJitter));
}

// Under Sentinel a grant counts only once the sentinels, asked after it was
// made, still name the master that made it (Lock::confirm_master): a planned
// failover promotes a replica while the old master still takes writes, and a
// grant there would be made a second time on the new one. A void grant is
// released where it was made, and the waiter goes on, on the master the
// sentinels name, within its --wait (its place in the old master's line is
// lost with that master anyway).
void Acquirer::confirm(const AcquireReply& a) {
  auto alive = life_.token();
  Millis bound = std::min(lock_.command_timeout(), kCleanupBound);
  lock_.confirm_master(
      token_, a,
      [this, alive, a, bound](Outcome<bool> o) {
        if (!alive || finished()) return;
        if (o.error) {
          // Nobody to ask whether it stands: not a grant (yet).
          log_verbose(fmt::format("could not confirm the grant of '{}' with the sentinels: {}",
                                  lock_.names().key, o.error->what()));
          lock_.give_back_grant(
              token_, [](Outcome<ReleaseReply>) {}, bound);
          if (ride_out(*o.error, retry_timer_, [this] { attempt(); })) return;
          return fail_with_cleanup(*o.error);
        }
        if (o.value) return renew_if_late(a);
        log_verbose(
            fmt::format("'{}' was granted on {}, which the sentinels no longer name as "
                        "the master: released there; trying again on the one they name",
                        lock_.names().key, escape_text(a.node)));
        regrant(Error(ErrorKind::Unavailable,
                      fmt::format("'{}' was granted {} times on a master the sentinels no longer "
                                  "name: the deployment does not settle",
                                  lock_.names().key, kMaxRegrants)));
      },
      bound);
}

// A grant whose reply came late (a slow network or server, a failover) may
// have little of its lease left: less than its holder needs to renew it in
// time, and `run` would lose it before the command could start. Such a grant
// is renewed first (token-checked); only if that fails is it not a grant.
void Acquirer::renew_if_late(const AcquireReply& a) {
  Clock::time_point now = Clock::now();
  if (now < later(sent_, a.ttl / 3)) return granted(a, sent_, a.ttl);
  log_verbose(
      fmt::format("'{}' was granted late ({} of its {} lease left): renewing it before it counts",
                  lock_.names().key,
                  format_duration(std::max(
                      Millis(0), std::chrono::duration_cast<Millis>(later(sent_, a.ttl) - now))),
                  format_duration(a.ttl)));
  auto alive = life_.token();
  Millis timeout = std::max(Millis(1), std::min(lock_.command_timeout(), a.ttl / 2));
  lock_.extend(
      token_, a.ttl,
      [this, alive, a, now, timeout](Outcome<ExtendReply> o) {
        if (!alive || finished()) return;
        if (o.error) {
          if (ride_out(*o.error, retry_timer_, [this] { attempt(); })) return;
          // A renewal bounded by half the lease that timed out: on this
          // network the lease, not the server, is what is too short.
          if (o.error->cause() == Cause::Timeout && timeout < lock_.command_timeout())
            return fail_with_cleanup(o.error->reworded(fmt::format(
                "{}: the lease (--ttl {}) is too short for this network: a grant must be "
                "renewed within half of it",
                o.error->what(), format_duration(a.ttl))));
          return fail_with_cleanup(*o.error);
        }
        if (!o.value.held)
          return regrant(Error(ErrorKind::NotAcquired,
                               fmt::format("'{}' was granted, but its lease ran out before it "
                                           "could be renewed",
                                           lock_.names().key)));
        Millis ttl = std::clamp(o.value.ttl, Millis(0), a.ttl);
        if (spec_.sync_replicas == 0) return granted(a, now, ttl);
        lock_.confirm_replicas(spec_.sync_replicas, timeout, "the lease",
                               [this, alive, a, now, ttl](Outcome<bool> c) {
                                 if (!alive || finished()) return;
                                 if (c.error) return fail_with_cleanup(*c.error);
                                 granted(a, now, ttl);
                               });
      },
      timeout);
}

// A grant that did not count: tried again at once (a waiter keeps its
// --wait), unless that keeps happening.
void Acquirer::regrant(const Error& why) {
  if (++regrants_ > kMaxRegrants) return fail_with_cleanup(why);
  attempt();
}

void Acquirer::granted(const AcquireReply& a, Clock::time_point sent, Millis ttl) {
  if (waited_) report(WaitProgress::Kind::Acquired, &a, a.fence);
  Acquired got{a.fence, ttl, sent};
  got.slot = a.slot;
  got.slot_name = a.slot_name;
  finish({std::nullopt, got});
}

void Acquirer::schedule(Millis delay) {
  lock_.loop().cancel(retry_timer_);
  auto alive = life_.token();
  retry_timer_ = lock_.loop().after(delay, [this, alive] {
    if (!alive) return;
    retry_timer_ = 0;
    attempt();
  });
}

void Acquirer::finish(Outcome<Acquired> o) {
  if (finished()) return;
  stop();
  done_(std::move(o));
}

bool Acquirer::ride_out(const Error& e, Loop::TimerId& timer, std::function<void()> retry,
                        Millis at_least) {
  // Only once waiting: a first contact that fails is reported at once (69).
  if (phase_ == Phase::Probing || spec_.no_wait || e.kind() != ErrorKind::Unavailable) return false;
  auto now = Clock::now();
  if (!outage_since_) outage_since_ = now;
  outage_error_ = e;
  auto down = std::chrono::duration_cast<Millis>(now - *outage_since_);
  if (down >= kOutageBudget) return false;
  if (!outage_told_ && down >= kOutageNotice) report_outage(e);
  Millis backoff = std::max(at_least, std::clamp(down / 4, Millis(250), Millis(2000)));
  log_verbose(fmt::format("Redis unavailable while waiting ({}); retrying in {}", e.what(),
                          format_duration(backoff)));
  auto alive = life_.token();
  lock_.loop().cancel(timer);
  timer = lock_.loop().after(backoff, [this, alive, &timer, retry = std::move(retry)] {
    if (!alive || finished()) return;
    timer = 0;
    retry();
  });
  return true;
}

bool Acquirer::retry_first_contact(const Error& e) {
  // A first contact that fails is reported at once (a URL with a typo), but
  // with an explicit --wait one that may pass by itself (a reset, no answer
  // in time: a server restarting, a Cluster failing over) is tried again
  // until the wait runs out (its deadline then says why: 69). Never a
  // refusal, a name, TLS, a password or a protocol: those do not pass.
  if (phase_ != Phase::Probing || !spec_.wait || spec_.no_wait || !e.transient()) return false;
  auto now = Clock::now();
  auto elapsed = std::chrono::duration_cast<Millis>(now - started_);
  if (elapsed >= *spec_.wait) return false;
  if (!outage_since_) {
    outage_since_ = now;
    log_info(fmt::format("{}; retrying until --wait runs out", e.what()));
  }
  outage_error_ = e;
  if (!deadline_timer_) arm_deadline(*spec_.wait - elapsed);
  auto down = std::chrono::duration_cast<Millis>(now - *outage_since_);
  Millis backoff = std::clamp(down / 4, Millis(250), Millis(2000));
  log_verbose(
      fmt::format("first contact failed ({}); retrying in {}", e.what(), format_duration(backoff)));
  schedule(backoff);
  return true;
}

void Acquirer::stop() {
  enter(Phase::Finished);
  Loop& loop = lock_.loop();
  loop.cancel(retry_timer_);
  loop.cancel(resubscribe_timer_);
  loop.cancel(deadline_timer_);
  report(WaitProgress::Kind::Stopped);
  // Not destroyed here: this may run inside one of their own callbacks.
  if (sub_) {
    std::shared_ptr<Subscription> sub(std::move(sub_));
    loop.after(Millis(0), [sub] {});
  }
  if (subs_) {
    std::shared_ptr<Subscriptions> subs(std::move(subs_));
    loop.after(Millis(0), [subs] {});
  }
}

void Acquirer::fail_with_cleanup(Error e) {
  if (finished()) return;
  cancel(life_.guard([this, e] { done_(Outcome<Acquired>{e, {}}); }));
}

void Acquirer::cancel(std::function<void()> done) {
  if (finished()) return;
  stop();
  // Release too: an attempt in flight may have been granted after all. Both
  // are no-ops for a token that holds and waits for nothing. They are sent,
  // but waited for only briefly: giving up on a server that does not answer
  // must not take a second --command-timeout (a timed-out attempt's own undo already
  // follows it on its connection; anything left expires with its lease).
  Millis bound = std::min(lock_.command_timeout(), kCleanupBound);
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
  return spec_.describe ? spec_.describe(a, lock_.limit()) : "held";
}

void Acquirer::report_outage(const Error& e) {
  outage_told_ = true;
  if (!progress_) return;
  WaitProgress p;
  p.kind = WaitProgress::Kind::Outage;
  p.note = e.what();
  p.started = started_;
  p.replied = Clock::now();
  p.since = *outage_since_;
  // ride_out gives up at its first failure past the budget; --wait may end it sooner.
  p.until = later(p.since, kOutageBudget);
  p.until_wait = wait_deadline_ && *wait_deadline_ <= p.until;
  if (p.until_wait) p.until = *wait_deadline_;
  progress_(p);
}

void Acquirer::outage_over() {
  if (outage_told_ && outage_since_ && progress_) {
    WaitProgress p;
    p.kind = WaitProgress::Kind::Reconnected;
    p.started = started_;
    p.replied = Clock::now();
    p.since = *outage_since_;
    progress_(p);
  }
  outage_told_ = false;
  outage_since_.reset();
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
