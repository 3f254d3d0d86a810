#include "redis.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <poll.h>

namespace rlock {

Connection::Connection(Loop& loop, const ConnectionConfig& cfg, std::shared_ptr<TlsContext> tls,
                       std::shared_ptr<std::vector<Address>> addrs)
    : loop_(loop), cfg_(cfg), tls_(std::move(tls)), addrs_(std::move(addrs)) {}

Connection::~Connection() {
  *alive_ = false;
  loop_.cancel(connect_timer_);
  for (auto& p : pending_) loop_.cancel(p.timer);
  if (stream_) loop_.unwatch(stream_->fd());
  if (reader_) redisReaderFree(reader_);
}

void Connection::command(Args args, ReplyCallback cb, Millis timeout, std::vector<Args> undo) {
  std::string name = args.empty() ? "" : args[0];
  if (!stream_) {
    if (auto err = start_connect()) {
      // Report from the loop, never re-entrantly from inside command().
      auto alive = alive_;
      loop_.after(Millis(0), [alive, cb = std::move(cb), err = *err] {
        if (*alive) cb(Result{err, Reply{}});
      });
      return;
    }
  }
  enqueue_raw(args, std::move(cb), timeout, std::move(name), std::move(undo));
}

std::string Connection::format(const Args& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  char* cmd = nullptr;
  int len = redisFormatCommandArgv(&cmd, static_cast<int>(argv.size()), argv.data(), lens.data());
  if (len < 0) throw_protocol("cannot format Redis command");
  std::string out(cmd, len);
  redisFreeCommand(cmd);
  return out;
}

void Connection::enqueue_raw(const Args& args, ReplyCallback cb, Millis timeout, std::string name,
                             std::vector<Args> undo) {
  out_ += format(args);
  Millis t = timeout.count() > 0 ? timeout : cfg_.command_timeout;
  auto alive = alive_;
  auto id = loop_.after(t, [this, alive, t, name, undo = std::move(undo)] {
    if (!*alive) return;
    if (!undo.empty() && stream_ && !handshaking_) {
      try {
        for (auto& u : undo) out_ += format(u);
        flush();
        if (cfg_.trace)
          cfg_.trace(fmt::format("{} timed out: compensating on the same connection", name));
      } catch (const Error&) {
        // Best effort: the connection is being dropped anyway.
      }
    }
    close(Error(ErrorKind::Unavailable,
                fmt::format("Redis at {} did not answer {} within {} (--timeout)",
                            cfg_.endpoint.display(), name, fmt::format("{}ms", t.count()))));
  });
  pending_.push_back(Pending{std::move(cb), id, Clock::now(), std::move(name)});
  if (!handshaking_) flush();
  update_events();
}

std::optional<Error> Connection::start_connect() {
  reader_ = reader_ ? reader_ : redisReaderCreate();
  out_.clear();
  try {
    stream_ = open_stream(cfg_.endpoint, (*addrs_)[addr_index_ % addrs_->size()], tls_);
  } catch (const Error& e) {
    if (addrs_->size() > 1) addr_index_++;
    return e;
  }
  handshaking_ = true;
  loop_.watch(stream_->fd(), POLLOUT, [this](short ev) { on_io(ev); });
  auto alive = alive_;
  connect_timer_ = loop_.after(cfg_.connect_timeout, [this, alive] {
    if (!*alive) return;
    connect_timer_ = 0;
    if (addrs_->size() > 1) addr_index_++;
    close(
        Error(ErrorKind::Unavailable,
              fmt::format("cannot connect to Redis at {}: timed out after {}ms (--connect-timeout)",
                          cfg_.endpoint.display(), cfg_.connect_timeout.count())));
  });
  // AUTH and SELECT go first; their replies are checked here, not by callers.
  Args auth;
  if (cfg_.endpoint.password) {
    auth = {"AUTH"};
    if (!cfg_.endpoint.user.empty()) auth.push_back(cfg_.endpoint.user);
    auth.push_back(*cfg_.endpoint.password);
  }
  auto check = [this, alive](const char* what) {
    return [this, alive, what](Result r) {
      if (!*alive || r.failure || !r.reply.is_error()) return;
      close(server_error(r.reply.str,
                         fmt::format("Redis refused {} at {}", what, cfg_.endpoint.display())));
    };
  };
  auto check_auth = [this, alive](Result r) {
    if (!*alive || r.failure || !r.reply.is_error()) return;
    const std::string& m = r.reply.str;
    bool no_password = m.find("without any password configured") != std::string::npos ||
                       m.find("no password is set") != std::string::npos;
    if (!no_password) {
      close(server_error(
          m, fmt::format("Redis refused authentication at {}", cfg_.endpoint.display())));
    } else if (cfg_.password_source == PasswordSource::RediscliEnv) {
      // As redis-cli does: an exported REDISCLI_AUTH meant for another server.
      if (cfg_.trace) cfg_.trace("the server has no password: ignoring REDISCLI_AUTH");
    } else {
      close(Error(ErrorKind::Permission,
                  fmt::format("Redis at {} has no password set, but rlock was given one ({}): "
                              "remove it or set a password on the server",
                              cfg_.endpoint.display(), describe(cfg_.password_source))));
    }
  };
  if (!auth.empty()) enqueue_raw(auth, check_auth, Millis(0), "AUTH");
  if (cfg_.endpoint.db != 0)
    enqueue_raw({"SELECT", std::to_string(cfg_.endpoint.db)}, check("SELECT"), Millis(0), "SELECT");
  return std::nullopt;
}

void Connection::on_io(short revents) {
  auto alive = alive_;
  try {
    if (handshaking_) {
      Want w = stream_->handshake();
      if (w != Want::Nothing) {
        loop_.set_events(stream_->fd(), w == Want::Read ? POLLIN : POLLOUT);
        return;
      }
      on_connected();
      if (!*alive || !stream_) return;
    }
    if (revents & (POLLIN | POLLHUP | POLLERR)) read_replies();
    if (!*alive || !stream_) return;
    flush();
    if (!*alive || !stream_) return;
    update_events();
  } catch (const Error& e) {
    if (handshaking_ && addrs_->size() > 1) addr_index_++;  // next time, the next address
    if (*alive) close(e);
  }
}

void Connection::on_connected() {
  handshaking_ = false;
  loop_.cancel(connect_timer_);
  connect_timer_ = 0;
  if (cfg_.trace) cfg_.trace(fmt::format("connected to {}", cfg_.endpoint.display()));
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

void Connection::read_replies() {
  char buf[16384];
  auto alive = alive_;
  for (;;) {
    IoResult r = stream_->read(buf, sizeof buf);
    if (r.bytes == 0) break;
    if (redisReaderFeed(reader_, buf, r.bytes) != REDIS_OK) throw_protocol("Redis reader failed");
    for (;;) {
      void* raw = nullptr;
      if (redisReaderGetReply(reader_, &raw) != REDIS_OK) {
        throw Error(ErrorKind::Protocol, fmt::format("{} does not speak the Redis protocol: {}",
                                                     cfg_.endpoint.display(), reader_->errstr));
      }
      if (!raw) break;
      Reply reply = convert_reply(static_cast<redisReply*>(raw));
      freeReplyObject(raw);
      deliver(std::move(reply));
      if (!*alive || !stream_) return;
    }
    if (r.bytes < sizeof buf) break;
  }
}

void Connection::deliver(Reply reply) {
  bool is_push = reply.type == Reply::Type::Array && !reply.elements.empty() &&
                 (reply.elements[0].str == "message" || reply.elements[0].str == "pmessage");
  if (is_push && push_) {
    push_(reply);
    return;
  }
  if (pending_.empty())
    throw_protocol(fmt::format("unexpected reply from {}", cfg_.endpoint.display()));
  Pending p = std::move(pending_.front());
  pending_.pop_front();
  loop_.cancel(p.timer);
  if (cfg_.trace) {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - p.sent).count();
    cfg_.trace(fmt::format("{} {:.1f}ms{}", p.name, us / 1000.0,
                           reply.is_error() ? " error: " + reply.str : ""));
  }
  p.cb(Result{std::nullopt, std::move(reply)});
}

void Connection::fail_all(const Error& why) {
  auto pending = std::move(pending_);
  pending_.clear();
  auto alive = alive_;
  for (auto& p : pending) {
    loop_.cancel(p.timer);
    if (cfg_.trace) cfg_.trace(fmt::format("{} failed: {}", p.name, why.what()));
  }
  for (auto& p : pending) {
    p.cb(Result{why, Reply{}});
    if (!*alive) return;
  }
}

void Connection::close(const Error& why) {
  bool was_connected = stream_ && !handshaking_;
  if (stream_) loop_.unwatch(stream_->fd());
  stream_.reset();
  handshaking_ = false;
  loop_.cancel(connect_timer_);
  connect_timer_ = 0;
  out_.clear();
  if (reader_) {
    redisReaderFree(reader_);
    reader_ = nullptr;
  }
  auto alive = alive_;
  fail_all(why);
  if (*alive && was_connected && disconnect_cb_) disconnect_cb_(why);
}

namespace {

class SingleClient : public Client {
 public:
  SingleClient(Loop& loop, const ConnectionConfig& cfg)
      : loop_(loop),
        cfg_(cfg),
        addrs_(std::make_shared<std::vector<Address>>(resolve(cfg.endpoint))),
        tls_(cfg.endpoint.tls ? make_tls_context(cfg.tls) : nullptr),
        conn_(loop, cfg_, tls_, addrs_) {}

  void command(Args args, ReplyCallback cb, Millis timeout, std::vector<Args> undo) override {
    conn_.command(std::move(args), std::move(cb), timeout, std::move(undo));
  }
  std::unique_ptr<Connection> subscriber() override {
    return std::make_unique<Connection>(loop_, cfg_, tls_, addrs_);
  }
  Millis command_timeout() const override { return cfg_.command_timeout; }
  Loop& loop() override { return loop_; }

 private:
  Loop& loop_;
  ConnectionConfig cfg_;
  std::shared_ptr<std::vector<Address>> addrs_;
  std::shared_ptr<TlsContext> tls_;
  Connection conn_;
};

}  // namespace

std::unique_ptr<Client> make_client(Loop& loop, const ConnectionConfig& cfg) {
  return std::make_unique<SingleClient>(loop, cfg);
}

Reply call(Client& client, Args args, const std::string& context) {
  std::optional<Result> out;
  client.command(std::move(args), [&](Result r) { out = std::move(r); });
  client.loop().run_until([&] { return out.has_value(); });
  return expect_ok(*out, context);
}

}  // namespace rlock
