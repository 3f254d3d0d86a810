// The Client of rlock: one Redis server, which may turn out to be a Cluster
// node, or the master that Sentinel names.
//
// Cluster mode is noticed, not configured: a plain URL names one node, and
// the first MOVED (or `list` asking CLUSTER SLOTS) switches to routing by hash
// slot. Every key and channel of a lock shares the hash tag {KEY}, so each
// lock lives on one node and each script runs there whole. A redirect, a
// TRYAGAIN (a slot being migrated) or CLUSTERDOWN never reached a script, so
// the command is sent again, within its timeout.
//
// Under Sentinel the server is found by asking the sentinels, confirmed with
// ROLE, and found again when it fails (a connection that cannot be made, or
// is lost), answers READONLY (it was demoted) or a sentinel announces a
// failover (+switch-master, watched once the process stays: see stay()), or
// names the master with a newer configuration epoch (asked every second once
// the process stays).
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/lifetime.h"
#include "net/redis.h"

namespace rlock {

class SentinelDiscovery;  // sentinel.h
struct MasterInfo;        // sentinel.h

class Router : public Client {
 public:
  Router(Loop& loop, ConnectionConfig cfg);
  ~Router() override;

  void command(Args args, ReplyCallback cb, CallOptions opt = {}) override;
  void open_subscriber(const std::string& channel, Done<std::unique_ptr<Connection>> done) override;
  void learn(const std::string& error_reply) override;
  void masters(Done<std::vector<std::string>> done) override;
  void stay() override;
  void confirm_master(const std::string& node, Done<bool> done) override;
  Millis command_timeout() const override { return cfg_.command_timeout; }
  std::string name() const override;
  Loop& loop() override { return loop_; }

 private:
  struct Call;
  struct Node;
  using CallPtr = std::shared_ptr<Call>;

  void dispatch(const CallPtr& c);
  void on_result(const CallPtr& c, const std::string& node, Result r);
  void finish(const CallPtr& c, Result r);
  void retry_later(const CallPtr& c, Millis pause);
  /// The node at `ep`, made (with its connection, not yet opened) if new.
  Node& node(const Endpoint& ep);
  /// A node made before, by its name (ep.address()).
  Node& node(const std::string& name);
  Endpoint at(const std::string& host, int port) const;
  std::string route(const Call& c) const;
  void node_lost(const std::string& name, const Error& why);

  // Cluster
  bool redirect(const CallPtr& c, const std::string& reply);
  void enter_cluster_mode(const std::string& told_by);
  void slot_moved(int slot, const std::string& owner);
  void refresh_slots();
  void refresh_from(const std::shared_ptr<std::vector<std::string>>& names, size_t i);
  void ask_slots(const std::string& node_name, Done<std::vector<std::string>> done);

  // Sentinel
  void need_master(const CallPtr& c);
  void fail_awaiting(const Error& why);
  void find_master();
  void master_found(const MasterInfo& info);
  void master_failed(const Error& why);
  void sentinel_news(const MasterInfo& info, bool announced);
  void master_moved(const MasterInfo& info, const std::string& why);

  Loop& loop_;
  ConnectionConfig cfg_;
  std::shared_ptr<TlsContext> tls_;
  std::map<std::string, std::unique_ptr<Node>> nodes_;
  std::string seed_;  // the URL's server, or the confirmed master ("" while unknown)

  bool cluster_ = false;
  std::vector<std::string> slots_;  // cluster: the node serving each slot ("" = not known)
  bool refreshing_ = false;
  Clock::time_point last_refresh_{};

  std::unique_ptr<SentinelDiscovery> sentinel_;
  std::deque<CallPtr> awaiting_master_;
  std::vector<Done<std::unique_ptr<Connection>>> awaiting_subscribers_;
  bool finding_ = false;
  long long master_epoch_ = -1;  // the configuration epoch of seed_, -1 unknown
  std::optional<Error> last_find_error_;

  Lifetime life_;
};

}  // namespace rlock
