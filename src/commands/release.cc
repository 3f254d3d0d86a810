// `rlock release KEY --token T`: release only if T still holds it.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <thread>

#include "commands/commands.h"
#include "output.h"
#include "held.h"
#include "procinfo.h"

namespace rlock {

namespace {

enum class Nested { No, Inside, Owner };

// A release of a token RLOCK_HELD lists, confirmed with Redis:
// - Inside: the holder is an enclosing `run`, or the process a keeper watches
//   while the release comes from deeper down: a nested release, which never
//   frees the outer lock while its holder goes on (SPEC "Reentrant by
//   inheritance"): nothing to do;
// - Owner: the process a keeper watches releases its own lock: the keeper is
//   told to release it and stop (SIGTERM), so that it does not take the
//   release for a lost lease.
Nested nested_release(Session& s, Lock& lock, const GlobalOptions& g, const std::string& key,
                      const std::string& token, HeldEntry& entry, Holder& holder) {
  std::vector<HeldEntry> held = held_from_env();
  const HeldEntry* e = find_held(held, key, g.prefix, lock_location(g));
  if (!e || e->token != token) return Nested::No;
  entry = *e;
  std::string why;
  auto h = verify_held(s.loop, lock, entry, why);
  if (!h) {
    log_verbose(fmt::format("RLOCK_HELD lists this token, but {}: releasing as usual", why));
    return Nested::No;
  }
  holder = *h;
  if (entry.keeper > 0 && h->info.pid == static_cast<long>(getppid())) return Nested::Owner;
  return Nested::Inside;
}

// The keeper of a --while-pid lock, if `pid` still is one: a session leader
// running rlock with --while-pid (a reused pid is left alone).
bool is_keeper(long pid) {
  if (pid <= 1 || getsid(static_cast<pid_t>(pid)) != static_cast<pid_t>(pid)) return false;
  std::string cmd = proc_command_line(static_cast<pid_t>(pid), 4096);
  return cmd.find("rlock") != std::string::npos && cmd.find("--while-pid") != std::string::npos;
}

}  // namespace

int cmd_release(const GlobalOptions& g, const std::string& key, const std::string& token) {
  validate_token(token);
  Session s(g);
  auto lock = s.lock(key, g.prefix);
  HeldEntry entry;
  Holder holder;
  switch (nested_release(s, *lock, g, key, token, entry, holder)) {
    case Nested::Inside:
      log_verbose(fmt::format("'{}' stays held: its holder (pid {}) encloses this process and "
                              "releases it when it ends (a nested release does nothing)",
                              key, holder.info.pid));
      return exitcode::kOk;
    case Nested::Owner:
      if (is_keeper(entry.keeper) && kill(static_cast<pid_t>(entry.keeper), SIGTERM) == 0) {
        // The keeper releases and exits; wait for it (bounded), then make
        // sure below (a release that finds it released is fine).
        auto until = Clock::now() + lock->command_timeout();
        while (kill(static_cast<pid_t>(entry.keeper), 0) == 0 && Clock::now() < until)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        auto r = wait_for<ReleaseReply>(
            s.loop, [&](Done<ReleaseReply> d) { lock->release(token, Millis(0), std::move(d)); });
        (void)r;
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
  if (r.state == ReleaseReply::State::NotHeld)
    throw Error(ErrorKind::Lost,
                fmt::format("'{}' is not held by this token (expired, released or broken)", key));
  return exitcode::kOk;
}

}  // namespace rlock
