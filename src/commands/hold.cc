// `rlock run KEY` without a command: hold KEY by hand (etcdctl's `lock NAME`
// without a command) until SIGINT, SIGTERM, SIGHUP or SIGQUIT (or SIGALRM ...), renewing the lease
// (the man page's "HOLDING BY HAND"). Its phases:
//
//   Waiting ──acquired──▶ Holding ──a stop signal (0), or the lease lost (76)──▶ Releasing
//      │                                                                           │ answered
//      └─not acquired, or a signal: leave the line, 128+N ──────────────────────▶ Exited
//
// There is no command: nothing is signalled, nothing is passed on (no
// RLOCK_HELD), and the line that says it holds goes to standard output, as
// etcdctl prints the key it holds, so that a script can wait for it.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include "cli/output.h"
#include "cli/progress.h"
#include "cli/wording.h"
#include "commands/commands.h"
#include "core/duration.h"
#include "core/text.h"
#include "hold/acquirer.h"
#include "hold/held.h"
#include "hold/watchdog.h"
#include "proc/procinfo.h"
#include "proc/signals.h"

namespace rlock {

namespace {

// What others see as the holder's command (status, list).
constexpr const char* kHandCommand = "rlock run (held by hand)";

// The signals that end a hand hold (the man page): each releases, exit 0. Those
// after SIGQUIT are the ones `run` forwards because their default action would end
// rlock and leave the key held until its TTL (`timeout -s ALRM`).
constexpr int kHandStops[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGVTALRM, SIGPROF,
#ifdef __linux__
                              SIGIO,  SIGPWR
#endif
};

// "'a'", "'a' and 'b'", "'a', 'b' and 'c'".
std::string quoted_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i > 0) out += i + 1 == keys.size() ? " and " : ", ";
    out += fmt::format("'{}'", escape_text(keys[i]));
  }
  return out;
}

// The line that says it holds: "holding 'deploy' (fence 12); Ctrl-C or kill
// 4242 releases it". Another tool's layout has no fences.
std::string holding_line(const LockOptions& o, const Acquired& a, bool fenced) {
  const std::vector<std::string> keys = o.keys();
  std::vector<std::string> facts;
  if (fenced) {
    std::string fences;
    const std::vector<int64_t> all = a.fences.empty() ? std::vector<int64_t>{a.fence} : a.fences;
    for (size_t i = 0; i < all.size(); ++i) fences += fmt::format("{}{}", i ? ", " : "", all[i]);
    facts.push_back(fmt::format("fence{} {}", all.size() > 1 ? "s" : "", fences));
  }
  if (a.slot > 0) facts.push_back(fmt::format("slot {}", a.slot));
  if (!a.slot_name.empty()) facts.push_back("slot " + escape_text(a.slot_name));
  if (o.shared) facts.push_back("shared");
  std::string what;
  for (size_t i = 0; i < facts.size(); ++i) what += (i ? ", " : "") + facts[i];
  auto pid = static_cast<long>(getpid());
  std::string how = isatty(STDIN_FILENO) ? fmt::format("Ctrl-C or kill {} releases it", pid)
                                         : fmt::format("kill {} releases it", pid);
  return fmt::format("holding {}{}; {}\n", quoted_keys(keys), what.empty() ? "" : " (" + what + ")",
                     how);
}

class HandHold {
 public:
  HandHold(const GlobalOptions& g, const LockOptions& o)
      : opts_(o),
        session_(g),
        lock_(session_.locks(o, g.prefix)),
        token_(lock_->fresh_token(static_cast<long>(getpid()))),
        fenced_(g.layout == Layout::Rlock) {}

  Lock& lock() { return *lock_; }
  Loop& loop() { return session_.loop; }

