// `rlock run`: one event loop waits on the child, signals, timers and Redis.
// Its phases (Runner::Phase; every change goes through Runner::enter):
//
//   Waiting ──acquired──▶ Running ──command exits,──▶ Draining ──a stop request,──▶ EndingLeftovers
//    │  │                  │        leftovers in      │          --kill-leftovers   (SIGTERM, then
//    │  │                  │        its group         │                             SIGKILL later)
//    │  │                  │ command exits,           │ group empty                  │ group empty
//    │  │                  ▼ group empty (or -o)      ▼                              │
//    │  └─cannot start──▶ Releasing ◀─────────────────┴──────────────────────────────┘
//    │   the command       │ answered
//    │                     ▼
//    └─not acquired, ───▶ Exited (the exit status is known: the loop ends)
//      or a signal: leave the line, 128+N
//
// The lease is not a phase: while the command's group holds the lock (Running, Draining,
// EndingLeftovers), a renewal that fails past its deadline or a break that is heard loses it
// (lost_: the group is signalled per --on-lost), and the phases go on as drawn.
#include "commands/run.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cstring>

#include "cli/output.h"
#include "cli/progress.h"
#include "cli/wording.h"
#include "commands/session.h"
#include "core/duration.h"
#include "core/text.h"
#include "hold/acquirer.h"
#include "hold/held.h"
#include "hold/nest.h"
#include "hold/watchdog.h"
#include "proc/child.h"
#include "proc/guard.h"
#include "proc/procinfo.h"
#include "proc/signals.h"

