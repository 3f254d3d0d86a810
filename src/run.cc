// `rlock run`: one event loop waits on the child, signals, timers and Redis.
//
//   waiting ──acquired──▶ running ──child exits──▶ releasing ──▶ exit
//      │                     │
//   SIGTERM…              renewal fails past the deadline ──▶ lost
//      ▼                                                        (signal the child
//   leave the line, exit 128+N                                   per --on-lost)
#include "run.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include "child.h"
#include "commands/commands.h"
#include "duration.h"
#include "output.h"
#include "signals.h"
#include "waiter.h"

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

// Time kept between "the lease might run out" and "it does": the renewal
// deadline is expiry minus this, so the child hears about a lost lease before
// anyone else can take the lock (covers clock drift and the signal's delivery).
Millis safety_margin(Millis ttl) {
  return std::clamp(ttl / 5, Millis(50), Millis(2000));
}

class Runner {
 public:
  Runner(const GlobalOptions& g, const LockOptions& o, const RunCommand& c)
      : opts_(o),
        cmd_(c),
        session_(g),
        lock_(session_.lock(o.key, g.prefix, o.limit)),
        token_(new_token()) {}

  int run() {
    install_signals();
    WaitSpec spec{opts_.ttl, opts_.wait, opts_.no_wait,
                  local_holder_info(join_command(cmd_), static_cast<long>(getpid()))};
    acquirer_ = std::make_unique<Acquirer>(lock_, token_, spec);
    acquirer_->start([this](Outcome<Acquired> o) { on_acquired(std::move(o)); });
    loop().run_until([this] { return exit_status_.has_value(); });
    if (error_) throw *error_;
    return *exit_status_;
  }

 private:
  Loop& loop() { return session_.loop; }

  void install_signals() {
    for (int sig : kForwardedSignals)
      if (!ignored_at_start(sig)) loop().on_signal(sig, [this](int s) { on_signal(s); });
    // Always ours, even if inherited as ignored: we must reap the child.
    loop().on_signal(SIGCHLD, [this](int) { reap(); });
  }

  void on_signal(int sig) {
    if (sig == SIGCONT && child_ && child_->stopped()) {
      log_verbose("continued: giving the terminal back to the command");
      child_->resume();
      return;
    }
    if (child_ && child_->running()) {
      log_verbose(fmt::format("forwarding signal {} to the child's process group", sig));
      child_->signal_group(sig);
      return;
    }
    if (!child_ && sig != SIGWINCH && sig != SIGCONT) {
      if (!acquirer_) {
        exit_status_ = 128 + sig;
        return;
      }
      // A signal while waiting cancels the wait and leaves the line.
      log_verbose(fmt::format("signal {} while waiting: leaving the line", sig));
      acquirer_->cancel([this, sig] { exit_status_ = 128 + sig; });
    }
  }

  void on_acquired(Outcome<Acquired> o) {
    if (o.error) {
      if (o.error->kind() == ErrorKind::NotAcquired)
        error_ = Error(ErrorKind::NotAcquired, o.error->what(), opts_.conflict_exit);
      else
        error_ = o.error;
      exit_status_ = error_->exit_status();
      return;
    }
    acquired_ = o.value;
    deadline_ = acquired_.sent + acquired_.ttl;
    log_verbose(fmt::format("acquired '{}' (fence {}, ttl {})", lock_.names().key, acquired_.fence,
                            format_duration(acquired_.ttl)));
    SpawnSpec spec;
    spec.argv =
        cmd_.shell.empty() ? cmd_.argv : std::vector<std::string>{"/bin/sh", "-c", cmd_.shell};
    spec.env = {"RLOCK_KEY=" + lock_.names().key, "RLOCK_TOKEN=" + token_,
                fmt::format("RLOCK_FENCE={}", acquired_.fence)};
    try {
      child_.emplace(Child::spawn(spec));
      guard_ = GroupGuard::watch(child_->pid());
    } catch (const Error& e) {
      log_error(e.what());
      release_and_exit(e.exit_status());
      return;
    }
    arm_lost_timer();
    schedule_renewal(acquired_.sent + acquired_.ttl / 3);
    reap();  // the child may already have ended
  }

  // ---- watchdog ----

  Clock::time_point lost_at() const { return deadline_ - safety_margin(acquired_.ttl); }

  void arm_lost_timer() {
    loop().cancel(lost_timer_);
    lost_timer_ = loop().at(lost_at(), [this] {
      lost_timer_ = 0;
      lease_lost(fmt::format("could not renew it before its deadline ({})",
                             last_renew_error_.empty() ? "no reply" : last_renew_error_));
    });
  }

