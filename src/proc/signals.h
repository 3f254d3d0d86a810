// Signal dispositions: what rlock inherited, the self-pipe handler, and the
// reset a child needs before exec.
#pragma once

#include <csignal>
#include <initializer_list>

namespace rlock {

/// The signals `run` forwards to the child's process group.
inline constexpr int kForwardedSignals[] = {SIGINT,  SIGTERM, SIGHUP,   SIGQUIT,
                                            SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};

/// Every signal whose disposition rlock ever changes: the forwarded ones,
/// SIGTSTP and SIGCHLD (handled by `run`) and SIGPIPE (ignored). Only these are
/// recorded at start and restored in a child: one system call each, not one per
/// signal number (~200 sigaction calls per run before: docs/PERFORMANCE.md).
inline constexpr int kTouchedSignals[] = {SIGINT,   SIGTERM, SIGHUP,  SIGQUIT, SIGUSR1, SIGUSR2,
                                          SIGWINCH, SIGCONT, SIGTSTP, SIGCHLD, SIGPIPE};

/// Records which of kTouchedSignals were ignored when the process started.
/// Call first thing in main(); later calls are no-ops.
void capture_inherited_signals();

/// True when `sig` (one of kTouchedSignals) was SIG_IGN at start (nohup's
/// SIGHUP, a background job's SIGINT/SIGQUIT). Such signals stay ignored for
/// rlock and its child. Signals rlock never touches keep whatever they had.
bool ignored_at_start(int sig);

/// Ignores SIGPIPE, so a peer that hangs up yields EPIPE instead of death.
void ignore_sigpipe();

/// In a freshly forked child, before exec: every signal rlock handled or
/// ignored (kTouchedSignals) goes back to what rlock inherited, and the signal
/// mask is cleared.
/// Async-signal-safe.
void restore_inherited_signals_in_child();

}  // namespace rlock
