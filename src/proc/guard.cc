// See guard.h. Portable: a pipe, fork and kill; on Linux x86-64 and AArch64
// the guard program (guard_program.cc) exec'd from memory after vfork.
#include "proc/guard.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>

#ifdef __linux__
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif
#include "core/loop.h"
#include "core/sanitizers.h"
// The guard program is started with vfork(), which AddressSanitizer's shadow
// stack is not aware of: a sanitizer build forks its guard (so its test pass
// covers that path, the plain pass the program).
#if defined(RLOCK_GUARD_PROGRAM) && !RLOCK_HAS_ASAN && defined(SYS_execveat)
#define RLOCK_EXEC_GUARD 1
#include <sys/mman.h>

#include "guard_program.h"  // kGuardProgram: generated from proc/guard_program.cc
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U  // Linux 6.3: executable on purpose (kernels that know it want it said)
#endif
#endif

#include "proc/child.h"

namespace rlock {

void close_all_but(int keep) {
#if defined(__linux__) && defined(SYS_close_range)
  // One call each side of `keep`; a kernel without close_range (< 5.9) falls
  // through to the loop.
  bool ok = (keep == 0 || syscall(SYS_close_range, 0u, static_cast<unsigned>(keep - 1), 0u) == 0) &&
            syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0u, 0u) == 0;
  if (ok) return;
#endif
  long max = sysconf(_SC_OPEN_MAX);
  if (max < 0 || max > 65536) max = 65536;
  for (int fd = 0; fd < max; ++fd)
    if (fd != keep) close(fd);
}

namespace {

// rlock's argument strings, one contiguous area as the kernel lays them out
// (remember_arguments), or none.
char* g_args = nullptr;
size_t g_args_len = 0;

// A forked guard's names: the thread name (`ps`, pkill's default match) and
// the command line (`ps -f`, `pkill -f`), both kGuardName. Only memory writes
// and one system call: safe between fork and _exit.
void name_forked_guard() {
#ifdef __linux__
  prctl(PR_SET_NAME, kGuardName, 0, 0, 0);
#endif
  if (g_args == nullptr || g_args_len < 2) return;
  std::memset(g_args, 0, g_args_len);
  std::memcpy(g_args, kGuardName, std::min(sizeof kGuardName, g_args_len) - 1);
}

// A guard stopped by someone (SIGSTOP) is continued by rlock (resume), but
// not if rlock dies meanwhile: the kernel then continues it (the parent-death
// signal, kept across exec), and the guard, which keeps every signal blocked,
// goes on to read its pipe's end and kill the group. SIGCONT continues a
// stopped process even while blocked. One system call: safe between vfork or
// fork and exec.
void continue_when_rlock_dies() {
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGCONT, 0, 0, 0);
#endif
}