namespace rlock {

namespace {

std::string join_command(const RunCommand& c) {
  if (!c.shell.empty()) return c.shell;
  std::string out;
  for (auto& a : c.argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`") == std::string::npos;
    out += plain ? a : "'" + a + "'";
  }
  return out;
}

SpawnSpec command_spec(const RunCommand& c) {
  SpawnSpec spec;
  spec.argv = c.shell.empty() ? c.argv : std::vector<std::string>{"/bin/sh", "-c", c.shell};
  return spec;
}

// What the command sees: RLOCK_KEY, RLOCK_TOKEN, RLOCK_FENCE (the first
// key's), RLOCK_KEYS and RLOCK_FENCES (every key's, one a line, in the user's
// order: `--and`), RLOCK_HELD with every one of them added, and RLOCK_SLOT
// for a semaphore's holder.
std::vector<std::string> command_env(const std::vector<Lock*>& parts, const std::string& token,
                                     const Acquired& a, const std::vector<HeldEntry>& held,
                                     const std::string& where) {
  std::string keys, fences;
  std::vector<HeldEntry> mine;
  for (size_t i = 0; i < parts.size(); ++i) {
    const LockNames& n = parts[i]->names();
    keys += (i ? "\n" : "") + n.key;
    fences += fmt::format("{}{}", i ? "\n" : "", i < a.fences.size() ? a.fences[i] : a.fence);
    mine.push_back({token, n.key, n.prefix, where});
  }
  // Another tool's layout has no fences: none are given (and none inherited).
  bool fenced = parts.front()->names().layout == Layout::Rlock;
  std::vector<std::string> env{"RLOCK_KEY=" + parts.front()->names().key,
                               "RLOCK_TOKEN=" + token,
                               fenced ? fmt::format("RLOCK_FENCE={}", a.fence) : "RLOCK_FENCE",
                               "RLOCK_KEYS=" + keys,
                               fenced ? "RLOCK_FENCES=" + fences : "RLOCK_FENCES",
                               "RLOCK_HELD=" + held_with_each(held, mine)};
  // A pool (--limit N): which of the N this holder is, unique among live
  // holders; a named pool's name (--limit NAME,...).
  if (!a.slot_name.empty())
    env.push_back("RLOCK_SLOT=" + a.slot_name);
  else if (a.slot > 0)
    env.push_back(fmt::format("RLOCK_SLOT={}", a.slot));
  return env;
}

// How often the command's process group is looked at after the command has
// exited, while processes it left behind keep the lock.
constexpr Millis kGroupPoll{100};

// A stop request (the man page's PROCESS BEHAVIOUR OF RUN: "Stopping a job
// stops all of it"): one of these signals received by rlock while the command
// runs or leftovers hold the lock, or a command that ended by one of them
// (killed by it, or exiting 128+N).
bool is_stop_signal(int sig) {
  return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT;
}

bool ended_by_stop_signal(int status) {
  return status > 128 && is_stop_signal(status - 128);
}

// How long after the command starts the holder subscribes to the lock's
// release channel (to hear a `break`): well within "about a second".
constexpr Millis kListenAfter{200};

// A nested run joins the enclosing hold (NestedLock::acquire) at once: it
// never waits. An enclosing hold that ended between the check of RLOCK_HELD
// and the join (its command exited at once) is "not acquired" (75): the
// command never ran (docs/GUIDE.md "Nesting").
class NestedJoin : public Acquisition {
 public:
  NestedJoin(NestedLock& lock, std::string token, WaitSpec spec)
      : lock_(lock), token_(std::move(token)), spec_(std::move(spec)) {}

  void start(Done<Acquired> done) override {
    auto sent = Clock::now();
    auto cancelled = cancelled_;
    lock_.acquire(token_, spec_.ttl, false, spec_.info, 1,
                  [this, sent, cancelled, done = std::move(done)](Outcome<AcquireReply> o) {
                    if (*cancelled) return;
                    if (o.error) return done({o.error, {}});
                    if (o.value.state != AcquireReply::State::Acquired)
                      return done({Error(ErrorKind::NotAcquired,
                                         fmt::format("the enclosing hold of '{}' ended before "
                                                     "this nested run could join it: its "
                                                     "command did not run",
                                                     lock_.names().key)),
                                   {}});
                    Acquired a;
                    a.fence = o.value.fence;
                    a.ttl = o.value.ttl;
                    a.sent = sent;
                    if (lock_.fences().size() > 1) a.fences = lock_.fences();
                    done({std::nullopt, a});
                  });
  }
  void on_progress(std::function<void(const WaitProgress&)>) override {}
  void cancel(std::function<void()> done) override {
    *cancelled_ = true;
    done();
  }

 private:
  NestedLock& lock_;
  std::string token_;
  WaitSpec spec_;
  std::shared_ptr<bool> cancelled_ = std::make_shared<bool>(false);
};

}  // namespace

/// A nested run (docs/GUIDE.md "Nesting"): the enclosing holders' entries (one per
/// key) and the environment its command gets.
struct NestedRun {
  std::vector<HeldEntry> found;
  std::vector<std::string> env;
  Millis ttl{0};  // the shortest enclosing hold's --ttl (0: not known)
};

namespace {

class Runner {
 public:
  Runner(const GlobalOptions& g, const LockOptions& o, const RunCommand& c,
         std::vector<HeldEntry> held, std::optional<NestedRun> nested = std::nullopt)
      : opts_(o),
        cmd_(c),
        session_(g),
        lock_(session_.locks(o, g.prefix)),
        token_(lock_->fresh_token(static_cast<long>(getpid()))),
        held_(std::move(held)),
        where_(lock_location(g)),
        nested_(std::move(nested)) {
    if (nested_) {
      std::vector<std::string> outer;
      for (const HeldEntry& e : nested_->found) outer.push_back(e.token);
      lock_ = std::make_unique<NestedLock>(std::move(lock_), std::move(outer));
    }
  }

  int run() {
    install_signals();
    HolderInfo info = local_holder_info(join_command(cmd_), static_cast<long>(getpid()));
    info.label = opts_.label;
    WaitSpec spec{opts_.ttl, opts_.wait,          opts_.no_wait,
                  info,      opts_.sync_replicas, holders_in_words};
    if (nested_)
      acquirer_ = std::make_unique<NestedJoin>(static_cast<NestedLock&>(*lock_), token_, spec);
    else
      acquirer_ = make_acquisition(*lock_, token_, spec);
    acquirer_->on_progress([this](const WaitProgress& p) { reporter_.report(p); });
    acquirer_->start([this](Outcome<Acquired> o) { on_acquired(std::move(o)); });
    // The guard is forked once the first request is on its way (timers run
    // after the loop's first poll has sent it): its fork overlaps the round
    // trip instead of delaying the command.
    guard_timer_ = loop().after(Millis(0), [this] {
      guard_timer_ = 0;
      guard_ = GroupGuard::start();
    });
    loop().run_until([this] { return phase_ == Phase::Exited; });
    if (error_) throw *error_;
    return exit_status_;
  }

 private:
  // The diagram at the top of this file.
  enum class Phase { Waiting, Running, Draining, EndingLeftovers, Releasing, Exited };

  static bool allowed(Phase from, Phase to) {
    switch (from) {
      case Phase::Waiting:
        return to == Phase::Running || to == Phase::Releasing || to == Phase::Exited;
      case Phase::Running:
        return to == Phase::Draining || to == Phase::Releasing;
      case Phase::Draining:
        return to == Phase::EndingLeftovers || to == Phase::Releasing;
      case Phase::EndingLeftovers:
        return to == Phase::Releasing;
      case Phase::Releasing:
        return to == Phase::Exited;
      case Phase::Exited:
        return false;
    }
    return false;
  }

  void enter(Phase next) {
    assert(allowed(phase_, next));
    phase_ = next;
  }

  // The exit status is known: the loop ends. A second one in the same turn of
  // the loop (a signal's, while the release was answered) replaces the first.
  void exit_with(int status) {
    if (phase_ != Phase::Exited) enter(Phase::Exited);
    exit_status_ = status;
  }

  /// The command has exited and processes it left in its group hold the lock.
  bool draining() const { return phase_ == Phase::Draining || phase_ == Phase::EndingLeftovers; }

  Loop& loop() { return session_.loop; }

  /// The lock protects the command's process group: from the start of the
  /// command until the last process it left in its group has exited.
  bool holding() const { return child_ && (child_->running() || draining()); }

  void install_signals() {
    // One system call per signal: the handler goes in and tells what was
    // inherited; one ignored at start is ignored again and stays so.
    for (int sig : kForwardedSignals)
      handle_unless_ignored(loop(), sig, [this](int s) { on_signal(s); });
    handle_unless_ignored(loop(), SIGTSTP, [this](int) { on_tstp(); });
    // SIGTTIN can come only from kill(1) (rlock never reads the terminal): a
    // stop like SIGTSTP's, the command's group first. SIGTTOU is ignored: rlock's
    // own messages from the background must never stop it (`stty tostop`).
    handle_unless_ignored(loop(), SIGTTIN, [this](int) { on_tstp(); });
    ignore_background_writes();
    // Always ours, even if inherited as ignored: we must reap the child.
    handle_unless_ignored(
        loop(), SIGCHLD, [this](int) { reap(); }, true);
    // Never blocked either: a SIGCHLD blocked at start (`env --block-signal=CHLD`, a
    // supervisor's mask) would never tell rlock that its command ended, and it would hold
    // the lock for ever. Unblocked for rlock alone: the command starts with the mask rlock
    // was started with (restore_inherited_signals_in_child).
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_UNBLOCK, &chld, nullptr);
  }

  // A stop request to this run reaches the nested runs under its token on
  // this host (docs/GUIDE.md "Nesting"), each once: their own group is outside this
  // run's. A pid is signalled only while it is still an rlock process.
  void pass_stop(int sig) {
    if (nested_ || !holding()) return;
    std::string host = local_holder_info("", 0).host;
    each_nested_hold(*lock_, token_, [sig, host](const NestedHold& h) {
      if (h.host != host || h.pid < 1 || h.pid > 0x7fffffff) return;
      auto pid = static_cast<pid_t>(h.pid);
      std::string cmd = proc_command_line(pid, 256);
      std::string first = cmd.substr(0, cmd.find(' '));
      if (first.substr(first.rfind('/') + 1) != "rlock") return;
      log_verbose(fmt::format("passing signal {} on to the nested run pid {}", sig, h.pid));
      kill(pid, sig);
    });
  }

  void on_signal(int sig) {
    if (sig == SIGCONT && stopped_) return;  // stop_self() resumes once it returns
    // rlock continued after someone's SIGSTOP past the lease's renewal deadline:
    // the command (which the guard may have stopped) waits for a renewal first.
    if (sig == SIGCONT && holding() && !lost_ && watchdog_ && Clock::now() >= watchdog_->lost_at())
      return resume();
    if (is_stop_signal(sig)) pass_stop(sig);
    if (holding() && draining() && is_stop_signal(sig)) {
      // The command has ended and rlock has the terminal back: this is the
      // Ctrl-C (or the SIGTERM of a CI cancel) that ends what it left behind.
      stop_requested_ = true;
      return end_leftovers(fmt::format("signal {}", sig));
    }
    if (holding()) {
      log_verbose(fmt::format("forwarding signal {} to the command's process group", sig));
      if (is_stop_signal(sig)) stop_requested_ = true;
      if (sig == SIGTERM) note_group_termed();
      child_->signal_group(sig);
      return;
    }
    if (!child_ && sig != SIGWINCH && sig != SIGCONT) {
      if (!acquirer_) return exit_with(128 + sig);
      // A signal while waiting cancels the wait and leaves the line.
      log_verbose(fmt::format("signal {} while waiting: leaving the line", sig));
      acquirer_->cancel([this, sig] { exit_with(128 + sig); });
    }
  }

  // SIGTSTP (or SIGTTIN) sent to rlock itself (a terminal's Ctrl-Z goes to
  // the command's group, not to rlock). rlock stops, and renews nothing while stopped, so
  // the command must not run on meanwhile: its group is stopped first
  // (SIGSTOP, which it cannot ignore). SIGCONT resumes both (resume()).
  void on_tstp() {
    if (holding()) child_->signal_group(SIGSTOP);
    stop_self();
  }

  // A signal to itself stops the process before kill() returns (POSIX), so
  // when it returns rlock has been continued: resume from here, whether or not
  // a SIGCONT handler is installed (SIGCONT may have been ignored at start).
  void stop_self() {
    stopped_ = true;
    kill(getpid(), SIGSTOP);
    resume();
  }

  void resume() {
    stopped_ = false;
    if (!holding()) return;
    // Stopped past the renewal deadline, the lease may be gone and someone
    // else may hold the lock: one renewal decides before the command runs
    // again (--on-lost if it is gone). A nested run may have kept it held all
    // along (docs/GUIDE.md "Nesting"): then nothing was lost.
    if (!lost_ && Clock::now() >= watchdog_->lost_at()) {
      log_verbose("continued past the lease's renewal deadline: does its token still hold it?");
      // (The watchdog, and this callback with it, lives no longer than this run.)
      watchdog_->check_late([this] {
        if (stopped_) return;  // stopped again meanwhile: the next SIGCONT resumes
        log_verbose("continued: continuing the command");
        child_->resume();
      });
      return;
    }
    log_verbose("continued: continuing the command");
    child_->resume();  // and the terminal, if rlock was continued in the foreground
    if (!lost_) watchdog_->renew();
  }

  void on_acquired(Outcome<Acquired> o) {
    if (o.error) {
      if (o.error->kind() == ErrorKind::NotAcquired)
        error_ = Error(ErrorKind::NotAcquired, o.error->what(), not_acquired_exit(opts_, *o.error),
                       o.error->cause());
      else
        error_ = o.error;
      return exit_with(error_->exit_status());
    }
    acquired_ = o.value;
    // The TTL in the reply is the server's word: kept within what rlock asked.
    acquired_.ttl = std::clamp(acquired_.ttl, Millis(0), opts_.ttl);
    log_verbose(fmt::format("acquired '{}' (fence {}, ttl {})", lock_->names().key, acquired_.fence,
                            format_duration(acquired_.ttl)));
    SpawnSpec spec = command_spec(cmd_);
    spec.env =
        nested_ ? nested_->env : command_env(lock_->parts(), token_, acquired_, held_, where_);
    // What the command leaves behind is reparented to rlock, which reaps it.
    become_subreaper();
    // The guard runs before the command does, and the command's child names
    // its group to it before exec: a SIGKILL to rlock right after the spawn,
    // before watch_group(), still ends what the command started.
    if (guard_timer_) {
      loop().cancel(guard_timer_);
      guard_timer_ = 0;
      guard_ = GroupGuard::start();
    }
    spec.guard_fd = guard_.pipe_fd();
    try {
      child_.emplace(Child::spawn(spec));
      watch_group();
    } catch (const Error& e) {
      log_error(e.what());
      enter(Phase::Releasing);
      release_and_exit(e.exit_status());
      return;
    }
    enter(Phase::Running);
    watchdog_ = std::make_unique<Watchdog>(
        *lock_, token_, acquired_, opts_.sync_replicas,
        Watchdog::Events{
            [this](const std::string& why) { lease_lost(why, watchdog_->lost_keys()); },
            {},
            [this](const std::string& by) { cancelled(by); },
            [this] { tell_guard_lease(); }});
    watchdog_->start();
    tell_guard_lease();
    // A short command never pays for the subscription (to hear a `break`);
    // the check that follows it covers a break in between.
    listen_timer_ = loop().after(kListenAfter, [this] {
      listen_timer_ = 0;
      if (holding() && !lost_) watchdog_->listen();
    });
    reap();  // the child may already have ended
  }

  // ---- the lease (renewals and the release channel: Watchdog) ----

  // Tells the guard when the lease ends, at the start and after each renewal: if
  // rlock says nothing more by then (stopped by SIGSTOP, frozen, starved), the
  // guard stops the command's group until it does (the man page, PROCESS BEHAVIOUR
  // OF RUN). --on-lost warn runs the command on without the lock by choice: none.
  void tell_guard_lease() {
    if (opts_.on_lost == OnLost::Warn || lost_ || !watchdog_) return;
    guard_told_ = watchdog_->deadline();
    guard_.lease_lasts(std::chrono::duration_cast<Millis>(guard_told_ - Clock::now()).count());
  }

  // The command stopped by SIGSTOP once its lease's end had passed unrenewed: the
  // guard's stop, not a Ctrl-Z (which is SIGTSTP); a renewal decides, as after
  // rlock's own stop (resume()). Judged by the end the guard was told: a reply
  // read after a freeze may move the watchdog's deadline without telling it.
  // The guard is told whole milliseconds and counts in them, so it may stop the
  // group up to 2ms before that end: 10ms of slack.
  bool stopped_by_guard() const {
    return child_->stop_signal() == SIGSTOP && watchdog_ && !lost_ &&
           opts_.on_lost != OnLost::Warn && Clock::now() >= later(guard_told_, -Millis(10));
  }

  // `keys`: the keys lost (--and); empty: every key.
  void lease_lost(const std::string& why, const std::vector<std::string>& keys = {}) {
    if (lost_ || !holding()) return;
    std::string lock = lost_lock(keys);
    lost_ = true;
    lost_why_ = why;
    watchdog_->stop();
    switch (opts_.on_lost) {
      case OnLost::Term:
        log_error(fmt::format("lost {}: {}; sending SIGTERM to the command (SIGKILL in {})", lock,
                              why, format_duration(opts_.kill_after)));
        note_group_termed();
        child_->signal_group(SIGTERM);
        if (stopped_ || (child_->stopped())) child_->signal_group(SIGCONT);
        arm_kill_timer();
        break;
      case OnLost::Kill:
        log_error(fmt::format("lost {}: {}; killing the command", lock, why));
        child_->signal_group(SIGKILL);
        break;
      case OnLost::Warn:
        log_error(fmt::format("warning: lost {}: {}; the command runs on without it", lock, why));
        break;
    }
    // After the signal: a group the guard stopped at the lease's end goes on
    // to take it.
    guard_.in_charge();
  }

  // A newer superseding job asked this one to stop (the man page's
  // --cancel-in-progress): a stop request, as a SIGTERM to rlock would be;
  // the run then releases and exits as superseded.
  void cancelled(const std::string& by) {
    if (!holding() || lost_ || cancelled_) return;
    cancelled_ = true;
    log_error(
        fmt::format("superseded by {} (--cancel-in-progress): stopping the command "
                    "(SIGTERM, SIGKILL in {})",
                    escape_text(truncate_text(by, kMaxLabel)), format_duration(opts_.kill_after)));
    pass_stop(SIGTERM);
    stop_requested_ = true;
    if (draining()) return end_leftovers("superseded");
    note_group_termed();
    child_->signal_group(SIGTERM);
    child_->signal_group(SIGCONT);
    arm_kill_timer();
  }

  // The status of a superseded job, waiting or cancelled (--superseded-exit-code).
  int superseded_status() const { return opts_.superseded_exit; }

  // What a loss message names: "the lock 'K'", or with several keys (--and)
  // the ones lost, "the locks 'A' and 'B'"; `keys` empty: every key.
  std::string lost_lock(std::vector<std::string> keys) {
    if (keys.empty())
      for (Lock* part : lock_->parts()) keys.push_back(part->names().key);
    std::string out = keys.size() == 1 ? "the lock " : "the locks ";
    for (size_t i = 0; i < keys.size(); ++i) {
      if (i > 0) out += i + 1 == keys.size() ? " and " : ", ";
      out += fmt::format("'{}'", keys[i]);
    }
    return out;
  }

  void arm_kill_timer() {
    loop().cancel(kill_timer_);
    kill_timer_ = loop().after(opts_.kill_after, [this] {
      kill_timer_ = 0;
      if (child_ && child_->group_alive()) child_->signal_group(SIGKILL);
    });
  }

  // Tells the guard which group to kill if rlock dies. Without a guard (no
  // process could be started: a process or descriptor limit) a SIGKILL to
  // rlock would leave the group running without a lease: said once.
  void watch_group() {
    if (guard_.watch(child_->pid()) || guard_warned_) return;
    warn_unguarded(
        fmt::format("no guard process could be started ({})", std::strerror(guard_.error())));
  }

  // Once per run: the command runs without a guard, and why.
  void warn_unguarded(const std::string& why) {
    guard_warned_ = true;
    log_error("warning: " + why +
              ": if rlock is killed with SIGKILL, what the command runs goes on without a lease");
  }

  // ---- the end ----

  void reap() {
    // A guard stopped by someone's SIGSTOP (its stop is what brought rlock
    // here) could not act if rlock died: it is continued.
    guard_.resume();
    if (!child_) {
      // No command yet (rlock waits in line): the only child is the guard. A
      // guard that died meanwhile is reaped now, so that watch() starts
      // another; otherwise its exit could be missed: a SIGKILLed process
      // closes its descriptors last, so a write to its pipe may still succeed,
      // and this SIGCHLD would not come again.
      guard_.reap_if_exited();
      return;
    }
    bool stopped = false;
    if (child_->running()) {
      child_->try_reap();
      stopped = child_->running() && child_->stopped();
    }
    // Orphans the command left behind, reparented to rlock (subreaper), and a
    // guard that died: before rlock stops below, so that a guard killed while
    // the command was being stopped is replaced first (a SIGKILL to the
    // stopped rlock must still end the group).
    reap_others(
        child_->pid(), [this](int st) { child_->collected(st); },
        [this](pid_t other) {
          if (other != guard_.pid()) return;
          guard_.reaped(other);
          // The guard died while the group still holds the lock: another one
          // takes over, so that the group still dies with rlock.
          // At most kMaxGuardStarts in all: a guard that cannot run (killed
          // as it starts, by a filter or a limit) is not restarted in a loop.
          if (holding() && !guard_stood_down_) {
            if (++guard_starts_ < kMaxGuardStarts) {
              log_verbose("the guard process died: starting another");
              watch_group();
              tell_guard_lease();  // the new guard knows no deadline yet
            } else if (!guard_warned_) {
              warn_unguarded("the guard process kept dying: none is started again");
            }
          }
        });
    if (stopped && stopped_by_guard()) {
      log_verbose("the guard stopped the command at the lease's end: a renewal decides");
      return resume();
    }
    if (stopped) {
      // Ctrl-Z: the command stopped, so stop its whole group (a member that
      // ignores SIGTSTP must not run on unrenewed) and then rlock, and let
      // the shell take over; fg/bg continues rlock, which continues the
      // group. The lease is not renewed meanwhile: a stop longer than the
      // TTL loses it, and --on-lost applies before anything runs again.
      log_verbose("the command stopped: stopping its group and rlock");
      child_->signal_group(SIGSTOP);
      stop_self();
      return;
    }
    if (child_->running()) return;
    if (!command_status_) return command_exited(*child_->try_reap());
    check_leftovers();
  }

  // The command has exited. As with flock(1), whose lock lives as long as any
  // process holds its descriptor, the lock stays held while processes it
  // started are left in its group (`-c 'job &'`); --kill-leftovers ends them.
  //
  // Unless the job was asked to stop: after a stop request (a stop signal to
  // rlock, or a command that ended by one) the leftovers get SIGTERM, then
  // SIGKILL after --kill-after, so that the prompt comes back and the lock is
  // freed within moments. Otherwise rlock says at once that it holds the lock
  // for them, and how to end them.
  //
  // With -o (flock's --close) the lock is released at once and what the
  // command left runs on outside it; a nested run among them holds the lock on
  // its own (the release leaves it held for it).
  void command_exited(int status) {
    command_status_ = status;
    if (ended_by_stop_signal(status)) stop_requested_ = true;
    if (opts_.close) {
      if (child_->group_alive())
        log_verbose(
            "the command exited: releasing the lock (--close); what it left in its group runs "
            "on outside it");
      child_->let_go();
    } else if (child_->group_alive()) {
      enter(Phase::Draining);
      if (opts_.kill_leftovers) {
        end_leftovers("--kill-leftovers");
      } else if (stop_requested_) {
        end_leftovers(ended_by_stop_signal(status)
                          ? fmt::format("the command ended by signal {}", status - 128)
                          : std::string("a stop signal came while it ran"));
      } else {
        log_verbose(
            "the command exited: holding the lock until the processes it left in its "
            "group exit");
        notice_pending_ = true;
      }
      return check_leftovers();
    }
    finish();
  }

  void end_leftovers(const std::string& why) {
    // Once: a second Ctrl-C must not put off the SIGKILL that is already armed.
    if (phase_ == Phase::EndingLeftovers) return;
    log_verbose(fmt::format("ending what the command left in its process group ({})", why));
    enter(Phase::EndingLeftovers);
    // What the command left has had its SIGTERM if rlock already sent one to
    // the group (a forwarded SIGTERM, a cancel, a loss): a second one would run
    // their TERM traps twice. Only what started since (a TERM trap's cleanup
    // job) gets one now, where the group's members can be listed.
    if (!group_termed_) {
      child_->signal_group(SIGTERM);
    } else if (termed_members_) {
      long total = 0;
      for (const GroupMember& m : group_members(child_->pid(), kMaxNotedMembers, total))
        if (!std::binary_search(termed_members_->begin(), termed_members_->end(), m.pid))
          kill(m.pid, SIGTERM);
    }
    group_termed_ = true;
    child_->signal_group(SIGCONT);
    arm_kill_timer();
  }

  // "holding 'K' for 1 process the command left: pid N (sleep); Ctrl-C ends it":
  // once, at the first look at the group after the command exited (so that a
  // process on its way out at that moment is not named), unless -q.
  void leftovers_notice() {
    notice_pending_ = false;
    if (phase_ == Phase::EndingLeftovers) return;
    long total = 0;
    auto members = group_members(child_->pid(), 3, total);
    if (total == 0) return;  // only zombies, or gone meanwhile
    std::string who;
    if (total < 0) {
      who = "the processes the command left in its group";
    } else {
      who = fmt::format("{} process{} the command left: ", total, total == 1 ? "" : "es");
      for (size_t i = 0; i < members.size(); ++i) {
        if (i) who += ", ";
        who += fmt::format("pid {} ({})", members[i].pid, escape_text(members[i].name));
      }
      if (static_cast<size_t>(total) > members.size()) who += ", ...";
    }
    const char* it = total == 1 ? "it" : "them";
    // Ctrl-C reaches rlock only while it is the terminal's foreground (not
    // after Ctrl-Z and bg, nor in a background job).
    const bool ctrl_c = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
    std::string how = ctrl_c ? fmt::format("Ctrl-C ends {}", it)
                             : fmt::format("SIGINT or SIGTERM to rlock (pid {}) ends {}",
                                           static_cast<long>(getpid()), it);
    log_info(fmt::format("holding '{}' for {}; {}", lock_->names().key, who, how));
  }

  void check_leftovers() {
    if (!draining()) return;
    loop().cancel(group_timer_);
    group_timer_ = 0;
    if (child_->group_alive()) {
      // Not all of them are rlock's children (no SIGCHLD then): look again soon.
      group_timer_ = loop().after(kGroupPoll, [this] {
        group_timer_ = 0;
        if (notice_pending_ && child_->group_alive()) leftovers_notice();
        reap();
      });
      return;
    }
    finish();
  }

  void finish() {
    enter(Phase::Releasing);
    loop().cancel(kill_timer_);
    loop().cancel(group_timer_);
    loop().cancel(listen_timer_);
    listen_timer_ = 0;
    if (watchdog_) watchdog_->stop();
    // The group is gone: the guard stands down now and is reaped after the
    // release (a blocking wait for it here would sit on the handoff path).
    guard_.stand_down();
    guard_stood_down_ = true;
    int code = *command_status_;
    if (lost_ && opts_.on_lost != OnLost::Warn) code = exitcode::kLost;
    if (cancelled_ && !lost_) code = superseded_status();
    release_and_exit(code);
  }

  // Always released, even after a loss: renewals that timed out may have left
  // the key ours, and the release is token-checked. A release that finds the
  // token no longer holding reports the loss (a loss is never hidden: the man
  // page's PROCESS BEHAVIOUR OF RUN).
  // A lease kept by --min-hold is marked with the command's own status.
  void release_and_exit(int code) {
    int command = command_status_ ? *command_status_ : -1;
    auto done = [this, code](Outcome<ReleaseReply> o) {
      int status = code;
      const std::string& key = lock_->names().key;
      if (o.error) {
        log_error(fmt::format("could not release '{}': {}; it expires by itself within {}", key,
                              o.error->what(), format_duration(acquired_.ttl)));
        // Refused for permission: the lock stays held for a whole TTL because of
        // the setup, which must not look like success.
        if (o.error->kind() == ErrorKind::Permission) status = o.error->exit_status();
      } else if (o.value.state == ReleaseReply::State::KeptForMinHold) {
        log_verbose(fmt::format("'{}' stays held for {} more (--min-hold)", key,
                                format_duration(o.value.left)));
      } else if (o.value.state == ReleaseReply::State::KeptForNested) {
        // The "holding for ..." of nested runs: they outlive this one.
        log_info(
            fmt::format("'{}' stays held by {} nested run{} under this one, in {} "
                        "process group; the last to end releases it",
                        key, o.value.nested, o.value.nested == 1 ? "" : "s",
                        o.value.nested == 1 ? "its own" : "their own"));
      } else if (o.value.state == ReleaseReply::State::KeptAsDone) {
        log_verbose(fmt::format("'{}' is done: it stays taken for {} more (--done-for)", key,
                                format_duration(o.value.left)));
      } else if (o.value.state == ReleaseReply::State::NotHeld && !lost_ && child_) {
        // moved_from: the master the sentinels name does not have this hold:
        // its grant or renewals never reached the replica a failover
        // promoted, so another holder may have had the lock there meanwhile
        // (README, "Sentinel"). The release reached the deposed master; that
        // proves nothing.
        std::string why =
            !o.value.moved_from.empty()
                ? failover_lost_words(acquired_.fence)
                : "it was no longer held when the command ended (it expired, was deleted or "
                  "broken, or the server lost it)";
        std::string lock = lost_lock(o.value.lost_keys);
        if (opts_.on_lost == OnLost::Warn) {
          log_error(fmt::format("warning: lost {}: {}", lock, why));
        } else {
          log_error(fmt::format("lost {}: {}", lock, why));
          status = exitcode::kLost;
        }
      } else if (lost_ && o.value.state != ReleaseReply::State::NotHeld) {
        log_verbose(fmt::format("released '{}' after all: it was still held", key));
      }
      if (!o.error && !o.value.unconfirmed.empty())
        log_error(unconfirmed_release_warning("'" + key + "'", o.value.unconfirmed));
      exit_with(status);
    };
    // Done only when the command itself succeeded and the lease was kept
    // throughout (a loss is never turned into a success for the period), and
    // the job was not stopped as superseded.
    Millis done_for = lost_ || cancelled_ ? Millis(0) : opts_.done_for;
    lock_->release(token_, opts_.min_hold, std::move(done), Millis(0), command, done_for,
                   lost_why_);
  }

  LockOptions opts_;
  RunCommand cmd_;
  std::string lost_why_;  // why the lease was lost, for the history
  Session session_;
  std::unique_ptr<Lock> lock_;
  std::string token_;
  std::vector<HeldEntry> held_;  // RLOCK_HELD as inherited
  std::string where_;
  std::optional<NestedRun> nested_;
  WaitReporter reporter_{session_.loop, opts_.key, opts_.limit};
  std::unique_ptr<Acquisition> acquirer_;
  std::optional<Child> child_;
  GroupGuard guard_;
  Acquired acquired_;
  std::unique_ptr<Watchdog> watchdog_;
  Loop::TimerId kill_timer_ = 0, group_timer_ = 0, listen_timer_ = 0, guard_timer_ = 0;
  Phase phase_ = Phase::Waiting;
  // Facts, not phases: each holds across phases, or beside any of them.
  // The guard was told to stand down (finish()): it is not restarted if it
  // dies. Not "Releasing": a command that could not start releases with no
  // guard told anything.
  bool guard_stood_down_ = false;
  bool guard_warned_ = false;  // rlock said there is no guard
  int guard_starts_ = 1;       // guards started while the command ran
  // The lease's end the guard was last told (it stops the group there); none yet: never.
  Clock::time_point guard_told_ = Clock::time_point::max();
  static constexpr int kMaxGuardStarts = 16;
  // The lease was lost (lease_lost): from then on in Running, Draining or
  // EndingLeftovers, and read again when releasing (the exit status, the
  // history's reason, no --done-for).
  bool lost_ = false;
  // rlock is stopping itself (stop_self, around its SIGSTOP to itself): in
  // any phase, Waiting too.
  bool stopped_ = false;
  // A stop signal came, or the command ended by one: its leftovers are ended
  // when it exits. Set in Running, acted on when it exits (Draining).
  bool stop_requested_ = false;
  bool group_termed_ = false;  // rlock has sent SIGTERM to the command's group
  // The group's members when it did (sorted pids), if they could be listed.
  std::optional<std::vector<pid_t>> termed_members_;
  static constexpr size_t kMaxNotedMembers = 4096;

  // Before rlock's first SIGTERM to the group: who gets it.
  void note_group_termed() {
    if (group_termed_) return;
    group_termed_ = true;
    long total = 0;
    auto members = group_members(child_->pid(), kMaxNotedMembers, total);
    if (total < 0 || static_cast<size_t>(total) > members.size()) return;  // not known
    std::vector<pid_t> pids;
    for (const GroupMember& m : members) pids.push_back(m.pid);
    std::sort(pids.begin(), pids.end());
    termed_members_ = std::move(pids);
  }
  // A newer superseding job asked this one to stop (cancelled()): in Running
  // or Draining; the run exits as superseded.
  bool cancelled_ = false;
  // The "holding ... for N processes" line is owed at the first look at the
  // group after the command exited; cleared by that look (in Draining).
  bool notice_pending_ = false;
  std::optional<int> command_status_;
  int exit_status_ = 0;  // once Exited
  std::optional<Error> error_;
};

}  // namespace

namespace {

// Where no nested hold can be recorded (--layout plain or redisson, quorum
// mode), a nested run is inside the lock only while the enclosing holder
// waits for it: a run waits for its command's process group (led by its
// child), a keeper's script for nothing but itself, so the nested run must be
// in that group. Anywhere else (set -m, setsid) it could outlive the lock:
// a usage Error that says why.
void refuse_leaving_group(const GlobalOptions& g, const HeldEntry& e, const Holder& holder) {
  if (group_inside_holder(getpgrp(), e, static_cast<pid_t>(holder.info.pid))) return;
  std::string where = g.layout != Layout::Rlock ? fmt::format("--layout {}", layout_name(g.layout))
                                                : std::string("quorum mode");
  throw_usage(fmt::format(
      "'{}' is held by an enclosing holder (pid {}), but this run is outside its process group "
      "and {} has nowhere to record a nested hold, so it could run on after the lock is "
      "released; run it in the holder's process group (no set -m or setsid)",
      e.key, holder.info.pid, where));
}

// A nested run (docs/GUIDE.md "Nesting"): when the environment says this process
// already holds the lock and Redis confirms it, the command runs at once,
// inside the enclosing hold. In the rlock layout on one deployment the run
// holds a nested hold of its own for as long as it runs (returned: Runner);
// elsewhere the command runs in this process's place (exec: it renews and
// releases nothing, and its exit status is the run's). Returns nullopt when
// the lock must be taken as usual.
std::optional<NestedRun> run_nested_if_held(const GlobalOptions& g, const LockOptions& o,
                                            const RunCommand& c,
                                            const std::vector<HeldEntry>& held) {
  const std::vector<std::string> keys = o.keys();
  const std::string where = lock_location(g);
  std::vector<HeldEntry> found = find_all_held(held, keys, g.prefix, where);
  if (found.empty()) return std::nullopt;
  std::vector<Holder> holders;
  bool recorded = true;  // a nested hold can be recorded for every key
  {
    Session s(g);
    for (const HeldEntry& e : found) {
      auto lock = s.lock(e.key, g.prefix, o.limit, o.shared);
      recorded = recorded && NestedLock::supported(*lock);
      std::string why;
      auto holder = verify_held(s.loop, *lock, e, why);
      if (!holder) {
        log_verbose(fmt::format("RLOCK_HELD lists '{}', but {}: taking it as usual", e.key, why));
        return std::nullopt;
      }
      refuse_upgrade(o.key, o.shared, *holder);
      holders.push_back(*holder);
      if (o.done_for.count() > 0 || o.min_hold.count() > 0)
        throw_usage(fmt::format(
            "'{}' is held by an enclosing holder (pid {}), which decides when it is released: "
            "--done-for and --min-hold go on the outer run",
            e.key, holder->info.pid));
    }
  }  // the connections are closed before the command replaces this process
  if (!recorded)
    for (size_t i = 0; i < found.size(); ++i) refuse_leaving_group(g, found[i], holders[i]);
  SpawnSpec spec = command_spec(c);
  std::string fences;
  for (size_t i = 0; i < found.size(); ++i) {
    found[i].nested = true;  // a release in the command is a nested one
    fences += fmt::format("{}{}", i ? "\n" : "", holders[i].fence);
  }
  std::string joined;
  for (size_t i = 0; i < keys.size(); ++i) joined += (i ? "\n" : "") + keys[i];
  spec.env = {"RLOCK_KEY=" + o.key,
              "RLOCK_TOKEN=" + found.front().token,
              fmt::format("RLOCK_FENCE={}", holders.front().fence),
              "RLOCK_KEYS=" + joined,
              "RLOCK_FENCES=" + fences,
              "RLOCK_HELD=" + held_with_each(held, found)};
  if (recorded) {
    log_verbose(fmt::format(
        "'{}' is held by an enclosing holder (pid {}): running the command inside it, as a "
        "nested hold under its token",
        o.key, holders.front().info.pid));
    // Without --ttl, a nested hold's lease is the enclosing hold's: one
    // killed with -9 then keeps the lock no longer than the outer one would.
    Millis ttl{0};
    for (const Holder& h : holders)
      if (h.ttl.count() > 0 && (ttl.count() == 0 || h.ttl < ttl)) ttl = h.ttl;
    return NestedRun{found, spec.env, ttl};
  }
  log_verbose(
      fmt::format("'{}' is held by an enclosing holder (pid {}): running the command "
                  "inside it (nested: nothing is renewed or released here)",
                  o.key, holders.front().info.pid));
  exec_in_place(spec);
}

}  // namespace

int cmd_run(const GlobalOptions& g, const LockOptions& o, const RunCommand& cmd) {
  validate(o);
  std::vector<HeldEntry> held = held_from_env();
  if (auto nested = run_nested_if_held(g, o, cmd, held)) {
    LockOptions inner = o;
    if (!o.ttl_given && nested->ttl >= Millis(100)) inner.ttl = nested->ttl;
    Runner r(g, inner, cmd, std::move(held), std::move(nested));
    return r.run();
  }
  check_held_room(held, o.keys(), g.prefix, lock_location(g));
  Runner r(g, o, cmd, std::move(held));
  return r.run();
}

}  // namespace rlock
