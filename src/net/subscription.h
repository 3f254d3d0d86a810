// One pub/sub channel of a lock, on whichever server owns it now.
//
// rlock's scripts publish with SPUBLISH on a Redis 7 Cluster node (sharded
// pub/sub: the notice stays on the lock's shard) and with PUBLISH elsewhere
// (docs/PROTOCOL.md), so a Subscription asks for both, SUBSCRIBE and
// SSUBSCRIBE, on one connection: it hears a release however it was
// published, without knowing in advance what kind of server it talks to.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/lifetime.h"
#include "net/redis.h"

namespace rlock {

class Subscription {
 public:
  struct Events {
    /// A message on the channel (its payload).
    std::function<void(const std::string& payload)> message;
    /// Subscribed (again): anything published before is not heard, so the
    /// owner checks the lock's state now.
    std::function<void()> ready;
    /// Could not subscribe (the Error of the server or the connection), or
    /// the subscription ended: its connection was lost, its slot moved to
    /// another node (an unsolicited SUNSUBSCRIBE), a failover happened. The
    /// owner decides whether and when to start() again.
    std::function<void(const Error&)> failed;
  };

  Subscription(Client& client, std::string channel, Events events);
  ~Subscription();
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  /// Subscribes (again), on the server that owns the channel now. Either
  /// ready() or failed() follows, from the loop.
  void start();
  /// Subscribe with SUBSCRIBE alone: the server is known not to be a Cluster
  /// node (an acquire reply said so), so nothing is published by SPUBLISH.
  void classic_only(bool yes) { classic_only_ = yes; }
  /// Waits on the list `key` with BLPOP instead of subscribing to the
  /// channel (which only picks the connection's node: the key is in the
  /// channel's Cluster slot). A notice pushed before BLPOP blocks is not
  /// lost. Each item popped is one message(); the next BLPOP goes out only on
  /// rearm(), so that a notice the owner acts on costs one command. ready()
  /// follows every (re)connection, with the BLPOP sent.
  void use_list(std::string key) { list_ = std::move(key); }
  /// In list mode, waits for the next item (at once if one is there).
  void rearm();
  /// Ends the subscription as if its connection had been lost: failed(why).
  void end(const Error& why);
  const std::string& channel() const { return channel_; }
  /// Calls `done` (from the loop) once every message the server published on
  /// the channel before it answers a PING sent now has been delivered: what
  /// was published before a command whose reply has arrived is heard by
  /// then. At once without a connection; after a failure too.
  void barrier(std::function<void()> done);
  /// The last failure was the channel's server changing (a failover, see
  /// Client::topology_changed), or, in list mode, a Cluster redirect (the
  /// slot moved, or is migrating): its new home is known or being found, so
  /// there is no reason to wait before subscribing again, and it is no
  /// outage.
  bool moved() const { return moved_; }

 private:
  friend class Client;
  void opened(std::unique_ptr<Connection> conn);
  void subscribed(Result classic, Result sharded);
  void pop();
  void on_push(const Reply& r);
  void drop();
  void fail(const Error& why);
  void client_gone() { client_ = nullptr; }
  void home_changed(const Error& why);

  Client* client_;
  std::string channel_;
  Events ev_;
  std::unique_ptr<Connection> conn_;
  unsigned generation_ = 0;  // of start(); a late answer for an older one is ignored
  bool moved_ = false;
  bool classic_only_ = false;
  std::string list_;      // list mode: the key BLPOP waits on
  bool popping_ = false;  // a BLPOP is out
  Lifetime life_;
};

/// One channel on every deployment a lock lives on (every master of a
/// quorum): a message on any of them is a message, each (re)subscription is
/// `ready`, every failure goes to `failed`; one that is an outage (69) starts
/// again by itself after `retry` (at once after a failover: moved()), any
/// other (an ACL that refuses the channel) is left for good.
class Subscriptions {
 public:
  Subscriptions(std::vector<Client*> clients, const std::string& channel,
                Subscription::Events events, Millis retry = Millis(1000));
  ~Subscriptions();
  Subscriptions(const Subscriptions&) = delete;
  Subscriptions& operator=(const Subscriptions&) = delete;

  void start();
  /// Subscription::barrier on every deployment; `done` once all are through.
  void barrier(std::function<void()> done);

 private:
  Loop& loop_;
  Subscription::Events ev_;
  Millis retry_;
  std::vector<std::unique_ptr<Subscription>> subs_;
  std::vector<Loop::TimerId> timers_;
  Lifetime life_;
};

}  // namespace rlock
