// What rlock needs to know of other processes on this host: a process's parent
// and start time (so that a reused PID is told from the process it replaced),
// whether one process is an ancestor of another, and its user and command line
// for people.
// Linux reads /proc; macOS asks sysctl(KERN_PROC); elsewhere nothing is known
// (every answer is "unknown", and callers take the safe side).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace rlock {

/// Whether proc_info() can answer on this system.
#if defined(__linux__) || defined(__APPLE__)
inline constexpr bool kProcInfoKnown = true;
#else
inline constexpr bool kProcInfoKnown = false;
#endif

struct ProcInfo {
  pid_t ppid = 0;
  /// When the process started, in a unit of the system's choosing: equal for
  /// one process, different (almost surely) for a process that reused its PID.
  uint64_t start = 0;
};

/// The parent and start time of `pid`; nullopt when there is no such process,
/// it is a zombie, or this system cannot tell. When `unreadable` is given, it
/// is set to the errno of a failure that says nothing about the process (no
/// descriptor or memory left to read /proc: EMFILE, ENFILE, ENOMEM; /proc
/// mounted with hidepid: EACCES, EPERM, or ENOENT for a process the kernel
/// still knows), 0 otherwise: nullopt with it set is "unknown", not "gone".
std::optional<ProcInfo> proc_info(pid_t pid, int* unreadable = nullptr);

/// A process watched for the whole life of its watcher (`acquire --while-pid`
/// and its keeper), told apart for sure from any process that reuses its PID
/// later. On Linux (5.3 and later) a pidfd, opened once (open()): whether it
/// has ended and signalling it need neither /proc nor a new descriptor.
/// Without one (another system, an older kernel, or constructed from a PID
/// and start time alone), each look reads its start time (proc_info); when
/// that cannot be read, it counts as running while the kernel knows the PID,
/// but is never signalled: the PID may be another process's by then.
class WatchedProcess {
 public:
  WatchedProcess() = default;
  /// `pid`, which started at `start` (proc_info), without a handle.
  WatchedProcess(pid_t pid, uint64_t start) : pid_(pid), start_(start) {}
  WatchedProcess(WatchedProcess&& o) noexcept : pid_(o.pid_), start_(o.start_), fd_(o.fd_) {
    o.fd_ = -1;
  }
  WatchedProcess& operator=(WatchedProcess&& o) noexcept;
  WatchedProcess(const WatchedProcess&) = delete;
  WatchedProcess& operator=(const WatchedProcess&) = delete;
  ~WatchedProcess();

  /// `pid`, which started at `start`, with a handle where this system has
  /// one. `err` is set to the errno of a failure that leaves its identity
  /// uncertain (no descriptor or memory left: EMFILE, ENFILE, ENOMEM, or
  /// /proc unreadable afterwards, as proc_info's `unreadable`), else 0. A
  /// kernel without pidfds gives the form without a handle, and `err` 0.
  static WatchedProcess open(pid_t pid, uint64_t start, int& err);

  pid_t pid() const { return pid_; }
  /// Whether it is held by a handle (alive() and signal() are certain).
  bool certain() const { return fd_ >= 0; }
  /// False once it has ended (a zombie has), or its PID is another process's.
  bool alive() const;
  /// Sends `sig` to it if it is certainly this process and still runs;
  /// false when not sent.
  bool signal(int sig) const;

 private:
  pid_t pid_ = 0;
  uint64_t start_ = 0;
  int fd_ = -1;
};

/// True when `ancestor` is `pid` itself or one of its ancestors (at most 256
/// generations are walked). False when unknown.
bool is_ancestor(pid_t ancestor, pid_t pid);

/// What tells this boot of this host from any other, for binding a process
/// (pid, start) to it: Linux's /proc/sys/kernel/random/boot_id, macOS's boot
/// time; empty when unknown.
std::string boot_id();

/// The effective user id `pid` runs as (what ps shows as its user);
/// nullopt when there is no such process or this system cannot tell.
std::optional<uid_t> proc_uid(pid_t pid);

/// The name of the user `uid`, for people: the caller's own name
/// (login_name_from_env) for its own uid, else the user database's, else
/// "uid N".
std::string user_name(uid_t uid);

/// The command line of `pid` for people (arguments joined by spaces, at most
/// `limit` bytes); empty when unknown.
std::string proc_command_line(pid_t pid, size_t limit);

/// The user name stored with a lease: $LOGNAME, else $USER, when it looks like
/// a login name (at most 32 of [A-Za-z0-9._$-], no leading '-'); else "root"
/// for uid 0 and "uid N" for others.
/// Informational only: no user-database lookup on the start-up path.
std::string login_name_from_env();

/// This host's name (gethostname), empty when it cannot be told.
std::string host_name();

}  // namespace rlock
