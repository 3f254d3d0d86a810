// What the masters' replies come to in quorum mode (Redlock): pure functions
// over one round of replies, with no clients, timers or loop, so that every
// case a fault reaches (a majority, too few, a late reply, a tombstone,
// errors, a tie) can be checked without servers. QuorumLock (quorum.h) sends
// the requests and acts on these verdicts (docs/PROTOCOL.md, "Quorum mode").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/loop.h"
#include "lock/lock.h"

namespace rlock {

/// The majority of `masters`: masters/2 + 1 (3 of 4: a tie is no majority).
constexpr size_t majority(size_t masters) {
  return masters / 2 + 1;
}

/// The Redlock drift allowance for `ttl`: ttl/100 + 2 ms.
Millis clock_drift(Millis ttl);

/// When a lease of `ttl` asked for at `start` stops counting: its TTL less
/// the drift allowance, measured from before the first request went out.
Clock::time_point validity_end(Clock::time_point start, Millis ttl);

/// Replies so far to a question asked of every master, in the masters'
/// order; an empty one has not answered yet.
template <class T>
using Answers = std::vector<std::optional<Outcome<T>>>;

/// Whether the answers so far settle a question asked of every master:
/// a majority of `masters` said `yes`, or more than a minority said `no`;
/// with `replies_settle`, also once a majority answered and `yes` can no
/// longer win (no reply still to come changes the outcome then).
template <class T, class Yes, class No>
bool quorum_decided(const Answers<T>& rs, size_t masters, Yes yes, No no, bool replies_settle) {
  size_t ayes = 0, noes = 0, answered = 0;
  for (auto& r : rs) {
    if (!r) continue;
    ++answered;
    if (yes(*r))
      ++ayes;
    else if (no(*r))
      ++noes;
  }
  size_t q = majority(masters);
  size_t pending = rs.size() - answered, minority = rs.size() - q;
  if (ayes >= q || noes > minority) return true;
  return replies_settle && ayes + pending < q && ayes + noes >= q;
}

/// Why fewer than a majority of `masters` answered `what`: the first
/// permission error when the refusals alone leave no majority (77: the
/// credentials or the ACL are what to fix), likewise the first error about
/// another program's values at the lock's keys (70), else an unavailable
/// Error naming (`names`, in the same order as `errors`) every master that
/// failed, with the last failure's words.
Error quorum_shortfall(const std::string& what, const std::vector<std::optional<Error>>& errors,
                       const std::vector<std::string>& names, size_t masters);

// ---- acquiring ----

/// Whether the acquisitions heard so far decide the round: a majority
/// granted, or more than a minority answered without a grant, or a majority
/// answered and a grant can no longer reach one. Those not heard then count
/// as failed (their requests go on; the grants are given back to every
/// master all the same).
bool acquire_settled(const Answers<AcquireReply>& rs, size_t masters);

struct AcquireVerdict {
  enum class Kind {
    /// A majority granted while the lease was still valid: `fence` (the
    /// largest a granting master gave out, or its clock when that is higher)
    /// is to be committed before the lock is used.
    Granted,
    /// A majority answered, no majority granted in time: `reply` (Taken, or
    /// Done when a majority keeps it as done) once every grant went back.
    Refused,
    /// Fewer than a majority answered: `error` (quorum_shortfall) once every
    /// grant went back.
    TooFew,
    /// A master refused the request itself (a usage Error: a --limit
    /// mismatch, a refusal), which every master would: `error`, once every
    /// grant went back.
    Failed,
  };
  Kind kind = Kind::Refused;
  int64_t fence = 0;
  AcquireReply reply;
  std::optional<Error> error;
};

/// The verdict over every master's reply to one acquisition (`rs`, in the
/// masters' order, one per master: those that did not answer carry an
/// Error); `in_time`: the lease's validity (validity_end) has not run out.
/// `names` name the masters in the message of a TooFew.
AcquireVerdict acquire_verdict(const std::vector<Outcome<AcquireReply>>& rs, size_t masters,
                               bool in_time, const std::vector<std::string>& names);

// ---- committing the fence ----

/// How many more commit rounds an acquisition tries, each with a larger fence,
/// when another token owns the fence it was to commit on too many masters.
inline constexpr int kFenceRetries = 3;

/// Whether a master's reply to an acquisition's commit of `fence` counts for
/// it: the token holds there, the counter is at least `fence`, and the token
/// owns `fence` there (it raised the counter to it: docs/PROTOCOL.md, "Why
/// fences only grow").
bool fence_committed(const Outcome<FenceReply>& r, int64_t fence);

/// Whether the commits heard so far decide the round: a majority counts for
/// the fence, or more than a minority answered without counting, or a
/// majority holds the token and another token owns the fence on one of them
/// (the next round is due: commit_verdict says Collided).
bool commit_settled(const Answers<FenceReply>& rs, size_t masters, int64_t fence);

struct CommitVerdict {
  enum class Kind {
    /// A majority counts for the fence: the token's fence, unique.
    Owned,
    /// A majority holds the token, but another token owns the fence on too
    /// many of them (two grants side by side computed the same one): commit
    /// `next` (above the fence and every counter found) instead.
    Collided,
    /// Fewer than a majority hold the token (or answered): not granted.
    Failed,
  };
  Kind kind = Kind::Failed;
  int64_t next = 0;
};

/// The verdict over every master's reply to the commit of `fence` (`rs`, one
/// per master, those that did not answer carry an Error).
CommitVerdict commit_verdict(const std::vector<Outcome<FenceReply>>& rs, size_t masters,
                             int64_t fence);

// ---- renewing ----

/// Whether the renewals heard so far decide the round: a majority held it,
/// or more than a minority no longer does.
bool extend_settled(const Answers<ExtendReply>& rs, size_t masters);

/// Whether a master that answered a renewal with `r` is to be granted the
/// lease again once a majority renewed it: it answered, does not hold it,
/// and no tombstone says a release with the token or a break removed it
/// there (those are on their way to the others). Also for a reply that
/// comes after the verdict.
bool wants_regrant(const Outcome<ExtendReply>& r);

struct ExtendVerdict {
  enum class Kind {
    /// A majority renewed: `reply` holds the shortest lease left less its
    /// drift allowance and the largest fence; `regrant` the masters to grant
    /// it again (wants_regrant), for `grant`.
    Held,
    /// No majority can confirm it any more: `reply` (not held; `released`
    /// when a release with the token removed it somewhere).
    Lost,
    /// Undecided (too many masters did not answer): `error`, a failed
    /// renewal, tried again.
    TooFew,
  };
  Kind kind = Kind::TooFew;
  ExtendReply reply;
  Millis grant{0};
  std::vector<size_t> regrant;
  std::optional<Error> error;
};

/// How long a quorum of masters still holds a lease, from what each master
/// holding it has left: the quorum-th longest (the shortest when fewer hold it).
/// A key without expiry there (Redis's PTTL -1) is the longest; the result is
/// negative only when a quorum of them has none.
Millis quorum_lease_left(std::vector<Millis> lefts, size_t quorum);

/// The verdict over every master's reply to one renewal to `ttl` (0: each
/// master's own TTL; the regrant is then for the shortest lease left).
ExtendVerdict extend_verdict(const std::vector<Outcome<ExtendReply>>& rs, size_t masters,
                             Millis ttl, const std::vector<std::string>& names);

}  // namespace rlock
