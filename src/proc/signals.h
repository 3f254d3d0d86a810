// Signal dispositions: what rlock inherited, the self-pipe handler, and the
// reset a child needs before exec.
#pragma once

#include <csignal>
#include <functional>
#include <initializer_list>

namespace rlock {

/// The signals `run` forwards to the child's process group: the ones a user sends, and
/// those whose default action would end rlock although rlock never raises them itself
/// (`timeout -s ALRM`, a UPS daemon's SIGPWR): rlock's death would leave the key held
/// until its TTL, where forwarded the command decides and the lock is released when it
/// ends (rlock(1), PROCESS BEHAVIOUR OF RUN). Real-time signals still end rlock (its guard then
/// ends the command's group).
inline constexpr int kForwardedSignals[] = {
    SIGINT,   SIGTERM, SIGHUP,  SIGQUIT,   SIGUSR1, SIGUSR2,
    SIGWINCH, SIGCONT, SIGALRM, SIGVTALRM, SIGPROF,
#ifdef __linux__
    SIGIO,  // a default action that ends a process on Linux (ignored on BSD and macOS)
    SIGPWR,
#endif
};

/// Every signal whose disposition rlock ever changes: the forwarded ones,
/// SIGTSTP, SIGTTIN and SIGCHLD (handled by `run`), SIGPIPE and SIGTTOU (ignored).
/// Only these are recorded at start and restored in a child: one system call
/// each, not one per signal number (~200 sigaction calls per run before:
/// docs/PERFORMANCE.md).
inline constexpr int kTouchedSignals[] = {SIGINT,   SIGTERM, SIGHUP,  SIGQUIT,   SIGUSR1, SIGUSR2,
                                          SIGWINCH, SIGCONT, SIGALRM, SIGVTALRM, SIGPROF,
#ifdef __linux__
                                          SIGIO,    SIGPWR,
#endif
                                          SIGTSTP,  SIGTTIN, SIGTTOU, SIGCHLD,   SIGPIPE};

/// Records which of kTouchedSignals were ignored when the process started.
/// Called by the first ignored_at_start(), so only commands that handle
/// signals pay for it; it must come before rlock changes any disposition but
/// SIGPIPE's (every handler is installed after asking ignored_at_start).
/// Later calls are no-ops.
void capture_inherited_signals();

class Loop;

/// Delivers `sig` (one of kTouchedSignals) to `cb` through `loop`, unless it
/// was ignored at start (then it stays ignored and false is returned);
/// `even_if_ignored` installs it regardless. Where the inherited disposition is
/// not known yet, one system call both installs the handler and learns it.
bool handle_unless_ignored(Loop& loop, int sig, std::function<void(int)> cb,
                           bool even_if_ignored = false);

/// True when `sig` (one of kTouchedSignals) was SIG_IGN at start (nohup's
/// SIGHUP, a background job's SIGINT/SIGQUIT). Such signals stay ignored for
/// rlock and its child. Signals rlock never touches keep whatever they had.
bool ignored_at_start(int sig);

/// Ignores SIGPIPE, so a peer that hangs up yields EPIPE instead of death,
/// and records whether it was ignored already and the signal mask rlock was
/// started with. Call first thing in main().
void ignore_sigpipe();

/// Ignores SIGTTOU for a process that holds a lease (`run`, a hold by hand),
/// recording what it inherited: its own messages to a terminal from the
/// background (`stty tostop`, a run behind the command or in a background job)
/// are then written instead of stopping it, which would stop the renewals while
/// the command runs on (POSIX: a process that ignores SIGTTOU may write). A
/// SIGTTOU sent with kill(1) is ignored too. The child gets the inherited
/// disposition back (restore_inherited_signals_in_child).
void ignore_background_writes();

/// In a freshly forked child, before exec: the dispositions exec() would not
/// put back by itself go back to what rlock inherited (SIGPIPE; SIGCHLD if it
/// was ignored), SIGTSTP, SIGTTIN and SIGTTOU are dropped until exec unless
/// ignored, and the signal mask goes back to the one rlock was started with.
/// Every other handled signal is reset by exec(), or by rlock's handler if it
/// comes before (core/loop.cc). Async-signal-safe.
void restore_inherited_signals_in_child();

}  // namespace rlock
