#include "options.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "error.h"
#include "output.h"

namespace rlock {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

std::string read_password_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw_usage(fmt::format("cannot read --password-file '{}'", path));
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
  return line;
}

}  // namespace

std::string effective_url(const GlobalOptions& g) {
  if (!g.url.empty()) return g.url;
  if (const char* u = env("RLOCK_URL")) return u;
  if (const char* u = env("REDIS_URL")) return u;
  return std::string(kDefaultUrl);
}

ConnectionConfig connection_config(const GlobalOptions& g) {
  ConnectionConfig c;
  c.endpoint = parse_url(effective_url(g));
  if (!g.user.empty()) c.endpoint.user = g.user;
  if (!c.endpoint.password) {
    if (!g.password_file.empty())
      c.endpoint.password = read_password_file(g.password_file);
    else if (const char* p = env("RLOCK_PASSWORD"))
      c.endpoint.password = p;
    else if (const char* p = env("REDISCLI_AUTH"))
      c.endpoint.password = p;
  }
  const TlsOptions& t = g.tls;
  bool tls_flags = !t.ca_cert.empty() || !t.ca_dir.empty() || !t.cert.empty() || !t.key.empty() ||
                   !t.server_name.empty() || t.insecure;
  if (tls_flags && !c.endpoint.tls)
    throw_usage("--tls-* options need a TLS URL: use rediss://host:port instead of redis://");
  c.tls = t;
  if (g.connect_timeout.count() <= 0 || g.timeout.count() <= 0)
    throw_usage("--connect-timeout and --timeout must be greater than zero");
  c.connect_timeout = g.connect_timeout;
  c.command_timeout = g.timeout;
  if (g.verbose) c.trace = [](const std::string& line) { log_verbose(line); };
  return c;
}

void validate(const LockOptions& o) {
  if (o.ttl < Millis(100)) throw_usage("--ttl must be at least 100ms");
  if (o.limit < 0) throw_usage("--limit must be a positive number");
  if (o.conflict_exit < 0 || o.conflict_exit > 255)
    throw_usage("--conflict-exit-code must be between 0 and 255");
  if (o.no_wait && o.wait) throw_usage("--wait and --no-wait contradict each other; give one");
}

}  // namespace rlock
