// `acquire --while-pid PID`: the keeper, a detached process that renews the
// lease while PID lives and releases it within about a second after PID exits
// (or is gone: killed, or a zombie, or its PID reused by another process).
// On a lost lease it applies --on-lost to PID alone, never to its group.
#pragma once

#include <cstdint>
#include <string>

#include "lock.h"
#include "options.h"
#include "waiter.h"

namespace rlock {

/// Whether process `pid`, which started at `start` (proc_info), still runs.
bool watched_alive(long pid, uint64_t start);

/// Detaches from the caller (no terminal, no descriptor of the caller's: its
/// standard ones go to /dev/null, every inherited one is closed) and keeps the
/// lease of `token` until PID ends, the owner's `release` stops it
/// (SIGUSR1), or the lease is lost (or another stop signal gives it up:
/// --on-lost applies to PID). Returns the keeper's exit status.
int keep_while_pid(Lock& lock, const std::string& token, const Acquired& acquired,
                   const LockOptions& o, uint64_t pid_start);

/// Closes every descriptor above 2 without close-on-exec: what the process
/// inherited from its caller (rlock's own are all O_CLOEXEC).
void close_inherited_descriptors();

}  // namespace rlock
