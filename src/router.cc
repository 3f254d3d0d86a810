#include "router.h"

#include <fmt/format.h>

#include <algorithm>

#include "cluster.h"
#include "resolver.h"
#include "sentinel.h"
#include "slot.h"
#include "subscription.h"
#include "text.h"

namespace rlock {

namespace {

// More redirects than this for one command means the nodes disagree (a
// migration going back and forth): give up with 69 rather than loop.
constexpr int kMaxRedirects = 8;

// The map is asked for again at most this often while redirects come in.
constexpr Millis kRefreshInterval{200};

bool starts_with(const std::string& s, const char* p) {
  return s.rfind(p, 0) == 0;
}

// Replies that say a command did not run and may run soon: a slot being
// migrated (TRYAGAIN: some of a lock's keys have moved, some not yet), or a
// Cluster that has lost a slot's node (CLUSTERDOWN, until a failover).
bool try_again(const std::string& m) {
  return starts_with(m, "TRYAGAIN") || starts_with(m, "CLUSTERDOWN");
}

// Replies of a server that is not (or no longer) the master: the command did
// not run, and goes to the master once it is found again.
bool not_master(const std::string& m) {
  return starts_with(m, "READONLY") || starts_with(m, "MASTERDOWN");
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
    sentinel_ = std::make_unique<SentinelDiscovery>(loop_, cfg_, tls_);
  } else {
    seed_ = cfg_.endpoint.address();
    node(seed_);
  }
}

Router::~Router() {
  *alive_ = false;
  for (auto& c : awaiting_master_) loop_.cancel(c->timer);
}

Router::Node& Router::node(const std::string& name) {
  auto it = nodes_.find(name);
  if (it != nodes_.end()) return *it->second;
  auto n = std::make_unique<Node>();
  if (nodes_.empty() && !cfg_.sentinel) {
    n->ep = cfg_.endpoint;  // the seed: a Unix socket too
  } else {
    // Another node of a Cluster, or the master Sentinel named: the URL's
    // user, password, TLS and db, at the announced address.
    n->ep = cfg_.endpoint;
    n->ep.kind = Endpoint::Kind::Tcp;
    auto colon = name.rfind(':');
    std::string host = name.substr(0, colon);
    if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
    n->ep.host = host;
    n->ep.port = std::stoi(name.substr(colon + 1));
  }
  n->book = std::make_shared<AddressBook>(loop_, n->ep, cfg_.connect_timeout);
  ConnectionConfig c = cfg_;
  c.endpoint = n->ep;
  n->conn = std::make_unique<Connection>(loop_, c, tls_, n->book);
  auto alive = alive_;
  n->conn->on_disconnect([this, alive, name](const Error& e) {
    if (*alive) node_lost(name, e);
  });
  return *nodes_.emplace(name, std::move(n)).first->second;
}

std::string Router::route(const Call& c) const {
  if (!c.opt.node.empty()) return c.opt.node;
  if (cluster_ && !c.opt.key.empty()) {
    const std::string& owner = slots_[key_slot(c.opt.key)];
    if (!owner.empty()) return owner;
  }
  return seed_;
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
  if (sentinel_ && seed_.empty()) return need_master(c);
  std::string target = c->ask_node.empty() ? route(*c) : c->ask_node;
  bool asking = !c->ask_node.empty();
  c->ask_node.clear();
  Millis left = std::max(Millis(1), std::chrono::ceil<Millis>(c->deadline - Clock::now()));
  Connection& conn = *node(target).conn;
  if (asking)
    conn.command(
        {"ASKING"}, [](Result) {}, left);
  auto alive = alive_;
  conn.command(
      c->args,
      [this, alive, c, target](Result r) {
        if (*alive) on_result(c, target, std::move(r));
      },
      left, c->opt.undo);
}

void Router::on_result(const CallPtr& c, const std::string& node_name, Result r) {
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
    return finish(c, std::move(r));
  }
  if (r.reply.is_error()) {
    const std::string& m = r.reply.str;
    if (redirect(c, m)) return;
    if (try_again(m) && left > pause) {
      if (cfg_.trace) cfg_.trace(fmt::format("{}: {}; trying again", c->args[0], escape_text(m)));
      if (starts_with(m, "CLUSTERDOWN")) refresh_slots();
      return retry_later(c, pause);
    }
    if (not_master(m) && left > pause) {
      // A master that was demoted (a failover): Sentinel is asked again; a plain
      // URL's connection is dropped, so that the next attempt looks the name up
      // again (a managed service moves its DNS name to the new master).
      Error why(ErrorKind::Unavailable,
                fmt::format("{} is not a master now ({})", escape_text(node_name), escape_text(m)));
      if (sentinel_)
        master_failed(why);
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
  auto alive = alive_;
  c->timer = loop_.after(pause, [this, alive, c] {
    if (!*alive || c->finished) return;
    c->timer = 0;
    dispatch(c);
  });
}

void Router::node_lost(const std::string& name, const Error& why) {
  if (sentinel_ && name == seed_) {
    if (cfg_.trace)
      cfg_.trace(fmt::format("lost the master {}: {}", escape_text(name), why.what()));
    seed_.clear();  // asked for again before the next command
  }
  if (cluster_) refresh_slots();
}

// ---- Cluster ----

bool Router::redirect(const CallPtr& c, const std::string& reply) {
  auto r = parse_redirect(reply);
  if (!r) return false;
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
  Endpoint at;
  at.host = r->host;
  at.port = r->port;
  std::string name = at.address();
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
  if (!r || r->ask) return;
  Endpoint at;
  at.host = r->host.empty() ? node(seed_).ep.host : r->host;
  at.port = r->port;
  slot_moved(r->slot, at.address());
}

void Router::enter_cluster_mode(const std::string& told_by) {
  if (cluster_) return;
  cluster_ = true;
  slots_.assign(kClusterSlots, "");
  if (cfg_.trace) cfg_.trace(fmt::format("{} is a Redis Cluster node", escape_text(told_by)));
}

void Router::slot_moved(int slot, const std::string& owner) {
  enter_cluster_mode(seed_);
  slots_[slot] = owner;
  refresh_slots();
}

void Router::refresh_slots() {
  if (refreshing_) return;
  auto since = Clock::now() - last_refresh_;
  if (since < kRefreshInterval) return;
  refreshing_ = true;
  last_refresh_ = Clock::now();
  // The seed first, then any other node rlock knows, until one answers.
  auto names = std::make_shared<std::vector<std::string>>();
  names->push_back(seed_);
  for (auto& [name, n] : nodes_)
    if (name != seed_) names->push_back(name);
  refresh_from(names, 0);
}

void Router::refresh_from(const std::shared_ptr<std::vector<std::string>>& names, size_t i) {
  if (i >= names->size()) {
    refreshing_ = false;
    return;
  }
  auto alive = alive_;
  ask_slots((*names)[i], [this, alive, names, i](Outcome<std::vector<std::string>> o) {
    if (!*alive) return;
    if (o.error) return refresh_from(names, i + 1);
    refreshing_ = false;
  });
}

void Router::ask_slots(const std::string& name, Done<std::vector<std::string>> done) {
  auto alive = alive_;
  std::string host = node(name).ep.host;
  node(name).conn->command(
      {"CLUSTER", "SLOTS"},
      [this, alive, name, host, done = std::move(done)](Result r) {
        if (!*alive) return;
        Outcome<std::vector<std::string>> o;
        try {
          // One server: it is the only master. A user whose ACL has no
          // CLUSTER (a read-only one) is answered the same way: `list` then
          // sees the node of the URL.
          if (!r.failure && r.reply.is_error() &&
              (not_a_cluster(r.reply.str) || starts_with(r.reply.str, "NOPERM"))) {
            o.value = {name};
            return done(std::move(o));
          }
          auto ranges = parse_cluster_slots(expect_ok(r, "CLUSTER SLOTS"));
          enter_cluster_mode(name);
          for (auto& range : ranges) {
            Endpoint at;
            at.host = range.host.empty() ? host : range.host;
            at.port = range.port;
            std::string owner = at.address();
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
    auto alive = alive_;
    command({"PING"}, [this, alive, done = std::move(done)](Result r) {
      if (!*alive) return;
      Outcome<std::vector<std::string>> o;
      try {
        expect_ok(r, "PING");
        o.value = {seed_};
      } catch (const Error& e) {
        o.error = e;
      }
      done(std::move(o));
    });
    return;
  }
  ask_slots(seed_, std::move(done));
}

void Router::open_subscriber(const std::string& channel, Done<std::unique_ptr<Connection>> done) {
  if (sentinel_ && seed_.empty()) {
    // Once the master is known: a PING finds (and confirms) it.
    auto alive = alive_;
    command({"PING"}, [this, alive, channel, done = std::move(done)](Result r) mutable {
      if (!*alive) return;
      if (r.failure || seed_.empty()) {
        Error e = r.failure ? *r.failure : Error(ErrorKind::Unavailable, "no master");
        return done(Outcome<std::unique_ptr<Connection>>{e, nullptr});
      }
      open_subscriber(channel, std::move(done));
    });
    return;
  }
  std::string target = seed_;
  if (cluster_) {
    const std::string& owner = slots_[key_slot(channel)];
    if (!owner.empty()) target = owner;
  }
  Node& n = node(target);
  ConnectionConfig c = cfg_;
  c.endpoint = n.ep;
  auto conn = std::make_shared<std::unique_ptr<Connection>>(
      std::make_unique<Connection>(loop_, c, tls_, n.book));
  // From the loop, never from inside this call.
  auto alive = alive_;
  loop_.after(Millis(0), [alive, conn, done = std::move(done)] {
    if (*alive) done(Outcome<std::unique_ptr<Connection>>{std::nullopt, std::move(*conn)});
  });
}

// ---- Sentinel ----

void Router::need_master(const CallPtr& c) {
  awaiting_master_.push_back(c);
  auto alive = alive_;
  c->timer = loop_.at(c->deadline, [this, alive, c] {
    if (!*alive || c->finished) return;
    c->timer = 0;
    awaiting_master_.erase(std::find(awaiting_master_.begin(), awaiting_master_.end(), c));
    Error e = last_find_error_.value_or(
        Error(ErrorKind::Unavailable, fmt::format("the sentinels named no master of '{}' in time",
                                                  escape_text(sentinel_->master_name()))));
    finish(c, Result{e, {}, true});
  });
  find_master();
}

void Router::find_master() {
  if (finding_) return;
  finding_ = true;
  auto alive = alive_;
  sentinel_->find([this, alive](Outcome<Endpoint> o) {
    if (!*alive) return;
    if (o.error) {
      // Nobody to ask, or nobody who knows the name: waiting will not help.
      finding_ = false;
      last_find_error_ = o.error;
      auto calls = std::move(awaiting_master_);
      awaiting_master_.clear();
      for (auto& c : calls) finish(c, Result{*o.error, {}, true});
      return;
    }
    master_found(o.value);
  });
}

void Router::master_found(const Endpoint& ep) {
  std::string name = ep.address();
  finding_ = true;
  // The sentinels' word is checked: a master that was demoted (a failover
  // the sentinel has not seen yet) would accept no write.
  auto alive = alive_;
  Node& n = node(name);
  n.conn->command({"ROLE"}, [this, alive, name](Result r) {
    if (!*alive) return;
    if (r.failure) return master_failed(*r.failure);
    if (r.reply.is_error()) {
      // A user whose ACL has no ROLE: the sentinels' word has to do.
      if (!starts_with(r.reply.str, "NOPERM"))
        return master_failed(
            server_error(r.reply.str, fmt::format("ROLE at {}", escape_text(name))));
    } else {
      std::string role = r.reply.type == Reply::Type::Array && !r.reply.elements.empty()
                             ? r.reply.elements[0].text()
                             : "";
      if (role != "master")
        return master_failed(
            Error(ErrorKind::Unavailable,
                  fmt::format("the sentinels name {} as the master of '{}', but it is {} (ROLE)",
                              escape_text(name), escape_text(sentinel_->master_name()),
                              role.empty() ? "not a master"
                                           : "a " + escape_text(truncate_text(role, 32)))));
    }
    finding_ = false;
    last_find_error_.reset();
    if (seed_ != name && cfg_.trace)
      cfg_.trace(fmt::format("using the master {} of '{}'", escape_text(name),
                             escape_text(sentinel_->master_name())));
    seed_ = name;
    auto calls = std::move(awaiting_master_);
    awaiting_master_.clear();
    for (auto& c : calls) {
      loop_.cancel(c->timer);
      c->timer = 0;
      if (!c->finished) dispatch(c);
    }
  });
}

void Router::master_failed(const Error& why) {
  // Not (yet) a usable master: a failover in progress. Asked again soon, as
  // long as some command still has time to wait for it.
  finding_ = false;
  last_find_error_ = why;
  seed_.clear();
  if (cfg_.trace) cfg_.trace(fmt::format("{}; asking the sentinels again", why.what()));
  if (awaiting_master_.empty()) return;
  auto alive = alive_;
  loop_.after(Millis(200), [this, alive] {
    if (*alive && !awaiting_master_.empty()) find_master();
  });
}

void Router::master_moved(const Endpoint& ep, const std::string& why) {
  std::string name = ep.address();
  if (name == seed_) return;
  std::string old = seed_;
  seed_.clear();
  Error e(ErrorKind::Unavailable, why);
  // Commands in flight on the old master fail (the callers retry them);
  // subscriptions end and start again on the new one.
  if (auto it = nodes_.find(old); it != nodes_.end()) it->second->conn->close(e);
  topology_changed(e);
  if (!finding_) master_found(ep);
}

void Router::stay() {
  if (!sentinel_) return;
  auto alive = alive_;
  sentinel_->watch([this, alive](const Endpoint& ep) {
    if (!*alive) return;
    master_moved(ep, fmt::format("failover: the master of '{}' is now {}",
                                 escape_text(sentinel_->master_name()), escape_text(ep.address())));
  });
}

std::unique_ptr<Client> make_client(Loop& loop, const ConnectionConfig& cfg) {
  return std::make_unique<Router>(loop, cfg);
}

}  // namespace rlock
