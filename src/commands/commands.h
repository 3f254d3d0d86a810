// One function per subcommand. Each returns the exit status or throws an
// Error; run_cli (cli.cc) maps errors to the exit table.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "cli/options.h"
#include "commands/session.h"
#include "lock/lock.h"

namespace rlock {

int cmd_acquire(const GlobalOptions& g, const LockOptions& o);
int cmd_extend(const GlobalOptions& g, const std::vector<std::string>& keys,
               const std::string& token, std::optional<Millis> ttl, int sync_replicas);
int cmd_release(const GlobalOptions& g, const std::vector<std::string>& keys,
                const std::string& token);
int cmd_status(const GlobalOptions& g, const std::string& key);
/// `status KEY --follow`: the holder of KEY now, then one line each time it
/// changes (held by whom, or free), until a stop signal (exit 0).
int cmd_status_follow(const GlobalOptions& g, const std::string& key);
/// `run KEY` without a command: holds KEY by hand until SIGINT, SIGTERM or
/// SIGHUP (exit 0), renewing it; 76 when the lease is lost (--on-lost term or
/// kill); 75/-E when not acquired, 128+N for a signal while waiting.
int cmd_hold(const GlobalOptions& g, const LockOptions& o);
/// `prometheus`: the Prometheus text format (node_exporter's textfile collector).
int cmd_list(const GlobalOptions& g, const std::string& pattern, bool prometheus = false);
/// `list --names`: the names only, one per line, at most kMaxListedNames, within
/// one --command-timeout for everything (connecting included); what was found by then
/// is printed before the unavailable Error that says the time ran out.
int cmd_list_names(const GlobalOptions& g, const std::string& pattern);
inline constexpr size_t kMaxListedNames = 1000;
/// A lock that `list`'s SCAN found: its KEY, whether a lock key (a holder) or a
/// line (:queue, waiters) was seen.
struct FoundLock {
  std::string key;
  bool held = false, queue = false;
};
/// Where scan_locks looked, for `top`'s status line: the masters each client
/// named (a Cluster's every master, the one Sentinel names), and the clients
/// that failed (quorum mode: a master that is down).
struct ScanReport {
  std::vector<std::string> masters;
  std::vector<std::string> down;     // quorum: the masters that did not answer
  std::vector<std::string> refused;  // and those that refused (ACL, authentication)
};
/// `list`'s SCAN (every master, MATCH on KEY) for `top`: each lock with a
/// holder or a line once, in no order. Throws a master's failure (quorum mode:
/// only when no majority answered) and a usage Error for a bad pattern.
std::vector<FoundLock> scan_locks(Session& s, const GlobalOptions& g, const std::string& pattern,
                                  ScanReport* report = nullptr);
/// `top`: the live view of the locks matching `pattern` (commands/top.h).
struct TopOptions;
int cmd_top(const GlobalOptions& g, const std::string& pattern, const TopOptions& o);
int cmd_break(const GlobalOptions& g, const std::string& key, bool yes, const BreakRequest& req);
int cmd_forget(const GlobalOptions& g, const std::string& key, bool yes);
/// `history`: the newest `count` events of KEY's history, oldest first; with
/// `follow`, then every new one until a stop signal (exit 0).
int cmd_history(const GlobalOptions& g, const std::string& key, long count, bool follow);
/// The newest `count` events of KEY's history (every master's, merged), oldest
/// first, and the server's time then (`now_ms`, when not null).
std::vector<Event> newest_events(Session& s, const std::string& key, const std::string& prefix,
                                 long count, int64_t* now_ms);
/// `history --timeline`: the newest `count` events of KEY drawn as a timeline
/// (commands/timeline.h) of the last `since` (0: all of them), on standard
/// output; with `svg` not empty, also written to that file as SVG.
int cmd_timeline(const GlobalOptions& g, const std::string& key, long count, Millis since,
                 const std::string& svg);
/// `doctor`: whether the deployment is safe for locks, one line per check
/// (ok, warn, fail, skip); 0 when nothing warns or fails, 1 otherwise.
int cmd_doctor(const GlobalOptions& g);

/// Formats one lock's status for people (used by status and list).
std::string status_text(const std::string& key, const LockStatus& s);
/// status_text for a terminal `width` columns wide: a table of holders and
/// waiters under a header row, whole seconds, every line within `width`.
std::string status_table(const std::string& key, const LockStatus& s, size_t width);
/// One JSON object for a lock's status (used by status --json and list --json).
/// `events` false leaves out "last_events" (list --json: its records are read
/// without the history, a third of their cost; status and history show it).
std::string status_json(const std::string& key, const LockStatus& s, bool events = true);

}  // namespace rlock
