/* Lock cycles per second that one Redis server sustains: CLIENTS threads, each with its
 * own connection and its own key, send the commands of TEMPLATE again and again for
 * SECONDS, one at a time (each waits for its reply), and the total of whole cycles is
 * printed, per second. TEMPLATE has one command a line, its arguments separated by tabs;
 * in every argument @K becomes the thread's key name (cyc0, cyc1, ...) and @T a token new
 * for each cycle. An error reply at the top level stops the run (exit 70).
 * Usage: cycles HOST PORT SECONDS CLIENTS TEMPLATE                       (bench/ only) */
#define _GNU_SOURCE /* memmem, strsep */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_LINES 16
#define MAX_ARGS 64

static struct sockaddr_in sa;
static double seconds;
static int nlines;
static int nargs[MAX_LINES];
static char *args[MAX_LINES][MAX_ARGS];

struct worker {
  int id;
  long cycles;
  pthread_t th;
};

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Appends `s` with @K and @T replaced. */
static size_t expand(char *out, size_t cap, const char *s, const char *key, const char *tok) {
  size_t n = 0;
  for (; *s; s++) {
    const char *rep = NULL;
    if (s[0] == '@' && s[1] == 'K') rep = key;
    if (s[0] == '@' && s[1] == 'T') rep = tok;
    if (rep) {
      size_t l = strlen(rep);
      if (n + l >= cap) exit(70);
      memcpy(out + n, rep, l);
      n += l;
      s++;
    } else {
      if (n + 1 >= cap) exit(70);
      out[n++] = *s;
    }
  }
  out[n] = 0;
  return n;
}

/* A buffered reader of RESP replies. */
struct conn {
  int fd;
  char buf[65536];
  size_t len, pos;
};

static int fill(struct conn *c) {
  if (c->pos > 0) {
    memmove(c->buf, c->buf + c->pos, c->len - c->pos);
    c->len -= c->pos;
    c->pos = 0;
  }
  if (c->len == sizeof c->buf) return -1;
  ssize_t r = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
  if (r <= 0) return -1;
  c->len += (size_t)r;
  return 0;
}

/* The line at c->pos (without CRLF), waiting for it; returns its start. */
static char *line(struct conn *c, size_t *l) {
  for (;;) {
    char *start = c->buf + c->pos;
    char *e = memmem(start, c->len - c->pos, "\r\n", 2);
    if (e) {
      *l = (size_t)(e - start);
      c->pos += *l + 2;
      return start;
    }
    if (fill(c) != 0) exit(69);
  }
}

/* Skips one reply; returns its type byte. */
static char skip(struct conn *c) {
  size_t l;
  char *s = line(c, &l);
  char t = s[0];
  long n = strtol(s + 1, NULL, 10);
  if (t == '-') fprintf(stderr, "cycles: %.*s\n", (int)l, s);
  if (t == '$' && n >= 0) {
    while (c->len - c->pos < (size_t)n + 2)
      if (fill(c) != 0) exit(69);
    c->pos += (size_t)n + 2;
  }
  if (t == '*' || t == '%' || t == '~')
    for (long i = 0; i < (t == '%' ? 2 * n : n); i++) skip(c);
  return t;
}

static void *run(void *p) {
  struct worker *w = p;
  struct conn *c = calloc(1, sizeof *c);
  c->fd = socket(AF_INET, SOCK_STREAM, 0);
  if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0) exit(69);
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char key[32], tok[64], arg[4096];
  static __thread char out[65536];
  snprintf(key, sizeof key, "cyc%d", w->id);
  double end = now() + seconds;
  while (now() < end) {
    snprintf(tok, sizeof tok, "%08x%08lx%016x", w->id, w->cycles, 0x5eed);
    for (int i = 0; i < nlines; i++) {
      size_t n = (size_t)snprintf(out, sizeof out, "*%d\r\n", nargs[i]);
      for (int j = 0; j < nargs[i]; j++) {
        size_t l = expand(arg, sizeof arg, args[i][j], key, tok);
        if (n + l + 32 >= sizeof out) exit(70);
        n += (size_t)snprintf(out + n, sizeof out - n, "$%zu\r\n", l);
        memcpy(out + n, arg, l);
        n += l;
        memcpy(out + n, "\r\n", 2);
        n += 2;
      }
      if (write(c->fd, out, n) != (ssize_t)n) exit(69);
      if (skip(c) == '-') exit(70);
    }
    w->cycles++;
  }
  close(c->fd);
  free(c);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: cycles HOST PORT SECONDS CLIENTS TEMPLATE\n");
    return 64;
  }
  sa.sin_family = AF_INET;
  sa.sin_port = htons((unsigned short)atoi(argv[2]));
  if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) return 64;
  seconds = atof(argv[3]);
  int clients = atoi(argv[4]);
  if (seconds <= 0 || clients < 1 || clients > 256) return 64;
  FILE *f = fopen(argv[5], "r");
  if (!f) return 66;
  static char text[MAX_LINES][16384];
  while (nlines < MAX_LINES && fgets(text[nlines], sizeof text[nlines], f)) {
    char *s = text[nlines];
    s[strcspn(s, "\n")] = 0;
    if (!*s) continue;
    for (char *a; (a = strsep(&s, "\t")) && nargs[nlines] < MAX_ARGS;)
      args[nlines][nargs[nlines]++] = a;  /* (strsep: an empty argument stays one) */
    nlines++;
  }
  fclose(f);
  if (nlines == 0) return 65;
  struct worker *ws = calloc((size_t)clients, sizeof *ws);
  double t0 = now();
  for (int i = 0; i < clients; i++) {
    ws[i].id = i;
    pthread_create(&ws[i].th, NULL, run, &ws[i]);
  }
  long total = 0;
  for (int i = 0; i < clients; i++) {
    pthread_join(ws[i].th, NULL);
    total += ws[i].cycles;
  }
  printf("%.0f %ld\n", (double)total / (now() - t0), total);
  return 0;
}
