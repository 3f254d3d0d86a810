#include "lock/multi.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/duration.h"
#include "cli/output.h"
#include "core/text.h"

namespace rlock {

MultiLock::MultiLock(std::vector<std::unique_ptr<Lock>> parts)
    : Lock(parts.front()->names(), 0), parts_(std::move(parts)) {}

std::vector<Lock*> MultiLock::parts() {
  std::vector<Lock*> out;
  for (auto& p : parts_) out.push_back(p.get());
  return out;
}

std::vector<std::string> MultiLock::keys() {
  std::vector<std::string> out;
  for (auto& p : parts_) out.push_back(p->names().key);
  return out;
}

std::vector<Lock*> MultiLock::in_order() {
  std::vector<Lock*> out = parts();
  std::sort(out.begin(), out.end(),
            [](Lock* a, Lock* b) { return a->names().lock < b->names().lock; });
  return out;
}

void MultiLock::set_line_policy(const LinePolicy& p) {
  Lock::set_line_policy(p);
  for (auto& part : parts_) part->set_line_policy(p);
}

void MultiLock::set_history(int n) {
  Lock::set_history(n);
  for (auto& p : parts_) p->set_history(n);
}

void MultiLock::set_shared(bool shared) {
  Lock::set_shared(shared);
  for (auto& p : parts_) p->set_shared(shared);
}

std::vector<Client*> MultiLock::clients() {
  std::vector<Client*> out;
  for (auto& p : parts_)
    for (Client* c : p->clients())
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  return out;
}

bool MultiLock::fair() const {
  return std::all_of(parts_.begin(), parts_.end(), [](auto& p) { return p->fair(); });
}

template <class T>
void MultiLock::each(std::function<void(Lock&, Done<T>)> op, Combine<T> combine, Done<T> done) {
  struct State {
    std::vector<Outcome<T>> outs;
    size_t pending;
    Combine<T> combine;
    Done<T> done;
  };
  auto st = std::make_shared<State>(
      State{std::vector<Outcome<T>>(parts_.size()), parts_.size(), combine, std::move(done)});
  for (size_t i = 0; i < parts_.size(); ++i) {
    op(*parts_[i], [st, i](Outcome<T> o) {
      st->outs[i] = std::move(o);
      if (--st->pending == 0) st->done(st->combine(st->outs));
    });
  }
}

void MultiLock::acquire(const std::string&, Millis, bool, const HolderInfo&, long,
                        Done<AcquireReply> done, Millis) {
  done({Error(ErrorKind::Protocol, "several keys are taken one by one (MultiAcquirer)"), {}});
}

void MultiLock::extend(const std::string& token, Millis ttl, Done<ExtendReply> done,
                       Millis timeout) {
  each<ExtendReply>(
      [=](Lock& l, Done<ExtendReply> d) { l.extend(token, ttl, std::move(d), timeout); },
      [keys = keys()](std::vector<Outcome<ExtendReply>>& outs) {
        Outcome<ExtendReply> r, lost;  // lost: not held, naming the keys found not held
        r.value.held = true;
        bool first = true;
        for (size_t i = 0; i < outs.size(); ++i) {
          auto& o = outs[i];
          if (!o.error && !o.value.held) lost.value.failed_keys.push_back(keys[i]);
          if (!lost.value.failed_keys.empty()) continue;
          if (o.error) {
            if (!r.error) r.error = o.error;
            r.value.failed_keys.push_back(keys[i]);
            continue;
          }
          r.value.ttl = first ? o.value.ttl : std::min(r.value.ttl, o.value.ttl);
          if (first) r.value.fence = o.value.fence;
          first = false;
        }
        if (!lost.value.failed_keys.empty()) return lost;
        return r;
      },
      std::move(done));
}

void MultiLock::release(const std::string& token, Millis min_hold, Done<ReleaseReply> done,
                        Millis timeout, int exit_status, Millis done_for, const std::string& lost) {
  if (done_for.count() > 0 && exit_status == 0) {
    // Done (--done-for) only if every key is still held: a run that lost one
    // of them did not do its job under the lock, and marks none done.
    extend(
        token, Millis(0),
        [this, token, min_hold, done = std::move(done), timeout,
         done_for](Outcome<ExtendReply> o) mutable {
          bool all = !o.error && o.value.held;
          release_all(token, min_hold, std::move(done), timeout, 0, all ? done_for : Millis(0), "");
        },
        timeout);
    return;
  }
  release_all(token, min_hold, std::move(done), timeout, exit_status, Millis(0), lost);
}

void MultiLock::release_all(const std::string& token, Millis min_hold, Done<ReleaseReply> done,
                            Millis timeout, int exit_status, Millis done_for,
                            const std::string& lost) {
  each<ReleaseReply>(
      [=](Lock& l, Done<ReleaseReply> d) {
        l.release(token, min_hold, std::move(d), timeout, exit_status, done_for, lost);
      },
      [keys = keys()](std::vector<Outcome<ReleaseReply>>& outs) {
        Outcome<ReleaseReply> r;
        r.value.state = ReleaseReply::State::Released;
        for (size_t i = 0; i < outs.size(); ++i) {
          auto& o = outs[i];
          if (o.error) {
            if (!r.error) r.error = o.error;
            continue;
          }
          using S = ReleaseReply::State;
          if (o.value.state == S::NotHeld) {
            r.value.state = S::NotHeld;
            r.value.lost_keys.push_back(keys[i]);
          }
          if (r.value.state == S::NotHeld) continue;
          if (o.value.state == S::KeptForMinHold || o.value.state == S::KeptAsDone) {
            if (r.value.state != S::KeptAsDone) r.value.state = o.value.state;
            r.value.left = std::max(r.value.left, o.value.left);
          }
          // Kept for the nested holds under it (the notice counts them).
          if (o.value.state == S::KeptForNested && r.value.state == S::Released) {
            r.value.state = S::KeptForNested;
            r.value.nested = std::max(r.value.nested, o.value.nested);
          }
        }
        // A loss is never hidden behind a failure to reach another part.
        if (r.value.state == ReleaseReply::State::NotHeld) r.error.reset();
        return r;
      },
      std::move(done));
}

void MultiLock::leave(const std::string& token, Done<bool> done, Millis timeout) {
  each<bool>([=](Lock& l, Done<bool> d) { l.leave(token, std::move(d), timeout); },
             [](std::vector<Outcome<bool>>& outs) {
               Outcome<bool> r;
               for (auto& o : outs) r.value = r.value || (!o.error && o.value);
               return r;
             },
             std::move(done));
}

void MultiLock::status(Done<LockStatus> done) {
  parts_.front()->status(std::move(done));
}

void MultiLock::break_lock(Done<long> done) {
  parts_.front()->break_lock(std::move(done));
}

void MultiLock::forget(Done<ForgetReply> done) {
  parts_.front()->forget(std::move(done));
}

void MultiLock::confirm_replicas(int replicas, Millis budget, const std::string& what,
                                 Done<bool> done) {
  each<bool>(
      [=](Lock& l, Done<bool> d) { l.confirm_replicas(replicas, budget, what, std::move(d)); },
      [](std::vector<Outcome<bool>>& outs) {
        Outcome<bool> r{std::nullopt, true};
        for (auto& o : outs)
          if (o.error && !r.error) r.error = o.error;
        return r;
      },
      std::move(done));
}

// ---- taking the parts one by one ----

MultiAcquirer::MultiAcquirer(MultiLock& lock, std::string token, WaitSpec spec)
    : lock_(lock), token_(std::move(token)), spec_(std::move(spec)), order_(lock.in_order()) {}

MultiAcquirer::~MultiAcquirer() {
  *alive_ = false;
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
  if (!held_.empty())
    log_verbose(fmt::format("holding {} of {} keys; taking '{}'", held_.size(), order_.size(),
                            part->names().key));
  current_ = std::make_unique<Acquirer>(*part, token_, spec);
  auto alive = alive_;
  std::string key = part->names().key;
  current_->on_progress([this, alive, key](const WaitProgress& p) {
    if (!*alive || !progress_) return;
    WaitProgress q = p;
    q.key = key;
    progress_(q);
  });
  current_->start([this, alive](Outcome<Acquired> o) {
    if (!*alive || finished_) return;
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
  auto alive = alive_;
  release_held([this, alive, e] {
    if (*alive) done_({e, {}});
  });
}

// A key held while waiting for the next was lost (broken, expired, its server
// restarted without its data, or renewals failed until its deadline): no
// command has run, so nothing was done without it. Everything goes back and
// the keys are taken again from the first, within what is left of --wait.
void MultiAcquirer::start_over(const Error& why) {
  if (finished_) return;
  log_info(fmt::format("{}: taking the keys again from the first", why.what()));
  lock_.loop().cancel(renew_timer_);
  auto alive = alive_;
  auto again = [this, alive] {
    if (!*alive || finished_) return;
    release_held([this, alive] {
      if (!*alive || finished_) return;
      held_.clear();
      confirm_ = false;
      next();
    });
  };
  if (!current_) return again();
  // The Acquirer leaves its line; it may be on the stack.
  std::shared_ptr<Acquirer> leaving(std::move(current_));
  leaving->cancel([leaving, again] { again(); });
}

void MultiAcquirer::give_up(Error e) {
  if (finished_) return;
  auto alive = alive_;
  cancel([this, alive, e] {
    if (*alive) done_({e, {}});
  });
}

void MultiAcquirer::cancel(std::function<void()> done) {
  if (finished_) return;
  finished_ = true;
  lock_.loop().cancel(renew_timer_);
  auto alive = alive_;
  auto then = [this, alive, done = std::move(done)] {
    if (*alive) release_held(done);
  };
  if (current_)
    current_->cancel(then);
  else
    then();
}

void MultiAcquirer::release_held(std::function<void()> then) {
  if (held_.empty()) return then();
  Millis bound = std::min(lock_.command_timeout(), kCleanupBound);
  auto pending = std::make_shared<size_t>(held_.size());
  for (auto& h : held_)
    h.part->release(
        token_, Millis(0),
        [pending, then](Outcome<ReleaseReply>) {
          if (--*pending == 0) then();
        },
        bound);
}

// ---- renewing what is held while waiting for the rest ----

void MultiAcquirer::schedule_renewal() {
  if (held_.empty() || finished_) return;
  Clock::time_point when = held_.front().next;
  for (auto& h : held_) when = std::min(when, h.next);
  lock_.loop().cancel(renew_timer_);
  auto alive = alive_;
  renew_timer_ = lock_.loop().at(when, [this, alive] {
    if (!*alive) return;
    renew_timer_ = 0;
    renew();
  });
}

void MultiAcquirer::renew(bool finishing) {
  if (finished_ || renewing_) return;
  renewing_ = true;
  auto alive = alive_;
  auto pending = std::make_shared<size_t>(held_.size());
  auto failure = std::make_shared<std::optional<Error>>();
  auto unanswered = std::make_shared<bool>(false);  // a part to ask again (its lease has time)
  auto superseded = std::make_shared<std::optional<Error>>();  // a newer --supersede job came
  for (size_t i = 0; i < held_.size(); ++i) {
    Held& h = held_[i];
    Clock::time_point sent = Clock::now();
    Clock::time_point lost_at = later(h.deadline, -safety_margin(h.acquired.ttl));
    Millis timeout = std::max(
        Millis(10),
        std::min(lock_.command_timeout(), std::chrono::duration_cast<Millis>(lost_at - sent)));
    h.part->extend(
        token_, h.acquired.ttl,
        [this, alive, i, sent, lost_at, pending, failure, unanswered, superseded,
         finishing](Outcome<ExtendReply> o) {
          if (!*alive || finished_) return;
          Held& h = held_[i];
          Millis retry = std::min(Millis(250), h.acquired.ttl / 10);
          if (!o.error && o.value.held) {
            h.deadline = later(sent, std::clamp(o.value.ttl, Millis(0), h.acquired.ttl));
            h.next = later(sent, h.acquired.ttl / 3);
            // Latest wins in every key (README, "--supersede"): a newer
            // superseding job joined the line of a key this one holds.
            if (o.value.superseded_by && !*superseded)
              *superseded =
                  Error(ErrorKind::NotAcquired,
                        fmt::format("no longer waiting for '{}': superseded by {} (--supersede)",
                                    h.part->names().key,
                                    escape_text(truncate_text(*o.value.superseded_by, kMaxLabel))));
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
            auto again = alive_;
            renew_timer_ = lock_.loop().after(
                std::min(Millis(250), held_.front().acquired.ttl / 10), [this, again] {
                  if (!*again) return;
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