  int run() {
    for (int sig : kHandStops)
      if (!ignored_at_start(sig)) loop().on_signal(sig, [this](int s) { on_signal(s); });
    ignore_background_writes();  // its messages must never stop it (`stty tostop`)
    HolderInfo info = local_holder_info(kHandCommand, static_cast<long>(getpid()));
    info.label = opts_.label;
    acquirer_ = make_acquisition(*lock_, token_,
                                 WaitSpec{opts_.ttl, opts_.wait, opts_.no_wait, info,
                                          opts_.sync_replicas, holders_in_words});
    acquirer_->on_progress([this](const WaitProgress& p) { reporter_.report(p); });
    acquirer_->start([this](Outcome<Acquired> o) { on_acquired(std::move(o)); });
    loop().run_until([this] { return phase_ == Phase::Exited; });
    if (error_) throw *error_;
    return exit_status_;
  }

 private:
  enum class Phase { Waiting, Holding, Releasing, Exited };

  void exit_with(int status) {
    phase_ = Phase::Exited;
    exit_status_ = status;
  }

  void on_signal(int sig) {
    if (phase_ == Phase::Waiting) {
      // As run does: a signal while waiting leaves the line, 128+N.
      log_verbose(fmt::format("signal {} while waiting: leaving the line", sig));
      phase_ = Phase::Releasing;  // nothing is held; the cancel ends it
      acquirer_->cancel([this, sig] { exit_with(128 + sig); });
      return;
    }
    if (phase_ != Phase::Holding) return;  // a second Ctrl-C: the release is on its way
    log_verbose(fmt::format("signal {}: releasing", sig));
    release(lost_ && opts_.on_lost != OnLost::Warn ? exitcode::kLost : exitcode::kOk);
  }

  // A newer superseding job stopped this superseding hold (--cancel-in-progress):
  // it is released as a stop request would release it, and exits superseded.
  void cancelled(const std::string& by) {
    if (phase_ != Phase::Holding) return;
    log_error(fmt::format("superseded by {} (--cancel-in-progress): releasing {}",
                          escape_text(truncate_text(by, 256)), lost_keys({})));
    release(opts_.superseded_exit);
  }

  void on_acquired(Outcome<Acquired> o) {
    if (o.error) {
      // (a superseded waiter exits --superseded-exit-code, not -E's status)
      error_ = o.error->kind() == ErrorKind::NotAcquired
                   ? Error(ErrorKind::NotAcquired, o.error->what(),
                           not_acquired_exit(opts_, *o.error), o.error->cause())
                   : *o.error;
      return exit_with(error_->exit_status());
    }
    acquired_ = o.value;
    // The TTL in the reply is the server's word: kept within what rlock asked.
    acquired_.ttl = std::clamp(acquired_.ttl, Millis(0), opts_.ttl);
    phase_ = Phase::Holding;
    watchdog_ = std::make_unique<Watchdog>(
        *lock_, token_, acquired_, opts_.sync_replicas,
        Watchdog::Events{[this](const std::string& why) { lost(why); },
                         {},
                         [this](const std::string& by) { cancelled(by); }});
    watchdog_->start();
    watchdog_->listen();  // a break is heard within about a second
    try {
      print_out(holding_line(opts_, acquired_, fenced_));
    } catch (const Error& e) {
      // Nobody learns that it is held (a full disk, a reader gone): give it back.
      error_ = e;
      release(e.exit_status());
    }
  }

  // The lease is lost (a renewal failed past its deadline, or found another
  // holder; a break was heard). --on-lost: term and kill end the hold at
  // once (there is nothing to signal), warn says so and waits for the stop
  // signal, which then exits 0 as a command's status would pass through.
  void lost(const std::string& why) {
    if (phase_ != Phase::Holding || lost_) return;
    lost_ = true;
    lost_why_ = why;
    std::string keys = lost_keys(watchdog_->lost_keys());
    if (opts_.on_lost == OnLost::Warn) {
      log_error(
          fmt::format("warning: lost the lock {}: {}; it is no longer held (Ctrl-C or kill "
                      "{} ends this run)",
                      keys, why, static_cast<long>(getpid())));
      return;
    }
    log_error(fmt::format("lost the lock {}: {}", keys, why));
    release(exitcode::kLost);
  }

  std::string lost_keys(std::vector<std::string> keys) {
    if (keys.empty())
      for (Lock* part : lock_->parts()) keys.push_back(part->names().key);
    return quoted_keys(keys);
  }

