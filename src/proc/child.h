// The child of `rlock run`: spawned in a process group of its own (in the
// terminal's foreground when rlock has one), signalled as a group, reaped
// without blocking, its wait status mapped to an exit status.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace rlock {

struct SpawnSpec {
  /// argv[0] is looked up in PATH like execvp. Never empty.
  std::vector<std::string> argv;
  /// "NAME=value" entries added to (or replacing in) the inherited environment.
  std::vector<std::string> env;
  /// Make the child's group the terminal's foreground group when stdin is
  /// rlock's controlling terminal and rlock is in the foreground.
  bool foreground = true;
  /// The group guard's pipe (proc/guard.h), or -1: the child names its own
  /// process group there before exec, so that the group is known to the
  /// guard before the command can start anything, even if rlock is killed
  /// before it names the group itself.
  int guard_fd = -1;
};

/// Replaces this process with the command (a nested `run`): the same PATH
/// search, environment additions and signal reset as Child::spawn, but no fork
/// and no process group of its own. Returns only by throwing the Error that
/// spawn() would (127 not found, 126 cannot execute).
[[noreturn]] void exec_in_place(const SpawnSpec& spec);

class Child {
 public:
  /// Forks and execs. In the child, before exec: own process group, signal
  /// dispositions and mask restored (restore_inherited_signals_in_child),
  /// on Linux PR_SET_PDEATHSIG=SIGKILL (and exit if rlock already died).
  /// Throws Error(ErrorKind::Exec, msg, 127) when the command is not found and
  /// Error(ErrorKind::Exec, msg, 126) when it cannot be executed; the child has
  /// then already been reaped.
  static Child spawn(const SpawnSpec& spec);

  Child(Child&& other) noexcept;
  Child& operator=(Child&&) = delete;
  Child(const Child&) = delete;
  /// A child still running is sent SIGKILL (its group) and reaped; so is what
  /// an exited child left in its group, unless let_go() was called.
  ~Child();

  pid_t pid() const { return pid_; }
  /// Sends `sig` to the child's whole process group (kill(-pgid)), also after
  /// the child itself has been reaped (its leftovers are still the group);
  /// falls back to the pid alone while the child runs and the group is gone.
  void signal_group(int sig);
  /// True while any process is left in the child's process group (the child
  /// itself, or what it started and left behind; not what left the group
  /// with setsid).
  bool group_alive() const;
  /// waitpid(WNOHANG). Returns the exit status once the child has ended:
  /// its code, or 128+N when killed by signal N. Gives the terminal back to
  /// rlock's own group if it had been handed to the child.
  std::optional<int> try_reap();
  bool running() const { return pid_ > 0 && !status_; }
  /// Hands over the wait status of the child when another waitpid() (rlock's
  /// reaping of orphans it adopted) collected it first.
  void collected(int wait_status);
  /// True after try_reap() saw the child stop on a terminal (Ctrl-Z); the
  /// terminal is then rlock's again.
  bool stopped() const { return stopped_; }
  /// The signal that stopped it (SIGTSTP for a Ctrl-Z), while stopped().
  int stop_signal() const { return stopped_ ? stop_signal_ : 0; }
  /// Gives the terminal back to the child's group (if it had it) and sends
  /// the group SIGCONT.
  void resume();
  /// What the exited child left in its group runs on without rlock (run -o):
  /// the destructor no longer kills it.
  void let_go() { let_go_ = true; }

 private:
  explicit Child(pid_t pid, bool took_terminal) : pid_(pid), took_terminal_(took_terminal) {}
  pid_t pid_ = -1;
  bool took_terminal_ = false;
  std::optional<int> status_;
  bool stopped_ = false;
  int stop_signal_ = 0;
  bool let_go_ = false;
};

/// A process of a process group, as the notice about leftovers names it.
struct GroupMember {
  pid_t pid = 0;
  std::string name;  // the process's command name (comm), as the system keeps it
};

/// The live (not zombie) processes of process group `pgid`, by pid, at most
/// `limit` of them; `total` is set to how many there are. Linux reads /proc;
/// elsewhere the list is empty and `total` is -1 (unknown).
std::vector<GroupMember> group_members(pid_t pgid, size_t limit, long& total);

/// The exit status for a wait status: WEXITSTATUS, or 128+WTERMSIG.
int exit_status_of(int wait_status);

/// Makes rlock the reaper of orphans among its descendants (Linux:
/// PR_SET_CHILD_SUBREAPER; elsewhere nothing), so that what the command
/// leaves behind is reaped, and never lingers as a zombie that would keep its
/// process group alive, when the host's PID 1 does not reap.
void become_subreaper();

/// Reaps every exited child of rlock but `keep` (the command, reaped by
/// Child::try_reap with its own flags); calls `on_keep` with the wait status
/// if `keep` is collected here after all. Never blocks.
/// `on_other`, if given, is called with the pid of every other child reaped.
void reap_others(pid_t keep, const std::function<void(int)>& on_keep,
                 const std::function<void(pid_t)>& on_other = nullptr);

/// waitpid() that goes on after EINTR; its result (the pid, 0 with WNOHANG
/// when nothing changed, -1 with errno on an error).
pid_t wait_pid(pid_t pid, int* wait_status, int flags);

}  // namespace rlock
