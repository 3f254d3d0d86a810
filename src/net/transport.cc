#include "net/transport.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace rlock {

namespace {

#ifdef MSG_NOSIGNAL
constexpr int kSendFlags = MSG_NOSIGNAL;
#else
constexpr int kSendFlags = 0;  // SIGPIPE is ignored process-wide (signals.h)
#endif

int make_socket(int family, const std::string& peer) {
  int fd = socket(family, SOCK_STREAM, 0);
  if (fd < 0)
    throw_unavailable(fmt::format("cannot create a socket for {}: {}", peer, strerror(errno)));
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
#ifdef SO_NOSIGPIPE
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#endif
  return fd;
}

void set_tcp_options(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
#ifdef TCP_KEEPIDLE
  int idle = 15, intvl = 5, cnt = 3;
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
#endif
}

// A plain socket stream (TCP or Unix).
class SocketStream : public Stream {
 public:
  SocketStream(int fd, std::string peer, bool connecting)
      : fd_(fd), peer_(std::move(peer)), connecting_(connecting) {}
  ~SocketStream() override {
    if (fd_ >= 0) close(fd_);
  }
  int fd() const override { return fd_; }

  Want handshake() override {
    if (!connecting_) return Want::Nothing;
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err == EINPROGRESS || err == EALREADY) return Want::Write;
    if (err != 0)
      throw_unavailable(fmt::format("cannot connect to {}: {}", peer_, strerror(err)),
                        cause_of_errno(err));
    // Still in progress when the socket is not yet writable; poll decides.
    connecting_ = false;
    return Want::Nothing;
  }

  IoResult read(char* buf, size_t len) override {
    ssize_t n = recv(fd_, buf, len, 0);
    if (n > 0) return {static_cast<size_t>(n), Want::Nothing};
    if (n == 0)
      throw_unavailable(fmt::format("connection to {} closed by the server", peer_), Cause::Reset);
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return {0, Want::Read};
    int err = errno;
    throw_unavailable(fmt::format("cannot read from {}: {}", peer_, strerror(err)),
                      cause_of_errno(err));
  }

  IoResult write(const char* buf, size_t len) override {
    ssize_t n = send(fd_, buf, len, kSendFlags);
    if (n >= 0) return {static_cast<size_t>(n), n ? Want::Nothing : Want::Write};
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return {0, Want::Write};
    int err = errno;
    throw_unavailable(fmt::format("cannot write to {}: {}", peer_, strerror(err)),
                      cause_of_errno(err));
  }

  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
  std::string peer_;
  bool connecting_;
};

}  // namespace

Cause cause_of_errno(int err) {
  switch (err) {
    case ECONNRESET:
    case ECONNABORTED:
    case EPIPE:
      return Cause::Reset;
    case ETIMEDOUT:
      return Cause::Timeout;
    default:
      return Cause::Other;  // ECONNREFUSED above all: nothing listens there
  }
}

std::vector<Address> resolve(const Endpoint& ep) {
  std::vector<Address> out;
  if (ep.kind == Endpoint::Kind::Unix) {
    Address a;
    auto* sun = reinterpret_cast<sockaddr_un*>(&a.addr);
    if (ep.path.size() >= sizeof sun->sun_path)
      throw_usage(fmt::format("Unix socket path too long: {}", ep.path));
    sun->sun_family = AF_UNIX;
    std::memcpy(sun->sun_path, ep.path.c_str(), ep.path.size() + 1);
    a.len = sizeof(sockaddr_un);
    a.text = ep.path;
    out.push_back(a);
    return out;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string port = std::to_string(ep.port);
  int rc = getaddrinfo(ep.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) throw_unavailable(fmt::format("cannot resolve '{}': {}", ep.host, gai_strerror(rc)));
  for (auto* ai = res; ai; ai = ai->ai_next) {
    Address a;
    std::memcpy(&a.addr, ai->ai_addr, ai->ai_addrlen);
    a.len = ai->ai_addrlen;
    char host[NI_MAXHOST] = "?";
    getnameinfo(ai->ai_addr, ai->ai_addrlen, host, sizeof host, nullptr, 0, NI_NUMERICHOST);
    a.text = ai->ai_family == AF_INET6 ? fmt::format("[{}]:{}", host, ep.port)
                                       : fmt::format("{}:{}", host, ep.port);
    out.push_back(a);
  }
  freeaddrinfo(res);
  if (out.empty()) throw_unavailable(fmt::format("cannot resolve '{}': no address", ep.host));
  return out;
}

std::unique_ptr<Stream> open_stream(const Endpoint& ep, const Address& addr,
                                    const std::shared_ptr<TlsContext>& tls) {
  int fd = make_socket(addr.addr.ss_family, addr.text);
  if (ep.kind == Endpoint::Kind::Tcp) set_tcp_options(fd);
  bool connecting = false;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr.addr), addr.len) != 0) {
    if (errno == EINPROGRESS || errno == EAGAIN) {
      connecting = true;
    } else {
      int err = errno;
      close(fd);
      throw_unavailable(fmt::format("cannot connect to {}: {}", addr.text, strerror(err)),
                        cause_of_errno(err));
    }
  }
  if (!tls) return std::make_unique<SocketStream>(fd, addr.text, connecting);
  if (connecting) {
    // Finish TCP first; the TLS stream takes over once connected.
    class TcpThenTls : public Stream {
     public:
      TcpThenTls(int fd, std::string peer, std::shared_ptr<TlsContext> ctx, Endpoint ep)
          : tcp_(std::make_unique<SocketStream>(fd, std::move(peer), true)),
            ctx_(std::move(ctx)),
            ep_(std::move(ep)) {}
      int fd() const override { return tls_ ? tls_->fd() : tcp_->fd(); }
      Want handshake() override {
        if (!tls_) {
          Want w = tcp_->handshake();
          if (w != Want::Nothing) return w;
          tls_ = wrap_tls(tcp_->release(), ctx_, ep_);
          tcp_.reset();
        }
        return tls_->handshake();
      }
      IoResult read(char* b, size_t n) override { return tls_->read(b, n); }
      bool pending() const override { return tls_ && tls_->pending(); }
      IoResult write(const char* b, size_t n) override { return tls_->write(b, n); }

     private:
      std::unique_ptr<SocketStream> tcp_;
      std::unique_ptr<Stream> tls_;
      std::shared_ptr<TlsContext> ctx_;
      Endpoint ep_;
    };
    return std::make_unique<TcpThenTls>(fd, addr.text, tls, ep);
  }
  return wrap_tls(fd, tls, ep);
}

}  // namespace rlock
