#include "net/sentinel.h"

#include <fmt/format.h>

#include <charconv>

#include "core/text.h"
#include "net/resolver.h"

namespace rlock {

namespace {

// How long a lost +switch-master watch waits before it moves on.
constexpr Millis kRewatch{1000};

std::string list_of(const std::vector<Endpoint>& eps) {
  std::string out;
  for (auto& e : eps) out += (out.empty() ? "" : ", ") + escape_text(e.address());
  return out;
}

bool parse_port(const std::string& p, int& port) {
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
  return ec == std::errc() && end == p.data() + p.size() && port >= 1 && port <= 65535;
}

bool plausible_host(const std::string& host) {
  if (host.empty() || host.size() > 255) return false;
  for (unsigned char c : host)
    if (c <= 0x20 || c == 0x7f || c == '/') return false;
  return true;
}

}  // namespace

// One find(): every sentinel is asked at once; what each named is kept until
// all have answered (or kSurveyGrace after the first that named a master).
// What the others said decides the error when none names one.
struct SentinelDiscovery::Survey {
  Done<MasterInfo> done;
  size_t pending = 0;
  std::vector<std::optional<MasterInfo>> named;  // by sentinel
  size_t unknown = 0;                            // sentinels that do not know the name
  std::optional<Error> refused;                  // a permission error from a sentinel
  std::optional<Error> garbage;                  // an answer rlock cannot use
  std::optional<Error> silent;                   // a sentinel that could not be reached in time
  Loop::TimerId grace = 0;
  bool decided = false;
};

SentinelDiscovery::SentinelDiscovery(Loop& loop, const ConnectionConfig& cfg,
                                     std::shared_ptr<TlsContext> tls)
    : loop_(loop), cfg_(cfg), tls_(std::move(tls)) {
  conns_.resize(cfg_.sentinel->sentinels.size());
  addr_only_.resize(cfg_.sentinel->sentinels.size(), false);
}

SentinelDiscovery::~SentinelDiscovery() {
  life_.end();
  loop_.cancel(rewatch_timer_);
  loop_.cancel(poll_timer_);
}

Connection& SentinelDiscovery::connection(size_t i) {
  if (!conns_[i]) {
    ConnectionConfig c = cfg_;
    c.endpoint = cfg_.sentinel->sentinels[i];
    c.password_source = cfg_.sentinel->password_source;
    c.server_kind = "sentinel";
    c.sentinel.reset();
    conns_[i] = std::make_unique<Connection>(
        loop_, c, tls_, std::make_shared<AddressBook>(loop_, c.endpoint, c.connect_timeout));
  }
  return *conns_[i];
}

// The sentinels are asked at the same time, so each may take most of
// --command-timeout (a loaded one answers late, but answers); three quarters (at least
// half a second) leaves the command waiting for the master time to report why
// none answered. One that hangs while another answers costs kSurveyGrace.
Millis SentinelDiscovery::query_timeout() const {
  Millis t = cfg_.command_timeout;
  return std::min(t, std::max(Millis(500), t * 3 / 4));
}

Endpoint SentinelDiscovery::master_at(const std::string& host, int port) const {
  Endpoint ep = cfg_.endpoint;
  ep.kind = Endpoint::Kind::Tcp;
  ep.host = host;
  ep.port = port;
  return ep;
}

void SentinelDiscovery::find(Done<MasterInfo> done) {
  auto s = std::make_shared<Survey>();
  s->done = std::move(done);
  size_t n = cfg_.sentinel->sentinels.size();
  s->named.resize(n);
  s->pending = n;
  for (size_t i = 0; i < n; ++i) query(s, i);
}

void SentinelDiscovery::distrust(const MasterInfo& named) {
  rejected_ = named;
}

// The address and the epoch, pipelined on the sentinel's connection: one
// round trip. Written together, they normally reach the sentinel in one read,
// and it answers both before its timer (which drives a failover) runs again,
// so the epoch is the one of that address. A sentinel that refuses SENTINEL
// MASTER (an ACL that allows only get-master-addr-by-name) is asked only for
// the address from then on.
void SentinelDiscovery::query(const std::shared_ptr<Survey>& s, size_t i) {
  const std::string& name = cfg_.sentinel->master_name;
  auto alive = life_.token();
  Millis t = query_timeout();
  if (addr_only_[i]) {
    connection(i).command(
        {"SENTINEL", "get-master-addr-by-name", name},
        [this, alive, s, i](Result r) {
          if (alive) answered(s, i, std::move(r), std::nullopt);
        },
        t);
    return;
  }
  auto addr = std::make_shared<Result>();
  connection(i).command(
      {"SENTINEL", "get-master-addr-by-name", name}, [addr](Result r) { *addr = std::move(r); }, t);
  connection(i).command(
      {"SENTINEL", "MASTER", name},
      [this, alive, s, i, addr](Result r) {
        if (alive) answered(s, i, std::move(*addr), std::move(r));
      },
      t);
}

long long SentinelDiscovery::epoch_of(size_t i, const std::optional<Result>& master,
                                      const Endpoint& named) const {
  if (!master || master->failure) return -1;
  const Reply& rep = master->reply;
  if (rep.is_error()) return -1;  // refused (see answered) or a race with a removal
  if (rep.type != Reply::Type::Array) return -2;
  std::string epoch_text, ip, port;
  const auto& e = rep.elements;
  for (size_t k = 0; k + 1 < e.size(); k += 2) {
    const std::string f = e[k].text();
    if (f == "config-epoch")
      epoch_text = e[k + 1].text();
    else if (f == "ip")
      ip = e[k + 1].text();
    else if (f == "port")
      port = e[k + 1].text();
  }
  if (cfg_.trace && !ip.empty() && (ip != named.host || port != std::to_string(named.port)))
    cfg_.trace(
        fmt::format("sentinel {} is failing over: SENTINEL MASTER still names {}:{}, "
                    "get-master-addr-by-name already {}",
                    escape_text(cfg_.sentinel->sentinels[i].address()), escape_text(ip),
                    escape_text(port), escape_text(named.address())));
  if (epoch_text.empty()) return -1;
  long long epoch = -1;
  auto [end, ec] = std::from_chars(epoch_text.data(), epoch_text.data() + epoch_text.size(), epoch);
  if (ec != std::errc() || end != epoch_text.data() + epoch_text.size() || epoch < 0) return -2;
  return epoch;
}

void SentinelDiscovery::answered(const std::shared_ptr<Survey>& s, size_t i, Result r,
                                 std::optional<Result> master) {
  if (s->decided) return;
  const Endpoint& at = cfg_.sentinel->sentinels[i];
  std::string who = escape_text(at.address());
  if (master && !master->failure && master->reply.is_error() &&
      (master->reply.str.starts_with("NOPERM") || master->reply.str.starts_with("ERR unknown")))
    addr_only_[i] = true;  // no epoch from this one, and no need to ask again
  if (r.failure) {
    if (r.failure->kind() == ErrorKind::Permission)
      s->refused = r.failure;
    else if (r.failure->kind() == ErrorKind::Protocol)
      s->garbage = r.failure;
    else
      s->silent = r.failure;
    return one_done(s);
  }
  const Reply& rep = r.reply;
  if (rep.is_nil()) {
    ++s->unknown;
    return one_done(s);
  }
  if (rep.is_error()) {
    Error e = server_error(rep.str, fmt::format("sentinel {}", who));
    if (e.kind() == ErrorKind::Permission) {
      s->refused = Error(
          ErrorKind::Permission,
          fmt::format("{}{}", e.what(),
                      at.password ? ""
                                  : " (a sentinel's password goes in --sentinel-password-file "
                                    "or RLOCK_SENTINEL_PASSWORD; the URL's is the master's)"));
    } else {
      s->garbage = e;
    }
    return one_done(s);
  }
  // get-master-addr-by-name: [host, port]. Checked like any reply.
  std::string host, port_text;
  if (rep.type == Reply::Type::Array && rep.elements.size() == 2) {
    host = rep.elements[0].text();
    port_text = rep.elements[1].text();
  }
  int port = 0;
  long long epoch = -2;
  if (plausible_host(host) && parse_port(port_text, port))
    epoch = epoch_of(i, master, master_at(host, port));
  if (epoch == -2) {
    s->garbage = Error(ErrorKind::Protocol,
                       fmt::format("sentinel {} gave an address rlock cannot use for '{}'", who,
                                   escape_text(cfg_.sentinel->master_name)));
    return one_done(s);
  }
  if (cfg_.trace)
    cfg_.trace(fmt::format("sentinel {} names {}:{} as the master of '{}'{}", who,
                           escape_text(host), port, escape_text(cfg_.sentinel->master_name),
                           epoch >= 0 ? fmt::format(" (epoch {})", epoch) : ""));
  s->named[i] = MasterInfo{master_at(host, port), epoch};
  if (!s->grace) {
    auto alive = life_.token();
    s->grace = loop_.after(kSurveyGrace, [this, alive, s] {
      s->grace = 0;
      if (alive) decide(s);
    });
  }
  one_done(s);
}

void SentinelDiscovery::one_done(const std::shared_ptr<Survey>& s) {
  if (--s->pending == 0) decide(s);
}

void SentinelDiscovery::decide(const std::shared_ptr<Survey>& s) {
  if (s->decided) return;
  s->decided = true;
  loop_.cancel(s->grace);
  s->grace = 0;
  const auto& sentinels = cfg_.sentinel->sentinels;
  // The highest epoch wins; a master ROLE refuted ranks last; then the URL's
  // order.
  auto rank = [this](const MasterInfo& m) {
    bool refuted = rejected_ && rejected_->endpoint.address() == m.endpoint.address() &&
                   rejected_->epoch == m.epoch;
    return std::make_pair(!refuted, m.epoch);
  };
  std::optional<size_t> best;
  for (size_t i = 0; i < s->named.size(); ++i)
    if (s->named[i] && (!best || rank(*s->named[i]) > rank(*s->named[*best]))) best = i;
  auto done = std::move(s->done);
  if (best) {
    const MasterInfo& m = *s->named[*best];
    if (cfg_.trace)
      for (size_t i = 0; i < s->named.size(); ++i)
        if (s->named[i] && s->named[i]->endpoint.address() != m.endpoint.address()) {
          cfg_.trace(fmt::format("the sentinels disagree: taking {} (epoch {}) from {}",
                                 escape_text(m.endpoint.address()), m.epoch,
                                 escape_text(sentinels[*best].address())));
          break;
        }
    last_answer_ = *best;
    return done(Outcome<MasterInfo>{std::nullopt, m});
  }
  // Nobody named it: the most telling answer wins.
  const std::string& name = cfg_.sentinel->master_name;
  std::string asked = list_of(sentinels);
  Error e = s->unknown > 0
                ? Error(ErrorKind::Unavailable,
                        fmt::format("no sentinel knows a master named '{}' (asked {}): check the "
                                    "name in the URL",
                                    escape_text(name), asked))
            : s->refused ? *s->refused
            : s->garbage ? Error(ErrorKind::Protocol,
                                 fmt::format("no sentinel named a master of "
                                             "'{}' (asked {}): {}",
                                             escape_text(name), asked, s->garbage->what()))
                         : Error(ErrorKind::Unavailable,
                                 fmt::format("no sentinel answered ({}): {}", asked,
                                             s->silent ? s->silent->what() : "no reply"),
                                 -1, s->silent ? s->silent->cause() : Cause::Timeout);
  done(Outcome<MasterInfo>{e, {}});
}

void SentinelDiscovery::watch(std::function<void(const MasterInfo&, bool)> news) {
  if (news_) return;
  news_ = std::move(news);
  watching_ = last_answer_;
  start_watch();
  auto alive = life_.token();
  poll_timer_ = loop_.after(kSentinelPoll, [this, alive] {
    if (alive) poll();
  });
}

// The watch alone is not enough: the watched sentinel may hang, or the watch
// may have been set up after the announcement. So the sentinels are also
// asked every kSentinelPoll.
void SentinelDiscovery::poll() {
  poll_timer_ = 0;
  auto alive = life_.token();
  auto again = [this, alive] {
    if (alive)
      poll_timer_ = loop_.after(kSentinelPoll, [this, alive] {
        if (alive) poll();
      });
  };
  find([this, alive, again](Outcome<MasterInfo> o) {
    if (!alive) return;
    if (!o.error) news_(o.value, false);
    again();
  });
}

void SentinelDiscovery::start_watch() {
  ConnectionConfig c = cfg_;
  c.endpoint = cfg_.sentinel->sentinels[watching_];
  c.password_source = cfg_.sentinel->password_source;
  c.server_kind = "sentinel";
  c.sentinel.reset();
  watch_conn_ = std::make_unique<Connection>(
      loop_, c, tls_, std::make_shared<AddressBook>(loop_, c.endpoint, c.connect_timeout));
  auto alive = life_.token();
  watch_conn_->on_push([this, alive](const Reply& r) {
    if (!alive || r.elements.size() < 3) return;
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
    if (!plausible_host(words[3]) || !parse_port(words[4], port)) return;
    if (cfg_.trace)
      cfg_.trace(fmt::format("sentinel announces a failover of '{}' to {}:{}",
                             escape_text(words[0]), escape_text(words[3]), port));
    news_(MasterInfo{master_at(words[3], port), -1}, true);
  });
  watch_conn_->on_disconnect([this, alive](const Error& e) {
    if (alive) watch_lost(e);
  });
  watch_conn_->command({"SUBSCRIBE", "+switch-master"}, [this, alive](Result r) {
    if (!alive) return;
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
  auto alive = life_.token();
  loop_.cancel(rewatch_timer_);
  rewatch_timer_ = loop_.after(kRewatch, [this, alive] {
    if (!alive) return;
    rewatch_timer_ = 0;
    start_watch();
  });
}

// ---- the master, as the Router uses it ----

SentinelMaster::SentinelMaster(Loop& loop, const ConnectionConfig& cfg,
                               std::shared_ptr<TlsContext> tls, Events events)
    : loop_(loop), cfg_(cfg), discovery_(loop, cfg, std::move(tls)), events_(std::move(events)) {}

SentinelMaster::~SentinelMaster() {
  life_.end();
}

void SentinelMaster::find() {
  if (finding_) return;
  finding_ = true;
  auto alive = life_.token();
  discovery_.find([this, alive](Outcome<MasterInfo> o) {
    if (!alive) return;
    // Nobody to ask, or nobody who knows the name: waiting will not help.
    if (o.error) return give_up(*o.error);
    found(o.value);
  });
}

void SentinelMaster::give_up(const Error& why) {
  finding_ = false;
  last_error_ = why;
  events_.failed(why);
}

void SentinelMaster::found(const MasterInfo& info) {
  std::string name = info.endpoint.address();
  finding_ = true;
  // The sentinels' word is checked: a replica, or a master that was demoted
  // (a failover that sentinel has not seen yet), would accept no write.
  auto alive = life_.token();
  events_.connection(info.endpoint).command({"ROLE"}, [this, alive, name, info](Result r) {
    if (!alive) return;
    if (r.failure) {
      // A password the master refuses will not work later either.
      if (r.failure->kind() == ErrorKind::Permission || r.failure->kind() == ErrorKind::Usage)
        return give_up(*r.failure);
      return failed(*r.failure);
    }
    const Reply& rep = r.reply;
    if (rep.is_error()) {
      Error e = server_error(rep.str, fmt::format("ROLE at {}", escape_text(name)));
      if (e.kind() == ErrorKind::Permission && !rep.str.starts_with("NOPERM")) return give_up(e);
      // NOPERM (an ACL without ROLE) or a server without it: the sentinels'
      // word has to do. Anything else (LOADING…) passes.
      if (!rep.str.starts_with("NOPERM") && !rep.str.starts_with("ERR unknown")) return failed(e);
    } else {
      std::string role =
          rep.type == Reply::Type::Array && !rep.elements.empty() ? rep.elements[0].text() : "";
      if (role != "master") {
        discovery_.distrust(info);
        return failed(
            Error(ErrorKind::Unavailable,
                  fmt::format("the sentinels name {} as the master of '{}', but it answers ROLE "
                              "with '{}'",
                              escape_text(name), escape_text(master_name()),
                              escape_text(truncate_text(role, 32)))));
      }
    }
    finding_ = false;
    last_error_.reset();
    if (master_ != name)
      trace(fmt::format("using the master {} of '{}'", escape_text(name),
                        escape_text(master_name())));
    master_ = name;
    epoch_ = std::max(epoch_, info.epoch);
    events_.found();
  });
}

void SentinelMaster::lost(const std::string& name, const Error& why) {
  if (name != master_) return;
  trace(fmt::format("lost the master {}: {}", escape_text(name), why.what()));
  master_.clear();  // asked for again before the next command
}

void SentinelMaster::failed(const Error& why) {
  // Not (yet) a usable master: a failover in progress. Asked again soon, as
  // long as some command still has time to wait for it.
  finding_ = false;
  last_error_ = why;
  master_.clear();
  trace(fmt::format("{}; asking the sentinels again", why.what()));
  if (!events_.wanted()) return;
  auto alive = life_.token();
  loop_.after(Millis(200), [this, alive] {
    if (alive && events_.wanted()) find();
  });
}

void SentinelMaster::news(const MasterInfo& info, bool announced) {
  std::string name = info.endpoint.address();
  if (name == master_) {
    epoch_ = std::max(epoch_, info.epoch);
    return;
  }
  // A sentinel that has not heard of the last failover yet names the master
  // before it: only a newer configuration (or an announcement) moves rlock.
  // The epoch comes with the address of get-master-addr-by-name, so a leader
  // that is still reconfiguring the replicas after a planned failover moves
  // a holder off the deposed master at once; the holder's subscription then
  // starts again there and checks its lease (which a grant lost with the old
  // master does not have: 76).
  bool newer = announced || (info.epoch >= 0 && info.epoch > epoch_);
  if (!newer || master_.empty()) return;
  if (announced && epoch_ >= 0) ++epoch_;  // at least that
  moved(info, fmt::format("failover: the master of '{}' is now {}", escape_text(master_name()),
                          escape_text(name)));
}

void SentinelMaster::moved(const MasterInfo& info, const std::string& why) {
  std::string old = master_;
  master_.clear();
  Error e(ErrorKind::Unavailable, why);
  trace(why);
  // Commands in flight on the old master fail (the callers retry them);
  // subscriptions end and start again on the new one.
  events_.moved(old, e);
  if (!finding_) found(info);
}

// A grant counts only if the sentinels, asked after it was made, still name
// the master that made it: one that was made on a master they no longer name
// (a planned failover that has promoted a replica while the old master still
// takes writes, until it is reconfigured) would give the lock a second time
// once they switch. The survey is sent after the grant's reply arrived, so a
// master they named by then is never trusted with it.
void SentinelMaster::confirm(const std::string& node, Done<bool> done) {
  auto alive = life_.token();
  discovery_.find([this, alive, node, done = std::move(done)](Outcome<MasterInfo> o) {
    if (!alive) return;
    if (o.error) return done(Outcome<bool>{o.error, false});
    std::string named = o.value.endpoint.address();
    if (named == node) {
      if (node == master_) epoch_ = std::max(epoch_, o.value.epoch);
      return done(Outcome<bool>{std::nullopt, true});
    }
    // Sentinels that name another master from an older configuration than
    // the one rlock follows have not heard of the last failover: they
    // confirm nothing and move nothing (as news() does); the caller says it
    // could not confirm (a release: a warning, not a loss).
    if (o.value.epoch >= 0 && epoch_ >= 0 && o.value.epoch < epoch_)
      return done(Outcome<bool>{
          Error(ErrorKind::Unavailable,
                fmt::format("the sentinels name {} as the master of '{}' from an older "
                            "configuration (epoch {}, not {})",
                            escape_text(named), escape_text(master_name()), o.value.epoch, epoch_)),
          false});
    std::string why =
        fmt::format("failover: the master of '{}' is now {}, not {}", escape_text(master_name()),
                    escape_text(named), escape_text(node));
    if (master_ == node)
      moved(o.value, why);
    else
      trace(why);
    done(Outcome<bool>{std::nullopt, false});
  });
}

void SentinelMaster::named(Done<std::string> done) {
  auto alive = life_.token();
  discovery_.find([alive, done = std::move(done)](Outcome<MasterInfo> o) {
    if (!alive) return;
    if (o.error) return done(Outcome<std::string>{o.error, ""});
    done(Outcome<std::string>{std::nullopt, o.value.endpoint.address()});
  });
}

void SentinelMaster::stay() {
  auto alive = life_.token();
  discovery_.watch([this, alive](const MasterInfo& info, bool announced) {
    if (alive) news(info, announced);
  });
}

}  // namespace rlock
