// The values the command line produces, and how they become a connection.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/duration.h"
#include "hold/on_lost.h"
#include "lock/key.h"
#include "lock/records.h"
#include "net/redis.h"

namespace rlock {

/// Connection and output options: accepted before or after the subcommand.
struct GlobalOptions {
  std::vector<std::string> urls;       // --url (several: quorum mode); empty = the environment
  std::string user;                    // --user (ACL user), overrides the URL's
  std::string password_file;           // --password-file
  std::string sentinel_user;           // --sentinel-user: the sentinels' own ACL user
  std::string sentinel_password_file;  // --sentinel-password-file
  TlsOptions tls;
  Millis connect_timeout{5000};
  Millis command_timeout{5000};  // --command-timeout: one Redis command
  std::string prefix = "lock:";
  Layout layout = Layout::Rlock;  // --layout / RLOCK_LAYOUT
  bool verbose = false;
  bool quiet = false;
  bool json = false;
  int history =
      kDefaultHistory;  // --history / RLOCK_HISTORY: events a lock's history keeps (0: none)
};

/// Locking options of `run` and `acquire`.
struct LockOptions {
  std::string key;
  std::vector<std::string> and_keys;  // --and: more keys, all or nothing
  Millis ttl{30000};
  bool ttl_given = false;      // --ttl given: else a nested run takes the enclosing hold's
  std::optional<Millis> wait;  // nullopt = forever
  bool no_wait = false;
  int conflict_exit = 75;
  int superseded_exit = 75;  // --superseded-exit-code: a newer --supersede job came
  int limit = 0;
  std::string pool;  // --limit NAME,...: a named pool's names, as given ("": a count)
  Millis min_hold{0};
  OnLost on_lost = OnLost::Term;
  Millis kill_after{10000};
  bool kill_leftovers = false;      // run: end what the command left in its group
  bool close = false;               // run -o: release when the command exits, leftovers or not
  int sync_replicas = 0;            // --sync-replicas: WAIT for this many after each write
  long while_pid = 0;               // acquire --while-pid: hold while this process lives
  bool export_env = false;          // acquire --export: print shell assignments
  bool shared = false;              // --shared: one of many shared holders, or the exclusive one
  Millis done_for{0};               // run --done-for: after a success, keep KEY taken this long
  std::string label;                // --label (else RLOCK_LABEL, else the CI job's URL)
  int priority = 0;                 // --priority: a higher one goes first in line
  bool supersede = false;           // --supersede: replace the older superseding waiter
  bool cancel_in_progress = false;  // run --cancel-in-progress: also stop superseding holders
  int max_waiters = 0;              // --max-waiters: refuse to join a line this long (0: no cap)
  /// KEY and every --and KEY, in the user's order.
  std::vector<std::string> keys() const {
    std::vector<std::string> k{key};
    k.insert(k.end(), and_keys.begin(), and_keys.end());
    return k;
  }
};

/// At most this many bytes of a --password-file's first line.
inline constexpr size_t kMaxPasswordFile = 4096;

/// The first line of a --password-file, read within `limit` and at most
/// kMaxPasswordFile bytes. Regular files and pipes only (process substitution
/// works); a directory, a device, a FIFO nobody writes to, an empty first
/// line or a longer one is a usage Error (64) naming the file.
std::string read_password_file(const std::string& path, Millis limit,
                               const char* flag = "--password-file");

/// The URLs to use: every --url; else RLOCK_URL, which may hold several
/// separated by spaces (commas already separate a Sentinel URL's hosts); else
/// REDIS_URL; else the default. Several are quorum mode.
std::vector<std::string> effective_urls(const GlobalOptions& g);

/// Builds the connection settings of `url`: then password precedence (URL,
/// --password-file, RLOCK_PASSWORD, REDISCLI_AUTH), the sentinels' own
/// credentials (--sentinel-user; --sentinel-password-file, then
/// RLOCK_SENTINEL_PASSWORD), TLS flags (a --tls-* file flag with redis:// is a
/// usage error naming rediss://), timeouts, and -v.
ConnectionConfig connection_config(const GlobalOptions& g, const std::string& url);

/// The label stored with a holder or waiter: `given` (--label), else
/// $RLOCK_LABEL, else the URL of the CI job this runs in, from the CI's own
/// documented variables (GitHub Actions: the workflow run; GitLab CI, Jenkins,
/// Buildkite: the job), else empty. A given one (flag or RLOCK_LABEL) that
/// is longer than kMaxLabel bytes or holds control characters is a usage
/// Error; a CI's is cut to kMaxLabel and skipped when it is not text.
std::string resolve_label(const std::optional<std::string>& given);

/// Checks the locking options for contradictions (zero TTL, --limit < 0 …).
void validate(const LockOptions& o);

/// The exit status of a lock not acquired for `why` (a NotAcquired Error):
/// --superseded-exit-code for a superseded job, else -E.
int not_acquired_exit(const LockOptions& o, const Error& why);

/// Refuses (usage Error, 64) what `layout` cannot carry: for run and acquire
/// `o` (--limit, --shared, --and, --priority, --supersede, --max-waiters,
/// --done-for, --min-hold), and for every command several URLs (a quorum).
/// Nothing for the rlock layout.
void check_layout_options(const GlobalOptions& g, const LockOptions* o);

}  // namespace rlock
