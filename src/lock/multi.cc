#include "lock/multi.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/duration.h"
#include "core/log.h"
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

void MultiLock::do_acquire(const std::string&, Millis, bool, const HolderInfo&, long,
                           Done<AcquireReply> done, Millis) {
  done({Error(ErrorKind::Protocol, "several keys are taken one by one (MultiAcquirer)"), {}});
}

void MultiLock::do_extend(const std::string& token, Millis ttl, Done<ExtendReply> done,
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
          if (o.value.cancelled_by && !r.value.cancelled_by)
            r.value.cancelled_by = o.value.cancelled_by;
          if (first) r.value.fence = o.value.fence;
          first = false;
        }
        if (!lost.value.failed_keys.empty()) return lost;
        return r;
      },
      std::move(done));
}

void MultiLock::do_release(const std::string& token, Millis min_hold, Done<ReleaseReply> done,
                           Millis timeout, int exit_status, Millis done_for,
                           const std::string& lost) {
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
          // A failover lost that key's hold, or nobody could say (one says so).
          if (o.value.state == S::NotHeld && !o.value.moved_from.empty())
            r.value.moved_from = o.value.moved_from;
          if (r.value.unconfirmed.empty()) r.value.unconfirmed = o.value.unconfirmed;
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

void MultiLock::do_leave(const std::string& token, Done<bool> done, Millis timeout) {
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

void MultiLock::break_lock(const BreakRequest& req, Done<long> done) {
  parts_.front()->break_lock(req, std::move(done));
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

}  // namespace rlock