// A read of exactly `len` bytes, or fewer at EOF or on an error.
size_t read_fully(int fd, void* buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, static_cast<char*>(buf) + got, len - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

// Milliseconds of the clock rlock's leases are on (core/loop.h: it goes on while the
// machine is suspended). Async-signal-safe: Clock::now() is one clock_gettime.
long lease_clock_ms() {
  return static_cast<long>(
      std::chrono::duration_cast<Millis>(Clock::now().time_since_epoch()).count());
}

// Whether `fd` has something to read (or its end of file) within `ms`.
// Async-signal-safe.
bool readable_within(int fd, long ms) {
  struct pollfd p {
    fd, POLLIN, 0
  };
  int r;
  do {
    // At most a second: poll's timeout stops while the machine is suspended.
    r = poll(&p, 1, static_cast<int>(std::min(ms, 1000L)));
  } while (r < 0 && errno == EINTR);
  return r != 0;
}

#ifdef RLOCK_EXEC_GUARD
constexpr pid_t kNoProgram = -2;
// Set once the guard program could not be started, or died before rlock stood
// it down (a seccomp filter that kills at execveat, a vfork emulated by fork
// under valgrind or qemu, where a failed exec is not seen): every later guard
// of this process is forked, so that a guard that cannot run is never
// restarted in a loop.
bool g_program_refused = false;

// Starts the guard program (proc/guard_program.cc) with `read_end` as its
// descriptor 0, in a session of its own: its pid, kNoProgram where it cannot
// be exec'd (memfd_create or execveat refused: an old kernel, a seccomp
// filter, vm.memfd_noexec=2), the caller then forks a guard instead; -1 if no
// process can be made. Called with every signal blocked, which the program
// keeps (exec resets handlers, not the mask).
pid_t exec_program(int read_end, pid_t pgid) {
  if (g_program_refused) return kNoProgram;
  int mfd = memfd_create(kGuardName, MFD_CLOEXEC | MFD_EXEC);
  if (mfd < 0 && errno == EINVAL) mfd = memfd_create(kGuardName, MFD_CLOEXEC);
  if (mfd < 0) {
    g_program_refused = true;
    return kNoProgram;
  }
  size_t done = 0;
  while (done < sizeof kGuardProgram) {
    ssize_t n = write(mfd, kGuardProgram + done, sizeof kGuardProgram - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n < 0 && errno == EFBIG) {
        // A file size limit (`ulimit -f`) also raised SIGXFSZ, pending while
        // every signal is blocked: taken here, or it would kill rlock once
        // its mask is restored.
        sigset_t xfsz;
        sigemptyset(&xfsz);
        sigaddset(&xfsz, SIGXFSZ);
        struct timespec now = {0, 0};
        while (sigtimedwait(&xfsz, nullptr, &now) < 0 && errno == EINTR) {
        }
      }
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (done != sizeof kGuardProgram) {
    close(mfd);
    g_program_refused = true;
    return kNoProgram;
  }
  static char name[sizeof kGuardName];
  std::memcpy(name, kGuardName, sizeof kGuardName);
  char group[16] = "";  // the group already known, in decimal (argv[1]), or none
  char* argv[] = {name, nullptr, nullptr};
  if (pgid > 1) {
    *std::to_chars(group, group + sizeof group - 1, pgid).ptr = '\0';
    argv[1] = group;
  }
  char* const envp[] = {nullptr};
  volatile int exec_error = 0;
  // vfork(), as for the command (proc/child.cc): no page tables copied, no
  // copy-on-write faults in rlock afterwards. The child only makes system
  // calls and writes `exec_error` (shared memory) if exec fails.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  const pid_t pid = vfork();
#pragma GCC diagnostic pop
  if (pid == 0) {
    // A session of its own: a SIGKILL to rlock's process group (`kill -9
    // %1`, a CI runner ending the job) must not take the guard along.
    setsid();
    continue_when_rlock_dies();
    if (read_end == 0) {
      fcntl(0, F_SETFD, 0);  // dup2(0, 0) would leave it close-on-exec
    } else {
      dup2(read_end, 0);
    }
    syscall(SYS_execveat, mfd, "", argv, envp, AT_EMPTY_PATH);
    exec_error = errno;
    _exit(127);
  }
  close(mfd);
  if (pid < 0) return -1;
  if (exec_error != 0) {
    int st;
    wait_pid(pid, &st, 0);
    g_program_refused = true;
    return kNoProgram;
  }
  return pid;
}

// A guard that was the program died before rlock stood it down.
void program_died(bool program) {
  if (program) g_program_refused = true;
}
#else
void program_died(bool) {}

#endif

}  // namespace

void remember_arguments(int argc, char** argv) {
  if (argc < 1 || argv == nullptr || argv[0] == nullptr) return;
  char* end = argv[0];
  for (int i = 0; i < argc; ++i) {
    if (argv[i] != end) return;  // not one area (a caller's own argv): left as it is
    end += std::strlen(argv[i]) + 1;
  }
  g_args = argv[0];
  g_args_len = static_cast<size_t>(end - argv[0]);
}

void prefer_forked_guard() {
#ifdef RLOCK_EXEC_GUARD
  g_program_refused = true;
#endif
}

GroupGuard GroupGuard::failed(int err) {
  GroupGuard g;
  g.error_ = err;
  return g;
}

GroupGuard GroupGuard::start(pid_t known) {
  int fds[2];
#ifdef __linux__
  // Both ends close on exec (the guard program gets its read end as
  // descriptor 0 by dup2, a forked guard never execs, rlock closes its read
  // end at once): one call instead of pipe and fcntl.
  if (pipe2(fds, O_CLOEXEC) != 0) return failed(errno);
#else
  if (pipe(fds) != 0) return failed(errno);
  fcntl(fds[1], F_SETFD, FD_CLOEXEC);
#endif
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old);  // no rlock handler may run in the guard
  // A process with memory of its own, never a clone sharing rlock's (CLONE_VM),
  // which would be cheaper: the kernel's OOM killer kills every process that
  // shares the victim's memory, and before Linux 5.16 so did a core dump
  // (rlock aborting), so the guard would die with rlock exactly when it is
  // needed (docs/DESIGN.md, "The one event loop"). The guard program where it
  // can be exec'd, else a fork of rlock doing the same.
  bool program = false;
#ifdef RLOCK_EXEC_GUARD
  pid_t pid = exec_program(fds[0], known);
  program = pid != kNoProgram;
  if (!program) pid = fork();
#else
  pid_t pid = fork();
#endif
  if (pid == 0) {
    // The guard: only async-signal-safe calls from here on. It holds nothing
    // but its pipe: no Redis connection, no terminal, no caller's descriptor.
    // A session of its own: a SIGKILL to rlock's process group (`kill -9 %1`,
    // a CI runner ending the job) must not take the guard along with rlock.
    setsid();
    continue_when_rlock_dies();
    name_forked_guard();
    close_all_but(fds[0]);
    // Every signal stays blocked (the mask set before fork): a stray signal
    // stays pending instead of ending the guard; SIGKILL still does.
    // The records are the guard program's (proc/guard_program.cc, GroupGuard).
    pid_t pgid = known, record;
    long deadline = -1;  // the lease's end (lease_clock_ms), or none
    bool stopped = false;
    for (;;) {
      if (deadline >= 0) {
        long left = deadline - lease_clock_ms();
        // (poll's wait is bounded: woken early, the clock is read again)
        if (left > 0 && !readable_within(fds[0], left)) continue;
        if (left <= 0) {
          // rlock said nothing by the lease's end: stopped until its next word.
          if (pgid > 1) stopped = kill(-pgid, SIGSTOP) == 0;
          deadline = -1;
          continue;
        }
      }
      if (read_fully(fds[0], &record, sizeof record) != sizeof record) break;
      if (record == 0) _exit(0);  // stand down
      if (record > 1) {
        pgid = record;
        continue;
      }
      deadline = record < 0 ? lease_clock_ms() - static_cast<long>(record) : -1;
      if (stopped) kill(-pgid, SIGCONT);
      stopped = false;
    }
    if (pgid > 1) kill(-pgid, SIGKILL);  // rlock died
    _exit(0);
  }
  const int fork_errno = errno;
  sigprocmask(SIG_SETMASK, &old, nullptr);
  close(fds[0]);
  if (pid < 0) {
    close(fds[1]);
    return failed(fork_errno);
  }
  GroupGuard g;
  g.pid_ = pid;
  g.pipe_ = fds[1];
  g.program_ = program;
  return g;
}

