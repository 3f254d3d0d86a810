// Reentrancy by inheritance (docs/GUIDE.md "Nesting"): the locks a process holds
// travel to everything it runs in RLOCK_HELD, one line per lock:
//
//   TOKEN <tab> KEY <tab> PREFIX <tab> WHERE [<tab> keeper=PID:START [<tab> nested]]
//
// WHERE names the deployment (its URLs spelled one way by canonical_url, no user
// and no password, sorted and joined by spaces: one server spelled two ways is
// one lock); keeper= marks a lock kept by `acquire --while-pid` (its keeper's pid
// and start time), and `nested` the copy a nested run or acquire passes on. A nested
// `run` of a lock listed there runs its command at once, but only once Redis
// confirms it: the token holds the lock, and its holder is on this host and is
// an ancestor of this process (a running `run`, or the process a keeper
// watches); under another tool's layout, which keeps no holder details, the
// token itself must be bound to such an ancestor (holder_token.h). An
// environment copied from a finished run, or a lease that --min-hold keeps
// after its run ended, is never trusted.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lock/key.h"
#include "lock/lock.h"

namespace rlock {

struct HeldEntry {
  std::string token, key, prefix, where;
  long keeper = 0;            // the pid of the --while-pid keeper, 0 for a `run`
  uint64_t keeper_start = 0;  // its start time (proc_info), to tell a reused pid
  bool nested = false;        // passed on by a nested run or acquire
};

/// At most this many bytes of RLOCK_HELD are read, and this many entries kept.
inline constexpr size_t kMaxHeldBytes = 65536;
inline constexpr size_t kMaxHeldEntries = 256;

/// The entries of RLOCK_HELD; malformed lines are skipped.
std::vector<HeldEntry> parse_held(const char* text);
std::vector<HeldEntry> held_from_env();
std::string format_held(const std::vector<HeldEntry>& entries);

/// WHERE for the deployment of `urls` under `layout` (canonical: see the
/// file comment).
std::string lock_location(const std::vector<std::string>& urls, Layout layout);

/// The entry for `key` taken with `prefix` on `where` (compared canonically),
/// if any.
const HeldEntry* find_held(const std::vector<HeldEntry>& entries, const std::string& key,
                           const std::string& prefix, const std::string& where);

/// `entries` without any for the same lock as `add`, then `add`: what a
/// holder passes to its command.
std::string held_with(std::vector<HeldEntry> entries, const HeldEntry& add);
/// The entries for every KEY of `keys` (`--and`), or none: empty when none
/// is listed; a usage Error when only some are (taking the rest inside the
/// enclosing holder could deadlock with a holder that takes them the other
/// way round).
std::vector<HeldEntry> find_all_held(const std::vector<HeldEntry>& entries,
                                     const std::vector<std::string>& keys,
                                     const std::string& prefix, const std::string& where);

/// Whether RLOCK_HELD has room for every KEY of `keys` beside `entries`
/// (kMaxHeldEntries, kMaxHeldBytes): a usage Error when it has not, so that
/// a nested run of one of them can never miss that it is inside it.
void check_held_room(const std::vector<HeldEntry>& entries, const std::vector<std::string>& keys,
                     const std::string& prefix, const std::string& where);

/// held_with for several locks (`--and`: one entry per KEY, one token).
std::string held_with_each(std::vector<HeldEntry> entries, const std::vector<HeldEntry>& add);

/// Asks Redis whether `entry` holds `lock` for an ancestor of this process
/// (see the file comment). The holder's record when it does; nullopt, with
/// the reason in `why`, when it does not. Errors (the server) propagate.
std::optional<Holder> verify_held(Loop& loop, Lock& lock, const HeldEntry& entry, std::string& why);

/// Whether process group `group` is one the enclosing holder `holder` (a
/// pid) waits for: the group of the process a keeper watches (`e.keeper`),
/// else the group a `run` leads with its command (its leader's parent is the
/// run). A nested run or acquire elsewhere (set -m, setsid) could go on after
/// the holder released.
bool group_inside_holder(pid_t group, const HeldEntry& e, pid_t holder);

/// A nested run or acquire asking for more than the enclosing holder has (an
/// exclusive hold inside a shared one: an upgrade, which would wait for
/// itself) is a usage Error; anything else returns.
void refuse_upgrade(const std::string& key, bool shared, const Holder& enclosing);

}  // namespace rlock
