// The lock protocol in C++ terms. Every operation is asynchronous on the
// event loop; `wait_for` turns one into a blocking call for the scriptable
// commands. A Lock is a value: names, a client, and the --limit.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lock/history.h"
#include "lock/key.h"
#include "net/redis.h"

namespace rlock {

/// Who holds or waits: shown by `status`, stored with the lease.
struct HolderInfo {
  std::string host, user, cmd;
  long pid = 0;
  std::string label;  // --label: what the job is (a CI job's URL), or empty
};

/// The longest --label stored (bytes).
inline constexpr size_t kMaxLabel = 256;

/// Events a lock's history keeps unless --history says otherwise.
inline constexpr int kDefaultHistory = 100;
inline constexpr int kMaxHistory = 10000;

/// How a waiter stands in the line (--priority, --supersede, --max-waiters).
struct LinePolicy {
  int priority = 0;        // -1000 to 1000: a higher one is served first
  bool supersede = false;  // replaces the superseding waiter that came before
  int max_waiters = 0;     // a line this long refuses newcomers (0: no cap)
  bool plain() const { return priority == 0 && !supersede && max_waiters == 0; }
};

/// The longest host, user or command stored with a lease (bytes).
inline constexpr size_t kMaxHolderField = 1024;

/// The current process's host, user and pid, with `cmd` as given (each cut
/// to kMaxHolderField bytes).
HolderInfo local_holder_info(std::string cmd, long pid);

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
  /// A holder of another tool's layout (--layout): `token` is all it keeps
  /// (plain: the key's value; Redisson: the holder's id), and `holds` its
  /// Redisson hold count (0 for plain).
  bool opaque = false;
  int64_t holds = 0;
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
  /// Gone (a quorum regrant only, SingleLock::regrant): the token's tombstone
  /// is there, a release with it or a break removed it (`broken`).
  enum class State { Acquired, Taken, Queued, Done, Full, Superseded, Gone } state = State::Taken;
  long slot = 0;                // Acquired: a semaphore's slot (0: none)
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
  /// Several keys (--and), no success: the keys found not held, else (an
  /// error) those whose renewal failed. Empty for one key.
  std::vector<std::string> failed_keys;
};

struct ReleaseReply {
  /// AlreadyReleased: a retried release whose first try had released it.
  /// KeptAsDone: kept for --done-for after a success (marked done).
  /// KeptForNested: nested holds under the token still run; the last of them
  /// to end releases it (protocol 4, README "Nesting").
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
};

struct ForgetReply {
  enum class State { Removed, Nothing, InUse } state = State::Nothing;
  long holders = 0, waiters = 0;  // InUse
};

/// The `fence` script's reply (quorum mode).
struct FenceReply {
  int64_t counter = 0;  // the fence counter afterwards
  bool held = false;    // whether the token holds the lock on that master
};

/// How long a waiter's place in the line lives without a refresh.
inline constexpr Millis kQueueLease{6000};

/// The lock of one KEY: on one Redis deployment (SingleLock: a server, a
/// Cluster, Sentinel's master), or on a quorum of independent masters
/// (QuorumLock, quorum.h: Redlock). Every operation is asynchronous on the
/// event loop and calls `done` exactly once.
class Lock {
 public:
  Lock(LockNames names, int limit) : names_(std::move(names)), limit_(limit) {}
  virtual ~Lock() = default;
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

