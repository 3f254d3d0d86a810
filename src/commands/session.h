// What every command (run included) starts from: the event loop, one Client
// per URL (one deployment, or every master of a quorum), and the lock of a
// KEY on them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/options.h"
#include "lock/lock.h"

namespace rlock {

/// At most this many masters in quorum mode.
inline constexpr size_t kMaxMasters = 32;

/// WHERE of RLOCK_HELD for the deployment `g` names (hold/held.h).
std::string lock_location(const GlobalOptions& g);

struct Session {
  /// Builds one Client per URL (effective_urls). Usage Errors for a bad URL,
  /// the same master twice, or more than kMaxMasters.
  explicit Session(const GlobalOptions& g);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// The lock of `key`: on the one deployment, or a quorum of the masters.
  /// `limit` (a semaphore) is a usage Error in quorum mode, as is a KEY or
  /// prefix that validate_key/validate_prefix refuse.
  std::unique_ptr<Lock> lock(const std::string& key, const std::string& prefix, int limit = 0,
                             bool shared = false);
  /// The lock of every KEY of `keys` as one (`--and`: a MultiLock, lock/multi.h),
  /// or of the one KEY. The same KEY twice, or --limit with several, is a
  /// usage Error.
  std::unique_ptr<Lock> locks(const std::vector<std::string>& keys, const std::string& prefix,
                              int limit = 0, bool shared = false);
  /// The lock `run` or `acquire` takes: every KEY of `o`, its --limit,
  /// --shared and line policy (--priority, --supersede, --max-waiters).
  std::unique_ptr<Lock> locks(const LockOptions& o, const std::string& prefix);
  /// The lock of a key found in Redis (list): any name, as it is. In quorum
  /// mode, `only` names the masters to ask (those that answered), if not all.
  std::unique_ptr<Lock> found_lock(const std::string& key, const std::string& prefix,
                                   const std::vector<Client*>& only = {});
  bool quorum() const { return clients.size() > 1; }
  std::unique_ptr<Lock> make_lock(const std::string& key, const std::string& prefix, int limit);
  std::unique_ptr<Lock> make_lock_on(const std::string& key, const std::string& prefix, int limit);

  Loop loop;
  std::vector<std::unique_ptr<Client>> clients;
  int history = 100;              // for every lock made here (--history)
  Layout layout = Layout::Rlock;  // --layout: of every lock made here

 private:
  /// The masters' run_ids as their INFO replies come (quorum mode).
  struct Identities {
    std::vector<std::optional<std::string>> ids;
    size_t pending = 0;
    bool waited = false;  // check_identities waited once: it does not wait again
  };
  void refuse_same_server();
  /// Waits for every INFO reply (bounded) and refuses the same server twice.
  void check_identities();
  static std::optional<Error> same_server(const Identities& ids,
                                          const std::vector<std::string>& names);
  std::shared_ptr<Identities> identities_;
  bool defer_identities_ = false;
};

}  // namespace rlock
