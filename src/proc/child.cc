// Spawning and supervising the child of `rlock run`, in the manner of tini:
// fork, own process group (the terminal's foreground group when rlock has the
// terminal), exec with a PATH search of our own, exec failures reported back
// (in the memory vfork shares, or through a close-on-exec pipe after fork), and
// the wait status mapped to an exit status.
//
// Everything the child needs is built before fork(); between fork() and exec
// the child only makes async-signal-safe calls on memory prepared in advance.
#include "proc/child.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "core/error.h"
#include "core/sanitizers.h"
#include "proc/guard.h"
#include "proc/signals.h"

extern char** environ;

namespace rlock {

namespace {

constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

std::string_view name_of(std::string_view entry) {
  return entry.substr(0, entry.find('='));
}

/// The inherited environment with `extra` added, each extra entry replacing
/// any inherited one of the same name; an entry without '=' only removes it.
std::vector<std::string> merged_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view name = name_of(*e);
    bool replaced = std::any_of(extra.begin(), extra.end(),
                                [&](const std::string& x) { return name_of(x) == name; });
    if (!replaced) env.emplace_back(*e);
  }
  for (const auto& x : extra)
    if (x.find('=') != std::string::npos) env.push_back(x);
  return env;
}

/// The files execvp would try for `file`: itself when it contains a '/',
/// otherwise `file` in each PATH directory (an empty one is the current one).
std::vector<std::string> exec_candidates(const std::string& file,
                                         const std::vector<std::string>& env) {
  if (file.empty()) return {};
  if (file.find('/') != std::string::npos) return {file};
  std::string_view path = kDefaultPath;
  for (const auto& entry : env) {
    if (entry.starts_with("PATH=")) path = std::string_view(entry).substr(5);
  }
  std::vector<std::string> out;
  for (size_t start = 0;;) {
    size_t end = path.find(':', start);
    std::string_view dir = path.substr(start, end - start);
    out.push_back(dir.empty() ? file : std::string(dir) + "/" + file);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> out(strings.size() + 1, nullptr);
  std::transform(strings.begin(), strings.end(), out.begin(),
                 [](std::string& s) { return s.data(); });
  return out;
}

/// The argv, envp and candidate paths of one exec, as owned strings plus the
/// NULL-terminated pointer arrays execve() wants. Built in place and never
/// moved, so the pointers stay valid.
struct ExecPlan {
  explicit ExecPlan(const SpawnSpec& spec)
      : args(spec.argv),
        env(merged_environment(spec.env)),
        candidates(exec_candidates(spec.argv[0], env)),
        argv(pointers_to(args)),
        envp(pointers_to(env)) {
    sh_argv = {shell.data(), nullptr};
    sh_argv.insert(sh_argv.end(), argv.begin() + 1, argv.end());
  }
  ExecPlan(const ExecPlan&) = delete;
  ExecPlan& operator=(const ExecPlan&) = delete;

  std::vector<std::string> args;
  std::vector<std::string> env;
  std::vector<std::string> candidates;
  std::vector<char*> argv;
  std::vector<char*> envp;
  std::string shell = "/bin/sh";
  /// {"/bin/sh", <candidate>, args[1..], NULL} for a file without a #! line,
  /// as execvp does; slot 1 is filled in by the child.
  std::vector<char*> sh_argv;
};

/// A pipe whose ends close on exec (and on scope exit).
struct CloexecPipe {
  int read_end = -1;
  int write_end = -1;
  CloexecPipe() {
    int fds[2];
#ifdef __linux__
    if (pipe2(fds, O_CLOEXEC) < 0) return;
#else
    // rlock is single-threaded: no fork() can slip in between these calls.
    if (pipe(fds) < 0) return;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
#endif
    read_end = fds[0];
    write_end = fds[1];
  }
  ~CloexecPipe() {
    close_read();
    close_write();
  }
  CloexecPipe(const CloexecPipe&) = delete;
  CloexecPipe& operator=(const CloexecPipe&) = delete;
  void close_read() {
    if (read_end >= 0) close(read_end);
    read_end = -1;
  }
  void close_write() {
    if (write_end >= 0) close(write_end);
    write_end = -1;
  }
};

/// Blocks SIGTTOU around tcsetpgrp(), which a process outside the terminal's
/// foreground group may then call without being stopped.
void set_terminal_group(pid_t pgid);

/// Moves the terminal from process group `from` to `to`, but only if `from`
/// has it now: rlock must never take the terminal away from the shell (after
/// `bg`, or a `kill %1` of a stopped job, the shell's group has it).
void move_terminal(pid_t from, pid_t to) {
  if (tcgetpgrp(STDIN_FILENO) != from) return;
  set_terminal_group(to);
}

void set_terminal_group(pid_t pgid) {
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &old);
  tcsetpgrp(STDIN_FILENO, pgid);
  sigprocmask(SIG_SETMASK, &old, nullptr);
}

