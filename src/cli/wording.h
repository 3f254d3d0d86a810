// Lock records in words for people: who holds a lock, how long its lease has
// left, "3rd" in line. Text from Redis is escaped here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/duration.h"
#include "lock/records.h"

namespace rlock {

/// Who holds the lock, in words for people: "held by ci-4 pid 22836
/// [./deploy.sh] since 10:02:11Z, lease runs out in 29s unless renewed", "held
/// by 3 of 3 holders", "held by a client that is not rlock (token
/// 6f71b6caebc5...), lease runs out in 12s unless renewed". Text from Redis is
/// escaped; the command is cut to `cmd_columns` (0: left out); `elapsed`
/// (time since the reply) is taken off the lease.
std::string describe_holders(const AcquireReply& a, int limit, Millis elapsed = Millis(0),
                             size_t cmd_columns = 40);

/// describe_holders in two parts: who ("held by …") and, for one holder, how
/// long its lease has left ("lease runs out in 29s unless renewed"; empty
/// otherwise). A holder's label is cut in its middle to `label_columns` (its
/// end, a CI job's run id, stays).
struct HolderWords {
  std::string who, lease;
};
HolderWords holder_words(const AcquireReply& a, int limit, Millis elapsed = Millis(0),
                         size_t cmd_columns = 40, bool since = true,
                         size_t label_columns = SIZE_MAX);

/// Why a release under Sentinel found its hold gone from the master the
/// sentinels now name: "a failover lost this hold: the lock may have been
/// held twice (fence 12)" (fence 0: unknown, left out).
std::string failover_lost_words(int64_t fence);

/// The warning for a release the sentinels could not confirm (none answered,
/// or they name an older configuration): `what` names the lock ("'deploy'").
std::string unconfirmed_release_warning(const std::string& what, const std::string& why);

/// "1st", "2nd", "3rd", "11th", "22nd"…
std::string ordinal(long n);

/// A holder's lease left in a table cell: whole seconds rounded up from one
/// second on ("29s"), or "no expiry" for a key written without one (Redis's
/// PTTL -1: a foreign SET without PX), which only a break frees.
std::string lease_left_cell(Millis left);

/// describe_holders with its defaults: the words of a waiter's messages
/// (WaitSpec::describe).
std::string holders_in_words(const AcquireReply& a, int limit);

}  // namespace rlock
