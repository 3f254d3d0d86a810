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
// not its share of --timeout. A master whose ROLE refuted the sentinels
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
  bool polling_ = false;
  Lifetime life_;
};

}  // namespace rlock