  /// One attempt. With `queue`, a waiter that is not served joins (or keeps)
  /// its place in the line; without, it is told the lock is taken. A
  /// `--limit` mismatch yields a usage Error. `attempt` numbers the attempts
  /// of one token (1, 2, …): if this one times out, an undo of exactly this
  /// attempt follows it on the same connection, and a later attempt's grant
  /// is out of its reach. A token that already holds gets its lease renewed.
  /// The reply's ttl is how long after the attempt was sent the lease is
  /// certain to last.
  virtual void acquire(const std::string& token, Millis ttl, bool queue, const HolderInfo& info,
                       long attempt, Done<AcquireReply> done, Millis timeout = Millis(0)) = 0;
  /// Renews the lease of `token` by `ttl` (0 = the TTL it was acquired with).
  virtual void extend(const std::string& token, Millis ttl, Done<ExtendReply> done,
                      Millis timeout = Millis(0)) = 0;
  /// Releases (or, with min_hold, shortens to acquisition + min_hold). A
  /// release that fails because the connection broke is retried on a new one
  /// until `timeout` (0: the command timeout) has passed since the first try;
  /// the release leaves a tombstone so that a retry whose first try did
  /// release reports AlreadyReleased, not NotHeld.
  /// `exit_status` (0-255, -1 = not known) is how the command ended: a lease
  /// kept for min_hold is marked with it, so that status can say so. With
  /// `done_for` and an exit status of 0 the lease is kept that long (or
  /// until acquisition + min_hold, if later) and marked done (KeptAsDone).
  /// `lost`: why its holder knows the lease was lost (recorded in the history
  /// when the release finds it gone), or empty.
  virtual void release(const std::string& token, Millis min_hold, Done<ReleaseReply> done,
                       Millis timeout = Millis(0), int exit_status = -1,
                       Millis done_for = Millis(0), const std::string& lost = "") = 0;
  /// Leaves the line; true if the token had a place.
  virtual void leave(const std::string& token, Done<bool> done, Millis timeout = Millis(0)) = 0;
  virtual void status(Done<LockStatus> done) = 0;
  /// Removes every holder and waiter; returns how many holders there were.
  virtual void break_lock(Done<long> done) = 0;
  /// Removes every key of a free lock nobody waits on, its fence counter
  /// included (housekeeping: its fences start again).
  virtual void forget(Done<ForgetReply> done) = 0;
  /// WAIT for `replicas` replicas to confirm this client's writes so far (the
  /// lease just granted or renewed), on the lock's server, within `budget`.
  /// The outcome is an unavailable Error (69) naming `what` when fewer
  /// confirmed in time (--sync-replicas).
  virtual void confirm_replicas(int replicas, Millis budget, const std::string& what,
                                Done<bool> done) = 0;

  /// Whether the grant `granted` of `token` stands: under Sentinel, whether
  /// the sentinels, asked now, still name the master that made it (see
  /// Client::confirm_master). When they do not, it is void: released there
  /// (token-checked, within `cleanup`), and the outcome is false; the next
  /// attempt goes to the master they name. Without Sentinel (and for a
  /// quorum): true at once.
  virtual void confirm_master(const std::string& /*token*/, const AcquireReply& /*granted*/,
                              Done<bool> done, Millis /*cleanup*/) {
    done(Outcome<bool>{std::nullopt, true});
  }

  /// The deployments the lock lives on: one, or every master of a quorum (in
  /// the URLs' order).
  virtual std::vector<Client*> clients() = 0;
  /// Waiters line up first come, first served. A quorum has no line (the
  /// masters' lines could disagree): its waiters try again when they hear a
  /// release.
  virtual bool fair() const { return true; }
  /// The locks of the single keys this is made of (`--and`: several, in the
  /// user's order; else this one).
  virtual std::vector<Lock*> parts() { return {this}; }
  /// A new token for a holder of this lock, process `holder_pid` (the pid a
  /// nested run finds among its ancestors): new_token(); Redisson's layout has
  /// ids of its own form, which end in that pid.
  virtual std::string fresh_token(long holder_pid) const;

  Loop& loop() { return clients().front()->loop(); }
  Millis command_timeout() { return clients().front()->command_timeout(); }
  /// This process holds or waits for a while: watch for failovers.
  void stay() {
    for (Client* c : clients()) c->stay();
  }
  const LockNames& names() const { return names_; }
  int limit() const { return limit_; }
  /// Whether acquire asks for a shared hold (--shared) rather than the
  /// exclusive one.
  bool shared() const { return shared_; }
  virtual void set_shared(bool shared) { shared_ = shared; }
  /// How acquire stands in the line; a policy a lock without a line (a
  /// quorum) cannot keep is a usage Error.
  const LinePolicy& line_policy() const { return line_; }
  virtual void set_line_policy(const LinePolicy& p) { line_ = p; }
  /// How many events the lock's history keeps (--history; 0: none recorded).
  int history() const { return history_; }
  virtual void set_history(int n) { history_ = n; }
  /// Whether status() reads the newest events of the history (list --json,
  /// which leaves them out, says no: a third of a status's server time).
  bool status_events() const { return status_events_; }
  virtual void set_status_events(bool on) { status_events_ = on; }

 protected:
  LockNames names_;
  int limit_;
  bool shared_ = false;
  LinePolicy line_;
  int history_ = kDefaultHistory;
  bool status_events_ = true;
};

