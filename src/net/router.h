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
// Under Sentinel the server is the master SentinelMaster (sentinel.h) keeps
// track of: found by asking the sentinels, confirmed with ROLE, and found
// again when it fails (a connection that cannot be made, or is lost), answers
// READONLY (it was demoted) or a sentinel announces a failover
// (+switch-master, watched once the process stays: see stay()), or names the
// master with a newer configuration epoch (asked every second once the
// process stays). Commands wait here until it is known.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/lifetime.h"
#include "net/redis.h"

namespace rlock {

class SentinelMaster;  // sentinel.h

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
  void named_master(Done<std::string> done) override;
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

  // Sentinel: the master is SentinelMaster's; the commands that wait for it are here.
  /// Where commands go by default: the URL's server, or the master Sentinel
  /// names ("" while unknown).
  const std::string& seed() const;
  void need_master(const CallPtr& c);
  void master_ready();
  void fail_awaiting(const Error& why);
  void master_moved(const std::string& old, const Error& why);

  Loop& loop_;
  ConnectionConfig cfg_;
  std::shared_ptr<TlsContext> tls_;
  std::map<std::string, std::unique_ptr<Node>> nodes_;
  std::string seed_;  // the URL's server (see seed())

  bool cluster_ = false;
  std::vector<std::string> slots_;  // cluster: the node serving each slot ("" = not known)
  bool refreshing_ = false;
  Clock::time_point last_refresh_{};

  std::unique_ptr<SentinelMaster> sentinel_;
  std::deque<CallPtr> awaiting_master_;

  Lifetime life_;
};

}  // namespace rlock
