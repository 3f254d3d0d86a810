#include "lock/quorum.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/duration.h"
#include "core/log.h"
#include "core/text.h"
#include "lock/single.h"

namespace rlock {

namespace {

// How long a master that does not answer may hold up one acquisition: far
// below the TTL (the Redlock paper: a few ms for a 10 s TTL; a network that
// stalls a while is not worth a lease that will soon be gone), never above
// --command-timeout. TTL/50, but at least kNodeTimeoutFloor or TTL/10 when that is
// less (a loaded host, or a sanitizer build, misses 50 ms now and then),
// and never under kMinNodeTimeout.
constexpr Millis kMinNodeTimeout{50};
constexpr Millis kNodeTimeoutFloor{250};

// The TTL a release by token alone (`rlock release --token`) assumes when
// bounding how long it waits for the last masters: the default --ttl.
constexpr Millis kDefaultTtl{30000};

// Every master that failed an acquisition missed the time it was given
// (rather than refusing, or being down).
bool missed_bound_only(const std::vector<Outcome<AcquireReply>>& rs) {
  bool any = false;
  for (auto& r : rs) {
    if (!r.error) continue;
    if (r.error->cause() != Cause::Timeout) return false;
    any = true;
  }
  return any;
}

}  // namespace

QuorumLock::QuorumLock(std::vector<Client*> masters, LockNames names, size_t of)
    : Lock(std::move(names), 0), clients_(std::move(masters)), total_(of ? of : clients_.size()) {
  for (Client* c : clients_) {
    locks_.push_back(std::make_unique<SingleLock>(*c, names_));
    locks_.back()->trim_history_exactly();
  }
}

QuorumLock::~QuorumLock() {
  life_.end();
}

template <class T>
void QuorumLock::fan_out(Each<T> op, All<T> done, Enough<T> enough, Millis linger) {
  struct State {
    std::vector<std::optional<Outcome<T>>> out;
    size_t left;
    bool decided = false, settled = false;
    Loop::TimerId timer = 0;
    All<T> done;
  };
  auto st = std::make_shared<State>();
  st->out.resize(locks_.size());
  st->left = locks_.size();
  st->done = std::move(done);
  auto alive = life_.token();
  Loop* loop = &clients_.front()->loop();
  // A master that has not answered when the outcome is decided counts as
  // one that did not answer; its request goes on, unheard.
  auto finish = [st, loop] {
    st->decided = true;
    loop->cancel(st->timer);
    std::vector<Outcome<T>> all;
    for (auto& r : st->out)
      all.push_back(r ? std::move(*r)
                      : Outcome<T>{Error(ErrorKind::Unavailable, "no answer in time"), T{}});
    st->done(std::move(all));
  };
  for (size_t i = 0; i < locks_.size(); ++i) {
    ++*unheard_;
    op(*locks_[i], [st, i, alive, enough, linger, loop, finish, unheard = unheard_](Outcome<T> o) {
      --*unheard;
      if (st->decided || !alive) return;
      st->out[i] = std::move(o);
      if (--st->left == 0) return finish();
      if (st->settled || !(enough && enough(st->out))) return;
      if (linger.count() <= 0) return finish();
      // Settled: the others get `linger` more to answer.
      st->settled = true;
      st->timer = loop->after(linger, [st, alive, finish] {
        st->timer = 0;
        if (!st->decided && alive) finish();
      });
    });
  }
}

Millis QuorumLock::node_timeout(Millis ttl) const {
  Millis most = std::max(kMinNodeTimeout, clients_.front()->command_timeout());
  Millis least = std::max(kMinNodeTimeout, std::min(kNodeTimeoutFloor, ttl / 10));
  return std::clamp(ttl / 50, std::min(least, most), most);
}

std::vector<std::string> QuorumLock::names() const {
  std::vector<std::string> out;
  for (Client* c : clients_) out.push_back(c->name());
  return out;
}

// ---- acquiring ----

void QuorumLock::do_acquire(const std::string& token, Millis ttl, bool /*queue*/,
                            const HolderInfo& info, long attempt, Done<AcquireReply> done,
                            Millis timeout) {
  // No line: the masters' lines could disagree (a different head on each,
  // nobody with a majority), so every attempt is a plain try.
  info_ = info;
  ttl_ = ttl;
  Clock::time_point start = Clock::now();
  Clock::time_point until = validity_end(start, ttl);
  Millis per = timeout.count() > 0 ? std::min(timeout, node_timeout(ttl)) : node_timeout(ttl);
  auto alive = life_.token();
  fan_out<AcquireReply>(
      [=](SingleLock& l, Done<AcquireReply> d) {
        l.acquire(token, ttl, false, info, attempt, std::move(d), per);
      },
      [this, alive, token, ttl, until, per, done](std::vector<Outcome<AcquireReply>> rs) {
        // Two URLs of one server would count twice: its INFO went out first.
        if (identity_check_)
          if (auto e = identity_check_())
            return give_back(token, ttl, [done, e = *e] { done({e, {}}); });
        AcquireVerdict v = acquire_verdict(rs, total_, Clock::now() < until, names());
        if (v.kind == AcquireVerdict::Kind::TooFew && v.error && per < command_timeout() &&
            missed_bound_only(rs))
          // On a slow network that bound, not the masters, is what to change.
          v.error = v.error->reworded(
              std::string(v.error->what()) +
              fmt::format("; in quorum mode each master gets TTL/50 to answer an acquisition "
                          "(here {}; at least the shorter of 250ms and TTL/10, at most "
                          "--command-timeout): a longer --ttl gives a slow network more",
                          format_duration(per)));
        if (v.kind == AcquireVerdict::Kind::Granted)
          return commit(token, v.fence, ttl, until, done);
        // Not a majority (or too late), or a refusal: every grant goes back
        // before the reply, so that no master keeps this token while the next
        // attempt runs.
        Outcome<AcquireReply> o;
        if (v.error)
          o.error = v.error;
        else
          o.value = v.reply;
        give_back(token, ttl, [done, o] { done(o); });
      },
      [this](const Answers<AcquireReply>& rs) { return acquire_settled(rs, total_); });
}

void QuorumLock::commit(const std::string& token, int64_t fence, Millis ttl,
                        Clock::time_point until, Done<AcquireReply> done, int retries) {
  // The largest fence a majority gave out is larger than any fence committed
  // before (see below: two majorities share a master). It counts once a
  // majority of masters that still grant this token have their counters at
  // least that high and this token raised them there (it owns the fence):
  // no other acquirer can be granted on those masters before the counter is
  // raised there, any later majority includes one of them, and no other
  // token owns the same fence on a majority, as two grants side by side (two
  // shared holders) could otherwise both commit (docs/PROTOCOL.md, "Why
  // fences only grow"). The fence is at least the granting masters' clocks
  // too (server time, Unix ms): when the masters that knew the last fence
  // lost it (restarted empty) or are cut off, and the others missed its
  // commit, the clock still puts the new fence above it.
  Millis left = std::max(Millis(1), std::chrono::ceil<Millis>(until - Clock::now()));
  auto alive = life_.token();
  fan_out<FenceReply>(
      [=](SingleLock& l, Done<FenceReply> d) {
        l.commit_fence(token, fence, true, std::move(d), left);
      },
      [this, alive, token, fence, ttl, until, done, retries](std::vector<Outcome<FenceReply>> rs) {
        if (!alive) return;
        CommitVerdict v = commit_verdict(rs, total_, fence);
        bool in_time = Clock::now() < until;
        if (v.kind == CommitVerdict::Kind::Owned && in_time) {
          AcquireReply a;
          a.state = AcquireReply::State::Acquired;
          a.fence = fence;
          a.ttl = ttl - clock_drift(ttl);
          return done({std::nullopt, a});
        }
        // Another grant owns this fence: a larger one, which no master gave
        // out yet, while the lease is still valid.
        if (v.kind == CommitVerdict::Kind::Collided && in_time && retries > 0) {
          log_verbose(fmt::format("fence {} is another holder's: committing {}", fence, v.next));
          return commit(token, v.next, ttl, until, done, retries - 1);
        }
        // Too late, the grants ran out on too many masters meanwhile, or the
        // fences kept colliding: the fence is not used (a waiter tries again).
        Outcome<AcquireReply> o;
        if (answered(rs) < quorum())
          o.error = too_few("cannot commit the fence", rs);
        else
          o.value.state = AcquireReply::State::Taken;
        give_back(token, ttl, [done, o] { done(o); });
      },
      [this, fence](const Answers<FenceReply>& rs) { return commit_settled(rs, total_, fence); });
}

void QuorumLock::give_back(const std::string& token, Millis ttl, std::function<void()> then) {
  give_back_within(token, node_timeout(ttl), std::move(then));
}

void QuorumLock::give_back_within(const std::string& token, Millis per,
                                  std::function<void()> then) {
  fan_out<ReleaseReply>(
      [token, per](SingleLock& l, Done<ReleaseReply> d) { l.give_back(token, std::move(d), per); },
      [then = std::move(then)](std::vector<Outcome<ReleaseReply>>) { then(); });
}

void QuorumLock::give_back_grant(const std::string& token, Done<ReleaseReply> done,
                                 Millis timeout) {
  give_back_within(token, timeout.count() > 0 ? timeout : node_timeout(ttl_),
                   [done = std::move(done)] {
                     done({std::nullopt, ReleaseReply{}});
                   });
}

// ---- holding ----

// A master that answered "not held" (restarted empty, or its key expired
// while it was cut off) while a majority renews is granted the lease again,
// so that the majority has room to lose another master. Its fence counter is
// raised to this holder's fence with it: an empty restart lost the counter
// too (see "Why fences only grow").
void QuorumLock::regrant(size_t i, const std::string& token, Millis grant, int64_t fence,
                         Millis per) {
  SingleLock* l = locks_[i].get();
  auto alive = life_.token();
  log_verbose(
      fmt::format("{} no longer holds the lease: granting it again there", clients_[i]->name()));
  // The answer that asked for this may be older than a release with the
  // token or a break that reached this master meanwhile (its "not held" was
  // on its way, or this round's answers were counted while another regrant
  // granted it here again): the regrant is refused where their tombstone is.
  std::string name = clients_[i]->name();
  l->regrant(
      token, grant, info_,
      [alive, l, token, fence, per, name](Outcome<AcquireReply> a) {
        if (!alive || a.error) return;
        if (a.value.state == AcquireReply::State::Gone)
          return log_verbose(fmt::format("{}: not granted again: {} removed it there", name,
                                         a.value.broken ? "a break" : "a release with the token"));
        if (a.value.state != AcquireReply::State::Acquired) return;
        l->commit_fence(
            token, fence, false, [](Outcome<FenceReply>) {}, per);
      },
      per);
}

void QuorumLock::do_extend(const std::string& token, Millis ttl, Done<ExtendReply> done,
                           Millis timeout) {
  Millis per = timeout.count() > 0 ? timeout : clients_.front()->command_timeout();
  auto alive = life_.token();
  // The renewal is decided by the fastest majority; a master that answers
  // "not held" after that (an empty one answers last: its scripts must be
  // loaded again) is granted the lease again all the same.
  struct Renewed {
    bool decided = false, held = false;
    Millis grant{0};
    int64_t fence = 0;
  };
  auto renewed = std::make_shared<Renewed>();
  fan_out<ExtendReply>(
      [=, this](SingleLock& l, Done<ExtendReply> d) {
        size_t i = 0;
        while (locks_[i].get() != &l) ++i;
        l.extend(
            token, ttl,
            [this, alive, renewed, i, token, per, d](Outcome<ExtendReply> o) {
              if (alive && renewed->decided && renewed->held && wants_regrant(o))
                regrant(i, token, renewed->grant, renewed->fence, per);
              d(std::move(o));
            },
            per);
      },
      [this, alive, renewed, token, ttl, per, done](std::vector<Outcome<ExtendReply>> rs) {
        ExtendVerdict v = extend_verdict(rs, total_, ttl, names());
        renewed->decided = true;
        if (v.kind == ExtendVerdict::Kind::Held) {
          renewed->held = true;
          renewed->grant = v.grant;
          renewed->fence = v.reply.fence;
          // A master where a release or a break removed the token (its
          // tombstone says so) is never granted it again: the release or
          // break is on its way to the others (a holder renews as soon as it
          // hears the first one).
          for (size_t i : v.regrant) regrant(i, token, v.grant, v.reply.fence, per);
        }
        if (v.error) return done({v.error, {}});
        done({std::nullopt, v.reply});
      },
      [this](const Answers<ExtendReply>& rs) { return extend_settled(rs, total_); });
}

void QuorumLock::set_line_policy(const LinePolicy& p) {
  if (!p.plain())
    throw_usage(
        "--priority, --supersede and --max-waiters need a line, and quorum mode has none (its "
        "waiters try again when they hear a release): use one deployment");
  Lock::set_line_policy(p);
}

void QuorumLock::set_pool(const std::string& names) {
  if (!names.empty())
    throw_usage(
        "a named pool (--limit NAME,...) needs one deployment: in quorum mode each master would "
        "hand out names of its own");
  Lock::set_pool(names);
}

void QuorumLock::set_history(int n) {
  Lock::set_history(n);
  for (auto& l : locks_) l->set_history(n);
}

void QuorumLock::set_status_events(bool on) {
  Lock::set_status_events(on);
  for (auto& l : locks_) l->set_status_events(on);
}

void QuorumLock::set_shared(bool shared) {
  Lock::set_shared(shared);
  for (auto& l : locks_) l->set_shared(shared);
}

void QuorumLock::do_release(const std::string& token, Millis min_hold, Done<ReleaseReply> done,
                            Millis timeout, int exit_status, Millis done_for,
                            const std::string& lost) {
  // Every master gets its release, not only the first majority: a master left
  // holding (its release answered NOSCRIPT and not yet sent again as EVAL, or
  // merely slow) keeps the token for a whole TTL, and an outage of another
  // master then makes the free lock unavailable. Once a majority settled the
  // answer, the others get as long as a give-back, so that one master down
  // does not hold up every exit by --command-timeout.
  Millis linger = node_timeout(ttl_.count() > 0 ? ttl_ : kDefaultTtl);
  if (timeout.count() > 0) linger = std::min(linger, timeout);
  fan_out<ReleaseReply>(
      [=](SingleLock& l, Done<ReleaseReply> d) {
        l.release(token, min_hold, std::move(d), timeout, exit_status, done_for, lost);
      },
      [this, done](std::vector<Outcome<ReleaseReply>> rs) {
        size_t held = 0, not_held = 0;
        ReleaseReply out;
        out.state = ReleaseReply::State::Released;
        for (auto& r : rs) {
          if (r.error) continue;
          if (r.value.state == ReleaseReply::State::NotHeld) {
            ++not_held;
            continue;
          }
          ++held;
          if (r.value.state == ReleaseReply::State::KeptForMinHold ||
              r.value.state == ReleaseReply::State::KeptAsDone) {
            if (out.state != ReleaseReply::State::KeptAsDone) out.state = r.value.state;
            out.left = std::max(out.left, r.value.left);
          }
        }
        if (held >= quorum()) return done({std::nullopt, out});
        // Fewer than a majority still held it: it had been lost.
        if (locks_.size() - not_held < quorum()) return done({std::nullopt, ReleaseReply{}});
        done({too_few("cannot release", rs), {}});
      },
      [this](const Answers<ReleaseReply>& rs) {
        auto not_held = [](const Outcome<ReleaseReply>& r) {
          return !r.error && r.value.state == ReleaseReply::State::NotHeld;
        };
        auto held = [](const Outcome<ReleaseReply>& r) {
          return !r.error && r.value.state != ReleaseReply::State::NotHeld;
        };
        return decided(rs, held, not_held, false);
      },
      linger);
}

void QuorumLock::do_leave(const std::string& token, Done<bool> done, Millis timeout) {
  fan_out<bool>([=](SingleLock& l, Done<bool> d) { l.leave(token, std::move(d), timeout); },
                [done](std::vector<Outcome<bool>> rs) {
                  bool any = false;
                  for (auto& r : rs) any = any || (!r.error && r.value);
                  done({std::nullopt, any});
                });
}

// ---- inspection ----

void QuorumLock::status(Done<LockStatus> done) {
  fan_out<LockStatus>([](SingleLock& l, Done<LockStatus> d) { l.status(std::move(d)); },
                      [this, done](std::vector<Outcome<LockStatus>> rs) {
                        LockStatus q;
                        q.quorum = static_cast<int>(quorum());
                        std::map<std::string, std::vector<const Holder*>> by_token;
                        for (size_t i = 0; i < rs.size(); ++i) {
                          MasterStatus m;
                          m.name = clients_[i]->name();
                          m.error = rs[i].error;
                          if (!rs[i].error) {
                            const LockStatus& s = rs[i].value;
                            m.status = s;
                            q.fence = std::max(q.fence, s.fence);
                            if (q.now_ms == 0) q.now_ms = s.now_ms;
                            for (auto& h : s.holders) by_token[h.token].push_back(&h);
                          }
                          q.masters.push_back(std::move(m));
                        }
                        if (answered(rs) < quorum())
                          return done({too_few("cannot read the lock", rs), {}});
                        for (auto& [token, hs] : by_token) {
                          if (hs.size() < quorum()) continue;
                          // The quorum's lease lasts as long as a majority's: the quorum-th
                          // longest lease left.
                          std::vector<Millis> lefts;
                          for (auto* h : hs) lefts.push_back(h->ttl_left);
                          Holder best = *hs.front();
                          for (auto* h : hs) best.fence = std::max(best.fence, h->fence);
                          best.ttl_left = quorum_lease_left(std::move(lefts), quorum());
                          q.holders = {best};
                          q.holder_count = 1;
                        }
                        // Each master keeps its own history: merged, newest first.
                        std::vector<std::vector<Event>> lasts;
                        for (auto& r : rs)
                          if (!r.error)
                            lasts.emplace_back(r.value.last.rbegin(), r.value.last.rend());
                        q.last = merge_events(lasts, static_cast<int>(total_), kStatusEvents);
                        std::reverse(q.last.begin(), q.last.end());
                        done({std::nullopt, q});
                      });
}

Millis QuorumLock::unheard_bound() const {
  // Never more than the default TTL's (600 ms): a master that stalls must
  // not cost every acquire of a long lease a whole --command-timeout.
  return std::min(node_timeout(ttl_.count() > 0 ? ttl_ : kDefaultTtl), operator_linger());
}

Millis QuorumLock::operator_linger() const {
  return node_timeout(kDefaultTtl);
}

template <class T>
void QuorumLock::warn_unanswered(const std::string& what, const std::vector<Outcome<T>>& rs) const {
  for (size_t i = 0; i < rs.size(); ++i)
    if (rs[i].error)
      log_error(fmt::format("warning: {} did not answer the {} ({}): it may not have reached it",
                            clients_[i]->name(), what, rs[i].error->what()));
}

void QuorumLock::break_lock(const BreakRequest& req, Done<long> done) {
  // Every master gets the break; once a majority answered, the others get
  // the per-master bound more (as a release by token alone), so that one
  // stalled master costs that, not --command-timeout. A break not answered by then
  // may still land there (it was usually written); a warning names that master.
  fan_out<long>([req](SingleLock& l, Done<long> d) { l.break_lock(req, std::move(d)); },
                [this, done](std::vector<Outcome<long>> rs) {
                  long removed = 0;  // masters where a holder was removed
                  long dead = 0;     // else the most dead waiters removed on one
                  for (auto& r : rs)
                    if (!r.error && r.value > 0)
                      ++removed;
                    else if (!r.error && r.value < dead)
                      dead = r.value;
                  if (removed == 0) removed = dead;
                  if (answered(rs) < quorum()) return done({too_few("cannot break", rs), {}});
                  warn_unanswered("break", rs);
                  done({std::nullopt, removed});
                },
                majority_answered<long>(), operator_linger());
}

void QuorumLock::forget(Done<ForgetReply> done) {
  // As break_lock: a majority's answers and the per-master bound for the rest.
  fan_out<ForgetReply>([](SingleLock& l, Done<ForgetReply> d) { l.forget(std::move(d)); },
                       [this, done](std::vector<Outcome<ForgetReply>> rs) {
                         ForgetReply out;
                         for (auto& r : rs) {
                           if (r.error) continue;
                           if (r.value.state == ForgetReply::State::InUse) {
                             out.state = ForgetReply::State::InUse;
                             out.holders = std::max(out.holders, r.value.holders);
                             out.waiters = std::max(out.waiters, r.value.waiters);
                           } else if (r.value.state == ForgetReply::State::Removed &&
                                      out.state == ForgetReply::State::Nothing) {
                             out.state = ForgetReply::State::Removed;
                           }
                         }
                         if (answered(rs) < quorum())
                           return done({too_few("cannot forget", rs), {}});
                         warn_unanswered("forget", rs);
                         done({std::nullopt, out});
                       },
                       majority_answered<ForgetReply>(), operator_linger());
}

void QuorumLock::confirm_replicas(int replicas, Millis budget, const std::string& what,
                                  Done<bool> done) {
  auto alive = life_.token();
  fan_out<bool>([=](SingleLock& l,
                    Done<bool> d) { l.confirm_replicas(replicas, budget, what, std::move(d)); },
                [this, alive, done](std::vector<Outcome<bool>> rs) {
                  size_t ok = 0;
                  std::optional<Error> last;
                  for (auto& r : rs) {
                    if (r.error)
                      last = r.error;
                    else
                      ++ok;
                  }
                  if (ok >= quorum()) return done({std::nullopt, true});
                  done({last.value_or(Error(ErrorKind::Unavailable, "--sync-replicas")), false});
                });
}

}  // namespace rlock
