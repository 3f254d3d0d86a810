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

#include <cstdint>
#include <string>

#include "hold/acquirer.h"
#include "hold/on_lost.h"
#include "lock/lock.h"

namespace rlock {

/// How often PID is looked at: "within about a second" after it ends.
inline constexpr Millis kWatchPidEvery{200};

/// Whether process `pid`, which started at `start` (proc_info), still runs.
bool watched_alive(long pid, uint64_t start);

/// What the keeper tells the process that forked it, on `ready_fd`: it can
/// be told to stop (its SIGUSR1 handler is in place and the release channel
/// is subscribed, or could not be within the command timeout), or PID ended
/// first (the lease is released).
inline constexpr char kKeeperReady = 'r';
inline constexpr char kKeeperEnded = 'e';
/// What the forking process answers on `go_fd` once the caller has the token.
inline constexpr char kKeeperGo = 'g';

/// Runs the keeper in a process that has already detached from its caller
/// (a session of its own, no terminal, no descriptor of the caller's). Its
/// signal handlers are installed first, then the signal mask `mask` is put
/// back. Keeps the lease of `token` until PID ends, the owner releases, the
/// lease is lost (--on-lost applies to PID), another stop signal gives it up
/// (PID hears of it as of a loss), or the forking process says that it could
/// not hand the token over (EOF on `go_fd`: released). Always released,
/// token-checked. Returns the keeper's exit status.
/// What the keeper watches and how it holds: `acquire --while-pid PID`,
/// --on-lost, --sync-replicas.
struct KeeperSpec {
  long while_pid = 0;
  OnLost on_lost = OnLost::Term;
  int sync_replicas = 0;
};

int keep_while_pid(Lock& lock, const std::string& token, const Acquired& acquired,
                   const KeeperSpec& spec, uint64_t pid_start, int ready_fd, int go_fd,
                   const sigset_t& mask);

/// Closes every descriptor above 2 without close-on-exec: what the process
/// inherited from its caller (rlock's own are all O_CLOEXEC).
void close_inherited_descriptors();

}  // namespace rlock
