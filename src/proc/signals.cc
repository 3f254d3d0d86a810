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
    struct sigaction sa {};
    if (sigaction(sig, nullptr, &sa) == 0) g_ignored[sig] = sa.sa_handler == SIG_IGN;
  }
}

bool ignored_at_start(int sig) {
  return sig > 0 && sig < kMaxSig && g_ignored[sig];
}

void ignore_sigpipe() {
  signal(SIGPIPE, SIG_IGN);
}

void restore_inherited_signals_in_child() {
  for (int sig : kTouchedSignals) {
    struct sigaction sa {};
    sa.sa_handler = g_ignored[sig] ? SIG_IGN : SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

}  // namespace rlock
