// Tokens of other tools' layouts (--layout plain, --layout redisson) that say
// whose they are. Such a layout keeps nothing of its holder but the token
// (plain: the key's value; Redisson: the hash field), and anyone can read it
// with `status`: a nested run that found its lock's token in RLOCK_HELD must
// not take "it holds" for "my ancestor holds it". So the token binds itself to
// its holder process:
//
//   R = 64 random bits, H = first 64 bits of SHA-1("rlock-holder-v1", R,
//       host name, boot id, holder pid, holder start time)
//   plain:    hex(R) hex(H)                       (32 hex digits, as before)
//   redisson: hex(R) hex(H) as a UUID, ":" pid    (version 4 and variant bits
//             overwrite 4 bits of R and 2 of H)
//
// A nested run recomputes H for itself and each of its ancestors (Redisson:
// for the pid its id names) and accepts the token only on a match. A foreign
// token (a service's UUID, another host's or another process tree's rlock) is
// never "held by my ancestor": its H was made for another (boot, pid, start).
// H is no secret (its inputs are readable on the host): it is not meant to
// stop a program that can write the lock key, which could DEL it anyway, only
// to make a token read from status worthless in RLOCK_HELD.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lock/key.h"

namespace rlock {

/// `bytes` random bytes (at most 32, from getentropy) as lower-case hex:
/// tokens, release ids. Throws when the system has no randomness to give.
std::string random_hex(size_t bytes);

/// What the binding names the host by: its name and boot (boot_id()).
struct HostIdentity {
  std::string host, boot;
};
HostIdentity this_host();

/// H for `r` (16 hex digits) and the process `pid` that started at `start`
/// (proc_info) on `host`: 16 lowercase hex digits.
std::string holder_binding(std::string_view r, const HostIdentity& host, long pid, uint64_t start);

/// A fresh token of `layout` for holder process `pid` (its start time is
/// read now; 0 when unknown). Throws when no random bytes can be had.
std::string bound_token(Layout layout, long pid);

/// The pid of the process among `self` and its ancestors that `token` was
/// made for by bound_token; nullopt for a token of another shape, host, boot
/// or process (or when the ancestors cannot be read).
std::optional<long> bound_holder(Layout layout, std::string_view token, pid_t self);

}  // namespace rlock
