// `acquire --while-pid PID`: the keeper, a detached process that renews the
// lease while PID lives and releases it within about a second after PID exits
// (or is gone: killed, or a zombie, or its PID reused by another process).
// On a lost lease it applies --on-lost to PID alone, never to its group. Its
// owner's release (SIGUSR1 from `rlock release` under the environment that
// --export set, or a release with the token heard on the release channel;
// under another tool's layout, whose channel carries no token, a renewal that
// finds the release's tombstone) stops it without a word to PID.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <string>

#include "hold/acquirer.h"
#include "hold/on_lost.h"
#include "lock/lock.h"
#include "proc/procinfo.h"

namespace rlock {

/// How often PID is looked at: "within about a second" after it ends.
inline constexpr Millis kWatchPidEvery{200};

/// Whether process `pid`, which started at `start` (proc_info), still runs:
/// WatchedProcess without a handle.
bool watched_alive(long pid, uint64_t start);

/// What the keeper watches and how it holds: `acquire --while-pid PID`,
/// --on-lost, --sync-replicas.
struct KeeperSpec {
  long while_pid = 0;
  OnLost on_lost = OnLost::Term;
  int sync_replicas = 0;
};

/// A keeper just started (start_keeper), as the process that forked it sees it.
class StartedKeeper {
 public:
  /// What the keeper said first. Ready: it can be told to stop (its SIGUSR1
  /// handler is in place and the release channel is subscribed, or could not
  /// be within the command timeout); hand the token over, then go(). Ended:
  /// PID ended while it started (the lease is released). Died: it ended
  /// without a word (the lease is still to be released).
  enum class Said { Ready, Ended, Died };

  StartedKeeper(pid_t pid, Said said, int go_fd) : pid_(pid), said_(said), go_fd_(go_fd) {}
  StartedKeeper(const StartedKeeper&) = delete;
  StartedKeeper& operator=(const StartedKeeper&) = delete;
  /// Closes the pipe to the keeper (abandon()).
  ~StartedKeeper() { abandon(); }

  pid_t pid() const { return pid_; }
  Said said() const { return said_; }
  /// The caller has the token: the keeper keeps the lease from now on.
  void go();
  /// Closes the pipe to the keeper: one not told go() reads EOF and releases
  /// (nobody could release a lease whose token was not handed over).
  void abandon();

 private:
  pid_t pid_;
  Said said_;
  int go_fd_;
};

/// Starts the keeper of `token` in a process of its own, detached at once
/// (a session of its own, no terminal, none of this process's descriptors,
/// in /), and returns once it said whether it is ready. The keeper keeps
/// the lease until PID (`spec`; `watched`, opened at the start) ends, the owner
/// releases, the lease is lost (--on-lost applies to PID), another stop
/// signal gives it up (PID hears of it as of a loss), or it is abandoned
/// (released). Always released, token-checked; the keeper's exit status is
/// 0, or 76 after a loss.
/// Every signal stays blocked in this process (a handler here would write to
/// the self-pipe the keeper shares): it is to leave by _exit once it has
/// handed the token over (its connections are the keeper's now: no
/// destructor may close or shut them). An Exec Error (71,
/// exitcode::kNoKeeper) when the keeper cannot be started: a fork that fails
/// (the lease released first), or a pipe (the lease left to run out).
StartedKeeper start_keeper(Lock& lock, const std::string& token, const Acquired& acquired,
                           const KeeperSpec& spec, const WatchedProcess& watched);

/// Closes every descriptor above 2 without close-on-exec: what the process
/// inherited from its caller (rlock's own are all O_CLOEXEC).
void close_inherited_descriptors();

}  // namespace rlock