  void schedule_renewal(Clock::time_point when) {
    loop().cancel(renew_timer_);
    renew_timer_ = loop().at(when, [this] {
      renew_timer_ = 0;
      renew();
    });
  }

  void renew() {
    if (lost_ || !child_ || !child_->running()) return;
    auto sent = Clock::now();
    auto left = std::chrono::duration_cast<Millis>(lost_at() - sent);
    Millis timeout = std::max(Millis(10), std::min(session_.client->command_timeout(), left));
    lock_.extend(
        token_, acquired_.ttl,
        [this, sent](Outcome<ExtendReply> o) {
          if (lost_ || !child_ || !child_->running()) return;
          if (o.error) {
            last_renew_error_ = o.error->what();
            log_verbose(fmt::format("renewal failed: {}; retrying", last_renew_error_));
            auto retry = Clock::now() + std::min(Millis(250), acquired_.ttl / 10);
            if (retry < lost_at()) schedule_renewal(retry);
            return;
          }
          if (!o.value.held) {
            lease_lost("it was deleted or taken over (renewal found another token or none)");
            return;
          }
          deadline_ = sent + o.value.ttl;
          arm_lost_timer();
          schedule_renewal(sent + acquired_.ttl / 3);
        },
        timeout);
  }

  void lease_lost(const std::string& why) {
    if (lost_ || !child_ || !child_->running()) return;
    lost_ = true;
    loop().cancel(renew_timer_);
    loop().cancel(lost_timer_);
    switch (opts_.on_lost) {
      case OnLost::Term:
        log_error(
            fmt::format("lost the lock '{}': {}; sending SIGTERM to the command (SIGKILL in {})",
                        lock_.names().key, why, format_duration(opts_.kill_after)));
        child_->signal_group(SIGTERM);
        kill_timer_ = loop().after(opts_.kill_after, [this] {
          if (child_ && child_->running()) child_->signal_group(SIGKILL);
        });
        break;
      case OnLost::Kill:
        log_error(
            fmt::format("lost the lock '{}': {}; killing the command", lock_.names().key, why));
        child_->signal_group(SIGKILL);
        break;
      case OnLost::Warn:
        log_error(fmt::format("warning: lost the lock '{}': {}; the command runs on without it",
                              lock_.names().key, why));
        break;
    }
  }

  // ---- the end ----

  void reap() {
    // Also reached by the guard's SIGCHLD after the child is gone: once only.
    if (!child_ || !child_->running()) return;
    auto status = child_->try_reap();
    if (!status) {
      if (child_->stopped()) {
        // Ctrl-Z: the command stopped, so stop too and let the shell take
        // over; fg/bg sends us SIGCONT, which resumes the command. The lease
        // is not renewed meanwhile: a stop longer than the TTL loses it.
        log_verbose("the command stopped: stopping too");
        kill(getpid(), SIGSTOP);
      }
      return;
    }
    loop().cancel(renew_timer_);
    loop().cancel(lost_timer_);
    loop().cancel(kill_timer_);
    guard_ = GroupGuard();  // the group is gone: stand the guard down
    int code = *status;
    if (lost_ && opts_.on_lost != OnLost::Warn) code = exitcode::kLost;
    if (lost_) {
      exit_status_ = code;
      return;
    }
    release_and_exit(code);
  }

  void release_and_exit(int code) {
    lock_.release(token_, opts_.min_hold, [this, code](Outcome<ReleaseReply> o) {
      if (o.error) {
        log_error(fmt::format("could not release '{}': {}; it expires by itself", lock_.names().key,
                              o.error->what()));
      } else if (o.value.state == ReleaseReply::State::KeptForMinHold) {
        log_verbose(fmt::format("'{}' stays held for {} more (--min-hold)", lock_.names().key,
                                format_duration(o.value.left)));
      } else if (o.value.state == ReleaseReply::State::NotHeld) {
        log_verbose(fmt::format("'{}' was no longer held at release", lock_.names().key));
      }
      exit_status_ = code;
    });
  }

  LockOptions opts_;
  RunCommand cmd_;
  Session session_;
  Lock lock_;
  std::string token_;
  std::unique_ptr<Acquirer> acquirer_;
  std::optional<Child> child_;
  GroupGuard guard_;
  Acquired acquired_;
  Clock::time_point deadline_;
  Loop::TimerId renew_timer_ = 0, lost_timer_ = 0, kill_timer_ = 0;
  bool lost_ = false;
  std::string last_renew_error_;
  std::optional<int> exit_status_;
  std::optional<Error> error_;
};

}  // namespace

int cmd_run(const GlobalOptions& g, const LockOptions& o, const RunCommand& cmd) {
  validate(o);
  Runner r(g, o, cmd);
  return r.run();
}

}  // namespace rlock