bool search_goes_on(int err) {
  return err == ENOENT || err == ENOTDIR || err == ESTALE || err == ENODEV || err == ETIMEDOUT;
}

/// Tries each candidate like execvp and returns the errno to report: EACCES if
/// any candidate was not executable, else the last "not there" error, or the
/// first error that stops the search.
int exec_candidates_in_child(ExecPlan& plan) {
  int last = ENOENT;
  bool denied = false;
  for (auto& candidate : plan.candidates) {
    execve(candidate.c_str(), plan.argv.data(), plan.envp.data());
    int err = errno;
    if (err == ENOEXEC) {
      plan.sh_argv[1] = candidate.data();
      execve(plan.sh_argv[0], plan.sh_argv.data(), plan.envp.data());
      return err;
    }
    if (err == EACCES) {
      denied = true;
    } else if (!search_goes_on(err)) {
      return err;
    }
    last = err;
  }
  return denied ? EACCES : last;
}

#if defined(__linux__) && !RLOCK_HAS_ASAN
// vfork(): the child runs in rlock's memory and rlock is suspended until it
// execs or exits, so the child leaves its exec errno in memory (no pipe) and
// has made its process group before vfork() returns (no setpgid here).
#define RLOCK_SPAWN_VFORK 1
#endif

/// What the child decides with the parent's help, captured before fork().
struct ChildSetup {
  pid_t parent;
  bool take_terminal;
  int guard_fd;              // SpawnSpec::guard_fd
  int error_fd;              // fork(): where the exec errno goes
  volatile int* error_slot;  // vfork(): where it goes instead (shared memory)
};

/// Runs in the forked child, with every signal blocked by the parent.
[[noreturn]] void become_command(ExecPlan& plan, const ChildSetup& setup) {
  setpgid(0, 0);
  if (setup.guard_fd >= 0) announce_group_in_child(setup.guard_fd, getpid());
  // Both sides hand over the terminal, so the command never reads it from
  // the background however the two processes are scheduled. SIGTTOU is
  // blocked here (all signals are), so tcsetpgrp() cannot stop us.
  if (setup.take_terminal) tcsetpgrp(STDIN_FILENO, getpid());
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // rlock may have died before the line above: then nobody holds the lease.
  if (getppid() != setup.parent) _exit(1);
#endif
  restore_inherited_signals_in_child();
  // Descriptors are not closed here: rlock's own are all O_CLOEXEC, and the
  // ones the caller passed on purpose (make's jobserver, `3>log`, systemd's
  // LISTEN_FDS) belong to the command, as with flock(1) and tini.
  int err = exec_candidates_in_child(plan);
  if (setup.error_slot) {
    *setup.error_slot = err;
  } else {
    while (write(setup.error_fd, &err, sizeof err) < 0 && errno == EINTR) {
    }
  }
  _exit(exitcode::kNotFound);
}

/// The errno the child sent before dying, or 0 on EOF (exec succeeded).
[[maybe_unused]] int read_exec_errno(int fd) {
  int err = 0;
  ssize_t n;
  do {
    n = read(fd, &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof err) ? err : 0;
}

[[noreturn]] void throw_cannot_run(const std::string& command, int err) {
  int status = (err == ENOENT || err == ENOTDIR) ? exitcode::kNotFound : exitcode::kCannotExec;
  throw Error(ErrorKind::Exec, "cannot run '" + command + "': " + std::strerror(err), status);
}

/// Blocks until `pid` ends; its wait status.
int wait_for(pid_t pid) {
  int st = 0;
  wait_pid(pid, &st, 0);
  return st;
}

}  // namespace

