/* LD_PRELOAD'ed by bench/run.sh part 1c (Linux): clone() fails, so `rlock run` runs
 * without its group guard, as it does when the guard cannot be started. The paired
 * CPU of a run with and without it is the guard's price (docs/PERFORMANCE.md). */
#define _GNU_SOURCE
#include <errno.h>

int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...) {
  (void)fn;
  (void)stack;
  (void)flags;
  (void)arg;
  errno = EAGAIN;
  return -1;
}
