/* The benchmarks' critical section: appends "S <ns>" to $LOG, sleeps MS
 * milliseconds, appends "E <ns>" and exits. Written in C so that the logging adds no
 * process of its own to the handoff gap (a shell and date(1) would add two).
 * Usage: stamp MS                                              (bench/ only) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void stamp(int fd, char what) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char line[64];
  int n = snprintf(line, sizeof line, "%c %lld\n", what, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
  if (write(fd, line, (size_t)n) != n) exit(70);
}

int main(int argc, char **argv) {
  const char *log = getenv("LOG");
  if (!log || argc != 2) return 64;
  int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return 73;
  stamp(fd, 'S');
  long ms = atol(argv[1]);
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&d, &d) != 0) {
  }
  stamp(fd, 'E');
  return 0;
}
