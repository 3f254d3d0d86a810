#include "net/subscription.h"

#include <fmt/format.h>

#include "core/text.h"

namespace rlock {

namespace {

bool redirected(const Result& r) {
  return !r.failure && r.reply.is_error() &&
         (r.reply.str.rfind("MOVED ", 0) == 0 || r.reply.str.rfind("ASK ", 0) == 0);
}

// How long one BLPOP blocks (seconds, the server's timeout); a nil reply
// sends the next. The connection's own timeout for it is this plus the
// command timeout, so a server that stalls is still noticed.
constexpr int kPopSeconds = 30;

}  // namespace

Subscription::Subscription(Client& client, std::string channel, Events events)
    : client_(&client), channel_(std::move(channel)), ev_(std::move(events)) {
  client_->subscriptions_.insert(this);
}

Subscription::~Subscription() {
  life_.end();
  if (client_) client_->subscriptions_.erase(this);
}

void Subscription::start() {
  if (!client_) return;
  moved_ = false;
  drop();
  unsigned gen = ++generation_;
  auto alive = life_.token();
  client_->open_subscriber(channel_, [this, alive, gen](Outcome<std::unique_ptr<Connection>> o) {
    if (!alive || gen != generation_) return;
    if (o.error) return fail(*o.error);
    opened(std::move(o.value));
  });
}

void Subscription::opened(std::unique_ptr<Connection> conn) {
  conn_ = std::move(conn);
  auto alive = life_.token();
  unsigned gen = generation_;
  conn_->on_push([this, alive, gen](const Reply& r) {
    if (alive && gen == generation_) on_push(r);
  });
  conn_->on_disconnect([this, alive, gen](const Error& e) {
    if (alive && gen == generation_) fail(e);
  });
  if (!list_.empty()) {
    // ready() once the server can be reached: BLPOP answers only when an
    // item comes.
    conn_->on_established([this, alive, gen] {
      if (alive && gen == generation_) ev_.ready();
    });
    popping_ = false;
    pop();
    return;
  }
  if (classic_only_) {
    conn_->command({"SUBSCRIBE", channel_}, [this, alive, gen](Result r) {
      if (!alive || gen != generation_) return;
      if (r.failure) return fail(*r.failure);
      if (r.reply.is_error())
        return fail(server_error(r.reply.str,
                                 fmt::format("Redis refused SUBSCRIBE {}", escape_text(channel_))));
      ev_.ready();
    });
    return;
  }
  auto classic = std::make_shared<std::optional<Result>>();
  conn_->command({"SUBSCRIBE", channel_}, [classic](Result r) { *classic = std::move(r); });
  conn_->command({"SSUBSCRIBE", channel_}, [this, alive, gen, classic](Result r) {
    if (!alive || gen != generation_ || !*classic) return;
    subscribed(std::move(**classic), std::move(r));
  });
}

void Subscription::subscribed(Result classic, Result sharded) {
  if (classic.failure) return fail(*classic.failure);
  if (sharded.failure) return fail(*sharded.failure);
  // In a Cluster, the shard channel lives on the node that owns its slot: a
  // redirect means the map was stale; the owner subscribes again there.
  if (redirected(sharded)) {
    client_->learn(sharded.reply.str);
    return fail(Error(ErrorKind::Unavailable,
                      fmt::format("the slot of channel {} is served by another node ({})",
                                  escape_text(channel_), escape_text(sharded.reply.str))));
  }
  // One of the two is enough: a server without sharded pub/sub (Redis 6)
  // refuses SSUBSCRIBE, and its scripts publish with PUBLISH.
  if (classic.reply.is_error() && sharded.reply.is_error())
    return fail(server_error(classic.reply.str,
                             fmt::format("Redis refused SUBSCRIBE {}", escape_text(channel_))));
  ev_.ready();
}

void Subscription::rearm() {
  if (!list_.empty() && conn_ && !popping_) pop();
}

void Subscription::pop() {
  if (!conn_ || !client_) return;
  popping_ = true;
  auto alive = life_.token();
  unsigned gen = generation_;
  Millis limit = Millis(kPopSeconds * 1000) + client_->command_timeout();
  conn_->command(
      {"BLPOP", list_, std::to_string(kPopSeconds)},
      [this, alive, gen](Result r) {
        if (!alive || gen != generation_) return;
        popping_ = false;
        if (r.failure) return fail(*r.failure);
        if (redirected(r)) {
          // A Cluster node unblocks a BLPOP whose slot moved away (-MOVED),
          // and answers -ASK while it migrates (the list is not there): not
          // an outage (moved()), however long the migration lasts.
          client_->learn(r.reply.str);
          moved_ = true;
          return fail(Error(ErrorKind::Unavailable,
                            fmt::format("the slot of {} moved to another node ({})",
                                        escape_text(list_), escape_text(r.reply.str))));
        }
        if (r.reply.is_error()) {
          // A master turned replica unblocks it (-UNBLOCKED): a failover.
          if (r.reply.str.rfind("UNBLOCKED", 0) == 0)
            return fail(Error(ErrorKind::Unavailable,
                              fmt::format("BLPOP {} was ended by the server: {}",
                                          escape_text(list_), escape_text(r.reply.str))));
          return fail(
              server_error(r.reply.str, fmt::format("Redis refused BLPOP {}", escape_text(list_))));
        }
        // [key, item], or nil when the server's timeout ran out: wait again.
        if (r.reply.is_nil()) return pop();
        const auto& e = r.reply.elements;
        if (r.reply.type != Reply::Type::Array || e.size() != 2 || e[1].type != Reply::Type::String)
          return fail(Error(ErrorKind::Protocol,
                            fmt::format("unexpected reply to BLPOP {}", escape_text(list_))));
        ev_.message(e[1].str);
      },
      limit);
}

void Subscription::on_push(const Reply& r) {
  const auto& e = r.elements;
  if (e.size() < 2 || e[1].str != channel_) return;
  if (e[0].str == "sunsubscribe") {
    return fail(
        Error(ErrorKind::Unavailable,
              fmt::format("the slot of channel {} moved to another node", escape_text(channel_))));
  }
  if (e.size() >= 3) ev_.message(e[2].str);
}

void Subscription::barrier(std::function<void()> done) {
  if (!conn_ || !client_) {
    if (client_)
      client_->loop().after(Millis(0), std::move(done));
    else
      done();
    return;
  }
  // In RESP2 a subscribed connection answers PING with ["pong", ""], in
  // order with the messages it pushes.
  conn_->command({"PING"}, [done = std::move(done)](Result) { done(); });
}

void Subscription::end(const Error& why) {
  if (!conn_) return;
  fail(why);
}

void Subscription::home_changed(const Error& why) {
  if (!conn_) return;
  moved_ = true;
  fail(why);
}

void Subscription::fail(const Error& why) {
  drop();
  ++generation_;  // whatever the old connection still says is not heard
  ev_.failed(why);
}

void Subscription::drop() {
  if (!conn_ || !client_) {
    conn_.reset();
    return;
  }
  // Not destroyed here: this may run inside one of its own callbacks.
  std::shared_ptr<Connection> old(std::move(conn_));
  client_->loop().after(Millis(0), [old] {});
}

Subscriptions::Subscriptions(std::vector<Client*> clients, const std::string& channel,
                             Subscription::Events events, Millis retry)
    : loop_(clients.front()->loop()), ev_(std::move(events)), retry_(retry) {
  timers_.resize(clients.size(), 0);
  auto alive = life_.token();
  for (size_t i = 0; i < clients.size(); ++i) {
    Subscription::Events ev;
    ev.message = life_.guard([this](const std::string& payload) { ev_.message(payload); });
    ev.ready = life_.guard([this] { ev_.ready(); });
    std::string who = clients.size() > 1 ? clients[i]->name() + ": " : "";
    ev.failed = [this, alive, i, who](const Error& e) {
      if (!alive) return;
      ev_.failed(e.reworded(who + e.what()));
      if (e.kind() != ErrorKind::Unavailable) return;
      loop_.cancel(timers_[i]);
      // After a failover the holder's lease is checked on the new master as
      // soon as this is back (ready): a grant lost with the old one is
      // noticed then, not a second later.
      timers_[i] = loop_.after(subs_[i]->moved() ? Millis(0) : retry_, [this, alive, i] {
        if (!alive) return;
        timers_[i] = 0;
        subs_[i]->start();
      });
    };
    subs_.push_back(std::make_unique<Subscription>(*clients[i], channel, std::move(ev)));
  }
}

Subscriptions::~Subscriptions() {
  life_.end();
  for (auto t : timers_) loop_.cancel(t);
}

void Subscriptions::start() {
  for (auto& s : subs_) s->start();
}

void Subscriptions::barrier(std::function<void()> done) {
  if (subs_.empty()) {
    loop_.after(Millis(0), std::move(done));
    return;
  }
  auto left = std::make_shared<size_t>(subs_.size());
  auto shared = std::make_shared<std::function<void()>>(std::move(done));
  auto alive = life_.token();
  for (auto& s : subs_)
    s->barrier([alive, left, shared] {
      if (alive && --*left == 0) (*shared)();
    });
}

}  // namespace rlock
