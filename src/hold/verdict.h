// The verdict of a keeper's release, passed to the `rlock release` that asked
// for it (SIGUSR1): the keeper runs with standard error on /dev/null, and its
// owner's release reads what the keeper found once the keeper has ended
// (man page, `release`; docs/DECISIONS.md, "The keeper's verdict"). A small
// file per keeper in a private directory ($XDG_RUNTIME_DIR, else $TMPDIR,
// else /tmp, then rlock-UID: mode 0700, owned by this user, never followed
// through a symbolic link); the reader removes it. No Redis write: it works
// when the master a failover promoted lacks the hold and its history.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace rlock {

struct KeeperVerdict {
  /// The master the sentinels name did not hold it: a failover lost the hold.
  bool failover_lost = false;
  int64_t fence = 0;
  /// Why the release could not be confirmed with the sentinels ("": it was).
  std::string unconfirmed;
};

/// Written by the keeper `keeper_pid` of `token` after the release its owner
/// asked for; false when it could not be (an unsafe or unwritable directory).
bool write_keeper_verdict(long keeper_pid, const std::string& token, const KeeperVerdict& v);

/// Read and removed by the release that asked; nullopt when there is none
/// (nothing to report) or it cannot be trusted (not a regular file of this
/// user's in a private directory, too long, malformed).
std::optional<KeeperVerdict> take_keeper_verdict(long keeper_pid, const std::string& token);

}  // namespace rlock
