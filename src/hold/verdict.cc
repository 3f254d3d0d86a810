#include "hold/verdict.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/text.h"

namespace rlock {

namespace {

constexpr const char* kMagic = "rlock-verdict";
constexpr size_t kMostBytes = 2048;

std::string base_dir() {
  for (const char* var : {"XDG_RUNTIME_DIR", "TMPDIR"}) {
    const char* v = getenv(var);
    if (v && v[0] == '/') return v;
  }
  return "/tmp";
}

// The private directory, opened (O_NOFOLLOW: never through a link): made if
// missing, refused unless it is a directory of this user's that nobody else
// may enter (another user's, planted beforehand, is never written to or read).
int open_private_dir(bool create) {
  std::string dir = fmt::format("{}/rlock-{}", base_dir(), static_cast<unsigned long>(geteuid()));
  if (create && mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return -1;
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & 077) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// One file per keeper and token: a hash of the token (any length, any byte)
// beside the keeper's pid.
std::string file_name(long keeper_pid, const std::string& token) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : token) h = (h ^ c) * 1099511628211ull;
  return fmt::format("keeper-{}-{:016x}", keeper_pid, h);
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s.substr(0, 1024);
}

}  // namespace

bool write_keeper_verdict(long keeper_pid, const std::string& token, const KeeperVerdict& v) {
  int dir = open_private_dir(true);
  if (dir < 0) return false;
  std::string name = file_name(keeper_pid, token);
  int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = openat(dir, name.c_str(), flags, 0600);
  if (fd < 0 && errno == EEXIST) {  // left by an earlier keeper with this pid
    unlinkat(dir, name.c_str(), 0);
    fd = openat(dir, name.c_str(), flags, 0600);
  }
  close(dir);
  if (fd < 0) return false;
  std::string text = fmt::format("{}\t{}\t{}\t{}\n", kMagic, v.failover_lost ? 1 : 0, v.fence,
                                 one_line(v.unconfirmed));
  bool ok = true;
  for (size_t at = 0; ok && at < text.size();) {
    ssize_t n = write(fd, text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) at += static_cast<size_t>(n);
  }
  close(fd);
  return ok;
}

std::optional<KeeperVerdict> take_keeper_verdict(long keeper_pid, const std::string& token) {
  int dir = open_private_dir(false);
  if (dir < 0) return std::nullopt;
  std::string name = file_name(keeper_pid, token);
  // O_NONBLOCK: a FIFO planted under the name never blocks the release.
  int fd = openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    close(dir);
    return std::nullopt;
  }
  unlinkat(dir, name.c_str(), 0);
  close(dir);
  struct stat st {};
  std::string text;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
      st.st_size <= static_cast<off_t>(kMostBytes)) {
    char buf[kMostBytes + 1];
    ssize_t n;
    do {
      n = read(fd, buf, sizeof buf);
    } while (n < 0 && errno == EINTR);
    if (n > 0) text.assign(buf, static_cast<size_t>(n));
  }
  close(fd);
  // MAGIC \t LOST(0|1) \t FENCE \t UNCONFIRMED \n
  if (text.empty() || text.size() > kMostBytes || text.back() != '\n') return std::nullopt;
  text.pop_back();
  std::vector<std::string> f;
  for (size_t at = 0;;) {
    size_t tab = text.find('\t', at);
    f.push_back(text.substr(at, tab == std::string::npos ? std::string::npos : tab - at));
    if (tab == std::string::npos) break;
    at = tab + 1;
  }
  if (f.size() != 4 || f[0] != kMagic || (f[1] != "0" && f[1] != "1")) return std::nullopt;
  KeeperVerdict v;
  v.failover_lost = f[1] == "1";
  char* end = nullptr;
  errno = 0;
  long long fence = strtoll(f[2].c_str(), &end, 10);
  if (f[2].empty() || *end || errno != 0 || fence < 0) return std::nullopt;
  v.fence = fence;
  v.unconfirmed = escape_text(f[3]);
  return v;
}

}  // namespace rlock
