/* LD_PRELOAD'ed by bench/run.sh part 1c (Linux): no guard can be started, so `rlock run`
 * runs without its group guard, as it does when the guard cannot be started. The paired
 * CPU of a run with and without it is the guard's price (docs/PERFORMANCE.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/types.h>

/* The guard program is exec'd from a memfd; refused, rlock forks a guard instead
 * (src/proc/guard.cc). */
int memfd_create(const char *name, unsigned int flags) {
  (void)name;
  (void)flags;
  errno = ENOSYS;
  return -1;
}

/* rlock forks only its guard (the command is started with vfork, which this
 * leaves alone). */
pid_t fork(void) {
  errno = EAGAIN;
  return -1;
}
