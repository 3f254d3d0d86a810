// `rlock release KEY --token T`: release only if T still holds it.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "cli/output.h"
#include "cli/wording.h"
#include "commands/commands.h"
#include "core/duration.h"
#include "hold/held.h"
#include "hold/verdict.h"
#include "proc/procinfo.h"

namespace rlock {

namespace {

enum class Nested { No, Inside, Owner };

// A release of a token RLOCK_HELD lists (for any of the keys named: a lock of
// several keys, --and, is listed once per key), confirmed with Redis:
// - Inside: the holder is an enclosing `run`, or the process a keeper watches
//   while the release comes from deeper down: a nested release, which never
//   frees the outer lock while its holder goes on (docs/GUIDE.md
//   "Nesting"): nothing to do, whichever keys it names;
// - Owner: a release under the RLOCK_HELD the keeper's owner evaluated (not a
//   nested copy): the keeper is told to release and stop (SIGUSR1), so that it
//   does not take the release for a lost lease. It releases every key it
//   keeps, so a release that names only some of them is refused (64).
Nested nested_release(Session& s, Lock& lock, const GlobalOptions& g,
                      const std::vector<std::string>& keys, const std::string& token,
                      HeldEntry& entry, Holder& holder) {
  std::vector<HeldEntry> held = held_from_env();
  const std::string where = lock_location(g);
  std::vector<Lock*> parts = lock.parts();
  for (size_t i = 0; i < keys.size() && i < parts.size(); ++i) {
    const HeldEntry* e = find_held(held, keys[i], g.prefix, where);
    if (!e || e->token != token) continue;
    std::string why;
    auto h = verify_held(s.loop, *parts[i], *e, why);
    if (!h) {
      log_verbose(fmt::format("RLOCK_HELD lists this token for '{}', but {}: releasing as usual",
                              keys[i], why));
      return Nested::No;
    }
    entry = *e;
    holder = *h;
    // The environment the keeper's owner evals (not a nested copy): the
    // script, a subshell of it or a script it runs without taking the lock
    // again.
    if (entry.keeper <= 0 || entry.nested) return Nested::Inside;
    for (const HeldEntry& kept : held) {
      if (kept.token != token || kept.keeper != entry.keeper ||
          std::find(keys.begin(), keys.end(), kept.key) != keys.end())
        continue;
      throw_usage(fmt::format(
          "'{}' is kept together with '{}' by one keeper (acquire --and --while-pid): release "
          "them together (rlock release {} --and {}), or let the keeper release them when "
          "process {} ends",
          keys[i], kept.key, keys[i], kept.key, holder.info.pid));
    }
    return Nested::Owner;
  }
  return Nested::No;
}

// The keeper of a --while-pid lock, if it still runs: a session leader with
// the start time RLOCK_HELD recorded (a reused pid is left alone). When /proc
// cannot tell (no descriptor left, hidepid), a session leader of that pid is
// taken for the keeper: the lease was just found held by its token
// (verify_held), and the keeper releases it whenever it ends, so it most
// likely runs; skipping it would release under it, a loss for its PID.
bool is_keeper(const HeldEntry& e) {
  auto pid = static_cast<pid_t>(e.keeper);
  if (pid < 1 || getsid(pid) != pid) return false;
  if (!kProcInfoKnown) return true;
  int unreadable = 0;
  auto info = proc_info(pid, &unreadable);
  if (!info) return unreadable != 0;
  return info->start == e.keeper_start;
}

// A hold that a failover lost (76), found by this release or by the keeper's.
Error failover_lost(const std::string& key, int64_t fence) {
  return Error(ErrorKind::Lost,
               fmt::format("'{}': {} (the master the sentinels name does not hold it)", key,
                           failover_lost_words(fence)));
}

}  // namespace

int cmd_release(const GlobalOptions& g, const std::vector<std::string>& keys,
                const std::string& token) {
  validate_token(token);
  const std::string& key = keys.front();
  Session s(g);
  auto lock = s.locks(keys, g.prefix);
  HeldEntry entry;
  Holder holder;
  switch (nested_release(s, *lock, g, keys, token, entry, holder)) {
    case Nested::Inside:
      log_verbose(
          fmt::format("'{}' stays held: its holder (pid {}) encloses this process and "
                      "releases it when it ends (a nested release does nothing)",
                      key, holder.info.pid));
      return exitcode::kOk;
    case Nested::Owner:
      // SIGUSR1: "your owner releases": the keeper releases and exits without
      // a word to PID (any other stop signal is a loss for PID). Waited for
      // (bounded: its release has one --command-timeout window, surveys of
      // the sentinels included; twice that here, for a slow start), then its
      // verdict read (hold/verdict.h: a failover lost the hold, 76, as a
      // plain release says it) and the release made sure of (finding it
      // released is fine).
      if (is_keeper(entry) && kill(static_cast<pid_t>(entry.keeper), SIGUSR1) == 0) {
        auto until = Clock::now() + 2 * lock->command_timeout();
        while (is_keeper(entry) && Clock::now() < until)  // (a zombie is not)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        std::optional<KeeperVerdict> v;
        bool ended = !is_keeper(entry);
        if (ended) v = take_keeper_verdict(entry.keeper, token);
        auto r = wait_for<ReleaseReply>(
            s.loop, [&](Done<ReleaseReply> d) { lock->release(token, Millis(0), std::move(d)); });
        bool moved = r.state == ReleaseReply::State::NotHeld && !r.moved_from.empty();
        // No verdict: its release failed, its directory was unsafe or another
        // (hold/verdict.h), or it is still at it. Said, not taken for "fine".
        if (!v && !moved)
          log_error(fmt::format(
              "warning: '{}': {}; had a failover lost the hold, it would not be known here", key,
              ended ? fmt::format("no verdict came from its keeper (pid {})", entry.keeper)
                    : fmt::format("its keeper (pid {}) did not end within {}", entry.keeper,
                                  format_duration(2 * lock->command_timeout()))));
        if (v && !v->unconfirmed.empty() && !v->failover_lost)
          log_error(unconfirmed_release_warning("'" + key + "'", v->unconfirmed));
        if ((v && v->failover_lost) || moved) throw failover_lost(key, v ? v->fence : 0);
        return exitcode::kOk;
      }
      break;
    case Nested::No:
      break;
  }
  auto r = wait_for<ReleaseReply>(
      s.loop, [&](Done<ReleaseReply> d) { lock->release(token, Millis(0), std::move(d)); });
  // AlreadyReleased: a retry after a broken connection found that the first
  // try had released it.
  if (!r.unconfirmed.empty())
    log_error(unconfirmed_release_warning("'" + key + "'", r.unconfirmed));
  if (r.state == ReleaseReply::State::NotHeld && !r.moved_from.empty()) throw failover_lost(key, 0);
  if (r.state == ReleaseReply::State::NotHeld)
    throw Error(ErrorKind::Lost,
                fmt::format("'{}'{} is not held by this token (expired, released or broken)", key,
                            keys.size() > 1 ? " (or another of its keys)" : ""));
  return exitcode::kOk;
}

}  // namespace rlock
