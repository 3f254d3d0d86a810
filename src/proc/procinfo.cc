#include "proc/procinfo.h"

#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/text.h"

#if defined(__linux__)
#include <sys/syscall.h>
#endif
#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace rlock {

namespace {

#if defined(__linux__)
// Reads at most `max` bytes of a /proc file: they are small, and a hostile
// command line must not make rlock read megabytes.
std::string read_small(const char* path, size_t max) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out(max, '\0');
  size_t got = 0;
  while (got < max) {
    ssize_t n = read(fd, out.data() + got, max - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  out.resize(got);
  return out;
}

// read_small of /proc/PID/NAME.
std::string read_proc(pid_t pid, const char* name, size_t max) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/%s", static_cast<long>(pid), name);
  return read_small(path, max);
}
#endif

#if defined(__APPLE__)
// The kernel's record of process `pid` (sysctl KERN_PROC_PID); false when
// there is no such process.
bool kinfo_of(pid_t pid, struct kinfo_proc& kp) {
  int mib[4] = {CTL_KERN, KERN_PROC, KERN_PROC_PID, static_cast<int>(pid)};
  size_t len = sizeof kp;
  memset(&kp, 0, sizeof kp);
  return sysctl(mib, 4, &kp, &len, nullptr, 0) == 0 && len > 0;
}
#endif

}  // namespace

std::optional<ProcInfo> proc_info(pid_t pid, int* unreadable) {
  if (unreadable) *unreadable = 0;
  if (pid <= 0) return std::nullopt;
#if defined(__linux__)
  errno = 0;
  std::string stat = read_proc(pid, "stat", 1024);
  if (stat.empty() && unreadable) {
    int err = errno;
    if (err == EMFILE || err == ENFILE || err == ENOMEM || err == EACCES || err == EPERM)
      *unreadable = err;
    // hidepid=2 hides another user's process from /proc, not from the kernel.
    else if (err == ENOENT && (kill(pid, 0) == 0 || errno == EPERM))
      *unreadable = err;
  }
  // "PID (COMM) STATE PPID ...": COMM may hold anything, so it ends at the last ')'.
  size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= stat.size()) return std::nullopt;
  std::string rest = stat.substr(close_paren + 2);
  char state = 0;
  long ppid = 0;
  if (sscanf(rest.c_str(), "%c %ld", &state, &ppid) != 2) return std::nullopt;
  if (state == 'Z' || state == 'X') return std::nullopt;
  // Field 22 (starttime) is the 20th after COMM.
  const char* p = rest.c_str();
  for (int field = 0; field < 19 && p; ++field) {
    p = strchr(p, ' ');
    if (p) ++p;
  }
  if (!p) return std::nullopt;
  unsigned long long start = 0;
  if (sscanf(p, "%llu", &start) != 1) return std::nullopt;
  return ProcInfo{static_cast<pid_t>(ppid), start};
#elif defined(__APPLE__)
  struct kinfo_proc kp;
  errno = 0;
  if (!kinfo_of(pid, kp)) {
    if (unreadable && errno == ENOMEM) *unreadable = errno;
    return std::nullopt;
  }
  if (kp.kp_proc.p_stat == SZOMB) return std::nullopt;
  const struct timeval& tv = kp.kp_proc.p_starttime;
  return ProcInfo{kp.kp_eproc.e_ppid,
                  static_cast<uint64_t>(tv.tv_sec) * 1000000u + static_cast<uint64_t>(tv.tv_usec)};
#else
  return std::nullopt;
#endif
}

WatchedProcess& WatchedProcess::operator=(WatchedProcess&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    pid_ = o.pid_;
    start_ = o.start_;
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

WatchedProcess::~WatchedProcess() {
  if (fd_ >= 0) close(fd_);
}

WatchedProcess WatchedProcess::open(pid_t pid, uint64_t start, int& err) {
  err = 0;
  WatchedProcess w(pid, start);
#if defined(__linux__) && defined(SYS_pidfd_open)
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));  // close-on-exec
  if (fd < 0) {
    if (errno == EMFILE || errno == ENFILE || errno == ENOMEM) err = errno;
    // ENOSYS (before Linux 5.3, or a seccomp filter), EINVAL (not a thread
    // group leader), ESRCH (ended already): the form without a handle, whose
    // first look finds what there is to find.
    return w;
  }
  // The handle is the process that had `pid` when it was opened. It is the
  // one that started at `start` if that one still has `pid` now, and the
  // handle's process had not ended by then (else `pid` may have been reused
  // in between): then it held `pid` all along.
  int unreadable = 0;
  auto info = proc_info(pid, &unreadable);
  struct pollfd p = {fd, POLLIN, 0};
  int ended;
  do {
    ended = poll(&p, 1, 0);
  } while (ended < 0 && errno == EINTR);
  if (!info && unreadable) {
    err = unreadable;
    close(fd);
    return w;
  }
  if (!info || info->start != start || ended != 0) {
    close(fd);  // ended, or another process: the first look says so
    return w;
  }
  w.fd_ = fd;