pid_t wait_pid(pid_t pid, int* wait_status, int flags) {
  pid_t r;
  do {
    r = waitpid(pid, wait_status, flags);
  } while (r < 0 && errno == EINTR);
  return r;
}

int exit_status_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

void exec_in_place(const SpawnSpec& spec) {
  if (spec.argv.empty()) throw Error(ErrorKind::Exec, "no command to run", exitcode::kNotFound);
  ExecPlan plan(spec);
  restore_inherited_signals_in_child();
  int err = exec_candidates_in_child(plan);
  throw_cannot_run(spec.argv[0], err);
}

Child Child::spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) throw Error(ErrorKind::Exec, "no command to run", exitcode::kNotFound);
  ExecPlan plan(spec);
  const bool take_terminal =
      spec.foreground && isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
#ifdef RLOCK_SPAWN_VFORK
  volatile int exec_error = 0;
  const ChildSetup setup{getpid(), take_terminal, spec.guard_fd, -1, &exec_error};
#else
  CloexecPipe errors;
  if (errors.read_end < 0) throw_cannot_run(spec.argv[0], errno);
  const ChildSetup setup{getpid(), take_terminal, spec.guard_fd, errors.write_end, nullptr};
#endif

  // With every signal blocked across fork(), rlock's handlers never run in the
  // child (they would write to rlock's self-pipe) before it resets them.
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  // vfork() where it is safe: it copies no page tables and takes no
  // copy-on-write faults (docs/DESIGN.md, "Start-up cost"). The child runs in
  // rlock's memory until it execs or _exits, making only system calls and
  // writing only its own stack and the plan made for it (become_command).
  // vfork() must be called here, in the frame the child leaves by exec, never
  // from a helper it returns from. Under AddressSanitizer, plain fork(): its
  // shadow stack is not vfork-aware.
#ifdef RLOCK_SPAWN_VFORK
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  const pid_t forked = vfork();
#pragma GCC diagnostic pop
#else
  const pid_t forked = fork();
#endif
  if (forked == 0) become_command(plan, setup);
  const int fork_errno = errno;
  sigprocmask(SIG_SETMASK, &old, nullptr);
  if (forked < 0) throw_cannot_run(spec.argv[0], fork_errno);

#ifndef RLOCK_SPAWN_VFORK
  errors.close_write();
  // Also here, so the group exists before spawn() returns (the child may not
  // have run yet); EACCES once the child has exec'd is harmless. After
  // vfork() the child has run its own setpgid() already.
  setpgid(forked, forked);
#endif
  // Only while the terminal is still rlock's: the command may already have
  // moved it on to a group of its own.
  if (take_terminal && tcgetpgrp(STDIN_FILENO) == getpgrp()) set_terminal_group(forked);
  Child child(forked, take_terminal);

#ifdef RLOCK_SPAWN_VFORK
  const int err = exec_error;
#else
  const int err = read_exec_errno(errors.read_end);
#endif
  if (err != 0) {
    child.status_ = exit_status_of(wait_for(forked));
    if (take_terminal) set_terminal_group(getpgrp());
    throw_cannot_run(spec.argv[0], err);
  }
  return child;
}

Child::Child(Child&& other) noexcept
    : pid_(other.pid_),
      took_terminal_(other.took_terminal_),
      status_(other.status_),
      let_go_(other.let_go_) {
  other.pid_ = -1;
  other.took_terminal_ = false;
}

Child::~Child() {
  if (pid_ > 0 && status_ && !let_go_ && group_alive()) signal_group(SIGKILL);  // leftovers
  if (!running()) return;
  signal_group(SIGKILL);
  wait_for(pid_);
  if (took_terminal_) move_terminal(pid_, getpgrp());
}

