/* Runs two commands alternately, RUNS times each (after WARMUP unmeasured pairs),
 * and prints for each the median CPU time (user + system from wait4's rusage:
 * the process and the children it reaped), the median wall time from fork to
 * reap and the median minor page faults, then A's ratio to B for CPU and wall.
 * Alternating puts both under the same load: the ratio is what to read on a
 * busy machine. Output and errors go to /dev/null, input from /dev/null.
 * Usage: paired RUNS WARMUP CMD_A [ARGS...] :: CMD_B [ARGS...]   (bench/ only) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[(n - 1) / 2];
}

/* One run of argv: its wall, CPU (ms) and minor faults; 1 when it failed. */
static int once(char **argv, double *wall, double *cpu, double *faults) {
  double start = now_ms();
  pid_t pid = fork();
  if (pid < 0) exit(71);
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2); /* (rlock without its guard, part 1c, warns on each run) */
    execvp(argv[0], argv);
    _exit(127);
  }
  int st;
  struct rusage ru;
  while (wait4(pid, &st, 0, &ru) < 0) {
  }
  *wall = now_ms() - start;
  *cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
  *faults = (double)ru.ru_minflt;
  return !WIFEXITED(st) || WEXITSTATUS(st) != 0;
}

int main(int argc, char **argv) {
  int sep = 0;
  for (int i = 3; i < argc; i++)
    if (strcmp(argv[i], "::") == 0) sep = i;
  if (argc < 6 || sep == 0 || sep == 3 || sep == argc - 1) {
    fprintf(stderr, "usage: paired RUNS WARMUP CMD_A [ARGS...] :: CMD_B [ARGS...]\n");
    return 64;
  }
  int runs = atoi(argv[1]), warmup = atoi(argv[2]);
  if (runs < 1 || warmup < 0) return 64;
  argv[sep] = NULL;
  char **cmd[2] = {argv + 3, argv + sep + 1};
  double *v[2][3];
  for (int c = 0; c < 2; c++)
    for (int k = 0; k < 3; k++) v[c][k] = calloc((size_t)runs, sizeof(double));
  int failed[2] = {0, 0};
  for (int i = -warmup; i < runs; i++)
    for (int c = 0; c < 2; c++) {
      double w, u, f;
      failed[c] += once(cmd[c], &w, &u, &f);
      if (i < 0) continue;
      v[c][0][i] = w;
      v[c][1][i] = u;
      v[c][2][i] = f;
    }
  double m[2][3];
  for (int c = 0; c < 2; c++)
    for (int k = 0; k < 3; k++) m[c][k] = median(v[c][k], runs);
  printf("A: cpu %.3f ms  wall %.3f ms  minflt %.0f\n", m[0][1], m[0][0], m[0][2]);
  printf("B: cpu %.3f ms  wall %.3f ms  minflt %.0f\n", m[1][1], m[1][0], m[1][2]);
  printf("A/B: cpu %.2fx  wall %.2fx\n", m[0][1] / m[1][1], m[0][0] / m[1][0]);
  for (int c = 0; c < 2; c++)
    if (failed[c]) fprintf(stderr, "paired: %d runs of %s failed\n", failed[c], cmd[c][0]);
  return failed[0] || failed[1] ? 1 : 0;
}
