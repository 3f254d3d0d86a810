#include "net/redis.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <poll.h>

#include "core/text.h"
#include "net/resolver.h"
#include "net/subscription.h"

namespace rlock {

Connection::Connection(Loop& loop, const ConnectionConfig& cfg, std::shared_ptr<TlsContext> tls,
                       std::shared_ptr<AddressBook> book)
    : loop_(loop), cfg_(cfg), tls_(std::move(tls)), book_(std::move(book)) {}

namespace {

// How long a TLS handshake may go unanswered before a plain-text probe asks
// whether the server speaks TLS at all (PlainProbe): Redis itself answers a
// PING on loopback in well under a millisecond.
constexpr Millis kTlsProbeAfter{400};

// The errors Redis gives a client that has not authenticated: NOAUTH, and the
// protocol error (then a hang-up) for a command too large to take unauthenticated.
bool wants_password(const std::string& m) {
  return m.rfind("NOAUTH", 0) == 0 ||
         m.find("Protocol error: unauthenticated") != std::string::npos;
}

}  // namespace

Connection::~Connection() {
  life_.end();
  stop_tls_probe();
  loop_.cancel(tls_check_timer_);
  loop_.cancel(connect_timer_);
  loop_.cancel(more_timer_);
  for (auto& p : pending_) loop_.cancel(p.timer);
  if (stream_) loop_.unwatch(stream_->fd());
}

void Connection::command(Args args, ReplyCallback cb, Millis timeout, Undo undo) {
  std::string name = args.empty() ? "" : args[0];
  if (idle()) {
    if (auto err = start_connect()) {
      // Report from the loop, never re-entrantly from inside command().
      loop_.after(Millis(0), life_.guard([cb = std::move(cb), err = *err] {
        cb(Result{err, Reply{}, true});
      }));
      return;
    }
  }
  enqueue_raw(args, std::move(cb), timeout, std::move(name), std::move(undo));
}

std::string Connection::format(const Args& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  argv.reserve(args.size());
  lens.reserve(args.size());
  for (auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  // hiredis's sds form: its redisFormatCommandArgv writes each length with
  // sprintf, about 19,000 instructions for a script call's 28 arguments
  // (docs/PERFORMANCE.md); the bytes are the same.
  sds cmd = nullptr;
  int len =
      redisFormatSdsCommandArgv(&cmd, static_cast<int>(argv.size()), argv.data(), lens.data());
  if (len < 0 || cmd == nullptr) throw_protocol("cannot format Redis command");
  std::string out(cmd, static_cast<size_t>(len));
  redisFreeSdsCommand(cmd);
  return out;
}

void Connection::enqueue_raw(const Args& args, ReplyCallback cb, Millis timeout, std::string name,
                             Undo undo) {
  out_ += format(args);
  Millis t = timeout.count() > 0 ? timeout : cfg_.command_timeout;
  auto alive = life_.token();
  auto id = loop_.after(t, [this, alive, t, name, undo = std::move(undo)] {
    if (!alive) return;
    if (undo && ready()) {
      try {
        for (auto& u : undo()) out_ += format(u);
        flush();
        if (cfg_.trace)
          cfg_.trace(fmt::format("{} timed out: compensating on the same connection", name));
      } catch (const Error&) {
        // Best effort: the connection is being dropped anyway.
      }
    }
    // A window computed from --command-timeout (what was left of it when the
    // command was sent: a millisecond or so less) is named as the setting.
    const bool configured = t <= cfg_.command_timeout && cfg_.command_timeout - t < Millis(50);
    close(Error(ErrorKind::Unavailable,
                fmt::format("{} at {} did not answer {} within {}ms{}", cfg_.server_kind,
                            cfg_.endpoint.display(), name,
                            configured ? cfg_.command_timeout.count() : t.count(),
                            configured ? " (--command-timeout)" : ""),
                -1, Cause::Timeout));
  });
  pending_.push_back(Pending{std::move(cb), id, Clock::now(), std::move(name)});
  if (ready()) {
    try {
      flush();
    } catch (const Error& e) {
      // The write failed (the peer reset the connection): the command fails
      // like any on a broken connection, from the loop and not inside this
      // call, so that a caller sending to several servers reaches the others.
      unsigned stream = streams_opened_;
      loop_.after(Millis(0), [this, alive, stream, e] {
        if (alive && stream_ && streams_opened_ == stream) broken(e);
      });
      out_.clear();
      return;
    }
  }
  update_events();
}

std::optional<Error> Connection::start_connect() {
  parser_ = std::make_unique<ReplyParser>();
  out_.clear();
  // A reconnect looks the name up again (a failover may have moved it); the
  // first connect uses what the book has, if it is fresh.
  if (auto addrs = book_->ready(connected_before_)) {
    addrs_ = std::move(*addrs);
    untried_ = addrs_.size();
    if (auto err = open_next_address()) return err;
  } else {
    resolving_ = true;
    auto alive = life_.token();
    book_->lookup([this, alive](std::optional<Error> err, const std::vector<Address>& addrs) {
      if (alive && resolving_) addresses_found(std::move(err), addrs);
    });
  }
  queue_handshake();
  return std::nullopt;
}

void Connection::addresses_found(std::optional<Error> err, const std::vector<Address>& addrs) {
  resolving_ = false;
  if (addrs.empty()) return close(err.value_or(Error(ErrorKind::Unavailable, "no address")));
  if (err && cfg_.trace)
    cfg_.trace(fmt::format("{}; using the addresses found before", err->what()));
  addrs_ = addrs;
  untried_ = addrs_.size();
  if (auto e = open_next_address()) return close(*e);
}

void Connection::queue_handshake() {
  // AUTH and SELECT go first; their replies are checked here, not by callers.
  auto alive = life_.token();
  Args auth;
  if (cfg_.endpoint.password) {
    auth = {"AUTH"};
    if (!cfg_.endpoint.user.empty()) auth.push_back(cfg_.endpoint.user);
    auth.push_back(*cfg_.endpoint.password);
  }
  auto check_select = [this, alive](Result r) {
    if (!alive || r.failure || !r.reply.is_error()) return;
    if (r.reply.str.find("DB index is out of range") != std::string::npos)
      return close(
          Error(ErrorKind::Usage, fmt::format("{} has no database {}: use a number below its "
                                              "'databases' setting (16 by default) in the URL",
                                              cfg_.endpoint.display(), cfg_.endpoint.db)));
    if (r.reply.str.find("cluster mode") != std::string::npos)
      return close(Error(ErrorKind::Usage,
                         fmt::format("{} is a Redis Cluster node, and a Cluster has database 0 "
                                     "only: remove '/{}' from the URL",
                                     cfg_.endpoint.display(), cfg_.endpoint.db)));
    close(server_error(r.reply.str,
                       fmt::format("Redis refused SELECT at {}", cfg_.endpoint.display())));
  };
  auto check_auth = [this, alive](Result r) {
    if (!alive || r.failure || !r.reply.is_error()) return;
    const std::string& m = r.reply.str;
    bool no_password = m.find("without any password configured") != std::string::npos ||
                       m.find("no password is set") != std::string::npos;
    if (!no_password) {
      close(server_error(m, fmt::format("{} refused authentication at {}", cfg_.server_kind,
                                        cfg_.endpoint.display())));
    } else if (cfg_.password_source == PasswordSource::RediscliEnv) {
      // As redis-cli does: an exported REDISCLI_AUTH meant for another server.
      if (cfg_.trace) cfg_.trace("the server has no password: ignoring REDISCLI_AUTH");
    } else {
      close(Error(
          ErrorKind::Permission,
          fmt::format("{} at {} has no password set, but rlock was given one ({}): "
                      "remove it or set a password on the server",
                      cfg_.server_kind, cfg_.endpoint.display(), describe(cfg_.password_source))));
    }
  };
  if (!auth.empty()) enqueue_raw(auth, check_auth, Millis(0), "AUTH");
  if (cfg_.endpoint.db != 0)
    enqueue_raw({"SELECT", std::to_string(cfg_.endpoint.db)}, check_select, Millis(0), "SELECT");
}

std::optional<Error> Connection::open_next_address() {
  // Each address of the name gets its turn (localhost: ::1, then 127.0.0.1),
  // each with the whole --connect-timeout, until one connects.
  std::optional<Error> last;
  while (untried_ > 0) {
    --untried_;
    const Address& a = addrs_[addr_index_ % addrs_.size()];
    try {
      stream_ = open_stream(cfg_.endpoint, a, tls_);
      ++streams_opened_;
    } catch (const Error& e) {
      last = e;
      ++addr_index_;
      continue;
    }
    handshaking_ = true;
    replies_on_stream_ = 0;
    first_bytes_.clear();
    loop_.watch(stream_->fd(), POLLOUT, [this](short ev) { on_io(ev); });
    auto alive = life_.token();
    if (cfg_.endpoint.tls) {
      Address addr = a;
      probe_timer_ =
          loop_.after(std::min(kTlsProbeAfter, cfg_.connect_timeout / 2), [this, alive, addr] {
            if (!alive) return;
            probe_timer_ = 0;
            if (handshaking_ && stream_) start_tls_probe(addr);
          });
    }
    connect_timer_ = loop_.after(cfg_.connect_timeout, [this, alive] {
      if (!alive) return;
      connect_timer_ = 0;
      connect_failed(Error(
          ErrorKind::Unavailable,
          fmt::format("cannot connect to {} at {}: timed out after {}ms (--connect-timeout)",
                      cfg_.server_kind, cfg_.endpoint.display(), cfg_.connect_timeout.count()),
          -1, Cause::Timeout));
    });
    return std::nullopt;
  }
  return last;
}

void Connection::start_tls_probe(const Address& addr) {
  auto alive = life_.token();
  probe_ = std::make_unique<PlainProbe>(loop_, cfg_.endpoint, addr, [this, alive] {
    if (!alive || !handshaking_) return;
    const bool sentinel = cfg_.sentinel || std::string_view(cfg_.server_kind) == "sentinel";
    connect_failed(Error(
        ErrorKind::Unavailable,
        fmt::format("{} at {} does not speak TLS: it answers a plain-text PING; use {} instead of "
                    "{} (or the server's TLS port)",
                    cfg_.server_kind, cfg_.endpoint.display(),
                    sentinel ? "redis-sentinel://" : "redis://",
                    sentinel ? "rediss-sentinel://" : "rediss://")));
  });
}

void Connection::stop_tls_probe() {
  loop_.cancel(probe_timer_);
  probe_timer_ = 0;
  probe_.reset();
}

Error Connection::password_wanted() const {
  const Endpoint& e = cfg_.endpoint;
  if (std::string_view(cfg_.server_kind) == "sentinel")
    return Error(ErrorKind::Permission,
                 fmt::format("the sentinel at {} wants a password: give it with "
                             "--sentinel-password-file FILE or RLOCK_SENTINEL_PASSWORD",
                             e.display()));
  std::string url_form =
      e.kind == Endpoint::Kind::Unix ? ""
      : cfg_.sentinel
          ? std::string(", or in the URL (redis-sentinel://:PASSWORD@HOST:PORT/MASTER)")
          : fmt::format(", or in the URL ({}://{}:PASSWORD@{}/{})", e.tls ? "rediss" : "redis",
                        e.user.empty() ? "" : escape_text(e.user), escape_text(e.address()), e.db);
  return Error(ErrorKind::Permission,
               fmt::format("{} at {} wants a password: give it with --password-file FILE or "
                           "RLOCK_PASSWORD{}",
                           cfg_.server_kind, e.display(), url_form));
}

Error Connection::not_redis(const Error& parse_failure) const {
  // A reply that starts like RESP but breaks its rules (too large, too deep)
  // is a protocol error (70); a first byte that is no RESP type at all ("H"
  // of "HTTP/1.1") is another protocol on the port.
  if (parse_failure.kind() != ErrorKind::Protocol || replies_on_stream_ > 0 ||
      first_bytes_.empty() || std::string_view("+-:$*").find(first_bytes_[0]) != std::string::npos)
    return parse_failure;
  std::string start = first_bytes_.substr(0, first_bytes_.find_first_of("\r\n"));
  return Error(ErrorKind::Unavailable,
               fmt::format("the endpoint at {} does not speak Redis (it answered '{}'): check "
                           "the host and port in the URL",
                           cfg_.endpoint.display(), escape_text(truncate_text(start, 40))));
}

void Connection::connect_failed(const Error& why) {
  // Not connected yet: nothing was sent, so the queued commands can go to the
  // next address as they are.
  stop_tls_probe();
  if (stream_) loop_.unwatch(stream_->fd());
  stream_.reset();
  loop_.cancel(connect_timer_);
  connect_timer_ = 0;
  ++addr_index_;
  if (untried_ > 0) {
    if (cfg_.trace) cfg_.trace(fmt::format("{}; trying the next address", why.what()));
    if (!open_next_address()) return;
  }
  handshaking_ = false;
  close(why);
}

void Connection::on_io(short revents) {
  auto alive = life_.token();
  std::optional<Error> failure;
  // Only the socket and the parser are guarded here: an exception from a
  // command's callback (below) is not a connection failure and goes up.
  try {
    if (handshaking_) {
      Want w;
      try {
        w = stream_->handshake();
      } catch (const Error& e) {
        return connect_failed(e);
      }
      if (w != Want::Nothing) {
        loop_.set_events(stream_->fd(), w == Want::Read ? POLLIN : POLLOUT);
        return;
      }
      on_connected();
    }
    if (revents & (POLLIN | POLLHUP | POLLERR)) read_some(ready_);
  } catch (const Error& e) {
    failure = not_redis(e);
  }
  deliver_ready();
  if (!alive || !stream_) return;
  if (failure) return broken(*failure);
  try {
    flush();
  } catch (const Error& e) {
    return broken(e);
  }
  update_events();
}

void Connection::broken(const Error& why) {
  // A plain-text connection reset before the server said anything: a server
  // going down, or a TLS port (which resets plain text as well). Only the
  // first may pass by itself, so a TlsProbe tells them apart before the
  // pending commands fail.
  bool silent = replies_on_stream_ == 0 && first_bytes_.empty();
  if (why.cause() != Cause::Reset || !silent || cfg_.endpoint.tls ||
      cfg_.endpoint.kind != Endpoint::Kind::Tcp || addrs_.empty())
    return close(why);
  Address addr = addrs_[addr_index_ % addrs_.size()];
  loop_.unwatch(stream_->fd());
  stream_.reset();
  checking_tls_ = true;
  auto alive = life_.token();
  auto verdict = [this, alive, why](bool tls) {
    if (!alive || !checking_tls_) return;
    // close() ends the check itself, after it read that the stream was
    // connected: the commands written on it may have run, and are not sent
    // again elsewhere as if they never left.
    if (!tls) return close(why);
    const bool sentinel = cfg_.sentinel || std::string_view(cfg_.server_kind) == "sentinel";
    close(Error(ErrorKind::Unavailable,
                fmt::format("{} at {} speaks TLS: it resets plain-text connections; use {} "
                            "instead of {} (or the server's plain-text port)",
                            cfg_.server_kind, cfg_.endpoint.display(),
                            sentinel ? "rediss-sentinel://" : "rediss://",
                            sentinel ? "redis-sentinel://" : "redis://")));
  };
  tls_check_ = std::make_unique<TlsProbe>(loop_, cfg_.endpoint, addr, verdict);
  tls_check_timer_ = loop_.after(std::min(kTlsProbeAfter, cfg_.connect_timeout),
                                 [verdict]() mutable { verdict(false); });
}

void Connection::end_tls_check() {
  checking_tls_ = false;
  loop_.cancel(tls_check_timer_);
  tls_check_timer_ = 0;
  // Not destroyed here: this may run inside the probe's own callback.
  if (tls_check_) {
    std::shared_ptr<TlsProbe> probe(std::move(tls_check_));
    loop_.after(Millis(0), [probe] {});
  }
}

void Connection::on_connected() {
  handshaking_ = false;
  connected_before_ = true;
  stop_tls_probe();
  loop_.cancel(connect_timer_);
  connect_timer_ = 0;
  if (cfg_.trace) cfg_.trace(fmt::format("connected to {}", cfg_.endpoint.display()));
  if (established_cb_) {
    auto alive = life_.token();
    loop_.after(Millis(0), [this, alive] {
      if (alive && established_cb_) established_cb_();
    });
  }
}

void Connection::flush() {
  while (!out_.empty()) {
    IoResult r = stream_->write(out_.data(), out_.size());
    if (r.bytes == 0) break;
    out_.erase(0, r.bytes);
  }
}

void Connection::update_events() {
  if (!stream_ || handshaking_) return;
  short ev = POLLIN;
  if (!out_.empty()) ev |= POLLOUT;
  loop_.set_events(stream_->fd(), ev);
}

void Connection::deliver_ready() {
  auto alive = life_.token();
  // If a callback throws, its exception goes up to whoever runs the loop; the
  // replies still waiting are delivered from the loop right after.
  struct Later {
    Connection* c;
    Alive alive;
    ~Later() {
      if (alive && c->stream_ && !c->ready_.empty()) c->come_back();
    }
  } later_guard{this, alive};
  while (!ready_.empty()) {
    Reply r = std::move(ready_.front());
    ready_.pop_front();
    deliver(std::move(r));
    if (!alive || !stream_) return;
  }
}

void Connection::come_back() {
  if (more_timer_) return;
  auto alive = life_.token();
  more_timer_ = loop_.after(Millis(0), [this, alive] {
    if (!alive) return;
    more_timer_ = 0;
    if (stream_ && !handshaking_) on_io(POLLIN);
  });
}

void Connection::read_some(std::deque<Reply>& replies) {
  // A bounded amount per wake-up: a server that streams without pause must
  // not starve the timers (renewal, --command-timeout) of the loop.
  // (On the heap, once per connection: 16 KiB of stack would be half of what
  // a small `ulimit -s` leaves a program. Not zeroed: its pages are not
  // touched until something is read into them.)
  if (!read_buf_) read_buf_.reset(new char[kReadBufBytes]);
  char* buf = read_buf_.get();
  for (int i = 0; i < kReadsPerWakeup; ++i) {
    IoResult r = stream_->read(buf, kReadBufBytes);
    if (r.bytes == 0) return;
    if (replies_on_stream_ == 0 && first_bytes_.size() < 64)
      first_bytes_.append(buf, std::min<size_t>(r.bytes, 64 - first_bytes_.size()));
    parser_->feed(buf, r.bytes);
    while (auto reply = parser_->next()) {
      ++replies_on_stream_;
      replies.push_back(std::move(*reply));
    }
    if (r.bytes < kReadBufBytes && !stream_->pending()) return;
  }
  // More may wait where poll() cannot see it (inside TLS): come back soon.
  if (stream_->pending()) come_back();
}

void Connection::deliver(Reply reply) {
  // A server sends "sunsubscribe" by itself when a shard channel's slot moves
  // away; it is a reply only to a SUNSUBSCRIBE (which rlock never sends).
  bool is_push = false;
  if (reply.type == Reply::Type::Array && !reply.elements.empty()) {
    const std::string& kind = reply.elements[0].str;
    is_push =
        kind == "message" || kind == "pmessage" || kind == "smessage" ||
        (kind == "sunsubscribe" && (pending_.empty() || pending_.front().name != "SUNSUBSCRIBE"));
  }
  if (is_push && push_) {
    push_(reply);
    return;
  }
  // A server that wants a password answers nothing else: every command fails
  // with one error that says how to give it.
  if (reply.is_error() && !cfg_.endpoint.password && wants_password(reply.str))
    return close(password_wanted());
  if (pending_.empty())
    return close(Error(ErrorKind::Protocol,
                       fmt::format("unexpected reply from {}", cfg_.endpoint.display())));
  Pending p = std::move(pending_.front());
  pending_.pop_front();
  loop_.cancel(p.timer);
  if (cfg_.trace) {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - p.sent).count();
    cfg_.trace(fmt::format("{} {:.1f}ms{}", p.name, us / 1000.0,
                           reply.is_error() ? " error: " + escape_text(reply.str) : ""));
  }
  p.cb(Result{std::nullopt, std::move(reply)});
}

void Connection::fail_all(const Error& why, bool unsent) {
  auto pending = std::move(pending_);
  pending_.clear();
  auto alive = life_.token();
  for (auto& p : pending) {
    loop_.cancel(p.timer);
    if (cfg_.trace) cfg_.trace(fmt::format("{} failed: {}", p.name, why.what()));
  }
  for (auto& p : pending) {
    p.cb(Result{why, Reply{}, unsent});
    if (!alive) return;
  }
}

void Connection::close(const Error& why) {
  // Nothing is written before the connection is established: the pending
  // commands of one that never was are safe to send elsewhere.
  bool was_connected = ready() || checking_tls_;
  stop_tls_probe();
  end_tls_check();
  if (stream_) loop_.unwatch(stream_->fd());
  stream_.reset();
  handshaking_ = false;
  resolving_ = false;
  loop_.cancel(connect_timer_);
  connect_timer_ = 0;
  loop_.cancel(more_timer_);
  more_timer_ = 0;
  out_.clear();
  ready_.clear();
  parser_.reset();
  auto alive = life_.token();
  fail_all(why, !was_connected);
  if (alive && was_connected && disconnect_cb_) disconnect_cb_(why);
}

Client::~Client() {
  for (Subscription* s : subscriptions_) s->client_gone();
}

void Client::topology_changed(const Error& why) {
  // A subscription that ends may start again (and register) from its owner's
  // callback: walk a copy.
  auto subs = subscriptions_;
  for (Subscription* s : subs)
    if (subscriptions_.count(s)) s->home_changed(why);
}

Reply call(Client& client, Args args, const std::string& context, CallOptions opt) {
  Result r = settle<Result>(client.loop(), [&](std::function<void(Result)> done) {
    client.command(std::move(args), std::move(done), std::move(opt));
  });
  return expect_ok(r, context);
}

}  // namespace rlock
