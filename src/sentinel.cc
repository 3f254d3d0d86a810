#include "sentinel.h"

#include <fmt/format.h>

#include <charconv>

#include "resolver.h"
#include "text.h"

namespace rlock {

namespace {

// How long a lost +switch-master watch waits before it moves on.
constexpr Millis kRewatch{1000};

std::string list_of(const std::vector<Endpoint>& eps) {
  std::string out;
  for (auto& e : eps) out += (out.empty() ? "" : ", ") + escape_text(e.address());
  return out;
}

}  // namespace

// One find(): the sentinels are asked one after the other, starting with the
// preferred one, until one names the master.
struct SentinelDiscovery::Search {
  Done<Endpoint> done;
  size_t asked = 0;
  size_t unknown = 0;  // sentinels that answered but do not know the name
  std::optional<Error> last;
  std::optional<Error> refused;  // a permission error from a sentinel
};

SentinelDiscovery::SentinelDiscovery(Loop& loop, const ConnectionConfig& cfg,
                                     std::shared_ptr<TlsContext> tls)
    : loop_(loop), cfg_(cfg), tls_(std::move(tls)) {
  conns_.resize(cfg_.sentinel->sentinels.size());
}

SentinelDiscovery::~SentinelDiscovery() {
  *alive_ = false;
  loop_.cancel(rewatch_timer_);
}

Connection& SentinelDiscovery::connection(size_t i) {
  if (!conns_[i]) {
    ConnectionConfig c = cfg_;
    c.endpoint = cfg_.sentinel->sentinels[i];
    c.password_source = cfg_.sentinel->password_source;
    c.sentinel.reset();
    conns_[i] = std::make_unique<Connection>(
        loop_, c, tls_, std::make_shared<AddressBook>(loop_, c.endpoint, c.connect_timeout));
  }
  return *conns_[i];
}

Endpoint SentinelDiscovery::master_at(const std::string& host, int port) const {
  Endpoint ep = cfg_.endpoint;
  ep.kind = Endpoint::Kind::Tcp;
  ep.host = host;
  ep.port = port;
  return ep;
}

void SentinelDiscovery::find(Done<Endpoint> done) {
  auto s = std::make_shared<Search>();
  s->done = std::move(done);
  ask(s);
}

void SentinelDiscovery::ask(const std::shared_ptr<Search>& s) {
  const auto& sentinels = cfg_.sentinel->sentinels;
  const std::string& name = cfg_.sentinel->master_name;
  if (s->asked == sentinels.size()) {
    Error e = s->unknown > 0
                  ? Error(ErrorKind::Unavailable,
                          fmt::format("no sentinel knows a master named '{}' (asked {}): check the "
                                      "name in the URL",
                                      escape_text(name), list_of(sentinels)))
              : s->refused ? *s->refused
                           : Error(ErrorKind::Unavailable,
                                   fmt::format("no sentinel answered ({}): {}", list_of(sentinels),
                                               s->last ? s->last->what() : "no reply"));
    auto done = std::move(s->done);
    return done(Outcome<Endpoint>{e, {}});
  }
  size_t i = (preferred_ + s->asked) % sentinels.size();
  ++s->asked;
  auto alive = alive_;
  connection(i).command(
      {"SENTINEL", "get-master-addr-by-name", name}, [this, alive, s, i](Result r) {
        if (!*alive) return;
        const Endpoint& at = cfg_.sentinel->sentinels[i];
        if (r.failure) {
          s->last = r.failure;
          if (r.failure->kind() == ErrorKind::Permission) s->refused = r.failure;
          return ask(s);
        }
        if (r.reply.is_error()) {
          Error e = server_error(r.reply.str,
                                 fmt::format("sentinel {} refused SENTINEL get-master-addr-by-name",
                                             escape_text(at.address())));
          s->last = e;
          if (e.kind() == ErrorKind::Permission) s->refused = e;
          return ask(s);
        }
        if (r.reply.is_nil()) {
          ++s->unknown;
          return ask(s);
        }
        // [host, port]: checked like any reply.
        int port = 0;
        std::string host;
        if (r.reply.type == Reply::Type::Array && r.reply.elements.size() == 2) {
          host = r.reply.elements[0].text();
          std::string p = r.reply.elements[1].text();
          auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
          if (ec != std::errc() || end != p.data() + p.size() || port < 1 || port > 65535) port = 0;
        }
        bool plausible = port > 0 && !host.empty() && host.size() <= 255;
        for (unsigned char c : host) plausible = plausible && c > 0x20 && c != 0x7f && c != '/';
        if (!plausible) {
          s->last = Error(
              ErrorKind::Protocol,
              fmt::format("sentinel {} gave an address rlock cannot use for '{}'",
                          escape_text(at.address()), escape_text(cfg_.sentinel->master_name)));
          return ask(s);
        }
        preferred_ = i;
        if (cfg_.trace)
          cfg_.trace(fmt::format("sentinel {} names {}:{} as the master of '{}'",
                                 escape_text(at.address()), escape_text(host), port,
                                 escape_text(cfg_.sentinel->master_name)));
        auto done = std::move(s->done);
        done(Outcome<Endpoint>{std::nullopt, master_at(host, port)});
      });
}

void SentinelDiscovery::watch(std::function<void(const Endpoint&)> moved) {
  if (moved_) return;
  moved_ = std::move(moved);
  watching_ = preferred_;
  start_watch();
}

void SentinelDiscovery::start_watch() {
  ConnectionConfig c = cfg_;
  c.endpoint = cfg_.sentinel->sentinels[watching_];
  c.password_source = cfg_.sentinel->password_source;
  c.sentinel.reset();
  watch_conn_ = std::make_unique<Connection>(
      loop_, c, tls_, std::make_shared<AddressBook>(loop_, c.endpoint, c.connect_timeout));
  auto alive = alive_;
  watch_conn_->on_push([this, alive](const Reply& r) {
    if (!*alive || r.elements.size() < 3) return;
    // "+switch-master NAME OLDIP OLDPORT NEWIP NEWPORT"
    std::vector<std::string> words;
    const std::string& text = r.elements[2].str;
    for (size_t at = 0; at < text.size();) {
      size_t sp = text.find(' ', at);
      words.push_back(text.substr(at, sp == std::string::npos ? sp : sp - at));
      if (sp == std::string::npos) break;
      at = sp + 1;
    }
    int port = 0;
    if (words.size() != 5 || words[0] != cfg_.sentinel->master_name) return;
    auto [end, ec] = std::from_chars(words[4].data(), words[4].data() + words[4].size(), port);
    if (ec != std::errc() || port < 1 || port > 65535 || words[3].empty()) return;
    if (cfg_.trace)
      cfg_.trace(fmt::format("sentinel announces a failover of '{}' to {}:{}",
                             escape_text(words[0]), escape_text(words[3]), port));
    moved_(master_at(words[3], port));
  });
  watch_conn_->on_disconnect([this, alive](const Error& e) {
    if (*alive) watch_lost(e);
  });
  watch_conn_->command({"SUBSCRIBE", "+switch-master"}, [this, alive](Result r) {
    if (!*alive) return;
    if (r.failure) return watch_lost(*r.failure);
    if (r.reply.is_error())
      return watch_lost(server_error(r.reply.str, "SUBSCRIBE +switch-master"));
  });
}

void SentinelDiscovery::watch_lost(const Error& why) {
  if (cfg_.trace) cfg_.trace(fmt::format("lost the failover watch: {}", why.what()));
  if (watch_conn_) {
    std::shared_ptr<Connection> old(std::move(watch_conn_));
    loop_.after(Millis(0), [old] {});
  }
  watching_ = (watching_ + 1) % cfg_.sentinel->sentinels.size();
  auto alive = alive_;
  loop_.cancel(rewatch_timer_);
  rewatch_timer_ = loop_.after(kRewatch, [this, alive] {
    if (!*alive) return;
    rewatch_timer_ = 0;
    start_watch();
    // A switch announced while nobody listened: ask for the master again.
    find([this, alive](Outcome<Endpoint> o) {
      if (*alive && !o.error) moved_(o.value);
    });
  });
}

}  // namespace rlock
