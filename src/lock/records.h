// The lock protocol's records in C++ terms: who holds or waits (HolderInfo,
// Holder, Waiter), a lock's state (LockStatus), and what each script answers
// (AcquireReply, ExtendReply, ReleaseReply, ForgetReply, FenceReply). Plain
// values: parsed from the scripts' replies by lock/replies.h, put in words for
// people by cli/wording.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/duration.h"
#include "lock/history.h"
#include "lock/key.h"

namespace rlock {

/// Who holds or waits: shown by `status`, stored with the lease.
struct HolderInfo {
  std::string host, user, cmd;
  long pid = 0;
  std::string label;  // --label: what the job is (a CI job's URL), or empty
};

/// What `rlock break` asks: every holder, or only the one holding `token`
/// (break --token), and why (--reason; empty: not said).
struct BreakRequest {
  std::string token;
  std::string reason;
};

/// The longest --reason of a break (bytes).
inline constexpr size_t kMaxBreakReason = 256;

/// The longest --label stored (bytes).
inline constexpr size_t kMaxLabel = 256;

/// A named pool (--limit NAME,...): at most this many names of at most
/// kMaxPoolName bytes each.
inline constexpr size_t kMaxPoolNames = 100;
inline constexpr size_t kMaxPoolName = 64;

/// Events a lock's history keeps unless --history says otherwise.
inline constexpr int kDefaultHistory = 100;
inline constexpr int kMaxHistory = 10000;

/// How a waiter stands in the line (--priority, --supersede, --max-waiters).
struct LinePolicy {
  int priority = 0;        // -1000 to 1000: a higher one is served first
  bool supersede = false;  // replaces the superseding waiter that came before
  bool cancel = false;     // with supersede: also stops the superseding holders
  int max_waiters = 0;     // a line this long refuses newcomers (0: no cap)
  bool plain() const { return priority == 0 && !supersede && max_waiters == 0; }
};

/// The longest host, user or command stored with a lease (bytes).
inline constexpr size_t kMaxHolderField = 1024;

/// A live nested hold (docs/PROTOCOL.md "nest"): the nested run's own id,
/// where it runs, and what its lease has left.
struct NestedHold {
  std::string id, host;
  long pid = 0;
  Millis left{0};
};

struct Holder {
  std::string token;
  Millis ttl_left{0};
  HolderInfo info;
  int64_t since_ms = 0;  // server time at acquisition (Unix ms); 0 = unknown (foreign holder)
  int64_t fence = 0;
  Millis ttl{0};
  /// Protocol 4: the lease is kept by --min-hold after its command ended
  /// (server time of that end, Unix ms; 0 = a running holder, or a release
  /// before protocol 4), and how that command ended (-1 = not known).
  int64_t kept_ms = 0;
  int exit_status = -1;
  /// A shared holder (--shared), one of possibly many.
  bool shared = false;
  /// `run --done-for`: its command succeeded at this server time (Unix ms; 0 =
  /// not done); the lease, kept until the period ends, says "done" to others.
  int64_t done_ms = 0;
  /// A semaphore holder's slot (1…limit, the lowest free at its grant; 0 =
  /// none: not a semaphore, or a holder from before the release that has them).
  long slot = 0;
  /// A named pool's holder (--limit NAME,...): the name it holds (slot 0).
  std::string slot_name;
  /// The slot as shown: the name, the number, or "" for none.
  std::string slot_text() const {
    return !slot_name.empty() ? slot_name : slot > 0 ? std::to_string(slot) : "";
  }
  /// A holder of another tool's layout (--layout): `token` is all it keeps
  /// (plain: the key's value; Redisson: the holder's id), and `holds` its
  /// Redisson hold count (0 for plain).
  bool opaque = false;
  int64_t holds = 0;
  /// Nested holds under this holder's token (docs/PROTOCOL.md "nest"): how many
  /// are live, and when this holder's own release came while they ran (server
  /// ms; 0 = it has not: a running holder, or one killed without a release).
  long nested = 0;
  int64_t ended_ms = 0;
  /// Filled in by `status` (not by the scripts): the nested holds themselves,
  /// and whether the holder's process is gone (known only on its own host).
  std::vector<NestedHold> nested_holds;
  std::optional<bool> process_gone;
};

struct Waiter {
  std::string token;
  Millis lease_left{0};
  HolderInfo info;
  int64_t since_ms = 0;  // server time when it joined the queue
  bool shared = false;   // waits for a shared hold (--shared)
  int priority = 0;      // --priority
};

struct MasterStatus;

struct LockStatus {
  Layout layout = Layout::Rlock;  // whose keys (--layout)
  int limit = 0;                  // 0 = plain lock
  int64_t fence = 0;              // the last fence issued
  int64_t now_ms = 0;             // server time
  std::vector<Holder> holders;    // the first kStatusRecords of them
  std::vector<Waiter> waiters;    // in line order, the first kStatusRecords
  long holder_count = 0;          // all of them
  long waiter_count = 0;
  std::vector<Event> last;  // the newest events of its history, newest first (protocol 4)
  /// Quorum mode: how many masters make a majority, and what each said (in
  /// the URLs' order); the fields above are the quorum's view.
  int quorum = 0;
  std::vector<MasterStatus> masters;
};

/// What one master of a quorum says of the lock.
struct MasterStatus {
  std::string name;            // its URL for people (no password)
  std::optional<Error> error;  // it did not answer
  LockStatus status;           // what it said, when it answered
};

/// At most this many holders and waiters are listed by status (the counts
/// are complete), so a reply stays small whatever the line's length.
inline constexpr long kStatusRecords = 1000;

struct AcquireReply {
  /// Done: taken by a lease that `run --done-for` keeps after a success (its
  /// holder, first in `holders`, has done_ms): nobody takes it before it ends.
  /// Full: not taken and the line has --max-waiters already. Superseded: a
  /// newer --supersede waiter replaced this one (`by` says who).
  /// Gone: the token's tombstone is there, a release with it or a break
  /// removed it (`broken`): a quorum regrant (SingleLock::regrant), or an
  /// attempt whose earlier grant was given back before its reply came.
  enum class State { Acquired, Taken, Queued, Done, Full, Superseded, Gone } state = State::Taken;
  long slot = 0;                // Acquired: a semaphore's slot (0: none)
  std::string slot_name;        // Acquired: a named pool's name ("": none)
  std::string by;               // Superseded
  bool broken = false;          // Gone: by `rlock break` (else by a release with the token)
  int64_t fence = 0;            // Acquired
  Millis ttl{0};                // Acquired
  int64_t now_ms = 0;           // Acquired: the server's time of the grant (Unix ms); 0 = unknown
  long position = -1;           // Queued: 0 = head of the line
  long free = 0;                // free slots right now
  std::vector<Holder> holders;  // Taken / Queued: the first few
  long holder_count = 0;        // Taken / Queued: all of them
  std::string node;             // the server that answered (Result::node)
  /// Taken (mode try, protocol 4): whether the server is a Cluster node, whose
  /// notices go by SPUBLISH (1), or not (0: PUBLISH only); -1 = not said.
  int cluster = -1;
};

struct ExtendReply {
  bool held = false;
  Millis ttl{0};
  int64_t fence = 0;
  std::string node;  // the server that renewed it (Result::node)
  /// Not held because a release with the token removed it (another tool's
  /// layout, which publishes no token: its tombstone says so).
  bool released = false;
  /// Not held because `rlock break` removed it here (its tombstone says so):
  /// quorum mode does not grant it again on this master; a holder lost it.
  bool broken = false;
  /// Held by a holder that asked to supersede (--supersede), and a newer
  /// superseding job has joined the line since it first did: who that is.
  std::optional<std::string> superseded_by;
  /// A newer superseding job asked such a holder to stop
  /// (--cancel-in-progress): who that is.
  std::optional<std::string> cancelled_by;
  /// Several keys (--and), no success: the keys found not held, else (an
  /// error) those whose renewal failed. Empty for one key.
  std::vector<std::string> failed_keys;
};

struct ReleaseReply {
  /// AlreadyReleased: a retried release whose first try had released it.
  /// KeptAsDone: kept for --done-for after a success (marked done).
  /// KeptForNested: nested holds under the token still run; the last of them
  /// to end releases it (protocol 4, docs/GUIDE.md "Nesting").
  enum class State {
    Released,
    NotHeld,
    KeptForMinHold,
    AlreadyReleased,
    KeptAsDone,
    KeptForNested
  } state = State::NotHeld;
  Millis left{0};   // KeptForMinHold, KeptAsDone, KeptForNested: how long it stays held
  long nested = 0;  // KeptForNested: how many nested holds keep it
  /// Several keys (--and), NotHeld: the keys found not held. Empty for one key.
  std::vector<std::string> lost_keys;
  std::string node;  // the server that answered (Result::node)
  /// Under Sentinel (confirmed_release, lock/single.h): the master that took
  /// the release first, which the sentinels no longer name; the reply is
  /// then the answer of the master they name. Empty: it was not asked again.
  /// NotHeld with it: a failover lost this hold (docs/PROTOCOL.md, "Sentinel").
  std::string moved_from;
  /// Under Sentinel: why the master that took the release could not be
  /// confirmed with the sentinels (nobody could say whether the hold
  /// survived a failover); empty when it was.
  std::string unconfirmed;
};

struct ForgetReply {
  enum class State { Removed, Nothing, InUse } state = State::Nothing;
  long holders = 0, waiters = 0;  // InUse
};

/// The `fence` script's reply (quorum mode).
struct FenceReply {
  int64_t counter = 0;  // the fence counter afterwards
  bool held = false;    // whether the token holds the lock on that master
  int64_t found = 0;    // the fence counter the script found (before raising it)
  bool owns = false;    // held, and the token raised the counter to the fence there
};

/// How long a waiter's place in the line lives without a refresh.
inline constexpr Millis kQueueLease{6000};

}  // namespace rlock
