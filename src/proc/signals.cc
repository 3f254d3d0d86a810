#include "proc/signals.h"

#include <signal.h>

namespace rlock {

namespace {

constexpr int kMaxSig = 65;
bool g_captured = false;
bool g_ignored[kMaxSig];

}  // namespace

void capture_inherited_signals() {
  if (g_captured) return;
  g_captured = true;
  for (int sig : kTouchedSignals) {
    if (sig == SIGPIPE) continue;  // recorded by ignore_sigpipe(), which ran first
    struct sigaction sa {};
    if (sigaction(sig, nullptr, &sa) == 0) g_ignored[sig] = sa.sa_handler == SIG_IGN;
  }
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
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

}  // namespace rlock
