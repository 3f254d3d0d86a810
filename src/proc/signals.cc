#include "proc/signals.h"

#include <signal.h>

#include "core/loop.h"

namespace rlock {

namespace {

constexpr int kMaxSig = 65;
bool g_captured = false;
bool g_ignored[kMaxSig];
bool g_known[kMaxSig];  // g_ignored[sig] is what rlock inherited
sigset_t g_start_mask;
bool g_mask_recorded = false;

/// Installed in the child between fork and exec on the job-control stops:
/// such a signal is dropped there instead of stopping a child that has not
/// run the command yet (the parent, suspended in vfork, would hang with it).
/// exec() resets the handler to SIG_DFL.
void drop_signal(int) {}

}  // namespace

void capture_inherited_signals() {
  if (g_captured) return;
  g_captured = true;
  for (int sig : kTouchedSignals) {
    if (sig == SIGPIPE || g_known[sig]) continue;  // recorded already
    struct sigaction sa {};
    if (sigaction(sig, nullptr, &sa) == 0) g_ignored[sig] = sa.sa_handler == SIG_IGN;
    g_known[sig] = true;
  }
}

bool handle_unless_ignored(Loop& loop, int sig, std::function<void(int)> cb, bool even_if_ignored) {
  if (sig <= 0 || sig >= kMaxSig) return false;
  if (g_known[sig] || g_captured) {
    if (g_ignored[sig] && !even_if_ignored) return false;
    loop.on_signal(sig, std::move(cb));
    return true;
  }
  // One system call: the handler goes in and the disposition it replaced is
  // what rlock inherited (nothing of rlock's changed it before). An ignored
  // signal gets SIG_IGN back at once.
  Loop::SignalHandler old = loop.on_signal(sig, std::move(cb));
  g_ignored[sig] = old == SIG_IGN;
  g_known[sig] = old != SIG_ERR;
  if (!g_ignored[sig] || even_if_ignored) return old != SIG_ERR;
  loop.ignore_signal(sig);
  return false;
}

bool ignored_at_start(int sig) {
  capture_inherited_signals();
  return sig > 0 && sig < kMaxSig && g_ignored[sig];
}

void ignore_sigpipe() {
  struct sigaction ign {
  }, old{};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  if (sigaction(SIGPIPE, &ign, &old) == 0) g_ignored[SIGPIPE] = old.sa_handler == SIG_IGN;
  g_known[SIGPIPE] = true;
  g_mask_recorded = sigprocmask(SIG_BLOCK, nullptr, &g_start_mask) == 0;
}

void ignore_background_writes() {
  struct sigaction ign {
  }, old{};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  if (sigaction(SIGTTOU, &ign, &old) != 0) return;
  if (!g_known[SIGTTOU]) {  // nothing of rlock's changed it before
    g_ignored[SIGTTOU] = old.sa_handler == SIG_IGN;
    g_known[SIGTTOU] = true;
  }
}

void restore_inherited_signals_in_child() {
  // exec() itself resets every handled signal to SIG_DFL and keeps ignored
  // ones ignored; what is left to undo is what rlock ignored (SIGPIPE) and a
  // handler on a signal that was ignored at start (SIGCHLD, always handled by
  // `run`). A handled signal that arrives between here and exec is given its
  // default action by the handler itself (core/loop.cc).
  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  if (!g_ignored[SIGPIPE]) {
    sa.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &sa, nullptr);
  }
  if (g_ignored[SIGCHLD]) {
    sa.sa_handler = SIG_IGN;
    sigaction(SIGCHLD, &sa, nullptr);
  }
  // A stop signal (Ctrl-Z, a background read or write) between the unblock
  // below and exec would stop a child that is not the command yet. One that
  // is ignored stays so (exec keeps it); otherwise it is dropped until exec.
  // One system call each: the drop goes in, and an ignored one (known from
  // the start where rlock recorded it, else read back from the call) gets
  // SIG_IGN again. A SIGTTOU that rlock ignores itself (ignore_background_writes)
  // is known not to have been ignored: the child gets the drop, then SIG_DFL.
  struct sigaction cur {};
  sa.sa_handler = drop_signal;
  for (int sig : {SIGTSTP, SIGTTIN, SIGTTOU}) {
    if (g_known[sig] && g_ignored[sig]) continue;
    if (sigaction(sig, &sa, &cur) == 0 && !g_known[sig] && cur.sa_handler == SIG_IGN)
      sigaction(sig, &cur, nullptr);
  }
  // The mask rlock was started with (`env --block-signal`, a service
  // manager's), not an empty one.
  if (!g_mask_recorded) sigemptyset(&g_start_mask);
  sigprocmask(SIG_SETMASK, &g_start_mask, nullptr);
}

}  // namespace rlock