#else
  (void)pid;
  (void)start;
#endif
  return w;
}

bool WatchedProcess::alive() const {
  if (fd_ >= 0) {
    // A pidfd is readable once its process has ended (a zombie has).
    struct pollfd p = {fd_, POLLIN, 0};
    int n;
    do {
      n = poll(&p, 1, 0);
    } while (n < 0 && errno == EINTR);
    return n <= 0;  // (a failed poll says nothing: running)
  }
  int unreadable = 0;
  if (auto info = proc_info(pid_, &unreadable)) return info->start == start_;
  // Unknown (/proc unreadable), or a system without proc_info: running while
  // the kernel knows the PID. Else gone, or a zombie: it has ended.
  if (unreadable || !kProcInfoKnown) return kill(pid_, 0) == 0 || errno == EPERM;
  return false;
}

bool WatchedProcess::signal(int sig) const {
  if (pid_ <= 0) return false;
#if defined(__linux__) && defined(SYS_pidfd_send_signal)
  if (fd_ >= 0) return syscall(SYS_pidfd_send_signal, fd_, sig, nullptr, 0) == 0;
#endif
  if (!kProcInfoKnown) return kill(pid_, sig) == 0;
  // Only with its start time read just now: a PID whose start time cannot
  // be read may be anybody's (a race remains: it may end and its PID be
  // reused between the look and the kill, which only a handle closes).
  auto info = proc_info(pid_);
  return info && info->start == start_ && kill(pid_, sig) == 0;
}

bool is_ancestor(pid_t ancestor, pid_t pid) {
  if (ancestor <= 0) return false;
  for (int i = 0; i < 256 && pid > 1; ++i) {
    if (pid == ancestor) return true;
    auto info = proc_info(pid);
    if (!info) return false;
    pid = info->ppid;
  }
  return pid == ancestor;
}

std::string boot_id() {
#if defined(__linux__)
  std::string id = read_small("/proc/sys/kernel/random/boot_id", 64);
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
#elif defined(__APPLE__)
  struct timeval tv {};
  size_t len = sizeof tv;
  if (sysctlbyname("kern.boottime", &tv, &len, nullptr, 0) != 0) return {};
  return std::to_string(tv.tv_sec) + "." + std::to_string(tv.tv_usec);
#else
  return {};
#endif
}

std::optional<uid_t> proc_uid(pid_t pid) {
  if (pid <= 0) return std::nullopt;
#if defined(__linux__)
  std::string status = read_proc(pid, "status", 4096);
  // "Uid:\treal\teffective\tsaved\tfs"
  size_t at = status.find("\nUid:");
  if (at == std::string::npos) return std::nullopt;
  unsigned long real = 0, effective = 0;
  if (sscanf(status.c_str() + at + 5, "%lu %lu", &real, &effective) != 2) return std::nullopt;
  return static_cast<uid_t>(effective);
#elif defined(__APPLE__)
  struct kinfo_proc kp;
  if (!kinfo_of(pid, kp)) return std::nullopt;
  return kp.kp_eproc.e_ucred.cr_uid;
#else
  return std::nullopt;
#endif
}

std::string user_name(uid_t uid) {
  if (uid == geteuid()) return login_name_from_env();
  std::vector<char> buf(16384);
  struct passwd pw, *found = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found && found->pw_name &&
      *found->pw_name)
    return truncate_text(found->pw_name, 32);
  return uid == 0 ? "root" : "uid " + std::to_string(uid);
}

std::string proc_command_line(pid_t pid, size_t limit) {
  std::string out;
#if defined(__linux__)
  out = read_proc(pid, "cmdline", limit + 1);
  while (!out.empty() && out.back() == '\0') out.pop_back();
  for (char& c : out)
    if (c == '\0') c = ' ';
#elif defined(__APPLE__)
  struct kinfo_proc kp;
  if (kinfo_of(pid, kp)) out = kp.kp_proc.p_comm;
#else
  (void)pid;
#endif
  if (out.size() > limit) out.resize(limit);
  return out;
}

// The user name shown with a lease is informational: it comes from the login's
// environment ($LOGNAME, then $USER, as login(1), su and cron set them), not
// from the user database, whose lookup (NSS: nsswitch.conf, passwd, maybe a
// network directory) cost more than the rest of a run's start-up. A missing or
// implausible name gives "root" for uid 0 (true on every POSIX system) and the
// numeric uid otherwise.
std::string login_name_from_env() {
  auto plausible = [](const char* v) {
    if (!v || !*v || *v == '-' || strlen(v) > 32) return false;
    for (const char* c = v; *c; ++c)
      if (!isalnum(static_cast<unsigned char>(*c)) && *c != '.' && *c != '_' && *c != '-' &&
          *c != '$')
        return false;
    return true;
  };
  for (const char* var : {"LOGNAME", "USER"})
    if (const char* v = getenv(var); plausible(v)) return v;
  uid_t uid = geteuid();
  return uid == 0 ? "root" : "uid " + std::to_string(uid);
}

std::string host_name() {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  return host;
}

}  // namespace rlock
