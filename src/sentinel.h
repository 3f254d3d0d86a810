// Finding the master through Redis Sentinel: the sentinels are asked in turn
// (the one that answered last first) with SENTINEL get-master-addr-by-name,
// and, for a process that stays, one of them is watched for +switch-master.
// The Router confirms what they name with ROLE before it uses it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "redis.h"

namespace rlock {

class SentinelDiscovery {
 public:
  SentinelDiscovery(Loop& loop, const ConnectionConfig& cfg, std::shared_ptr<TlsContext> tls);
  ~SentinelDiscovery();

  /// The master's address (with the URL's user, password, TLS and db), or an
  /// Error: 69 when no sentinel answers or none knows the master's name, 77
  /// when the sentinels refuse the credentials given for them. `done` runs
  /// from the loop.
  void find(Done<Endpoint> done);
  /// From now on, watch a sentinel for +switch-master of this master; `moved`
  /// gets the new master's address. A lost watch moves to the next sentinel,
  /// which is also asked for the master (a switch may have been missed).
  void watch(std::function<void(const Endpoint&)> moved);

  const std::string& master_name() const { return cfg_.sentinel->master_name; }

 private:
  struct Search;
  void ask(const std::shared_ptr<Search>& s);
  Connection& connection(size_t i);
  void start_watch();
  void watch_lost(const Error& why);
  Endpoint master_at(const std::string& host, int port) const;

  Loop& loop_;
  ConnectionConfig cfg_;
  std::shared_ptr<TlsContext> tls_;
  size_t preferred_ = 0;  // the sentinel that answered last
  std::vector<std::unique_ptr<Connection>> conns_;
  std::function<void(const Endpoint&)> moved_;
  std::unique_ptr<Connection> watch_conn_;
  size_t watching_ = 0;
  Loop::TimerId rewatch_timer_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace rlock
