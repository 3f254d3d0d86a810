#include "lock/quorum_verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace rlock {

Millis clock_drift(Millis ttl) {
  return ttl / 100 + Millis(2);
}

Clock::time_point validity_end(Clock::time_point start, Millis ttl) {
  return later(start, ttl - clock_drift(ttl));
}

Error quorum_shortfall(const std::string& what, const std::vector<std::optional<Error>>& errors,
                       const std::vector<std::string>& names, size_t masters) {
  std::string silent;
  std::optional<Error> last, refused, foreign;
  size_t failed = 0, refusals = 0, foreigns = 0;
  for (size_t i = 0; i < errors.size(); ++i) {
    if (!errors[i]) continue;
    if (errors[i]->kind() == ErrorKind::Permission) {
      refused = errors[i];
      ++refusals;
    }
    if (errors[i]->cause() == Cause::Foreign || errors[i]->cause() == Cause::ForeignLock) {
      foreign = errors[i];
      ++foreigns;
    }
    silent += (silent.empty() ? "" : ", ") + (i < names.size() ? names[i] : std::string("?"));
    last = errors[i];
    ++failed;
  }
  size_t q = majority(masters);
  // 77 when the refusals alone leave no majority (the credentials or the ACL
  // are what to fix); an outage of the others is 69 otherwise.
  if (refused && masters - refusals < q) return *refused;
  // 70 likewise when another program's values at the lock's keys do (what to fix).
  if (foreign && masters - foreigns < q) return *foreign;
  return Error(ErrorKind::Unavailable,
               fmt::format("{}: only {} of {} masters answered (a majority is {}); failed: {}{}",
                           what, errors.size() - failed, errors.size(), q, silent,
                           last ? fmt::format(" ({})", last->what()) : ""));
}

namespace {

template <class T>
std::vector<std::optional<Error>> errors_of(const std::vector<Outcome<T>>& rs) {
  std::vector<std::optional<Error>> errors;
  for (auto& r : rs) errors.push_back(r.error);
  return errors;
}

template <class T>
size_t answered(const std::vector<Outcome<T>>& rs) {
  return static_cast<size_t>(
      std::count_if(rs.begin(), rs.end(), [](const Outcome<T>& r) { return !r.error; }));
}

// Refused: the holder most masters name (a majority of them, when there is
// one), and Done (run --done-for) when a majority keeps it as done: a
// minority that does is only taken.
AcquireReply refusal(const std::vector<Outcome<AcquireReply>>& rs, size_t masters) {
  std::map<std::string, size_t> holder_votes;
  for (auto& r : rs)
    if (!r.error && r.value.state != AcquireReply::State::Acquired && !r.value.holders.empty())
      ++holder_votes[r.value.holders.front().token];
  AcquireReply out;
  out.state = AcquireReply::State::Taken;
  std::string best;
  size_t votes = 0;
  for (auto& [tok, n] : holder_votes)
    if (n > votes) best = tok, votes = n;
  std::vector<Millis> lefts;
  for (auto& r : rs)
    if (!r.error && !r.value.holders.empty() && r.value.holders.front().token == best) {
      if (out.holders.empty()) out.holders = {r.value.holders.front()};
      out.holder_count = 1;
      lefts.push_back(r.value.holders.front().ttl_left);
    }
  if (!out.holders.empty())
    out.holders.front().ttl_left = quorum_lease_left(std::move(lefts), majority(masters));
  if (votes >= majority(masters) && !out.holders.empty() && out.holders.front().done_ms > 0)
    out.state = AcquireReply::State::Done;
  return out;
}

}  // namespace

Millis quorum_lease_left(std::vector<Millis> lefts, size_t quorum) {
  if (lefts.empty()) return Millis(0);
  auto longer = [](Millis a, Millis b) {
    if (a < Millis(0) || b < Millis(0)) return a < Millis(0) && b >= Millis(0);
    return a > b;
  };
  std::sort(lefts.begin(), lefts.end(), longer);
  return lefts[std::min(std::max<size_t>(quorum, 1), lefts.size()) - 1];
}

// ---- acquiring ----

bool acquire_settled(const Answers<AcquireReply>& rs, size_t masters) {
  // Taken needs a majority of replies; unavailable needs every master heard
  // from (or timed out), for the message to be right.
  return quorum_decided(
      rs, masters,
      [](const Outcome<AcquireReply>& r) {
        return !r.error && r.value.state == AcquireReply::State::Acquired;
      },
      [](const Outcome<AcquireReply>& r) { return !r.error; }, true);
}

