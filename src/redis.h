// One connection to one Redis server, driven by the event loop, and the Client
// interface that hides the topology (single server today; Sentinel, Cluster
// and Redlock quorum later) from the lock protocol.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loop.h"
#include "reply.h"
#include "transport.h"
#include "url.h"

namespace rlock {

using ReplyCallback = std::function<void(Result)>;

/// Reads of up to 16 KiB each per wake-up of a connection.
inline constexpr int kReadsPerWakeup = 4;
using Args = std::vector<std::string>;

/// Where the password came from (SPEC precedence), for messages and for
/// redis-cli's rule: REDISCLI_AUTH against a server without a password is
/// ignored, any other password there is a permission error (77).
enum class PasswordSource { None, Url, File, RlockEnv, RediscliEnv };
const char* describe(PasswordSource s);

/// Everything needed to reach one server.
struct ConnectionConfig {
  Endpoint endpoint;
  PasswordSource password_source = PasswordSource::None;
  TlsOptions tls;
  Millis connect_timeout{5000};
  Millis command_timeout{5000};
  /// -v: receives one line per round trip ("EVALSHA acquire 0.4ms").
  std::function<void(const std::string&)> trace;
};

/// A pipelined connection. Commands queue while it connects; AUTH and SELECT
/// go first. When a name has several addresses, each is tried in turn (with
/// the whole --connect-timeout) until one connects. A command that times out
/// breaks the connection (RESP has no way to skip one reply): every pending
/// command then fails with an unavailable Error, and the next command
/// reconnects. Replies are read a bounded amount per wake-up and parsed by a
/// ReplyParser, so no server can starve the loop's timers or make rlock
/// allocate without bound.
class Connection {
 public:
  Connection(Loop& loop, const ConnectionConfig& cfg, std::shared_ptr<TlsContext> tls,
             std::shared_ptr<std::vector<Address>> addrs);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Sends `args`; `cb` runs exactly once, from the loop, with the reply or a
  /// failure. `timeout` of zero means the configured command timeout. If the
  /// command times out after it was sent, `undo` commands are written on the
  /// same connection before it closes: the server runs them after `args`
  /// (TCP keeps the order), so a late-running command is compensated.
  void command(Args args, ReplyCallback cb, Millis timeout = Millis(0),
               std::vector<Args> undo = {});
  /// Pub/sub "message" pushes go here instead of to a command's callback.
  void on_push(std::function<void(const Reply&)> cb) { push_ = std::move(cb); }
  /// Called when an established connection breaks (subscriptions are gone).
  void on_disconnect(std::function<void(const Error&)> cb) { disconnect_cb_ = std::move(cb); }
  /// Closes the socket; pending commands fail with `why`.
  void close(const Error& why);

 private:
  struct Pending {
    ReplyCallback cb;
    Loop::TimerId timer;
    Clock::time_point sent;
    std::string name;
  };
  std::optional<Error> start_connect();
  std::optional<Error> open_next_address();
  void connect_failed(const Error& why);
  void on_io(short revents);
  void on_connected();
  void flush();
  void read_some(std::deque<Reply>& replies);
  void deliver_ready();
  void come_back();
  void deliver(Reply reply);
  void fail_all(const Error& why);
  void update_events();
  void enqueue_raw(const Args& args, ReplyCallback cb, Millis timeout, std::string name,
                   std::vector<Args> undo = {});
  static std::string format(const Args& args);

  Loop& loop_;
  ConnectionConfig cfg_;
  std::shared_ptr<TlsContext> tls_;
  std::shared_ptr<std::vector<Address>> addrs_;
  std::unique_ptr<Stream> stream_;
  bool handshaking_ = false;
  size_t addr_index_ = 0;  // the address to try next (kept across reconnects)
  size_t untried_ = 0;     // addresses not yet tried in this connect
  Loop::TimerId connect_timer_ = 0, more_timer_ = 0;
  std::unique_ptr<ReplyParser> parser_;
  std::deque<Reply> ready_;  // parsed, not yet delivered
  std::string out_;
  std::deque<Pending> pending_;
  std::function<void(const Reply&)> push_;
  std::function<void(const Error&)> disconnect_cb_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

/// What rlock learnt about the server while talking to it.
struct ServerTraits {
  bool no_eval_ro = false;  // EVAL_RO/EVALSHA_RO unknown or not allowed
};

/// A Redis deployment as the lock protocol sees it.
class Client {
 public:
  virtual ~Client() = default;
  ServerTraits& server() { return traits_; }
  /// Runs one command on the server that owns the lock's slot.
  /// `undo`: see Connection::command.
  virtual void command(Args args, ReplyCallback cb, Millis timeout = Millis(0),
                       std::vector<Args> undo = {}) = 0;
  /// A new connection for pub/sub to the same server.
  virtual std::unique_ptr<Connection> subscriber() = 0;
  /// The command timeout callers should assume.
  virtual Millis command_timeout() const = 0;
  virtual Loop& loop() = 0;

 private:
  ServerTraits traits_;
};

/// A Client for one server. Resolves the address now (blocking DNS, once),
/// so that later reconnects never block the loop.
std::unique_ptr<Client> make_client(Loop& loop, const ConnectionConfig& cfg);

/// Runs `args` and waits for the reply by running the loop. Throws on a
/// failure or server error (mapped by server_error), naming `context`.
Reply call(Client& client, Args args, const std::string& context);

}  // namespace rlock
