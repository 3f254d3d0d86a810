#include "net/router.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/text.h"
#include "net/cluster.h"
#include "net/resolver.h"
#include "net/sentinel.h"
#include "net/slot.h"
#include "net/subscription.h"

namespace rlock {

namespace {

// More redirects than this for one command means the nodes disagree (a
// migration going back and forth): give up with 69 rather than loop.
constexpr int kMaxRedirects = 8;

// The map is asked for again at most this often while redirects come in.
constexpr Millis kRefreshInterval{200};

// Replies that say a command did not run and may run soon: a slot being
// migrated (TRYAGAIN: some of a lock's keys have moved, some not yet), or a
// Cluster that has lost a slot's node (CLUSTERDOWN, until a failover).
bool try_again(const std::string& m) {
  return m.starts_with("TRYAGAIN") || m.starts_with("CLUSTERDOWN");
}

// Replies of a server that is not (or no longer) the master: the command did
// not run, and goes to the master once it is found again.
bool not_master(const std::string& m) {
  return m.starts_with("READONLY") || m.starts_with("MASTERDOWN");
}

Millis pause_for(int tries) {
  return std::min(Millis(25) * (1 << std::min(tries, 5)), Millis(500));
}

}  // namespace

struct Router::Call {
  Args args;
  ReplyCallback cb;
  CallOptions opt;
  Clock::time_point deadline;
  int redirects = 0, tries = 0;
  std::string ask_node;  // the next attempt goes there, after ASKING
  Loop::TimerId timer = 0;
  bool finished = false;
};

struct Router::Node {
  Endpoint ep;
  std::shared_ptr<AddressBook> book;
  std::unique_ptr<Connection> conn;
};

Router::Router(Loop& loop, ConnectionConfig cfg)
    : loop_(loop),
      cfg_(std::move(cfg)),
      tls_(cfg_.endpoint.tls ? make_tls_context(cfg_.tls) : nullptr) {
  if (cfg_.sentinel) {
    sentinel_ = std::make_unique<SentinelMaster>(
        loop_, cfg_, tls_,
        SentinelMaster::Events{
            [this](const Endpoint& ep) -> Connection& { return *node(ep).conn; },
            [this] { return !awaiting_master_.empty(); }, [this] { master_ready(); },
            [this](const Error& why) { fail_awaiting(why); },
            [this](const std::string& old, const Error& why) { master_moved(old, why); }});
  } else {
    seed_ = node(cfg_.endpoint).ep.address();
  }
}

const std::string& Router::seed() const {
  return sentinel_ ? sentinel_->master() : seed_;
}

Router::~Router() {
  life_.end();
  for (auto& c : awaiting_master_) loop_.cancel(c->timer);
}

Endpoint Router::at(const std::string& host, int port) const {
  // Another node of a Cluster, or the master Sentinel named: the URL's user,
  // password, TLS and db, at the announced address.
  Endpoint ep = cfg_.endpoint;
  ep.kind = Endpoint::Kind::Tcp;
  ep.host = host;
  ep.port = port;
  return ep;
}

Router::Node& Router::node(const Endpoint& ep) {
  std::string name = ep.address();
  auto it = nodes_.find(name);
  if (it != nodes_.end()) return *it->second;
  auto n = std::make_unique<Node>();
  n->ep = ep;
  n->book = std::make_shared<AddressBook>(loop_, n->ep, cfg_.connect_timeout);
  ConnectionConfig c = cfg_;
  c.endpoint = n->ep;
  n->conn = std::make_unique<Connection>(loop_, c, tls_, n->book);
  auto alive = life_.token();
  n->conn->on_disconnect([this, alive, name](const Error& e) {
    if (alive) node_lost(name, e);
  });
  return *nodes_.emplace(name, std::move(n)).first->second;
}

Router::Node& Router::node(const std::string& name) {
  // Every name rlock routes to was made by node(Endpoint) first.
  auto it = nodes_.find(name);
  if (it == nodes_.end()) throw_protocol(fmt::format("no connection to {}", escape_text(name)));
  return *it->second;
}

std::string Router::route(const Call& c) const {
  if (!c.opt.node.empty()) return c.opt.node;
  if (cluster_ && !c.opt.key.empty()) {
    const std::string& owner = slots_[key_slot(c.opt.key)];
    if (!owner.empty()) return owner;
  }
  return seed();
}

void Router::command(Args args, ReplyCallback cb, CallOptions opt) {
  auto c = std::make_shared<Call>();
  Millis budget = opt.timeout.count() > 0 ? opt.timeout : cfg_.command_timeout;
  c->deadline = later(Clock::now(), budget);
  c->args = std::move(args);
  c->cb = std::move(cb);
  c->opt = std::move(opt);
  dispatch(c);
}

void Router::dispatch(const CallPtr& c) {
  if (sentinel_ && seed().empty() && c->opt.node.empty()) return need_master(c);
  std::string target = c->ask_node.empty() ? route(*c) : c->ask_node;
  bool asking = !c->ask_node.empty();
  c->ask_node.clear();
  Millis left = std::max(Millis(1), std::chrono::ceil<Millis>(c->deadline - Clock::now()));
  Connection& conn = *node(target).conn;
  if (asking)
    conn.command(
        {"ASKING"}, [](Result) {}, left);
  auto alive = life_.token();
  conn.command(
      c->args,
      [this, alive, c, target](Result r) {
        if (alive) on_result(c, target, std::move(r));
      },
      left, c->opt.undo);
}

void Router::on_result(const CallPtr& c, const std::string& node_name, Result r) {
  r.node = node_name;
  Millis left = std::chrono::duration_cast<Millis>(c->deadline - Clock::now());
  Millis pause = pause_for(c->tries);
  if (r.failure) {
    // A command that never left (the connection could not be made) may go
    // elsewhere: to the master Sentinel names now, or the node the Cluster's
    // map names now. One server alone has nowhere else to go.
    if (r.unsent && (cluster_ || sentinel_) && left > pause) {
      if (cfg_.trace) cfg_.trace(fmt::format("{}; routing again", r.failure->what()));
      node_lost(node_name, *r.failure);
      return retry_later(c, pause);
    }
    // A Cluster node other than the URL's that cannot be reached is most
    // likely going down, to be failed over: that may pass (hold/acquirer.h).
    if (cluster_ && r.unsent && node_name != seed() &&
        r.failure->kind() == ErrorKind::Unavailable && r.failure->cause() == Cause::Other)
      r.failure->set_cause(Cause::NodeDown);
    return finish(c, std::move(r));
  }
  if (r.reply.is_error()) {
    const std::string& m = r.reply.str;
    if (redirect(c, m)) return;
    if (try_again(m) && left > pause) {
      if (cfg_.trace) cfg_.trace(fmt::format("{}: {}; trying again", c->args[0], escape_text(m)));
      if (m.starts_with("CLUSTERDOWN")) refresh_slots();
      return retry_later(c, pause);
    }
    if (not_master(m) && left > pause && c->opt.node.empty()) {
      // A master that was demoted (a failover): Sentinel is asked again; a plain
      // URL's connection is dropped, so that the next attempt looks the name up
      // again (a managed service moves its DNS name to the new master).
      Error why(ErrorKind::Unavailable,
                fmt::format("{} is not a master now ({})", escape_text(node_name), escape_text(m)));
      if (sentinel_)
        sentinel_->failed(why);
      else
        node(node_name).conn->close(why);
      return retry_later(c, pause);
    }
  }
  finish(c, std::move(r));
}

void Router::finish(const CallPtr& c, Result r) {
  if (c->finished) return;
  c->finished = true;
  loop_.cancel(c->timer);
  c->timer = 0;
  auto cb = std::move(c->cb);
  cb(std::move(r));
}

void Router::retry_later(const CallPtr& c, Millis pause) {
  ++c->tries;
  // A pause (TRYAGAIN during a migration: ASK, then TRYAGAIN at the target)
  // is not a redirect loop: only redirects in a row count.
  c->redirects = 0;
  auto alive = life_.token();
  c->timer = loop_.after(pause, [this, alive, c] {
    if (!alive || c->finished) return;
    c->timer = 0;
    dispatch(c);
  });
}

void Router::node_lost(const std::string& name, const Error& why) {
  if (sentinel_) sentinel_->lost(name, why);
  if (cluster_) refresh_slots();
}

// ---- Cluster ----

bool Router::redirect(const CallPtr& c, const std::string& reply) {
  auto r = parse_redirect(reply);
  if (!r) return false;
  if (sentinel_) {
    // Sentinel manages no Clusters: the master it names is misconfigured.
    finish(c, Result{Error(ErrorKind::Protocol,
                           fmt::format("the master of '{}' answers like a Redis Cluster node "
                                       "({}): use a redis:// URL of a Cluster node instead",
                                       escape_text(sentinel_->master_name()), escape_text(reply))),
                     {}});
    return true;
  }
  if (++c->redirects > kMaxRedirects) {
    finish(c, Result{Error(ErrorKind::Unavailable,
                           fmt::format("too many Cluster redirects for {} (the last: {})",
                                       c->args[0], escape_text(reply))),
                     {}});
    return true;
  }
  if (r->host.empty()) {
    // "MOVED 3999 :6381": the same host as the node that said it.
    r->host = node(route(*c)).ep.host;
  }
  std::string name = node(at(r->host, r->port)).ep.address();
  if (cfg_.trace) cfg_.trace(fmt::format("{}: {}", c->args[0], escape_text(reply)));
  if (r->ask)
    c->ask_node = name;
  else
    slot_moved(r->slot, name);
  dispatch(c);
  return true;
}

void Router::learn(const std::string& error_reply) {
  auto r = parse_redirect(error_reply);
  if (!r || r->ask || sentinel_) return;
  std::string host = r->host.empty() ? node(seed()).ep.host : r->host;
  slot_moved(r->slot, node(at(host, r->port)).ep.address());
}

void Router::enter_cluster_mode(const std::string& told_by) {
  if (cluster_) return;
  cluster_ = true;
  slots_.assign(kClusterSlots, "");
  if (cfg_.trace) cfg_.trace(fmt::format("{} is a Redis Cluster node", escape_text(told_by)));
}

void Router::slot_moved(int slot, const std::string& owner) {
  enter_cluster_mode(seed());
  slots_[slot] = owner;
  refresh_slots();
}

void Router::refresh_slots() {
  if (refreshing_ || sentinel_ || seed().empty()) return;
  auto since = Clock::now() - last_refresh_;
  if (since < kRefreshInterval) return;
  refreshing_ = true;
  last_refresh_ = Clock::now();
  // The seed first, then any other node rlock knows, until one answers.
  auto names = std::make_shared<std::vector<std::string>>();
  names->push_back(seed());
  for (auto& [name, n] : nodes_)
    if (name != seed()) names->push_back(name);
  refresh_from(names, 0);
}

void Router::refresh_from(const std::shared_ptr<std::vector<std::string>>& names, size_t i) {
  if (i >= names->size()) {
    refreshing_ = false;
    return;
  }
  auto alive = life_.token();
  ask_slots((*names)[i], [this, alive, names, i](Outcome<std::vector<std::string>> o) {
    if (!alive) return;
    if (o.error) return refresh_from(names, i + 1);
    refreshing_ = false;
  });
}

void Router::ask_slots(const std::string& name, Done<std::vector<std::string>> done) {
  auto alive = life_.token();
  std::string host = node(name).ep.host;
  node(name).conn->command(
      {"CLUSTER", "SLOTS"},
      [this, alive, name, host, done = std::move(done)](Result r) {
        if (!alive) return;
        Outcome<std::vector<std::string>> o;
        try {
          // One server: it is the only master. A user whose ACL has no
          // CLUSTER (a read-only one) is answered the same way: `list` then
          // sees the node of the URL.
          if (!r.failure && r.reply.is_error() &&
              (not_a_cluster(r.reply.str) || r.reply.str.starts_with("NOPERM"))) {
            o.value = {name};
            return done(std::move(o));
          }
          auto ranges = parse_cluster_slots(expect_ok(r, "CLUSTER SLOTS"));
          enter_cluster_mode(name);
          if (ranges.empty())
            throw Error(ErrorKind::Unavailable,
                        fmt::format("the Cluster node {} knows no slot served (CLUSTERDOWN)",
                                    escape_text(name)));
          for (auto& range : ranges) {
            std::string owner =
                node(at(range.host.empty() ? host : range.host, range.port)).ep.address();
            std::fill(slots_.begin() + range.first, slots_.begin() + range.last + 1, owner);
            if (std::find(o.value.begin(), o.value.end(), owner) == o.value.end())
              o.value.push_back(owner);
          }
        } catch (const Error& e) {
          o.error = e;
        }
        done(std::move(o));
      },
      cfg_.command_timeout);
}

void Router::masters(Done<std::vector<std::string>> done) {
  if (sentinel_) {
    // The master Sentinel names (found first, if need be).
    auto alive = life_.token();
    command({"PING"}, [this, alive, done = std::move(done)](Result r) {
      if (!alive) return;
      Outcome<std::vector<std::string>> o;
      try {
        expect_ok(r, "PING");
        o.value = {seed()};
      } catch (const Error& e) {
        o.error = e;
      }
      done(std::move(o));
    });
    return;
  }
  ask_slots(seed(), std::move(done));
}

void Router::open_subscriber(const std::string& channel, Done<std::unique_ptr<Connection>> done) {
  if (sentinel_ && seed().empty()) {
    // Once the master is known: a PING finds (and confirms) it.
    auto alive = life_.token();
    command({"PING"}, [this, alive, channel, done = std::move(done)](Result r) mutable {
      if (!alive) return;
      if (r.failure || seed().empty()) {
        Error e = r.failure ? *r.failure : Error(ErrorKind::Unavailable, "no master");
        return done(Outcome<std::unique_ptr<Connection>>{e, nullptr});
      }
      open_subscriber(channel, std::move(done));
    });
    return;
  }
  std::string target = seed();
  if (cluster_) {
    const std::string& owner = slots_[key_slot(channel)];
    if (!owner.empty()) target = owner;
  }
  Node& n = node(target);
  ConnectionConfig c = cfg_;
  c.endpoint = n.ep;  // a connection of its own, to the same node
  auto conn = std::make_shared<std::unique_ptr<Connection>>(
      std::make_unique<Connection>(loop_, c, tls_, n.book));
  // From the loop, never from inside this call.
  auto alive = life_.token();
  loop_.after(Millis(0), [alive, conn, done = std::move(done)] {
    if (alive) done(Outcome<std::unique_ptr<Connection>>{std::nullopt, std::move(*conn)});
  });
}

// ---- Sentinel ----

void Router::need_master(const CallPtr& c) {
  awaiting_master_.push_back(c);
  auto alive = life_.token();
  c->timer = loop_.at(c->deadline, [this, alive, c] {
    if (!alive || c->finished) return;
    c->timer = 0;
    awaiting_master_.erase(std::find(awaiting_master_.begin(), awaiting_master_.end(), c));
    Error e = sentinel_->last_error().value_or(
        Error(ErrorKind::Unavailable,
              fmt::format("the sentinels named no master of '{}' in time",
                          escape_text(sentinel_->master_name())),
              -1, Cause::Timeout));
    finish(c, Result{e, {}, true});
  });
  sentinel_->find();
}

void Router::master_ready() {
  auto calls = std::move(awaiting_master_);
  awaiting_master_.clear();
  for (auto& c : calls) {
    loop_.cancel(c->timer);
    c->timer = 0;
    if (!c->finished) dispatch(c);
  }
}

void Router::fail_awaiting(const Error& why) {
  auto calls = std::move(awaiting_master_);
  awaiting_master_.clear();
  for (auto& c : calls) finish(c, Result{why, {}, true});
}

void Router::master_moved(const std::string& old, const Error& why) {
  if (auto it = nodes_.find(old); it != nodes_.end()) it->second->conn->close(why);
  topology_changed(why);
}

void Router::confirm_master(const std::string& node, Done<bool> done) {
  if (!sentinel_ || node.empty()) return done(Outcome<bool>{std::nullopt, true});
  sentinel_->confirm(node, std::move(done));
}

void Router::named_master(Done<std::string> done) {
  if (!sentinel_) return done(Outcome<std::string>{std::nullopt, ""});
  sentinel_->named(std::move(done));
}

void Router::stay() {
  if (sentinel_) sentinel_->stay();
}

std::string Router::name() const {
  if (!cfg_.sentinel) return cfg_.endpoint.display();
  std::string hosts;
  for (auto& s : cfg_.sentinel->sentinels) hosts += (hosts.empty() ? "" : ",") + s.address();
  return fmt::format("{}://{}/{}", cfg_.endpoint.tls ? "rediss-sentinel" : "redis-sentinel",
                     escape_text(hosts), escape_text(cfg_.sentinel->master_name));
}

std::unique_ptr<Client> make_client(Loop& loop, const ConnectionConfig& cfg) {
  return std::make_unique<Router>(loop, cfg);
}

}  // namespace rlock
