// `rlock acquire KEY`: take a lease for --ttl and print its token. With
// --while-pid, a detached keeper holds it for as long as that process lives.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <variant>

#include "cli/output.h"
#include "cli/progress.h"
#include "cli/wording.h"
#include "commands/commands.h"
#include "core/json.h"
#include "core/stderr_writer.h"
#include "core/text.h"
#include "hold/acquirer.h"
#include "hold/held.h"
#include "hold/keeper.h"
#include "hold/nest.h"
#include "proc/procinfo.h"
#include "proc/signals.h"

namespace rlock {

namespace {

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// What acquire prints: the token; with --json an object; with --export the
// assignments a script evals to have what a run's command would have.
// `fences`: every key's, in the user's order (`--and`: several).
std::string output_of(const GlobalOptions& g, const LockOptions& o, const std::string& token,
                      const std::vector<int64_t>& fences, Millis ttl, const std::string& held,
                      const std::string& slot = "") {
  const std::vector<std::string> keys = o.keys();
  if (g.json) {
    JsonObject j;
    j.str("key", o.key).str("token", token);
    // Another tool's layout has no fences: no "fence" then.
    if (g.layout == Layout::Rlock) j.num("fence", fences.front());
    j.num("ttl_ms", ttl.count());
    if (keys.size() > 1) {
      std::string k, f;
      for (size_t i = 0; i < keys.size(); ++i) {
        k += (i ? "," : "") + json_string(keys[i]);
        f += fmt::format("{}{}", i ? "," : "", fences[i]);
      }
      j.raw("keys", "[" + k + "]").raw("fences", "[" + f + "]");
    }
    // A counted pool's slot is a number; a named pool's is its name (slot_name).
    if (!slot.empty()) {
      if (std::optional<int64_t> n = parse_int64(slot); n && *n >= 0)
        j.num("slot", *n);
      else
        j.str("slot_name", slot);
    }
    return j.text() + "\n";
  }
  if (o.export_env) {
    std::string k, f;
    for (size_t i = 0; i < keys.size(); ++i) {
      k += (i ? "\n" : "") + keys[i];
      f += fmt::format("{}{}", i ? "\n" : "", fences[i]);
    }
    std::string pool =
        !slot.empty() ? fmt::format("RLOCK_SLOT={}; export RLOCK_SLOT; ", shell_quote(slot)) : "";
    if (g.layout != Layout::Rlock)
      return fmt::format(
          "RLOCK_KEY={}; RLOCK_TOKEN={}; RLOCK_KEYS={}; RLOCK_HELD={}; unset RLOCK_FENCE "
          "RLOCK_FENCES; export RLOCK_KEY RLOCK_TOKEN RLOCK_KEYS RLOCK_HELD\n",
          shell_quote(o.key), shell_quote(token), shell_quote(k), shell_quote(held));
    return fmt::format(
        "{}RLOCK_KEY={}; RLOCK_TOKEN={}; RLOCK_FENCE={}; RLOCK_KEYS={}; RLOCK_FENCES={}; "
        "RLOCK_HELD={}; export RLOCK_KEY RLOCK_TOKEN RLOCK_FENCE RLOCK_KEYS RLOCK_FENCES "
        "RLOCK_HELD\n",
        pool, shell_quote(o.key), shell_quote(token), fences.front(), shell_quote(k),
        shell_quote(f), shell_quote(held));
  }
  return token + "\n";
}

// PID (--while-pid): it must run, and be told apart for sure from a process
// that reuses its pid later (`watched`: a handle on it where the system has
// one, else its start time).
void check_watched(const LockOptions& o, WatchedProcess& watched) {
  if (!o.while_pid) return;
  int unreadable = 0;
  auto info = proc_info(static_cast<pid_t>(o.while_pid), &unreadable);
  bool exists = kill(static_cast<pid_t>(o.while_pid), 0) == 0 || errno == EPERM;
  if (exists && unreadable)
    throw Error(ErrorKind::Exec,
                fmt::format("--while-pid {}: cannot read its start time: {}", o.while_pid,
                            std::strerror(unreadable)),
                exitcode::kNoKeeper);
  if (!exists || (!info && kProcInfoKnown))
    throw_usage(fmt::format("--while-pid {}: there is no such process", o.while_pid));
  int err = 0;
  watched = WatchedProcess::open(static_cast<pid_t>(o.while_pid), info ? info->start : 0, err);
  if (err)
    throw Error(ErrorKind::Exec,
                fmt::format("--while-pid {}: cannot open a handle on it: {}", o.while_pid,
                            std::strerror(err)),
                exitcode::kNoKeeper);
  if (!watched.alive())
    throw_usage(fmt::format("--while-pid {}: there is no such process", o.while_pid));
}

// Releases `token` on connections of its own: the forking process's are
// shared with a keeper that may have used them since.
void release_afresh(const GlobalOptions& g, const LockOptions& o, const std::string& token) {
  try {
    Session fresh(g);
    auto lock = fresh.lock(o.key, g.prefix, o.limit);
    wait_for<ReleaseReply>(
        fresh.loop, [&](Done<ReleaseReply> d) { lock->release(token, Millis(0), std::move(d)); });
  } catch (const Error&) {
    // it expires after its TTL
  }
}

// With --while-pid: the keeper takes the lease over (start_keeper). Only once
// it is ready to be told to stop does this process print what the caller
// wants (so that the caller's release always finds a keeper that hears it),
// tell the keeper the caller has it, and leave by _exit (its connections are
// the keeper's now: no destructor may close or shut them).
int hand_to_keeper(const GlobalOptions& g, Lock& lock, const std::string& token, const Acquired& a,
                   const LockOptions& o, const WatchedProcess& watched,
                   const std::function<std::string(long keeper)>& text) {
  StartedKeeper keeper =
      start_keeper(lock, token, a, KeeperSpec{o.while_pid, o.on_lost, o.sync_replicas}, watched);
  int status = exitcode::kOk;
  switch (keeper.said()) {
    case StartedKeeper::Said::Ready:
      try {
        print_out(text(keeper.pid()));
        keeper.go();
      } catch (const Error& e) {
        // Not printed: the keeper releases (nobody could release a lease
        // whose token was not printed) when it reads EOF.
        if (e.cause() != Cause::ReaderGone) log_error(e.what());
        status = e.exit_status();
      }
      break;
    case StartedKeeper::Said::Ended:
      // PID ended while the keeper started: released.
      log_error(fmt::format("--while-pid {}: the process ended", o.while_pid));
      status = exitcode::kUsage;
      break;
    case StartedKeeper::Said::Died:
      keeper.abandon();
      release_afresh(g, o, token);
      log_error(fmt::format("cannot start the keeper: it ended (pid {}); '{}' is released",
                            static_cast<long>(keeper.pid()), escape_text(o.key)));
      status = exitcode::kNoKeeper;
      break;
  }
  keeper.abandon();
  stderr_drain(Millis(500));
  end_if_reader_gone();  // a reader that closed stdout: SIGPIPE, as in main
  _exit(status);
}

// --while-pid inside an enclosing holder: it keeps the lock for PID's life
// only if PID runs under it (the script that takes its lock again); anything
// else would be unlocked once the holder ends, with nobody told: 64.
void refuse_foreign_pid(const LockOptions& o, const std::string& key, const Holder& enclosing) {
  if (!o.while_pid ||
      is_ancestor(static_cast<pid_t>(enclosing.info.pid), static_cast<pid_t>(o.while_pid)))
    return;
  throw_usage(fmt::format(
      "--while-pid {}: '{}' is already held by an enclosing holder (pid {}), and process {} "
      "does not run under it: the lock could not be kept for its life (take it outside the "
      "holder, or run that process under it)",
      o.while_pid, key, enclosing.info.pid, o.while_pid));
}

// A nested acquire takes nothing, so the process it is for (PID, else the
// caller) is inside the lock only while the enclosing holder waits for it:
// a run waits for its command's process group (led by its child, or by a
// nested run's child), a keeper's script for nothing but itself. Anywhere
// else (set -m, setsid) it would run on unlocked once the holder ends, with
// nobody told: 64 (docs/GUIDE.md "Nesting").
void refuse_leaving_group(Session& s, Lock& part, const LockOptions& o, const HeldEntry& e,
                          const Holder& enclosing) {
  auto pid = static_cast<pid_t>(o.while_pid ? o.while_pid : getppid());
  pid_t group = getpgid(pid);
  auto holder = static_cast<pid_t>(enclosing.info.pid);
  // (the holder itself: `rlock run K -- rlock acquire K`)
  if (pid == holder || group_inside_holder(group, e, holder)) return;
  if (e.keeper == 0)
    for (const NestedHold& n : nested_holds(s.loop, part, e.token))
      if (group_inside_holder(group, e, static_cast<pid_t>(n.pid))) return;
  throw_usage(fmt::format(
      "'{}' is already held by an enclosing holder (pid {}), but process {} is outside its "
      "process group: a nested acquire takes nothing, so it could run on after the lock is "
      "released; acquire it in the holder's process group (no set -m or setsid), or use a "
      "nested run",
      e.key, enclosing.info.pid, pid));
}

// Nested in a holder of every KEY (RLOCK_HELD, confirmed with Redis): nothing
// is taken, and the token that holds them is printed (a release of it from
// inside is a no-op, cmd_release). False when the lock must be taken as usual.
bool acquire_nested(Session& s, Lock& lock, const GlobalOptions& g, const LockOptions& o,
                    const std::vector<HeldEntry>& held, const std::string& where) {
  auto found = find_all_held(held, o.keys(), g.prefix, where);
  if (found.empty()) return false;
  std::vector<int64_t> fences;
  std::optional<Holder> first;
  auto parts = lock.parts();
  for (size_t i = 0; i < found.size(); ++i) {
    std::string why;
    auto h = verify_held(s.loop, *parts[i], found[i], why);
    if (!h) {
      log_verbose(
          fmt::format("RLOCK_HELD lists '{}', but {}: taking it as usual", found[i].key, why));
      return false;
    }
    refuse_upgrade(o.key, o.shared, *h);
    refuse_foreign_pid(o, found[i].key, *h);
    refuse_leaving_group(s, *parts[i], o, found[i], *h);
    if (!first) first = h;
    fences.push_back(h->fence);
    found[i].nested = true;  // a release under this copy is a nested one
  }
  log_verbose(fmt::format(
      "'{}' is already held by an enclosing holder (pid {}): taking nothing{}", o.key,
      first->info.pid,
      o.while_pid ? fmt::format(" and starting no keeper (process {} runs under the holder, "
                                "which keeps it)",
                                o.while_pid)
                  : ""));
  print_out(
      output_of(g, o, found.front().token, fences, first->ttl_left, held_with_each(held, found)));
  return true;
}

// Who holds: with --while-pid, PID with its command line and its user (root
// may keep a lock for another user's process); else the caller. With --label.
HolderInfo holder_info(const LockOptions& o) {
  auto pid = static_cast<pid_t>(o.while_pid);
  HolderInfo info = o.while_pid
                        ? local_holder_info(proc_command_line(pid, kMaxHolderField), o.while_pid)
                        : local_holder_info("rlock acquire", getppid());
  if (o.while_pid)
    if (auto uid = proc_uid(pid)) info.user = user_name(*uid);
  info.label = o.label;
  return info;
}

// Takes the lock, waiting as the options say. A signal while waiting leaves
// the line at once (as `run` does) instead of leaving a dead place behind
// until its lease runs out: its 128+N is returned. PID (--while-pid,
// `watched`) is watched while waiting too: once it has ended, the line is
// left at once (the lock would be released as soon as it was granted).
std::variant<Acquired, int> take(Session& s, Lock& lock, const LockOptions& o,
                                 const std::string& token, const WatchedProcess& watched) {
  auto acquirer = make_acquisition(
      lock, token,
      WaitSpec{o.ttl, o.wait, o.no_wait, holder_info(o), o.sync_replicas, holders_in_words});
  WaitReporter reporter(s.loop, o.key, o.limit);
  acquirer->on_progress([&](const WaitProgress& p) { reporter.report(p); });
  std::optional<int> cancelled;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
    if (!ignored_at_start(sig))
      s.loop.on_signal(sig, [&](int n) { acquirer->cancel([&, n] { cancelled = 128 + n; }); });
  std::optional<Outcome<Acquired>> out;
  bool pid_ended = false;
  Loop::TimerId watch_timer = 0;
  std::function<void()> watch_pid = [&] {
    watch_timer = s.loop.after(kWatchPidEvery, [&] {
      watch_timer = 0;
      if (out || cancelled) return;
      if (watched.alive()) return watch_pid();
      acquirer->cancel([&] { pid_ended = true; });
    });
  };
  if (o.while_pid) watch_pid();
  acquirer->start([&](Outcome<Acquired> r) { out = std::move(r); });
  s.loop.run_until([&] { return out.has_value() || cancelled.has_value() || pid_ended; });
  s.loop.cancel(watch_timer);
  if (cancelled) return *cancelled;
  if (pid_ended)
    throw_usage(fmt::format("--while-pid {}: the process ended while waiting for '{}'", o.while_pid,
                            o.key));
  if (out->error) {
    if (out->error->kind() == ErrorKind::NotAcquired)
      throw Error(ErrorKind::NotAcquired, out->error->what(), not_acquired_exit(o, *out->error),
                  out->error->cause());
    throw *out->error;
  }
  return out->value;
}

// Quorum mode: the masters that had not answered when a majority granted (a
// slower one, or one that had lost the scripts and is sent the EVAL after its
// NOSCRIPT) get their acquisition before the token is printed, at most the
// per-master bound more, never more than the default TTL's (the man page,
// "Quorum (Redlock)"): a lease left on a bare majority is lost as soon as one
// of them restarts empty, and a release with the printed token could overtake
// a late grant. `run` and a keeper (--while-pid) do not wait: their renewals
// grant the lease again where it is missing.
// `stop`: a signal ended the wait. Returns how long it waited (0: not at all).
Millis settle_unheard(Loop& loop, Lock& lock, const std::function<bool()>& stop) {
  std::vector<Lock*> parts = lock.parts();
  Millis bound{0};
  for (Lock* p : parts)
    if (p->unheard() > 0) bound = std::max(bound, p->unheard_bound());
  if (bound.count() <= 0) return Millis(0);
  const auto start = Clock::now();
  bool over = false;
  Loop::TimerId timer = loop.after(bound, [&] {
    timer = 0;
    over = true;
  });
  loop.run_until([&] {
    return over || stop() ||
           std::all_of(parts.begin(), parts.end(), [](Lock* p) { return p->unheard() == 0; });
  });
  loop.cancel(timer);
  return std::max(Millis(1), std::chrono::ceil<Millis>(Clock::now() - start));
}

}  // namespace

int cmd_acquire(const GlobalOptions& g, const LockOptions& o) {
  validate(o);
  WatchedProcess watched;
  check_watched(o, watched);
  Session s(g);
  auto lock = s.locks(o, g.prefix);
  std::vector<HeldEntry> held = held_from_env();
  const std::string where = lock_location(g);
  if (acquire_nested(s, *lock, g, o, held, where)) return exitcode::kOk;
  check_held_room(held, o.keys(), g.prefix, where);
  std::string token = lock->fresh_token(holder_info(o).pid);
  auto taken = take(s, *lock, o, token, watched);
  if (auto* status = std::get_if<int>(&taken)) return *status;
  const Acquired& a = std::get<Acquired>(taken);
  // take()'s signal handlers end with it (they name its locals): from here on
  // a signal ends the wait for the last masters, and the lease is released,
  // its token never printed.
  std::optional<int> signalled;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
    if (!ignored_at_start(sig)) s.loop.on_signal(sig, [&](int n) { signalled = 128 + n; });
  const std::vector<int64_t> fences = a.fences.empty() ? std::vector<int64_t>{a.fence} : a.fences;
  Millis lease = a.ttl;  // what is left of it when printed
  // RLOCK_HELD gains this lock only when a keeper holds it: a plain acquire's
  // lease has no holder that goes on (nothing renews it), so nothing may nest
  // in it, and the script's own release must release it.
  auto text = [&](long keeper) {
    std::string slot = a.slot_name.empty() && a.slot > 0 ? std::to_string(a.slot) : a.slot_name;
    if (keeper <= 0) return output_of(g, o, token, fences, lease, format_held(held), slot);
    std::vector<HeldEntry> mine;
    uint64_t keeper_start = 0;
    if (auto k = proc_info(static_cast<pid_t>(keeper))) keeper_start = k->start;
    for (const std::string& key : o.keys())
      mine.push_back({token, key, g.prefix, where, keeper, keeper_start});
    return output_of(g, o, token, fences, lease, held_with_each(held, mine), slot);
  };
  if (o.while_pid) {
    if (!watched.alive()) {
      wait_for<ReleaseReply>(
          s.loop, [&](Done<ReleaseReply> d) { lock->release(token, Millis(0), std::move(d)); });
      throw_usage(fmt::format("--while-pid {}: the process ended", o.while_pid));
    }
    return hand_to_keeper(g, *lock, token, a, o, watched, text);
  }
  lease -= settle_unheard(s.loop, *lock, [&] { return signalled.has_value(); });
  lease = std::max(Millis(0), lease);
  if (signalled) {
    try {
      wait_for<ReleaseReply>(
          s.loop, [&](Done<ReleaseReply> d) { lock->release(token, Millis(0), std::move(d)); });
    } catch (const Error&) {
      // it expires after its TTL
    }
    return *signalled;
  }
  try {
    print_out(text(0));
  } catch (const Error&) {
    // Nobody could ever release a lease whose token was not printed.
    wait_for<ReleaseReply>(
        s.loop, [&](Done<ReleaseReply> d) { lock->release(token, Millis(0), std::move(d)); });
    throw;
  }
  return exitcode::kOk;
}

}  // namespace rlock