  // Always released, even after a loss (token-checked): renewals that timed
  // out may have left the key ours. A release that finds it no longer held
  // reports the loss (a loss is never hidden).
  void release(int code) {
    phase_ = Phase::Releasing;
    if (watchdog_) watchdog_->stop();
    auto done = [this, code](Outcome<ReleaseReply> o) {
      int status = code;
      std::string keys = lost_keys({});
      if (o.error) {
        log_error(fmt::format("could not release {}: {}; it expires by itself within {}", keys,
                              o.error->what(), format_duration(acquired_.ttl)));
        if (o.error->kind() == ErrorKind::Permission) status = o.error->exit_status();
      } else if (o.value.state == ReleaseReply::State::NotHeld && !lost_) {
        std::string why =
            "it was no longer held when released (it expired, was deleted or broken, or the "
            "server lost it)";
        // The master the sentinels name lacks it (docs/PROTOCOL.md, Releasing).
        if (!o.value.moved_from.empty()) why = failover_lost_words(acquired_.fence);
        keys = lost_keys(o.value.lost_keys);
        if (opts_.on_lost == OnLost::Warn) {
          log_error(fmt::format("warning: lost the lock {}: {}", keys, why));
        } else {
          log_error(fmt::format("lost the lock {}: {}", keys, why));
          status = exitcode::kLost;
        }
      } else if (o.value.state == ReleaseReply::State::KeptForMinHold) {
        log_info(fmt::format("{} stays held for {} more (--min-hold)", keys,
                             format_duration(o.value.left)));
      } else if (!lost_ && !error_) {
        log_info(fmt::format("released {}", keys));
      }
      // As run says it (the man page, EXIT STATUS): a release the sentinels
      // could not confirm is a warning, never a silent 0.
      if (!o.error && !o.value.unconfirmed.empty())
        log_error(unconfirmed_release_warning(keys, o.value.unconfirmed));
      exit_with(status);
    };
    // -1: no command, no exit status for the history.
    lock_->release(token_, opts_.min_hold, std::move(done), Millis(0), -1, Millis(0), lost_why_);
  }

  LockOptions opts_;
  Session session_;
  std::unique_ptr<Lock> lock_;
  std::string token_;
  bool fenced_;
  WaitReporter reporter_{session_.loop, opts_.key, opts_.limit};
  std::unique_ptr<Acquisition> acquirer_;
  std::unique_ptr<Watchdog> watchdog_;
  Acquired acquired_;
  Phase phase_ = Phase::Waiting;
  bool lost_ = false;
  std::string lost_why_;
  int exit_status_ = 0;
  std::optional<Error> error_;
};

// Under a holder of KEY (RLOCK_HELD, confirmed with Redis) there is nothing to
// hold by hand: the enclosing holder holds it for as long as it runs, and a
// hand hold would wait for itself. A usage Error then; an entry Redis does
// not confirm (a copied environment) is taken as usual.
void refuse_nested(HandHold& hold, const GlobalOptions& g, const LockOptions& o) {
  std::vector<HeldEntry> held = held_from_env();
  std::vector<HeldEntry> found = find_all_held(held, o.keys(), g.prefix, lock_location(g));
  if (found.empty()) return;
  std::vector<Lock*> parts = hold.lock().parts();
  long pid = 0;
  for (size_t i = 0; i < found.size() && i < parts.size(); ++i) {
    std::string why;
    auto holder = verify_held(hold.loop(), *parts[i], found[i], why);
    if (!holder) {
      log_verbose(
          fmt::format("RLOCK_HELD lists '{}', but {}: taking it as usual", found[i].key, why));
      return;
    }
    pid = holder->info.pid;
  }
  throw_usage(fmt::format(
      "{} is already held by an enclosing holder (pid {}): there is nothing to hold by hand "
      "inside it (rlock run KEY without a command holds KEY outside any run)",
      quoted_keys(o.keys()), pid));
}

}  // namespace

int cmd_hold(const GlobalOptions& g, const LockOptions& o) {
  validate(o);
  HandHold hold(g, o);
  refuse_nested(hold, g, o);
  return hold.run();
}

}  // namespace rlock
