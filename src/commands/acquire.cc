// `rlock acquire KEY`: take a lease for --ttl and print its token. With
// --while-pid, a detached keeper holds it for as long as that process lives.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include "commands/commands.h"
#include "held.h"
#include "keeper.h"
#include "output.h"
#include "procinfo.h"
#include "progress.h"
#include "signals.h"
#include "stderr_writer.h"
#include "waiter.h"

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
                      long slot = 0) {
  const std::vector<std::string> keys = o.keys();
  if (g.json) {
    std::string more;
    if (keys.size() > 1) {
      std::string k, f;
      for (size_t i = 0; i < keys.size(); ++i) {
        k += (i ? "," : "") + json_string(keys[i]);
        f += fmt::format("{}{}", i ? "," : "", fences[i]);
      }
      more = fmt::format(",\"keys\":[{}],\"fences\":[{}]", k, f);
    }
    if (slot > 0) more += fmt::format(",\"slot\":{}", slot);
    return fmt::format("{{\"key\":{},\"token\":{},\"fence\":{},\"ttl_ms\":{}{}}}\n",
                       json_string(o.key), json_string(token), fences.front(), ttl.count(), more);
  }
  if (o.export_env) {
    std::string k, f;
    for (size_t i = 0; i < keys.size(); ++i) {
      k += (i ? "\n" : "") + keys[i];
      f += fmt::format("{}{}", i ? "\n" : "", fences[i]);
    }
    std::string pool = slot > 0 ? fmt::format("RLOCK_SLOT={}; export RLOCK_SLOT; ", slot) : "";
    return fmt::format(
        "{}RLOCK_KEY={}; RLOCK_TOKEN={}; RLOCK_FENCE={}; RLOCK_KEYS={}; RLOCK_FENCES={}; "
        "RLOCK_HELD={}; export RLOCK_KEY RLOCK_TOKEN RLOCK_FENCE RLOCK_KEYS RLOCK_FENCES "
        "RLOCK_HELD\n",
        pool, shell_quote(o.key), shell_quote(token), fences.front(), shell_quote(k),
        shell_quote(f), shell_quote(held));
  }
  return token + "\n";
}

void check_watched(const LockOptions& o, uint64_t& start) {
  if (!o.while_pid) return;
  auto info = proc_info(static_cast<pid_t>(o.while_pid));
  bool exists = kill(static_cast<pid_t>(o.while_pid), 0) == 0 || errno == EPERM;
  if (!exists || (!info && kProcInfoKnown))
    throw_usage(fmt::format("--while-pid {}: there is no such process", o.while_pid));
  start = info ? info->start : 0;
}

// The keeper: forked once the lease is granted. The parent prints what the
// caller wants and leaves at once by _exit (its connections are the
// keeper's now: no destructor may close or shut them down); the keeper
// waits for the parent's word that the output was written, then detaches.
int fork_keeper(Lock& lock, const std::string& token, const Acquired& a, const LockOptions& o,
                uint64_t start, const std::function<std::string(long keeper)>& text) {
  int go[2];
  if (pipe(go) != 0) throw Error(ErrorKind::Exec, fmt::format("pipe: {}", strerror(errno)), 71);
  fcntl(go[0], F_SETFD, FD_CLOEXEC);
  fcntl(go[1], F_SETFD, FD_CLOEXEC);
  // Blocked across the fork and, in the parent, until its _exit: a signal
  // handler of the parent would write to the self-pipe the keeper shares.
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    sigprocmask(SIG_SETMASK, &old, nullptr);
    close(go[0]);
    close(go[1]);
    wait_for<ReleaseReply>(
        lock.loop(), [&](Done<ReleaseReply> d) { lock.release(token, Millis(0), std::move(d)); });
    throw Error(ErrorKind::Exec, fmt::format("cannot start the keeper: fork: {}", strerror(err)),
                71);
  }
  if (pid > 0) {
    close(go[0]);
    bool printed = true;
    try {
      print_out(text(pid));
    } catch (const Error& e) {
      printed = false;
      log_error(e.what());
    }
    if (printed) {
      char c = 'g';
      while (write(go[1], &c, 1) < 0 && errno == EINTR) {
      }
    }
    close(go[1]);
    stderr_drain(Millis(500));
    // Not printed: the keeper releases (nobody could release a lease whose
    // token was not printed) and the caller hears the failure.
    _exit(printed ? exitcode::kOk : exitcode::kProtocol);
  }
  close(go[1]);
  char c = 0;
  ssize_t n;
  do {
    n = read(go[0], &c, 1);
  } while (n < 0 && errno == EINTR);
  close(go[0]);
  setsid();
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    if (null > 2) close(null);
  }
  close_inherited_descriptors();
  (void)chdir("/");  // nor the caller's directory (an unmountable file system)
  // A signal meant for the caller (a Ctrl-C while it printed) is pending here
  // too: discarded (POSIX: setting SIG_IGN discards a pending signal), so that
  // the keeper does not take it for its own. The keeper installs its handlers.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1}) {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(sig, &ign, nullptr);
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  if (n != 1 || c != 'g') {
    wait_for<ReleaseReply>(
        lock.loop(), [&](Done<ReleaseReply> d) { lock.release(token, Millis(0), std::move(d)); });
    _exit(exitcode::kProtocol);
  }
  _exit(keep_while_pid(lock, token, a, o, start));
}

}  // namespace

