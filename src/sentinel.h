// Finding the master through Redis Sentinel: the sentinels are asked in turn
// (the one that answered last first, each within a share of --timeout, so one
// that hangs costs only its share) with SENTINEL MASTER, which also gives the
// master's configuration epoch; a process that stays watches a sentinel for
// +switch-master and asks again every second, so that neither a sentinel that
// hangs nor one that has not yet heard of a failover keeps it on a deposed
// master. The Router confirms what they name with ROLE before it uses it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "redis.h"

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

class SentinelDiscovery {
 public:
  SentinelDiscovery(Loop& loop, const ConnectionConfig& cfg, std::shared_ptr<TlsContext> tls);
  ~SentinelDiscovery();

  /// The master, or an Error: 69 when no sentinel answers or none knows the
  /// master's name, 77 when the sentinels refuse the credentials given for
  /// them, 70 when they answer what rlock cannot use. `done` runs from the
  /// loop.
  void find(Done<MasterInfo> done);
  /// The sentinel that answered last named a master that is none (ROLE): the
  /// next find() asks the others first.
  void distrust();
  /// From now on, hear of failovers: `news` gets what a sentinel announces
  /// (+switch-master: `announced`) and, every kSentinelPoll, what they answer
  /// (the Router decides whether it is newer than what it uses).
  void watch(std::function<void(const MasterInfo&, bool announced)> news);

  const std::string& master_name() const { return cfg_.sentinel->master_name; }

 private:
  struct Search;
  void ask(const std::shared_ptr<Search>& s);
  void query(const std::shared_ptr<Search>& s, size_t i);
  void answered(const std::shared_ptr<Search>& s, size_t i, Result r, bool by_addr);
  Connection& connection(size_t i);
  Millis query_timeout() const;
  void start_watch();
  void watch_lost(const Error& why);
  void poll();
  Endpoint master_at(const std::string& host, int port) const;

  Loop& loop_;
  ConnectionConfig cfg_;
  std::shared_ptr<TlsContext> tls_;
  size_t preferred_ = 0;  // the sentinel to ask first: the one that answered last
  size_t last_answer_ = 0;
  std::vector<std::unique_ptr<Connection>> conns_;
  std::vector<bool> addr_only_;  // sentinels that refuse SENTINEL MASTER
  std::function<void(const MasterInfo&, bool)> news_;
  std::unique_ptr<Connection> watch_conn_;
  size_t watching_ = 0;
  Loop::TimerId rewatch_timer_ = 0, poll_timer_ = 0;
  bool polling_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace rlock