AcquireVerdict acquire_verdict(const std::vector<Outcome<AcquireReply>>& rs, size_t masters,
                               bool in_time, const std::vector<std::string>& names) {
  AcquireVerdict v;
  size_t granted = 0;
  for (auto& r : rs) {
    if (r.error) {
      // A --limit mismatch or a refusal is the same everywhere: say so.
      if (r.error->kind() == ErrorKind::Usage) {
        v.kind = AcquireVerdict::Kind::Failed;
        v.error = r.error;
        return v;
      }
      continue;
    }
    if (r.value.state == AcquireReply::State::Acquired) {
      ++granted;
      // The grant's fence, or the master's clock when that is higher
      // (QuorumLock::commit).
      v.fence = std::max({v.fence, r.value.fence, r.value.now_ms});
    }
  }
  if (granted >= majority(masters) && in_time) {
    v.kind = AcquireVerdict::Kind::Granted;
    return v;
  }
  v.fence = 0;
  if (answered(rs) < majority(masters)) {
    v.kind = AcquireVerdict::Kind::TooFew;
    v.error = quorum_shortfall("cannot acquire", errors_of(rs), names, masters);
    return v;
  }
  v.kind = AcquireVerdict::Kind::Refused;
  v.reply = refusal(rs, masters);
  return v;
}

// ---- committing the fence ----

bool fence_committed(const Outcome<FenceReply>& r, int64_t fence) {
  return !r.error && r.value.held && r.value.owns && r.value.counter >= fence;
}

bool commit_settled(const Answers<FenceReply>& rs, size_t masters, int64_t fence) {
  if (quorum_decided(
          rs, masters, [fence](const Outcome<FenceReply>& r) { return fence_committed(r, fence); },
          [fence](const Outcome<FenceReply>& r) { return !r.error && !fence_committed(r, fence); },
          false))
    return true;
  // A majority holds the token and another grant owns the fence on one of
  // them: the next round, with a larger fence, costs less than waiting for a
  // master that may not answer before the lease's validity runs out.
  size_t held = 0;
  bool taken = false;
  for (auto& r : rs) {
    if (!r || r->error || !r->value.held) continue;
    ++held;
    taken = taken || !fence_committed(*r, fence);
  }
  return taken && held >= majority(masters);
}

CommitVerdict commit_verdict(const std::vector<Outcome<FenceReply>>& rs, size_t masters,
                             int64_t fence) {
  CommitVerdict v;
  size_t owned = 0, held = 0;
  bool taken = false;
  int64_t most = fence;
  for (auto& r : rs) {
    if (r.error) continue;
    most = std::max({most, r.value.found, r.value.counter});
    if (!r.value.held) continue;
    ++held;
    if (fence_committed(r, fence))
      ++owned;
    else
      taken = true;  // held, and the counter was already at the fence
  }
  if (owned >= majority(masters)) {
    v.kind = CommitVerdict::Kind::Owned;
    return v;
  }
  // Held on a majority: the same grant tries a fence no master handed out yet.
  if (held >= majority(masters) && taken) {
    v.kind = CommitVerdict::Kind::Collided;
    v.next = most + 1;
  }
  return v;
}

// ---- renewing ----

bool extend_settled(const Answers<ExtendReply>& rs, size_t masters) {
  return quorum_decided(
      rs, masters, [](const Outcome<ExtendReply>& r) { return !r.error && r.value.held; },
      [](const Outcome<ExtendReply>& r) { return !r.error && !r.value.held; }, false);
}

bool wants_regrant(const Outcome<ExtendReply>& r) {
  return !r.error && !r.value.held && !r.value.released && !r.value.broken;
}

ExtendVerdict extend_verdict(const std::vector<Outcome<ExtendReply>>& rs, size_t masters,
                             Millis ttl, const std::vector<std::string>& names) {
  ExtendVerdict v;
  size_t held = 0, lost = 0;
  bool released = false;
  Millis shortest = Millis::max();
  int64_t fence = 0;
  for (auto& r : rs) {
    if (r.error) continue;
    if (!r.value.held) {
      ++lost;
      released = released || r.value.released;
      continue;
    }
    ++held;
    shortest = std::min(shortest, r.value.ttl);
    fence = std::max(fence, r.value.fence);
  }
  if (held >= majority(masters)) {
    v.kind = ExtendVerdict::Kind::Held;
    v.grant = ttl.count() > 0 ? ttl : shortest;
    for (size_t i = 0; i < rs.size(); ++i)
      if (wants_regrant(rs[i])) v.regrant.push_back(i);
    v.reply.held = true;
    v.reply.ttl = shortest - clock_drift(shortest);
    v.reply.fence = fence;
    return v;
  }
  if (rs.size() - lost < majority(masters)) {
    v.kind = ExtendVerdict::Kind::Lost;
    v.reply.released = released;  // a release with the token removed it somewhere
    return v;
  }
  v.kind = ExtendVerdict::Kind::TooFew;
  v.error = quorum_shortfall("cannot renew", errors_of(rs), names, masters);
  return v;
}

}  // namespace rlock