int cmd_acquire(const GlobalOptions& g, const LockOptions& o) {
  validate(o);
  uint64_t start = 0;
  check_watched(o, start);
  Session s(g);
  auto lock = s.locks(o, g.prefix);
  std::vector<HeldEntry> held = held_from_env();
  const std::string where = lock_location(g);
  // Nested in a holder of KEY (RLOCK_HELD, confirmed with Redis): nothing is
  // taken, and the token that holds it is printed (a release of it from
  // inside is a no-op, cmd_release).
  if (auto found = find_all_held(held, o.keys(), g.prefix, where); !found.empty()) {
    std::vector<int64_t> fences;
    std::optional<Holder> first;
    auto parts = lock->parts();
    for (size_t i = 0; i < found.size(); ++i) {
      std::string why;
      auto h = verify_held(s.loop, *parts[i], found[i], why);
      if (!h) {
        log_verbose(
            fmt::format("RLOCK_HELD lists '{}', but {}: taking it as usual", found[i].key, why));
        break;
      }
      refuse_upgrade(o, *h);
      if (!first) first = h;
      fences.push_back(h->fence);
      found[i].nested = true;  // a release under this copy is a nested one
    }
    if (fences.size() == found.size()) {
      log_verbose(
          fmt::format("'{}' is already held by an enclosing holder (pid {}): taking "
                      "nothing",
                      o.key, first->info.pid));
      print_out(output_of(g, o, found.front().token, fences, first->ttl_left,
                          held_with_each(held, found)));
      return exitcode::kOk;
    }
  }
  check_held_room(held, o.keys(), g.prefix, where);
  HolderInfo info =
      o.while_pid
          ? local_holder_info(proc_command_line(static_cast<pid_t>(o.while_pid), kMaxHolderField),
                              o.while_pid)
          : local_holder_info("rlock acquire", getppid());
  info.label = o.label;
  WaitSpec spec{o.ttl, o.wait, o.no_wait, info, o.sync_replicas};
  std::string token = new_token();
  auto acquirer = make_acquisition(*lock, token, spec);
  WaitReporter reporter(s.loop, o.key, o.limit);
  acquirer->on_progress([&](const WaitProgress& p) { reporter.report(p); });
  // A signal while waiting leaves the line at once (as `run` does) instead
  // of leaving a dead place behind until its lease runs out.
  std::optional<int> cancelled;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
    if (!ignored_at_start(sig))
      s.loop.on_signal(sig, [&](int n) { acquirer->cancel([&, n] { cancelled = 128 + n; }); });
  std::optional<Outcome<Acquired>> out;
  acquirer->start([&](Outcome<Acquired> r) { out = std::move(r); });
  s.loop.run_until([&] { return out.has_value() || cancelled.has_value(); });
  if (cancelled) return *cancelled;
  if (out->error) {
    if (out->error->kind() == ErrorKind::NotAcquired)
      throw Error(ErrorKind::NotAcquired, out->error->what(), o.conflict_exit);
    throw *out->error;
  }
  const Acquired& a = out->value;
  const std::vector<int64_t> fences = a.fences.empty() ? std::vector<int64_t>{a.fence} : a.fences;
  // RLOCK_HELD gains this lock only when a keeper holds it: a plain acquire's
  // lease has no holder that goes on (nothing renews it), so nothing may nest
  // in it, and the script's own release must release it.
  auto text = [&](long keeper) {
    if (keeper <= 0) return output_of(g, o, token, fences, a.ttl, format_held(held), a.slot);
    std::vector<HeldEntry> mine;
    uint64_t keeper_start = 0;
    if (auto k = proc_info(static_cast<pid_t>(keeper))) keeper_start = k->start;
    for (const std::string& key : o.keys())
      mine.push_back({token, key, g.prefix, where, keeper, keeper_start});
    return output_of(g, o, token, fences, a.ttl, held_with_each(held, mine), a.slot);
  };
  if (o.while_pid) {
    if (!watched_alive(o.while_pid, start)) {
      wait_for<ReleaseReply>(
          s.loop, [&](Done<ReleaseReply> d) { lock->release(token, Millis(0), std::move(d)); });
      throw_usage(fmt::format("--while-pid {}: the process ended", o.while_pid));
    }
    return fork_keeper(*lock, token, a, o, start, text);
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