namespace {

// Writes the whole of `pgid` to the guard's pipe; false if the guard is gone
// (EPIPE: its end of the pipe closed when it died) or the pipe failed.
bool send_group(int pipe_fd, pid_t pgid) {
  const char* p = reinterpret_cast<const char*>(&pgid);
  size_t left = sizeof pgid;
  while (left > 0) {  // a pipe takes this many bytes at once; EINTR aside
    ssize_t n = write(pipe_fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool GroupGuard::watch(pid_t pgid) {
  if (pid_ < 0) *this = start(pgid);
  if (pipe_ >= 0 && send_group(pipe_, pgid)) return true;
  // The guard died while rlock waited (the OOM killer, an operator's kill):
  // reap it first (so that its pid cannot be mistaken for the new guard's),
  // then start another. Without one, a SIGKILL to rlock would leave the
  // command's group running without a lease.
  program_died(program_);
  { GroupGuard dead(std::move(*this)); }
  *this = start(pgid);
  if (pipe_ >= 0 && send_group(pipe_, pgid)) return true;
  if (error_ == 0) error_ = EPIPE;  // started, then died at once
  return false;
}

// The records after a group (proc/guard_program.cc): 1, rlock is in charge; -N,
// the lease lasts N ms more.
constexpr pid_t kInCharge = 1;

void GroupGuard::lease_lasts(long ms) {
  if (pipe_ < 0) return;
  if (ms >= std::numeric_limits<pid_t>::max()) return in_charge();
  send_group(pipe_, static_cast<pid_t>(-std::max(ms, 1L)));
}

void GroupGuard::in_charge() {
  if (pipe_ >= 0) send_group(pipe_, kInCharge);
}

void GroupGuard::resume() const {
  if (pid_ > 0) kill(pid_, SIGCONT);
}

void GroupGuard::reaped(pid_t pid) {
  if (pid != pid_ || pid_ < 0) return;
  if (pipe_ >= 0) program_died(program_);  // not stood down
  pid_ = -1;                               // never waited for again: the number may be reused
  if (pipe_ >= 0) close(pipe_);
  pipe_ = -1;
}

void GroupGuard::reap_if_exited() {
  if (pid_ < 0) return;
  int st;
  if (wait_pid(pid_, &st, WNOHANG) == pid_) reaped(pid_);
}

GroupGuard::GroupGuard(GroupGuard&& o) noexcept
    : pid_(o.pid_), pipe_(o.pipe_), error_(o.error_), program_(o.program_) {
  o.pid_ = -1;
  o.pipe_ = -1;
  o.error_ = 0;
  o.program_ = false;
}

GroupGuard& GroupGuard::operator=(GroupGuard&& o) noexcept {
  if (this != &o) {
    GroupGuard old(std::move(*this));
    pid_ = o.pid_;
    pipe_ = o.pipe_;
    error_ = o.error_;
    program_ = o.program_;
    o.pid_ = -1;
    o.pipe_ = -1;
    o.error_ = 0;
    o.program_ = false;
  }
  return *this;
}

void GroupGuard::stand_down() {
  if (pipe_ < 0) return;
  send_group(pipe_, 0);  // the record that stands the guard down
  close(pipe_);
  pipe_ = -1;
}

void announce_group_in_child(int fd, pid_t pgid) {
  if (send_group(fd, pgid) || errno != EPIPE) return;
  sigset_t pending, pipe_only;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  int sig;
  if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) sigwait(&pipe_only, &sig);
}

GroupGuard::~GroupGuard() {
  stand_down();
  // Already reaped by reap_others() if it exited while rlock was in its loop:
  // waitpid() then fails with ECHILD at once. A guard that does not exit soon
  // after standing down (stopped by someone's SIGSTOP) is killed: it has
  // nothing left to do, and rlock must never hang at exit waiting for it.
  if (pid_ <= 0) return;
  int st;
#if defined(__linux__) && defined(SYS_pidfd_open)
  // Woken the moment the guard exits, instead of polling in whole
  // milliseconds: on a busy machine the guard may not have run yet when the
  // release is answered, and a 1 ms sleep per look then added up to the run's
  // wall time (docs/PERFORMANCE.md).
  if (int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0)); pidfd >= 0) {
    struct pollfd p {
      pidfd, POLLIN, 0
    };
    int ready;
    do {
      ready = poll(&p, 1, 50);
    } while (ready < 0 && errno == EINTR);
    close(pidfd);
    if (ready > 0) {
      wait_pid(pid_, &st, 0);
      return;
    }
  }
#endif
  for (int i = 0; i < 50; ++i) {  // at most ~50 ms; a guard exits in microseconds
    pid_t r = wait_pid(pid_, &st, WNOHANG);
    if (r == pid_ || r < 0) return;
    if (r == 0) {
      struct timespec ms = {0, 1'000'000};
      nanosleep(&ms, nullptr);
    }
  }
  kill(pid_, SIGKILL);
  wait_pid(pid_, &st, 0);
}

}  // namespace rlock
