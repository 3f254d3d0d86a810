/* Runs a command RUNS times (after WARMUP unmeasured runs) and prints
 * "median_ms p90_ms max_rss_kb": wall time of each run from fork to reap, and the
 * largest resident set of the command (or of any process it waited for) over all
 * runs, from wait4's rusage. Output goes to /dev/null, input from /dev/null.
 * A stand-in for `hyperfine -N` that needs nothing installed.
 * Usage: timeit RUNS WARMUP CMD [ARGS...]                      (bench/ only) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: timeit RUNS WARMUP CMD [ARGS...]\n");
    return 64;
  }
  int runs = atoi(argv[1]), warmup = atoi(argv[2]);
  if (runs < 1 || warmup < 0) return 64;
  double *t = calloc((size_t)runs, sizeof *t);
  long max_rss = 0;
  int failed = 0;
  for (int i = -warmup; i < runs; i++) {
    double start = now_ms();
    pid_t pid = fork();
    if (pid < 0) return 71;
    if (pid == 0) {
      int null = open("/dev/null", O_RDWR);
      dup2(null, 0);
      dup2(null, 1);
      execvp(argv[3], argv + 3);
      _exit(127);
    }
    int st;
    struct rusage ru;
    while (wait4(pid, &st, 0, &ru) < 0) {
    }
    double took = now_ms() - start;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed++;
    if (i < 0) continue;
    t[i] = took;
    if (ru.ru_maxrss > max_rss) max_rss = ru.ru_maxrss;
  }
  qsort(t, (size_t)runs, sizeof *t, cmp);
  printf("%.3f %.3f %ld\n", t[(runs - 1) / 2], t[(runs - 1) * 9 / 10], max_rss);
  if (failed) fprintf(stderr, "timeit: %d of %d runs of %s failed\n", failed, runs + warmup, argv[3]);
  return failed ? 1 : 0;
}
