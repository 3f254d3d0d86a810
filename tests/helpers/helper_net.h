// Small socket utilities shared by the test helpers (garbage_server, fault_proxy).
// Test-only code: plain POSIX, no dependencies, errors end the process with a message.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace helper {

/// Prints "PROGRAM: WHAT: strerror(errno)" to stderr and exits with status 1.
[[noreturn]] inline void die(const char* prog, const char* what) {
  std::fprintf(stderr, "%s: %s: %s\n", prog, what, std::strerror(errno));
  std::exit(1);
}

/// Parses a TCP port (0..65535); returns -1 when TEXT is not one.
inline int parse_port(const char* text) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < 0 || v > 65535) return -1;
  return static_cast<int>(v);
}

inline void set_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/// Listens on 127.0.0.1:PORT (0 = let the kernel pick) with a non-blocking, close-on-exec
/// socket. Stores the bound port in *BOUND. Exits the process on failure.
inline int listen_loopback(const char* prog, int port, int* bound) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) die(prog, "socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) die(prog, "bind");
  if (listen(fd, 128) != 0) die(prog, "listen");
  socklen_t len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) die(prog, "getsockname");
  *bound = ntohs(addr.sin_port);
  return fd;
}

/// Accepts one connection as a non-blocking, close-on-exec socket; -1 when none is pending.
inline int accept_nonblocking(int listen_fd) {
  return accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

/// Writes TEXT to PATH atomically (write to PATH.tmp, then rename), so a reader polling
/// the file never sees a partial state. Returns false on failure.
inline bool write_file_atomic(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = (close(fd) == 0) && ok;
  return ok && rename(tmp.c_str(), path.c_str()) == 0;
}

/// Reads all of PATH (at most 4 KiB) into TEXT; false if it cannot be opened.
inline bool read_file(const std::string& path, std::string& text) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  text.assign(buf, n > 0 ? static_cast<size_t>(n) : 0);
  return true;
}

/// Prints the port on one line of stdout and flushes, the readiness signal the bats
/// helpers wait for.
inline void announce_port(int port) {
  std::printf("%d\n", port);
  std::fflush(stdout);
}

}  // namespace helper
