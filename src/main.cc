// rlock: a distributed lock on Redis for shell users. See man/rlock.1.
#include "cli.h"
#include "signals.h"

int main(int argc, char** argv) {
  rlock::capture_inherited_signals();
  rlock::ignore_sigpipe();
  return rlock::run_cli(argc, argv);
}
