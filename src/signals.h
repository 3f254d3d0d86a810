// Signal dispositions: what rlock inherited, the self-pipe handler, and the
// reset a child needs before exec.
#pragma once

#include <csignal>
#include <initializer_list>

namespace rlock {

/// The signals `run` forwards to the child's process group.
inline constexpr int kForwardedSignals[] = {SIGINT,  SIGTERM, SIGHUP,   SIGQUIT,
                                            SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};

/// Records which signals were ignored when the process started. Call first
/// thing in main(); later calls are no-ops.
void capture_inherited_signals();

/// True when `sig` was SIG_IGN at start (nohup's SIGHUP, a background job's
/// SIGINT/SIGQUIT). Such signals stay ignored for rlock and its child.
bool ignored_at_start(int sig);

/// Ignores SIGPIPE, so a peer that hangs up yields EPIPE instead of death.
void ignore_sigpipe();

/// In a freshly forked child, before exec: every signal rlock handled or
/// ignored goes back to what rlock inherited, and the signal mask is cleared.
/// Async-signal-safe.
void restore_inherited_signals_in_child();

}  // namespace rlock
