// Finding the master through Redis Sentinel. Every sentinel of the URL is
// asked at once, with two commands pipelined on one connection:
// SENTINEL GET-MASTER-ADDR-BY-NAME for the address (the query Sentinel's
// clients are specified to use: while a failover reconfigures the replicas,
// the leader's SENTINEL MASTER still names the old master, which still
// answers ROLE with "master", but this names the promoted replica) and
// SENTINEL MASTER for the configuration epoch of that answer.
//
// Sentinels that disagree: the answer with the highest configuration epoch
// wins (the rule the sentinels themselves follow: a sentinel that has not yet
// heard of a failover names the master before it, with an older epoch). The
// answers are awaited from every sentinel, but once one has named a master
// the others get only kSurveyGrace more, so a sentinel that hangs costs that,
// not its share of --command-timeout. A master whose ROLE refuted the sentinels
// (distrust()) ranks below every other answer next time.
//
// A process that stays watches a sentinel for +switch-master and asks all of
// them again every kSentinelPoll, so that neither a sentinel that hangs nor
// one that has not yet heard of a failover keeps it on a deposed master. The
// Router confirms what they name with ROLE before it uses it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/lifetime.h"
#include "net/redis.h"

namespace rlock {

/// What a sentinel says of the master.
struct MasterInfo {
  Endpoint endpoint;  // with the URL's user, password, TLS and db
  /// The configuration epoch of that answer (grows with every failover); -1
  /// when the sentinel only answered SENTINEL get-master-addr-by-name.
  long long epoch = -1;
};

/// How often a process that stays asks the sentinels for the master.
inline constexpr Millis kSentinelPoll{1000};
/// How long the other sentinels may still answer once one has named a master.
inline constexpr Millis kSurveyGrace{100};

class SentinelDiscovery {
 public:
  SentinelDiscovery(Loop& loop, const ConnectionConfig& cfg, std::shared_ptr<TlsContext> tls);
  ~SentinelDiscovery();

  /// The master the sentinels name with the highest epoch, or an Error: 69
  /// when no sentinel answers or none knows the master's name, 77 when the
  /// sentinels refuse the credentials given for them, 70 when they answer
  /// what rlock cannot use. `done` runs from the loop.
  void find(Done<MasterInfo> done);
  /// `named` is not a master (its ROLE says so): later answers that name it
  /// with the same epoch rank below any other.
  void distrust(const MasterInfo& named);
  /// From now on, hear of failovers: `news` gets what a sentinel announces
  /// (+switch-master: `announced`) and, every kSentinelPoll, what they answer
  /// (the Router decides whether it is newer than what it uses).
  void watch(std::function<void(const MasterInfo&, bool announced)> news);

  const std::string& master_name() const { return cfg_.sentinel->master_name; }

 private:
  struct Survey;
  void query(const std::shared_ptr<Survey>& s, size_t i);
  void answered(const std::shared_ptr<Survey>& s, size_t i, Result addr,
                std::optional<Result> master);
  /// The epoch in a SENTINEL MASTER reply: -1 when there is none (refused,
  /// or the field is missing), -2 when it is garbage.
  long long epoch_of(size_t i, const std::optional<Result>& master, const Endpoint& named) const;
  void one_done(const std::shared_ptr<Survey>& s);
  void decide(const std::shared_ptr<Survey>& s);
  Connection& connection(size_t i);
  Millis query_timeout() const;
  void start_watch();
  void watch_lost(const Error& why);
  void poll();
  Endpoint master_at(const std::string& host, int port) const;

  Loop& loop_;
  ConnectionConfig cfg_;
  std::shared_ptr<TlsContext> tls_;
  size_t last_answer_ = 0;              // the sentinel whose answer was taken last
  std::optional<MasterInfo> rejected_;  // see distrust()
  std::vector<std::unique_ptr<Connection>> conns_;
  std::vector<bool> addr_only_;  // sentinels that refuse SENTINEL MASTER
  std::function<void(const MasterInfo&, bool)> news_;
  std::unique_ptr<Connection> watch_conn_;
  size_t watching_ = 0;
  Loop::TimerId rewatch_timer_ = 0, poll_timer_ = 0;
  Lifetime life_;
};

/// The master a redis-sentinel:// URL names, as the Router uses it: found by
/// asking the sentinels (SentinelDiscovery), confirmed with ROLE, and found
/// again when it fails (the Router says so: a connection lost, READONLY), or
/// when a sentinel announces a failover or names the master with a newer
/// configuration epoch (watched once the process stays). The Router keeps
/// the connections and the commands that wait for a master; this keeps which
/// master it is.
class SentinelMaster {
 public:
  struct Events {
    /// The connection to the server at `ep` (made if new): ROLE is asked there.
    std::function<Connection&(const Endpoint& ep)> connection;
    /// Whether commands wait for a master (a failed one is then asked for again).
    std::function<bool()> wanted;
    /// The master is known (master()): the waiting commands go.
    std::function<void()> found;
    /// No master can be found by waiting (no sentinel answers, none knows the
    /// name, the master refuses the credentials): the waiting commands fail.
    std::function<void(const Error& why)> failed;
    /// A failover moved the master away from `old`: its commands in flight
    /// and its subscriptions end with `why`.
    std::function<void(const std::string& old, const Error& why)> moved;
  };

  SentinelMaster(Loop& loop, const ConnectionConfig& cfg, std::shared_ptr<TlsContext> tls,
                 Events events);
  ~SentinelMaster();

  /// The confirmed master's address ("" while unknown).
  const std::string& master() const { return master_; }
  const std::string& master_name() const { return discovery_.master_name(); }
  /// Asks the sentinels (unless already asking): Events::found or failed follows.
  void find();
  /// Why no master was found yet (for a command that waited in vain), if known.
  const std::optional<Error>& last_error() const { return last_error_; }
  /// The connection to `name` was lost: if it is the master, it is forgotten
  /// (asked for again before the next command).
  void lost(const std::string& name, const Error& why);
  /// The master is not usable (demoted, a failover in progress): forgotten,
  /// and asked for again soon while commands wait for one.
  void failed(const Error& why);
  /// From now on, hear of failovers (SentinelDiscovery::watch).
  void stay();
  /// Whether the sentinels, asked now, still name `node` as the master (see
  /// Client::confirm_master); when the master they name is another, the
  /// master moves there.
  void confirm(const std::string& node, Done<bool> done);
  /// The master the sentinels name now (its address), without ROLE and
  /// without moving there (Client::named_master).
  void named(Done<std::string> done);

 private:
  void found(const MasterInfo& info);
  void news(const MasterInfo& info, bool announced);
  void moved(const MasterInfo& info, const std::string& why);
  void give_up(const Error& why);
  void trace(const std::string& line) const {
    if (cfg_.trace) cfg_.trace(line);
  }

  Loop& loop_;
  ConnectionConfig cfg_;
  SentinelDiscovery discovery_;
  Events events_;
  std::string master_;    // the confirmed master ("" while unknown)
  long long epoch_ = -1;  // the configuration epoch of master_, -1 unknown
  bool finding_ = false;  // asking the sentinels, or confirming what they named
  std::optional<Error> last_error_;
  Lifetime life_;
};

}  // namespace rlock
