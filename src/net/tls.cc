// TLS client streams through OpenSSL (hiredis 0.14 has none of its own).
//
// libssl is loaded with dlopen() when the first rediss:// connection is made,
// not linked: loading and relocating libssl and libcrypto cost more than the
// rest of a redis:// run, which never uses them. The headers give the types;
// every call goes through the table below, so nothing here links to OpenSSL.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "core/error.h"
#include "net/transport.h"

namespace rlock {

#ifndef RLOCK_LIBSSL
#define RLOCK_LIBSSL "libssl.so.3"
#endif

namespace {

// Every OpenSSL function rlock calls (libcrypto's are found through libssl,
// which depends on it). The macros of the API (SSL_CTX_set_min_proto_version,
// SSL_set_tlsext_host_name) are spelt out as the *_ctrl calls they expand to.
// clang-format off
#define RLOCK_OPENSSL_FUNCTIONS(X) \
  X(ERR_get_error) X(ERR_error_string_n) X(ERR_clear_error) X(TLS_client_method) \
  X(SSL_CTX_new) X(SSL_CTX_free) X(SSL_CTX_ctrl) X(SSL_CTX_set_verify) X(SSL_CTX_load_verify_locations) \
  X(SSL_CTX_set_default_verify_paths) X(SSL_CTX_use_certificate_chain_file) \
  X(SSL_CTX_use_PrivateKey_file) X(SSL_CTX_check_private_key) X(SSL_new) X(SSL_free) \
  X(SSL_set_fd) X(SSL_ctrl) X(SSL_get0_param) X(X509_VERIFY_PARAM_set1_ip_asc) \
  X(X509_VERIFY_PARAM_set1_host) X(SSL_connect) X(SSL_get_error) X(SSL_get_verify_result) \
  X(X509_verify_cert_error_string) X(SSL_read) X(SSL_write) X(SSL_pending)
// clang-format on

struct OpenSsl {
#define RLOCK_DECLARE(name) decltype(&::name) name = nullptr;
  RLOCK_OPENSSL_FUNCTIONS(RLOCK_DECLARE)
#undef RLOCK_DECLARE
};

// Loaded once, on first use; never unloaded (OpenSSL cleans up at exit).
const OpenSsl& ssl() {
  static const OpenSsl api = [] {
    void* lib = dlopen(RLOCK_LIBSSL, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      throw_unavailable(fmt::format("TLS needs OpenSSL's {}, which cannot be loaded: {}",
                                    RLOCK_LIBSSL, why ? why : "unknown error"));
    }
    OpenSsl a;
#define RLOCK_LOAD(name)                                          \
  a.name = reinterpret_cast<decltype(a.name)>(dlsym(lib, #name)); \
  if (!a.name)                                                    \
    throw_unavailable(fmt::format("TLS needs OpenSSL's {}, which lacks {}", RLOCK_LIBSSL, #name));
    RLOCK_OPENSSL_FUNCTIONS(RLOCK_LOAD)
#undef RLOCK_LOAD
    return a;
  }();
  return api;
}

std::string ssl_error_text() {
  unsigned long e = ssl().ERR_get_error();
  if (!e) return "unknown TLS error";
  char buf[256];
  ssl().ERR_error_string_n(e, buf, sizeof buf);
  ssl().ERR_clear_error();
  return buf;
}

bool is_ip_literal(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

class TlsContext {
 public:
  explicit TlsContext(const TlsOptions& o) : opts(o) {
    // Owned by a unique_ptr until the constructor succeeds: a usage error
    // thrown below must not leak it.
    std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> owned(
        ssl().SSL_CTX_new(ssl().TLS_client_method()), ssl().SSL_CTX_free);
    ctx = owned.get();
    if (!ctx) throw_unavailable("cannot create TLS context: " + ssl_error_text());
    ssl().SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, nullptr);
    if (!o.insecure) {
      ssl().SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
      if (!o.ca_cert.empty() || !o.ca_dir.empty()) {
        if (ssl().SSL_CTX_load_verify_locations(ctx,
                                                o.ca_cert.empty() ? nullptr : o.ca_cert.c_str(),
                                                o.ca_dir.empty() ? nullptr : o.ca_dir.c_str()) != 1)
          throw_usage(fmt::format("cannot load TLS CA from '{}': {}",
                                  o.ca_cert.empty() ? o.ca_dir : o.ca_cert, ssl_error_text()));
      } else {
        ssl().SSL_CTX_set_default_verify_paths(ctx);
      }
    } else {
      ssl().SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    }
    if (!o.cert.empty() || !o.key.empty()) {
      if (o.cert.empty() || o.key.empty())
        throw_usage("--tls-cert and --tls-key go together: give both");
      if (ssl().SSL_CTX_use_certificate_chain_file(ctx, o.cert.c_str()) != 1)
        throw_usage(fmt::format("cannot load --tls-cert '{}': {}", o.cert, ssl_error_text()));
      if (ssl().SSL_CTX_use_PrivateKey_file(ctx, o.key.c_str(), SSL_FILETYPE_PEM) != 1)
        throw_usage(fmt::format("cannot load --tls-key '{}': {}", o.key, ssl_error_text()));
      if (ssl().SSL_CTX_check_private_key(ctx) != 1)
        throw_usage("--tls-key does not match --tls-cert");
    }
    owned.release();
  }
  ~TlsContext() { ssl().SSL_CTX_free(ctx); }
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* ctx;
  TlsOptions opts;
};

namespace {

class TlsStream : public Stream {
 public:
  TlsStream(int fd, std::shared_ptr<TlsContext> ctx, const Endpoint& ep)
      : fd_(fd), ctx_(std::move(ctx)), peer_(ep.display()) {
    ssl_ = ssl().SSL_new(ctx_->ctx);
    if (!ssl_) {
      close(fd_);
      throw_unavailable("cannot create TLS session: " + ssl_error_text());
    }
    ssl().SSL_set_fd(ssl_, fd_);
    std::string name = ctx_->opts.server_name.empty() ? ep.host : ctx_->opts.server_name;
    bool ip = is_ip_literal(name);
    if (!ip)
      ssl().SSL_ctrl(ssl_, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                     const_cast<char*>(name.c_str()));
    if (!ctx_->opts.insecure) {
      X509_VERIFY_PARAM* param = ssl().SSL_get0_param(ssl_);
      if (ip)
        ssl().X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
      else
        ssl().X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0);
    }
  }
  ~TlsStream() override {
    ssl().SSL_free(ssl_);
    close(fd_);
  }
  int fd() const override { return fd_; }

  Want handshake() override {
    if (done_) return Want::Nothing;
    ssl().ERR_clear_error();
    int rc = ssl().SSL_connect(ssl_);
    if (rc == 1) {
      done_ = true;
      return Want::Nothing;
    }
    int err = ssl().SSL_get_error(ssl_, rc);
    if (err == SSL_ERROR_WANT_READ) return Want::Read;
    if (err == SSL_ERROR_WANT_WRITE) return Want::Write;
    long verify = ssl().SSL_get_verify_result(ssl_);
    if (verify != X509_V_OK)
      throw_unavailable(
          fmt::format("TLS handshake with {} failed: certificate verification: {} "
                      "(give --tls-ca-cert, or --tls-insecure to skip)",
                      peer_, ssl().X509_verify_cert_error_string(verify)));
    throw_unavailable(fmt::format("TLS handshake with {} failed: {}", peer_, ssl_error_text()));
  }

  IoResult read(char* buf, size_t len) override {
    ssl().ERR_clear_error();
    int n = ssl().SSL_read(ssl_, buf, static_cast<int>(len));
    if (n > 0) return {static_cast<size_t>(n), Want::Nothing};
    return fail(n, "read from");
  }

  bool pending() const override { return done_ && ssl().SSL_pending(ssl_) > 0; }

  IoResult write(const char* buf, size_t len) override {
    ssl().ERR_clear_error();
    int n = ssl().SSL_write(ssl_, buf, static_cast<int>(len));
    if (n > 0) return {static_cast<size_t>(n), Want::Nothing};
    return fail(n, "write to");
  }

 private:
  IoResult fail(int rc, const char* what) {
    int sys = errno;  // SSL_ERROR_SYSCALL: the socket's error
    int err = ssl().SSL_get_error(ssl_, rc);
    if (err == SSL_ERROR_WANT_READ) return {0, Want::Read};
    if (err == SSL_ERROR_WANT_WRITE) return {0, Want::Write};
    if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && rc == 0))
      throw_unavailable(fmt::format("connection to {} closed by the server", peer_), Cause::Reset);
    throw_unavailable(fmt::format("cannot {} {}: {}", what, peer_, ssl_error_text()),
                      err == SSL_ERROR_SYSCALL ? cause_of_errno(sys) : Cause::Other);
  }

  int fd_;
  std::shared_ptr<TlsContext> ctx_;
  std::string peer_;
  SSL* ssl_ = nullptr;
  bool done_ = false;
};

}  // namespace

std::shared_ptr<TlsContext> make_tls_context(const TlsOptions& opts) {
  return std::make_shared<TlsContext>(opts);
}

std::unique_ptr<Stream> wrap_tls(int fd, const std::shared_ptr<TlsContext>& ctx,
                                 const Endpoint& ep) {
  return std::make_unique<TlsStream>(fd, ctx, ep);
}

}  // namespace rlock