void Child::resume() {
  if (pid_ <= 0) return;
  // Continued by `fg` (rlock's group has the terminal): the command gets it
  // back. Continued by `bg` or `kill %1`: the shell keeps it.
  if (took_terminal_ && running()) move_terminal(getpgrp(), pid_);
  stopped_ = false;
  signal_group(SIGCONT);
}

void Child::signal_group(int sig) {
  if (pid_ <= 0) return;
  if (kill(-pid_, sig) < 0 && errno == ESRCH && running()) kill(pid_, sig);
}

bool Child::group_alive() const {
  if (pid_ <= 0) return false;
  return kill(-pid_, 0) == 0 || errno == EPERM;
}

void Child::collected(int wait_status) {
  if (!running()) return;
  status_ = exit_status_of(wait_status);
  if (took_terminal_) move_terminal(pid_, getpgrp());
}

std::optional<int> Child::try_reap() {
  if (!running()) return status_;
  int st;
  pid_t r;
  // On a terminal, a stopped child (Ctrl-Z) is reported too, so rlock can
  // stop with it and give the shell its job control back.
  int flags = WNOHANG | (took_terminal_ ? WUNTRACED : 0);
  r = wait_pid(pid_, &st, flags);
  if (r == 0) return std::nullopt;
  if (r == pid_ && WIFSTOPPED(st)) {
    stopped_ = true;
    stop_signal_ = WSTOPSIG(st);
    move_terminal(pid_, getpgrp());
    return std::nullopt;
  }
  // ECHILD: someone else reaped it (SIGCHLD ignored); its status is lost.
  status_ = r == pid_ ? exit_status_of(st) : 1;
  if (took_terminal_) move_terminal(pid_, getpgrp());
  return status_;
}

std::vector<GroupMember> group_members(pid_t pgid, size_t limit, long& total) {
  std::vector<GroupMember> out;
#if defined(__linux__)
  total = 0;
  DIR* proc = opendir("/proc");
  if (!proc) {
    total = -1;
    return out;
  }
  while (dirent* e = readdir(proc)) {
    const char* n = e->d_name;
    if (*n < '1' || *n > '9' || strspn(n, "0123456789") != strlen(n) || strlen(n) > 9) continue;
    char path[32];
    snprintf(path, sizeof path, "/proc/%s/stat", n);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[512];
    ssize_t len = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (len <= 0) continue;
    std::string_view stat(buf, static_cast<size_t>(len));
    // "PID (COMM) STATE PPID PGRP ...": COMM may hold spaces and parentheses,
    // so it ends at the last ')'.
    size_t open_paren = stat.find('('), close_paren = stat.rfind(')');
    if (open_paren == std::string_view::npos || close_paren == std::string_view::npos ||
        close_paren < open_paren || close_paren + 2 >= stat.size())
      continue;
    char state = 0;
    long ppid = 0, pgrp = 0;
    std::string rest(stat.substr(close_paren + 2));
    if (sscanf(rest.c_str(), "%c %ld %ld", &state, &ppid, &pgrp) != 3) continue;
    if (pgrp != pgid || state == 'Z' || state == 'X') continue;
    ++total;
    if (out.size() < limit) {
      out.push_back({static_cast<pid_t>(atol(n)),
                     std::string(stat.substr(open_paren + 1, close_paren - open_paren - 1))});
    }
  }
  closedir(proc);
  std::sort(out.begin(), out.end(),
            [](const GroupMember& a, const GroupMember& b) { return a.pid < b.pid; });
#else
  (void)pgid;
  (void)limit;
  total = -1;
#endif
  return out;
}

void become_subreaper() {
#if defined(__linux__) && defined(PR_SET_CHILD_SUBREAPER)
  prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
}

void reap_others(pid_t keep, const std::function<void(int)>& on_keep,
                 const std::function<void(pid_t)>& on_other) {
  for (;;) {
    int st = 0;
    pid_t r = wait_pid(-1, &st, WNOHANG);
    if (r <= 0) return;
    if (r == keep)
      on_keep(st);
    else if (on_other)
      on_other(r);
  }
}

}  // namespace rlock
