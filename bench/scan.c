/* The floor for `rlock list`: a bare SCAN of the whole keyspace with COUNT 500 over one
 * TCP connection, reading every reply (what any tool that lists keys must do at least).
 * Prints how many keys it saw. Exit 69 on any connection or protocol failure.
 * Usage: scan HOST PORT                                        (bench/ only) */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int fd = -1;
static char buf[1 << 16];
static size_t have = 0, at = 0;

static int next_byte(void) {
  if (at == have) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) exit(69);
    have = (size_t)n;
    at = 0;
  }
  return (unsigned char)buf[at++];
}

/* One CRLF-terminated line into `line` (without the CRLF). */
static void read_line(char *line, size_t cap) {
  size_t n = 0;
  for (;;) {
    int c = next_byte();
    if (c == '\r') {
      if (next_byte() != '\n') exit(69);
      break;
    }
    if (n + 1 >= cap) exit(69);
    line[n++] = (char)c;
  }
  line[n] = 0;
}

/* A bulk string's body into `out` (NUL-terminated, cut to cap - 1). */
static void read_bulk(char *out, size_t cap) {
  char line[64];
  read_line(line, sizeof line);
  if (line[0] != '$') exit(69);
  long len = atol(line + 1);
  for (long i = 0; i < len + 2; i++) {
    int c = next_byte();
    if (i < len && (size_t)i < cap - 1) out[i] = (char)c;
  }
  out[len < (long)cap - 1 ? len : (long)cap - 1] = 0;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: scan HOST PORT\n");
    return 64;
  }
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[2]))};
  if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) return 64;
  fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) return 69;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char cursor[32] = "0", line[64], key[1024];
  long keys = 0;
  do {
    char cmd[128];
    int n = snprintf(cmd, sizeof cmd, "*4\r\n$4\r\nSCAN\r\n$%zu\r\n%s\r\n$5\r\nCOUNT\r\n$3\r\n500\r\n",
                     strlen(cursor), cursor);
    if (write(fd, cmd, (size_t)n) != n) return 69;
    read_line(line, sizeof line);
    if (strcmp(line, "*2") != 0) return 69;
    read_bulk(cursor, sizeof cursor);
    read_line(line, sizeof line);
    if (line[0] != '*') return 69;
    long count = atol(line + 1);
    for (long i = 0; i < count; i++) read_bulk(key, sizeof key);
    keys += count;
  } while (strcmp(cursor, "0") != 0);
  printf("%ld\n", keys);
  return 0;
}
