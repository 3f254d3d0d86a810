// Byte streams to a Redis server: TCP, Unix socket, or TLS over TCP. All
// non-blocking; the connection layer drives them from the event loop.
#pragma once

#include <sys/socket.h>

#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "net/url.h"

namespace rlock {

/// What a non-blocking operation needs before it can go on.
enum class Want { Nothing, Read, Write };

struct IoResult {
  size_t bytes = 0;           // > 0 when progress was made
  Want want = Want::Nothing;  // when bytes == 0: wait for this
};

/// A connected (or connecting) byte stream. Failures throw an unavailable Error
/// whose message names the endpoint and the cause.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual int fd() const = 0;
  /// Drives the connect (and TLS handshake) forward. Want::Nothing = ready.
  virtual Want handshake() = 0;
  /// Reads up to `len` bytes. EOF throws.
  virtual IoResult read(char* buf, size_t len) = 0;
  virtual IoResult write(const char* buf, size_t len) = 0;
  /// True when bytes were received but not yet returned by read() (TLS
  /// buffers records), so poll() would not report them.
  virtual bool pending() const { return false; }
};

/// TLS settings from the command line (see --tls-* in the man page).
struct TlsOptions {
  std::string ca_cert, ca_dir, cert, key, server_name;
  bool insecure = false;
};

/// A resolved socket address, kept so a reconnect never blocks on DNS.
struct Address {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string text;
};

/// What a socket error number says of the future: a reset or closed
/// connection and a timeout may pass by themselves, a refusal will not.
Cause cause_of_errno(int err);

/// Resolves `ep` (blocking getaddrinfo; call before the child runs).
std::vector<Address> resolve(const Endpoint& ep);

class TlsContext;  // tls.cc

/// Starts a non-blocking connect to `addr` and wraps it in TLS when `tls` is
/// given. The returned stream still needs handshake() until it says Nothing.
std::unique_ptr<Stream> open_stream(const Endpoint& ep, const Address& addr,
                                    const std::shared_ptr<TlsContext>& tls);

/// Builds the OpenSSL context once per endpoint. Throws usage Errors for
/// unreadable files and unavailable Errors for OpenSSL failures.
std::shared_ptr<TlsContext> make_tls_context(const TlsOptions& opts);

/// Wraps a connected socket in a TLS client session (takes ownership of fd).
std::unique_ptr<Stream> wrap_tls(int fd, const std::shared_ptr<TlsContext>& ctx,
                                 const Endpoint& ep);

}  // namespace rlock
