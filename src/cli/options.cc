#include "cli/options.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cli/output.h"
#include "core/error.h"
#include "core/text.h"
#include "lock/key.h"
#include "lock/lock.h"

namespace rlock {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

bool valid_user_name(std::string_view u) {
  for (unsigned char c : u)
    if (c < 0x20 || c == 0x7f) return false;
  return u.size() <= 512;
}

// Closes a descriptor on scope exit.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

std::string read_password_file(const std::string& path, Millis limit, const char* flag) {
  std::string shown = escape_text(path);
  auto fail = [&](const std::string& why) {
    throw_usage(fmt::format("{} '{}': {}", flag, shown, why));
  };
  // Non-blocking, so a FIFO without a writer cannot hang the open.
  Fd f{open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
  if (f.fd < 0) fail(strerror(errno));
  struct stat st {};
  if (fstat(f.fd, &st) != 0) fail(strerror(errno));
  if (S_ISDIR(st.st_mode)) fail("is a directory");
  // Regular files and pipes (`--password-file <(pass show redis)`); a device
  // such as /dev/zero, /dev/null or a terminal is refused.
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) fail("is not a regular file or a pipe");
  std::string data;
  auto until = later(Clock::now(), limit);
  const bool pipe = S_ISFIFO(st.st_mode);
  for (;;) {
    auto nl = data.find('\n');
    if (nl != std::string::npos) {
      data.resize(nl);
      break;
    }
    if (data.size() > kMaxPasswordFile) fail("the first line is longer than 4 KiB");
    if (pipe) {
      // A named FIFO reads as end-of-file until a writer opens it; poll()
      // only reports it once one has: wait for that, within the limit.
      auto left = std::chrono::ceil<Millis>(until - Clock::now());
      pollfd p{f.fd, POLLIN, 0};
      int r = left.count() <= 0
                  ? 0
                  : poll(&p, 1, static_cast<int>(std::min<Millis::rep>(left.count(), 60'000)));
      if (r < 0 && errno == EINTR) continue;
      if (r == 0 && left.count() <= 60'000)
        fail(fmt::format("nothing to read within {} (--connect-timeout)", format_duration(limit)));
      if (r <= 0) continue;
    }
    char buf[1024];
    ssize_t n = read(f.fd, buf, sizeof buf);
    if (n > 0) {
      data.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) break;  // end of file (a pipe's writer closed it)
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    fail(strerror(errno));
  }
  if (data.size() > kMaxPasswordFile) fail("the first line is longer than 4 KiB");
  if (!data.empty() && data.back() == '\r') data.pop_back();
  if (data.empty()) fail("the first line is empty: write the password on it");
  if (data.find('\0') != std::string::npos) fail("the password holds a NUL byte");
  return data;
}

const char* describe(PasswordSource s) {
  switch (s) {
    case PasswordSource::Url:
      return "from the URL";
    case PasswordSource::File:
      return "from --password-file";
    case PasswordSource::RlockEnv:
      return "from RLOCK_PASSWORD";
    case PasswordSource::RediscliEnv:
      return "from REDISCLI_AUTH";
    case PasswordSource::SentinelFile:
      return "from --sentinel-password-file";
    case PasswordSource::SentinelEnv:
      return "from RLOCK_SENTINEL_PASSWORD";
    case PasswordSource::None:
      break;
  }
  return "none";
}

std::vector<std::string> effective_urls(const GlobalOptions& g) {
  for (const std::string& u : g.urls)
    if (u.find(' ') != std::string::npos)
      throw_usage(
          "a --url holds one URL: give -u once per master for a quorum lock (RLOCK_URL "
          "separates several with spaces)");
  if (!g.urls.empty()) return g.urls;
  if (const char* u = env("RLOCK_URL")) {
    std::vector<std::string> out;
    std::string_view s(u);
    while (!s.empty()) {
      auto start = s.find_first_not_of(" \t\n");
      if (start == std::string_view::npos) break;
      s.remove_prefix(start);
      auto end = s.find_first_of(" \t\n");
      out.emplace_back(s.substr(0, end));
      if (end == std::string_view::npos) break;
      s.remove_prefix(end);
    }
    if (!out.empty()) return out;
  }
  if (const char* u = env("REDIS_URL")) return {u};
  return {std::string(kDefaultUrl)};
}

namespace {

// The sentinels' own user and password (Sentinel often has a password of its
// own): never from the command line alone, where `ps` shows it.
SentinelConfig sentinel_config(const GlobalOptions& g, SentinelUrl url) {
  SentinelConfig s;
  s.master_name = std::move(url.master_name);
  std::optional<std::string> password;
  if (!g.sentinel_password_file.empty()) {
    password =
        read_password_file(g.sentinel_password_file, g.connect_timeout, "--sentinel-password-file");
    s.password_source = PasswordSource::SentinelFile;
  } else if (const char* p = env("RLOCK_SENTINEL_PASSWORD")) {
    password = p;
    s.password_source = PasswordSource::SentinelEnv;
  }
  if (!g.sentinel_user.empty()) {
    if (!valid_user_name(g.sentinel_user))
      throw_usage("invalid --sentinel-user: it must be printable text");
    if (!password)
      throw_usage(
          fmt::format("sentinel user '{}' needs a password: give it in --sentinel-password-file or "
                      "RLOCK_SENTINEL_PASSWORD",
                      escape_text(g.sentinel_user)));
  }
  for (Endpoint& e : url.sentinels) {
    e.user = g.sentinel_user;
    e.password = password;
  }
  s.sentinels = std::move(url.sentinels);
  return s;
}

}  // namespace

ConnectionConfig connection_config(const GlobalOptions& g, const std::string& url) {
  ConnectionConfig c;
  if (g.connect_timeout.count() <= 0 || g.command_timeout.count() <= 0)
    throw_usage("--connect-timeout and --command-timeout must be greater than zero");
  if (is_sentinel_url(url)) {
    SentinelUrl su = parse_sentinel_url(url);
    c.endpoint = su.master;
    c.sentinel = sentinel_config(g, std::move(su));
  } else {
    if (!g.sentinel_user.empty() || !g.sentinel_password_file.empty())
      throw_usage("--sentinel-user and --sentinel-password-file need a redis-sentinel:// URL");
    c.endpoint = parse_url(url);
  }
  if (!g.user.empty()) {
    if (!valid_user_name(g.user)) throw_usage("invalid --user: it must be printable text");
    c.endpoint.user = g.user;
  }
  if (c.endpoint.password) {
    c.password_source = PasswordSource::Url;
  } else if (!g.password_file.empty()) {
    c.endpoint.password = read_password_file(g.password_file, g.connect_timeout);
    c.password_source = PasswordSource::File;
  } else if (const char* p = env("RLOCK_PASSWORD")) {
    c.endpoint.password = p;
    c.password_source = PasswordSource::RlockEnv;
  } else if (const char* p = env("REDISCLI_AUTH")) {
    c.endpoint.password = p;
    c.password_source = PasswordSource::RediscliEnv;
  }
  if (!c.endpoint.user.empty() && !c.endpoint.password)
    throw_usage(
        fmt::format("user '{}' needs a password: give it in the URL, --password-file, "
                    "RLOCK_PASSWORD or REDISCLI_AUTH",
                    escape_text(c.endpoint.user)));
  const TlsOptions& t = g.tls;
  bool tls_flags = !t.ca_cert.empty() || !t.ca_dir.empty() || !t.cert.empty() || !t.key.empty() ||
                   !t.server_name.empty() || t.insecure;
  if (tls_flags && !c.endpoint.tls)
    throw_usage(c.sentinel ? "--tls-* options need a TLS URL: use rediss-sentinel:// instead of "
                             "redis-sentinel://"
                           : "--tls-* options need a TLS URL: use rediss://host:port instead of "
                             "redis://");
  if (!t.ca_dir.empty()) {
    struct stat st {};
    if (stat(t.ca_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw_usage(fmt::format("--tls-ca-dir '{}' is not a directory", escape_text(t.ca_dir)));
  }
  c.tls = t;
  c.connect_timeout = g.connect_timeout;
  c.command_timeout = g.command_timeout;
  if (g.verbose) c.trace = [](const std::string& line) { log_verbose(line); };
  return c;
}

std::string resolve_label(const std::optional<std::string>& given) {
  std::optional<std::string> label = given;
  const char* what = "--label";
  if (!label)
    if (const char* l = env("RLOCK_LABEL")) {
      label = l;
      what = "RLOCK_LABEL";
    }
  if (label) {
    if (label->size() > kMaxLabel || !valid_utf8_no_controls(*label))
      throw_usage(fmt::format("invalid {}: at most {} bytes of text without control characters",
                              what, kMaxLabel));
    return *label;
  }
  // The CI's own link to the job (each CI's documented variables).
  std::string ci;
  auto var = [](const char* n) { return std::string(env(n) ? env(n) : ""); };
  if (var("GITHUB_ACTIONS") == "true" && !var("GITHUB_RUN_ID").empty()) {
    std::string server =
        var("GITHUB_SERVER_URL").empty() ? "https://github.com" : var("GITHUB_SERVER_URL");
    ci = server + "/" + var("GITHUB_REPOSITORY") + "/actions/runs/" + var("GITHUB_RUN_ID");
  } else if (var("GITLAB_CI") == "true") {
    ci = var("CI_JOB_URL");
  } else if (!var("JENKINS_URL").empty()) {
    ci = var("BUILD_URL");
  } else if (var("BUILDKITE") == "true" && !var("BUILDKITE_BUILD_URL").empty()) {
    ci = var("BUILDKITE_BUILD_URL");
    if (!var("BUILDKITE_JOB_ID").empty()) ci += "#" + var("BUILDKITE_JOB_ID");
  }
  if (!valid_utf8_no_controls(ci)) return "";
  return truncate_text(ci, kMaxLabel);
}

int not_acquired_exit(const LockOptions& o, const Error& why) {
  return why.cause() == Cause::Superseded ? o.superseded_exit : o.conflict_exit;
}

void validate(const LockOptions& o) {
  if (o.ttl < Millis(100)) throw_usage("--ttl must be at least 100ms");
  if (o.limit < 0) throw_usage("--limit must be a positive number");
  if (o.conflict_exit < 0 || o.conflict_exit > 255)
    throw_usage("--conflict-exit-code must be between 0 and 255");
  if (o.superseded_exit < 0 || o.superseded_exit > 255)
    throw_usage("--superseded-exit-code must be between 0 and 255");
  if (o.no_wait && o.wait) throw_usage("--wait and --no-wait contradict each other; give one");
  if (o.shared && o.limit > 0)
    throw_usage(
        "--shared and --limit: a KEY is either a shared lock or a semaphore; give one of them");
  if (o.priority < -1000 || o.priority > 1000)
    throw_usage("--priority must be a whole number from -1000 to 1000");
  if (o.max_waiters < 0) throw_usage("--max-waiters must be a positive number");
  if (o.cancel_in_progress && !o.supersede)
    throw_usage(
        "--cancel-in-progress needs --supersede: it stops an older superseding job's command, "
        "and only a job that supersedes may do that");
  if (o.done_for.count() > 0 && (o.shared || o.limit > 0))
    throw_usage(
        fmt::format("--done-for and {}: once per period needs one exclusive holder at a time",
                    o.shared ? "--shared" : "--limit"));
}

void check_layout_options(const GlobalOptions& g, const LockOptions* o) {
  if (g.layout == Layout::Rlock) return;
  const char* name = layout_name(g.layout);
  auto refuse = [&](const std::string& what, const char* why) {
    throw_usage(fmt::format("{} does not work with --layout {}: {}", what, name, why));
  };
  if (g.urls.size() > 1 || (g.urls.empty() && effective_urls(g).size() > 1))
    refuse("quorum mode (several URLs)", "the other tools lock on one deployment");
  if (!o) return;
  if (o->limit > 0) refuse("--limit", "the layout has one holder at a time");
  if (o->shared) refuse("--shared", "the layout has no shared holds");
  if (!o->and_keys.empty())
    refuse("--and", "its keys would fall in different Cluster slots (no hash tag)");
  if (o->priority != 0 || o->supersede || o->max_waiters > 0)
    refuse(o->priority != 0 ? "--priority"
           : o->supersede   ? "--supersede"
                            : "--max-waiters",
           "the layout has no line (waiters try again when they hear a release)");
  if (o->done_for.count() > 0)
    refuse("--done-for", "the layout cannot mark a lease as done for others");
  if (o->min_hold.count() > 0)
    refuse("--min-hold", "the layout keeps no acquisition time to count from");
}

}  // namespace rlock
