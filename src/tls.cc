// TLS client streams through OpenSSL (hiredis 0.14 has none of its own).
#include <arpa/inet.h>
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <memory>

#include "error.h"
#include "transport.h"

namespace rlock {

namespace {

std::string ssl_error_text() {
  unsigned long e = ERR_get_error();
  if (!e) return "unknown TLS error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
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
    std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> owned(SSL_CTX_new(TLS_client_method()),
                                                            &SSL_CTX_free);
    ctx = owned.get();
    if (!ctx) throw_unavailable("cannot create TLS context: " + ssl_error_text());
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (!o.insecure) {
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
      if (!o.ca_cert.empty() || !o.ca_dir.empty()) {
        if (SSL_CTX_load_verify_locations(ctx, o.ca_cert.empty() ? nullptr : o.ca_cert.c_str(),
                                          o.ca_dir.empty() ? nullptr : o.ca_dir.c_str()) != 1)
          throw_usage(fmt::format("cannot load TLS CA from '{}': {}",
                                  o.ca_cert.empty() ? o.ca_dir : o.ca_cert, ssl_error_text()));
      } else {
        SSL_CTX_set_default_verify_paths(ctx);
      }
    } else {
      SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    }
    if (!o.cert.empty() || !o.key.empty()) {
      if (o.cert.empty() || o.key.empty())
        throw_usage("--tls-cert and --tls-key go together: give both");
      if (SSL_CTX_use_certificate_chain_file(ctx, o.cert.c_str()) != 1)
        throw_usage(fmt::format("cannot load --tls-cert '{}': {}", o.cert, ssl_error_text()));
      if (SSL_CTX_use_PrivateKey_file(ctx, o.key.c_str(), SSL_FILETYPE_PEM) != 1)
        throw_usage(fmt::format("cannot load --tls-key '{}': {}", o.key, ssl_error_text()));
      if (SSL_CTX_check_private_key(ctx) != 1) throw_usage("--tls-key does not match --tls-cert");
    }
    owned.release();
  }
  ~TlsContext() { SSL_CTX_free(ctx); }
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
    ssl_ = SSL_new(ctx_->ctx);
    if (!ssl_) {
      close(fd_);
      throw_unavailable("cannot create TLS session: " + ssl_error_text());
    }
    SSL_set_fd(ssl_, fd_);
    std::string name = ctx_->opts.server_name.empty() ? ep.host : ctx_->opts.server_name;
    bool ip = is_ip_literal(name);
    if (!ip) SSL_set_tlsext_host_name(ssl_, name.c_str());
    if (!ctx_->opts.insecure) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
      if (ip)
        X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
      else
        X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0);
    }
  }
  ~TlsStream() override {
    SSL_free(ssl_);
    close(fd_);
  }
  int fd() const override { return fd_; }

  Want handshake() override {
    if (done_) return Want::Nothing;
    ERR_clear_error();
    int rc = SSL_connect(ssl_);
    if (rc == 1) {
      done_ = true;
      return Want::Nothing;
    }
    int err = SSL_get_error(ssl_, rc);
    if (err == SSL_ERROR_WANT_READ) return Want::Read;
    if (err == SSL_ERROR_WANT_WRITE) return Want::Write;
    long verify = SSL_get_verify_result(ssl_);
    if (verify != X509_V_OK)
      throw_unavailable(
          fmt::format("TLS handshake with {} failed: certificate verification: {} "
                      "(give --tls-ca-cert, or --tls-insecure to skip)",
                      peer_, X509_verify_cert_error_string(verify)));
    throw_unavailable(fmt::format("TLS handshake with {} failed: {}", peer_, ssl_error_text()));
  }

  IoResult read(char* buf, size_t len) override {
    ERR_clear_error();
    int n = SSL_read(ssl_, buf, static_cast<int>(len));
    if (n > 0) return {static_cast<size_t>(n), Want::Nothing};
    return fail(n, "read from");
  }

  bool pending() const override { return done_ && SSL_pending(ssl_) > 0; }

  IoResult write(const char* buf, size_t len) override {
    ERR_clear_error();
    int n = SSL_write(ssl_, buf, static_cast<int>(len));
    if (n > 0) return {static_cast<size_t>(n), Want::Nothing};
    return fail(n, "write to");
  }

 private:
  IoResult fail(int rc, const char* what) {
    int err = SSL_get_error(ssl_, rc);
    if (err == SSL_ERROR_WANT_READ) return {0, Want::Read};
    if (err == SSL_ERROR_WANT_WRITE) return {0, Want::Write};
    if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && rc == 0))
      throw_unavailable(fmt::format("connection to {} closed by the server", peer_));
    throw_unavailable(fmt::format("cannot {} {}: {}", what, peer_, ssl_error_text()));
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
