// The guard of `rlock run`: a process of its own, started before the command,
// that kills the command's process group if rlock dies without releasing it.
// On Linux x86-64 and AArch64 it is the guard program (guard_program.cc),
// exec'd from memory after vfork; elsewhere, or where that is refused, a fork
// of rlock whose own rules are: between fork and _exit only
// async-signal-safe calls.
#pragma once

#include <sys/types.h>

namespace rlock {

/// The name the guard goes by (`ps`, /proc/PID/comm, its command line): without
/// "rlock" in it, so that `pkill -9 rlock`, `pkill -f rlock` or `killall rlock`,
/// which end rlock, never end its guard in the same moment and leave the
/// command's group running without a lease (docs/DESIGN.md, "The one event
/// loop"). proc/guard_program.cc names itself the same.
inline constexpr char kGuardName[] = "lockguard";

/// Remembers where rlock's own argument strings are (main's argv), which a
/// forked guard overwrites with kGuardName: its command line is otherwise
/// rlock's, and `pkill -f rlock` would match it.
void remember_arguments(int argc, char** argv);

/// Kills a process group if rlock dies first. PR_SET_PDEATHSIG reaches only
/// the direct child; a `sh -c` wrapper's children would run on without a
/// lease. So a small guard process waits on a pipe that only rlock and its
/// command's child before exec write to, in records of one pid_t: a group to
/// watch (named by the child as it starts and by rlock after; the same one
/// twice), 0 to stand down; EOF (rlock is gone, even by SIGKILL) means SIGKILL
/// to the group; EOF before any group means there is nothing to kill. rlock also tells
/// it, at each renewal, how long the lease lasts (lease_lasts): a group still running
/// when that passes without newer word (rlock stopped by SIGSTOP, frozen, starved) is
/// stopped until rlock speaks again. Portable: the fork needs no
/// Linux-only call. The guard closes every descriptor but its pipe (a fork keeps them all, Redis
/// connections included; so does an exec, for those not marked close-on-exec).
///
/// The guard is forked before the command (start(), while the acquire request
/// is in flight), so that its fork is not on the path from "acquired" to
/// "command started" (docs/DESIGN.md, "Start-up cost"); watch() then names the
/// group.
class GroupGuard {
 public:
  /// Starts a guard that waits to be told its group. Returns an inactive
  /// guard, with error() set, if no process can be started (the child's own
  /// PDEATHSIG still applies on Linux).
  /// A guard started for a group already known (`pgid` > 0: a guard that
  /// replaces one that died) knows it from birth, so that rlock killed right
  /// after starting it still takes the group along.
  static GroupGuard start(pid_t pgid = 0);
  /// Tells the guard (started now if it was not, or again if it died while
  /// rlock waited) which group to kill if rlock dies. Once only. False if no
  /// guard watches it: error() says why.
  bool watch(pid_t pgid);
  /// Why the last start failed (an errno value), or 0.
  int error() const { return error_; }
  /// Continues the guard if someone stopped it (SIGSTOP): a stopped guard
  /// could not act if rlock died. Harmless to a running guard, whose SIGCONT
  /// stays pending (blocked): one system call.
  void resume() const;
  /// rlock reaped process `pid` elsewhere (reap_others): if it was the guard,
  /// the guard is gone, and is never waited for (its pid may be reused).
  void reaped(pid_t pid);
  /// Reaps the guard if it has exited (rlock has no command yet to reap
  /// others for): watch() then starts another instead of writing to a pipe
  /// whose reader may still be on its way out.
  void reap_if_exited();
  /// The guard's pid, or -1 when there is none.
  pid_t pid() const { return pid_; }
  GroupGuard() = default;
  GroupGuard(GroupGuard&& other) noexcept;
  GroupGuard& operator=(GroupGuard&& other) noexcept;
  /// The write end of the guard's pipe (SpawnSpec::guard_fd), or -1.
  int pipe_fd() const { return pipe_; }
  /// The lease lasts `ms` more (rlock holds it; it just renewed): if no newer word
  /// comes by then, the guard stops the group (SIGSTOP) until one does, so that the
  /// command never runs on past a lease that nobody renews (the man page, PROCESS
  /// BEHAVIOUR OF RUN). A group the guard stopped is continued. One write; beyond
  /// 24 days, no deadline.
  void lease_lasts(long ms);
  /// rlock decides for the group again (the lease is lost and --on-lost applies, or
  /// --on-lost warn): no deadline, and a group the guard stopped is continued.
  void in_charge();
  /// Tells the guard to stand down without waiting for it to exit (one write):
  /// the release need not wait for the guard (docs/DESIGN.md, "Start-up cost").
  void stand_down();
  /// Stands the guard down if that was not done yet, and reaps it.
  ~GroupGuard();

 private:
  static GroupGuard failed(int err);  // an inactive guard, with error() set
  pid_t pid_ = -1;
  int pipe_ = -1;
  int error_ = 0;
  bool program_ = false;  // the guard program, not a fork of rlock
};

/// Every later guard of this process is a fork of rlock, never the guard
/// program (RLOCK_GUARD=fork: where running a program from memory is flagged
/// or refused by a security tool; the man page, ENVIRONMENT).
void prefer_forked_guard();

/// In a forked process that will not exec: closes every descriptor but
/// `keep`. Async-signal-safe.
void close_all_but(int keep);

/// In the command's child, before exec, every signal blocked: names its group
/// `pgid` on the guard's pipe `fd`. A guard already gone (EPIPE) is left to
/// rlock, which replaces it when it names the group itself; the SIGPIPE that
/// write raised (pending while blocked) is taken, so that the command does not
/// inherit it. Async-signal-safe.
void announce_group_in_child(int fd, pid_t pgid);

}  // namespace rlock
