// udp_sink: a UDP socket that reads whatever arrives and never answers, so that a test can
// point a resolver at it (resolv.conf `nameserver`) and get a DNS server that stalls.
//
//   udp_sink IP PORT
//
// Binds IP:PORT (PORT 0: the kernel picks), prints the bound port on stdout (one line,
// flushed) and reads until killed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>

#include "helper_net.h"

int main(int argc, char** argv) {
  constexpr const char* kProg = "udp_sink";
  if (argc != 3) {
    std::fprintf(stderr, "usage: udp_sink IP PORT\n");
    return 64;
  }
  int port = helper::parse_port(argv[2]);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port < 0 ? 0 : port));
  if (port < 0 || inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) {
    std::fprintf(stderr, "udp_sink: bad address %s:%s\n", argv[1], argv[2]);
    return 64;
  }
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) helper::die(kProg, "socket");
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) helper::die(kProg, "bind");
  socklen_t len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    helper::die(kProg, "getsockname");
  std::printf("%d\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  char buf[4096];
  for (;;) (void)!recv(fd, buf, sizeof buf, 0);
}