/// The lock on one Redis deployment: each operation is one script there.
/// `done`, called only once a renewal that held is confirmed as a grant is
/// (Client::confirm_master): under Sentinel, the sentinels asked after its
/// reply still name the master that made it. A renewal made on a master they
/// no longer name (a planned failover promotes a replica while the old master
/// still takes writes) is lost with that master: it is reported as an
/// unavailable Error, so the holder's deadline stays that of its last
/// confirmed renewal and it renews again, on the master they name. Without
/// Sentinel `done` gets the reply at once.
Done<ExtendReply> confirmed_renewal(Client& client, Done<ExtendReply> done);

class SingleLock : public Lock {
 public:
  SingleLock(Client& client, LockNames names, int limit = 0)
      : Lock(std::move(names), limit), client_(client) {}

  void acquire(const std::string& token, Millis ttl, bool queue, const HolderInfo& info,
               long attempt, Done<AcquireReply> done, Millis timeout = Millis(0)) override;
  void extend(const std::string& token, Millis ttl, Done<ExtendReply> done,
              Millis timeout = Millis(0)) override;
  void release(const std::string& token, Millis min_hold, Done<ReleaseReply> done,
               Millis timeout = Millis(0), int exit_status = -1, Millis done_for = Millis(0),
               const std::string& lost = "") override;
  void leave(const std::string& token, Done<bool> done, Millis timeout = Millis(0)) override;
  void status(Done<LockStatus> done) override;
  void break_lock(Done<long> done) override;
  void forget(Done<ForgetReply> done) override;
  void confirm_replicas(int replicas, Millis budget, const std::string& what,
                        Done<bool> done) override;
  void confirm_master(const std::string& token, const AcquireReply& granted, Done<bool> done,
                      Millis cleanup) override;
  std::vector<Client*> clients() override { return {&client_}; }

  /// Quorum mode: gives back a grant that won no majority (token-checked,
  /// retried on a new connection within `timeout`, as release() is). Unlike release() it leaves no
  /// tombstone: the token's next attempt may win here or elsewhere, and a tombstone would tell that
  /// holder's renewals (a keeper's) that its owner released it.
  void give_back(const std::string& token, Done<ReleaseReply> done, Millis timeout);
  /// Quorum mode: grants a holder's lease again here (acquire in mode
  /// `regrant`: a try), unless a release with the token or a break removed it
  /// here (its tombstone): Gone then. The renewal answer that asked for it
  /// ("not held") may be older than that release or break.
  void regrant(const std::string& token, Millis ttl, const HolderInfo& info,
               Done<AcquireReply> done, Millis timeout);
  /// Quorum mode: raises the fence counter to at least `fence` and, if
  /// `token` holds, records that fence as its own.
  void commit_fence(const std::string& token, int64_t fence, Done<FenceReply> done, Millis timeout);
  Client& client() { return client_; }

 private:
  void acquire_in(const char* mode, const std::string& token, Millis ttl, const HolderInfo& info,
                  long attempt, Done<AcquireReply> done, Millis timeout);

  Client& client_;
};

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
/// otherwise).
struct HolderWords {
  std::string who, lease;
};
HolderWords holder_words(const AcquireReply& a, int limit, Millis elapsed = Millis(0),
                         size_t cmd_columns = 40, bool since = true);

/// The `status` script's reply (Protocol Error for a reply of another shape).
LockStatus parse_status_reply(const Reply& r);

/// What the `list` script returns for each lock (list.lua): a line's worth
/// (the limit, the counts and what a line shows of the first holder), or
/// status's every record (`list --json`).
enum class ListReply { Line, Full };

/// The `list` script's reply for `n` locks, in their order, each with the
/// server time; a free lock has no holders. A Full reply may cover only the
/// first of them (at least one: the caller asks again for the rest). Protocol
/// Error for a reply of another shape.
std::vector<LockStatus> parse_list_reply(const Reply& r, size_t n, ListReply kind);

/// "1st", "2nd", "3rd", "11th", "22nd"…
std::string ordinal(long n);

/// A new token: 128 random bits from the OS, as 32 hex digits.
std::string new_token();

/// Runs an asynchronous operation to completion on `loop`; throws its Error.
template <class T>
T wait_for(Loop& loop, const std::function<void(Done<T>)>& op) {
  Outcome<T> out = settle<Outcome<T>>(loop, op);
  if (out.error) throw *out.error;
  return std::move(out.value);
}

}  // namespace rlock
