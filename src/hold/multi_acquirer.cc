#include "hold/multi_acquirer.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/duration.h"
#include "core/log.h"
#include "core/text.h"

namespace rlock {

MultiAcquirer::MultiAcquirer(MultiLock& lock, std::string token, WaitSpec spec)
    : lock_(lock), token_(std::move(token)), spec_(std::move(spec)), order_(lock.in_order()) {}

MultiAcquirer::~MultiAcquirer() {
  life_.end();
  lock_.loop().cancel(renew_timer_);
}

void MultiAcquirer::start(Done<Acquired> done) {
  done_ = std::move(done);
  started_ = Clock::now();
  next();
}

void MultiAcquirer::next() {
  if (held_.size() == order_.size()) {
    // Keys held while it took the others may have been lost meanwhile (a
    // server restarted without its data; a renewal may not have noticed yet):
    // every key is renewed once more, and confirmed, before the command may
    // start.
    if (held_.size() > 1) {
      if (renewing_) {
        confirm_ = true;
        return;
      }
      return renew(true);
    }
    finish_all();
    return;
  }
  take_next();
}

void MultiAcquirer::finish_all() {
  {
    // Every part: the fences in the user's order, the lease of the one that
    // ends first.
    finished_ = true;
    lock_.loop().cancel(renew_timer_);
    // The run renews every part by the shortest TTL, first when the lease
    // that ends first needs it: as if all were sent that TTL before it ends.
    Acquired all;
    all.ttl = held_.front().acquired.ttl;
    Clock::time_point end = held_.front().deadline;
    for (auto& h : held_) {
      all.ttl = std::min(all.ttl, h.acquired.ttl);
      end = std::min(end, h.deadline);
    }
    all.sent = later(end, -all.ttl);
    for (Lock* p : lock_.parts())
      for (auto& h : held_)
        if (h.part == p) all.fences.push_back(h.acquired.fence);
    all.fence = all.fences.front();
    return done_({std::nullopt, all});
  }
}

void MultiAcquirer::take_next() {
  Lock* part = order_[held_.size()];
  WaitSpec spec = spec_;
  if (spec.wait) {
    // One --wait for all of them.
    auto spent = std::chrono::duration_cast<Millis>(Clock::now() - started_);
    spec.wait = std::max(Millis(0), *spec.wait - spent);
    if (spec.wait->count() == 0) spec.no_wait = true;
  }
  // A key taken before the last is held on a waiter's place lease until every
  // key is held, then renewed to --ttl (renew(true)): a run killed while it
  // waits for a later key (kill -9, a crashed host) blocks the keys it holds
  // no longer than a dead waiter blocks a line (man page, "WAITING AND
  // FAIRNESS"), not for its whole --ttl.
  if (held_.size() + 1 < order_.size()) spec.ttl = std::min(spec.ttl, kQueueLease);
  if (!held_.empty())
    log_verbose(fmt::format("holding {} of {} keys; taking '{}'", held_.size(), order_.size(),
                            part->names().key));
  current_ = std::make_unique<Acquirer>(*part, token_, spec);
  current_->number_attempts_with(attempts_);
  auto alive = life_.token();
  std::string key = part->names().key;
  current_->on_progress([this, alive, key](const WaitProgress& p) {
    if (!alive || !progress_) return;
    WaitProgress q = p;
    q.key = key;
    progress_(q);
  });
  current_->start([this, alive](Outcome<Acquired> o) {
    if (!alive || finished_) return;
    if (o.error) return fail(*o.error);
    got(o.value);
  });
}

void MultiAcquirer::got(Acquired a) {
  Lock* part = order_[held_.size()];
  held_.push_back(Held{part, a, later(a.sent, a.ttl), later(a.sent, a.ttl / 3)});
  // The Acquirer is done; it may still be on the stack.
  std::shared_ptr<Acquirer> done_with(std::move(current_));
  lock_.loop().after(Millis(0), [done_with] {});
  schedule_renewal();
  next();
}

void MultiAcquirer::fail(Error e) {
  if (finished_) return;
  finished_ = true;
  lock_.loop().cancel(renew_timer_);
  release_held(life_.guard([this, e] { done_({e, {}}); }));
}

// A key held while waiting for the next was lost (broken, expired, its server
// restarted without its data, or renewals failed until its deadline): no
// command has run, so nothing was done without it. Everything goes back and
// the keys are taken again from the first, within what is left of --wait.
void MultiAcquirer::start_over(const Error& why) {
  if (finished_) return;
  log_info(fmt::format("{}: taking the keys again from the first", why.what()));
  lock_.loop().cancel(renew_timer_);
  auto alive = life_.token();
  auto again = [this, alive] {
    if (!alive || finished_) return;
    release_held(
        [this, alive] {
          if (!alive || finished_) return;
          held_.clear();
          confirm_ = false;
          next();
        },
        true);
  };
  if (!current_) return again();
  // The Acquirer leaves its line; it may be on the stack.
  std::shared_ptr<Acquirer> leaving(std::move(current_));
  leaving->cancel([leaving, again] { again(); });
}

void MultiAcquirer::give_up(Error e) {
  if (finished_) return;
  cancel(life_.guard([this, e] { done_({e, {}}); }));
}

void MultiAcquirer::cancel(std::function<void()> done) {
  if (finished_) return;
  finished_ = true;
  lock_.loop().cancel(renew_timer_);
  auto then = life_.guard([this, done = std::move(done)] { release_held(done); });
  if (current_)
    current_->cancel(then);
  else
    then();
}

void MultiAcquirer::release_held(std::function<void()> then, bool again) {
  if (held_.empty()) return then();
  Millis bound = std::min(lock_.command_timeout(), kCleanupBound);
  auto pending = std::make_shared<size_t>(held_.size());
  auto one_done = [pending, then](Outcome<ReleaseReply>) {
    if (--*pending == 0) then();
  };
  for (auto& h : held_) {
    if (again)
      h.part->give_back_grant(token_, one_done, bound);
    else
      h.part->release(token_, Millis(0), one_done, bound);
  }
}

// ---- renewing what is held while waiting for the rest ----

void MultiAcquirer::schedule_renewal() {
  if (held_.empty() || finished_) return;
  Clock::time_point when = held_.front().next;
  for (auto& h : held_) when = std::min(when, h.next);
  lock_.loop().cancel(renew_timer_);
  auto alive = life_.token();
  renew_timer_ = lock_.loop().at(when, [this, alive] {
    if (!alive) return;
    renew_timer_ = 0;
    renew();
  });
}

void MultiAcquirer::renew(bool finishing) {
  if (finished_ || renewing_) return;
  renewing_ = true;
  auto alive = life_.token();
  auto pending = std::make_shared<size_t>(held_.size());
  auto failure = std::make_shared<std::optional<Error>>();
  auto unanswered = std::make_shared<bool>(false);  // a part to ask again (its lease has time)
  auto superseded = std::make_shared<std::optional<Error>>();  // a newer --supersede job came
  for (size_t i = 0; i < held_.size(); ++i) {
    Held& h = held_[i];
    // Finishing: every key is held, and each is renewed to --ttl at last.
    const Millis ttl = finishing ? spec_.ttl : h.acquired.ttl;
    Clock::time_point sent = Clock::now();
    Clock::time_point lost_at = later(h.deadline, -safety_margin(h.acquired.ttl));
    Millis timeout = std::max(
        Millis(10),
        std::min(lock_.command_timeout(), std::chrono::duration_cast<Millis>(lost_at - sent)));
    h.part->extend(
        token_, ttl,
        [this, alive, i, ttl, sent, lost_at, pending, failure, unanswered, superseded,
         finishing](Outcome<ExtendReply> o) {
          if (!alive || finished_) return;
          Held& h = held_[i];
          Millis retry = std::min(Millis(250), h.acquired.ttl / 10);
          if (!o.error && o.value.held) {
            h.acquired.ttl = ttl;
            h.deadline = later(sent, std::clamp(o.value.ttl, Millis(0), ttl));
            h.next = later(sent, ttl / 3);
            // Latest wins in every key (--supersede, docs/GUIDE.md "CI policies"): a
            // newer superseding job joined the line of a key this one holds.
            if (o.value.superseded_by && !*superseded)
              *superseded =
                  Error(ErrorKind::NotAcquired,
                        fmt::format("no longer waiting for '{}': superseded by {} (--supersede)",
                                    h.part->names().key,
                                    escape_text(truncate_text(*o.value.superseded_by, kMaxLabel))),
                        -1, Cause::Superseded);
          } else if (!o.error) {
            *failure = Error(ErrorKind::NotAcquired,
                             fmt::format("lost '{}' (broken or expired) while waiting for the "
                                         "other keys",
                                         h.part->names().key));
          } else if (Clock::now() + retry >= lost_at) {
            *failure =
                Error(ErrorKind::Unavailable,
                      fmt::format("could not renew '{}' while waiting for the other keys: {}",
                                  h.part->names().key, o.error->what()));
          } else {
            h.next = later(Clock::now(), retry);  // its lease still has time
            *unanswered = true;
          }
          if (--*pending > 0) return;
          renewing_ = false;
          // Nothing runs: every key goes back, the line it waits in included.
          if (*superseded) return give_up(**superseded);
          if (*failure) return start_over(**failure);
          if (confirm_) {
            // All are held now; this round may have started before a loss.
            confirm_ = false;
            return renew(true);
          }
          if (finishing && *unanswered) {
            // The command starts only once every key is confirmed: ask again.
            auto again = life_.token();
            renew_timer_ = lock_.loop().after(
                std::min(Millis(250), held_.front().acquired.ttl / 10), [this, again] {
                  if (!again) return;
                  renew_timer_ = 0;
                  renew(true);
                });
            return;
          }
          if (finishing) return finish_all();
          schedule_renewal();
        },
        timeout);
  }
}

std::unique_ptr<Acquisition> make_acquisition(Lock& lock, std::string token, WaitSpec spec) {
  if (auto* m = dynamic_cast<MultiLock*>(&lock))
    return std::make_unique<MultiAcquirer>(*m, std::move(token), std::move(spec));
  return std::make_unique<Acquirer>(lock, std::move(token), std::move(spec));
}

}  // namespace rlock
