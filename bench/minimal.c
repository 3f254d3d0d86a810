/* The floor for `rlock run KEY -- CMD`: a minimal C program doing the same Redis work
 * with nothing else (no waiting, no renewal, no guard, no signal forwarding).
 * Connect over TCP, SET KEY TOKEN NX PX 30000, fork/exec CMD, wait for it, then
 * compare-and-delete KEY with one EVAL. Exit: CMD's status, 75 if KEY is taken,
 * 69 on any connection or protocol failure.
 * Usage: minimal HOST PORT KEY CMD [ARGS...]                 (bench/ only) */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fd = -1;

static void send_cmd(int argc, const char **argv) {
  char buf[4096];
  int n = snprintf(buf, sizeof buf, "*%d\r\n", argc);
  for (int i = 0; i < argc; i++)
    n += snprintf(buf + n, sizeof buf - (size_t)n, "$%zu\r\n%s\r\n", strlen(argv[i]), argv[i]);
  if (n >= (int)sizeof buf || write(fd, buf, (size_t)n) != n) exit(69);
}

/* Reads one short reply line; returns its first byte ('+', ':', '$', '-'...). */
static char read_reply(char *line, size_t cap) {
  ssize_t n = read(fd, line, cap - 1);
  if (n <= 0) exit(69);
  line[n] = 0;
  return line[0];
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: minimal HOST PORT KEY CMD [ARGS...]\n");
    return 64;
  }
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[2]))};
  if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) return 64;
  fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) return 69;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char token[64], line[256];
  snprintf(token, sizeof token, "%d-%ld%09ld", (int)getpid(), (long)ts.tv_sec, ts.tv_nsec);
  const char *set[] = {"SET", argv[3], token, "NX", "PX", "30000"};
  send_cmd(6, set);
  if (read_reply(line, sizeof line) != '+') return 75;

  pid_t pid = fork();
  if (pid < 0) return 71;
  if (pid == 0) {
    execvp(argv[4], argv + 4);
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  const char *del[] = {"EVAL",
                       "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) "
                       "else return 0 end",
                       "1", argv[3], token};
  send_cmd(5, del);
  read_reply(line, sizeof line);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
