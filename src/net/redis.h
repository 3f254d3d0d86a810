// One connection to one Redis server, driven by the event loop, and the Client
// interface that hides the topology (one server, a Redis Cluster, a master
// found through Sentinel) from the lock protocol.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/async.h"
#include "core/lifetime.h"
#include "core/loop.h"
#include "net/plain_probe.h"
#include "net/reply.h"
#include "net/transport.h"
#include "net/url.h"

namespace rlock {

class AddressBook;   // resolver.h
class Subscription;  // subscription.h

using ReplyCallback = std::function<void(Result)>;

/// Reads of up to 16 KiB each per wake-up of a connection.
inline constexpr int kReadsPerWakeup = 4;
using Args = std::vector<std::string>;
/// The commands that compensate one that timed out (Connection::command),
/// built only then: a script's EVAL carries its whole source (tens of KB),
/// and a command answered in time never needs them.
using Undo = std::function<std::vector<Args>()>;

/// Where the password came from (the precedence the man page gives under
/// --password-file), for messages and for redis-cli's rule: REDISCLI_AUTH
/// against a server without a password is ignored, any other password there
/// is a permission error (77).
enum class PasswordSource { None, Url, File, RlockEnv, RediscliEnv, SentinelFile, SentinelEnv };
const char* describe(PasswordSource s);

/// How to find the master through Sentinel (a redis-sentinel:// URL).
struct SentinelConfig {
  /// The sentinels, in the URL's order; each carries the sentinels' own user,
  /// password and TLS setting.
  std::vector<Endpoint> sentinels;
  std::string master_name;
  PasswordSource password_source = PasswordSource::None;
};

/// Everything needed to reach one server (or, with `sentinel`, the master
/// the sentinels name: `endpoint` then holds its user, password, TLS and db).
struct ConnectionConfig {
  Endpoint endpoint;
  PasswordSource password_source = PasswordSource::None;
  std::optional<SentinelConfig> sentinel;
  TlsOptions tls;
  Millis connect_timeout{5000};
  Millis command_timeout{5000};
  /// -v: receives one line per round trip ("EVALSHA acquire 0.4ms").
  std::function<void(const std::string&)> trace;
  /// What the server is called in messages ("Redis at …", "sentinel at …").
  const char* server_kind = "Redis";
};

/// A pipelined connection. Commands queue while it connects; AUTH and SELECT
/// go first. The address comes from an AddressBook: a reconnect looks a name
/// up again (off the loop, see resolver.h). When a name has several addresses,
/// each is tried in turn (with the whole --connect-timeout) until one connects. A command that
/// times out breaks the connection (RESP has no way to skip one reply): every pending command then
/// fails with an unavailable Error, and the next command reconnects. Replies are read a bounded
/// amount per wake-up and parsed by a ReplyParser, so no server can starve the loop's timers or
/// make rlock allocate without bound.
class Connection {
 public:
  /// The bytes of one command in RESP, as sent (hiredis formats them).
  static std::string format(const Args& args);
  Connection(Loop& loop, const ConnectionConfig& cfg, std::shared_ptr<TlsContext> tls,
             std::shared_ptr<AddressBook> book);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Sends `args`; `cb` runs exactly once, from the loop, with the reply or a
  /// failure. `timeout` of zero means the configured command timeout. If the
  /// command times out after it was sent, the commands `undo` builds are
  /// written on the same connection before it closes: the server runs them
  /// after `args` (TCP keeps the order), so a late-running command is
  /// compensated.
  void command(Args args, ReplyCallback cb, Millis timeout = Millis(0), Undo undo = {});
  /// Pub/sub pushes ("message", "smessage", and the "sunsubscribe" a server
  /// sends by itself when a shard channel's slot moves away) go here instead
  /// of to a command's callback.
  void on_push(std::function<void(const Reply&)> cb) { push_ = std::move(cb); }
  /// Called when an established connection breaks (subscriptions are gone).
  void on_disconnect(std::function<void(const Error&)> cb) { disconnect_cb_ = std::move(cb); }
  /// Called once the socket (and TLS) is up, before any reply: a blocking
  /// command's owner learns that the server is reachable again.
  void on_established(std::function<void()> cb) { established_cb_ = std::move(cb); }
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
  void queue_handshake();
  void addresses_found(std::optional<Error> err, const std::vector<Address>& addrs);
  std::optional<Error> open_next_address();
  bool ready() const { return stream_ && !handshaking_; }
  bool idle() const { return !stream_ && !resolving_ && !checking_tls_; }
  void connect_failed(const Error& why);
  void on_io(short revents);
  /// The stream failed: closes, unless a reset first needs a TlsProbe.
  void broken(const Error& why);
  void end_tls_check();
  void on_connected();
  void flush();
  void read_some(std::deque<Reply>& replies);
  void deliver_ready();
  void come_back();
  void deliver(Reply reply);
  void fail_all(const Error& why, bool unsent);
  void update_events();
  void enqueue_raw(const Args& args, ReplyCallback cb, Millis timeout, std::string name,
                   Undo undo = {});
  void start_tls_probe(const Address& addr);
  void stop_tls_probe();
  Error password_wanted() const;
  Error not_redis(const Error& parse_failure) const;

  Loop& loop_;
  ConnectionConfig cfg_;
  std::shared_ptr<TlsContext> tls_;
  std::shared_ptr<AddressBook> book_;
  std::vector<Address> addrs_;  // from the book, for this connect
  std::unique_ptr<Stream> stream_;
  unsigned streams_opened_ = 0;    // tells a stream from the next one
  bool resolving_ = false;         // waiting for the book's lookup
  bool handshaking_ = false;       // connect (and TLS handshake) in progress
  bool connected_before_ = false;  // a reconnect looks the name up again
  size_t addr_index_ = 0;          // the address to try next (kept across reconnects)
  size_t untried_ = 0;             // addresses not yet tried in this connect
  Loop::TimerId connect_timer_ = 0, more_timer_ = 0;
  Loop::TimerId probe_timer_ = 0;      // rediss://: when to ask in plain text
  std::unique_ptr<PlainProbe> probe_;  // ... and the asking
  bool checking_tls_ = false;          // redis://: a reset, and is it a TLS port?
  std::unique_ptr<TlsProbe> tls_check_;
  Loop::TimerId tls_check_timer_ = 0;
  size_t replies_on_stream_ = 0;  // none yet: a parse failure means "not Redis"
  std::string first_bytes_;       // the start of what this stream sent, for that message
  std::unique_ptr<ReplyParser> parser_;
  static constexpr size_t kReadBufBytes = 16384;
  std::unique_ptr<char[]> read_buf_;  // read_some's, made at its first read
  std::deque<Reply> ready_;           // parsed, not yet delivered
  std::string out_;
  std::deque<Pending> pending_;
  std::function<void(const Reply&)> push_;
  std::function<void(const Error&)> disconnect_cb_;
  std::function<void()> established_cb_;
  Lifetime life_;
};

/// What rlock learnt about the server while talking to it.
struct ServerTraits {
  bool no_eval_ro = false;   // EVAL_RO/EVALSHA_RO unknown or not allowed
  bool no_fcall_ro = false;  // FCALL_RO unknown or not allowed
  // FCALL unknown or not allowed, or the library could not be loaded: EVALSHA
  // (RLOCK_FUNCTIONS=on; lock/scripts.h)
  bool no_functions = false;
};

/// How one command is run by a Client.
struct CallOptions {
  /// The whole time the command may take, redirects and retries included;
  /// zero means the configured command timeout.
  Millis timeout{0};
  /// See Connection::command.
  Undo undo;
  /// The key the command is about: it runs on the server that owns the key's
  /// slot (a Cluster). Empty: any server.
  std::string key;
  /// Or: this master, by a name from Client::masters() (SCAN on each).
  std::string node;
};

/// A Redis deployment as the lock protocol sees it: one server, a Redis
/// Cluster (noticed by itself, and followed through MOVED and ASK), or the
/// master that Sentinel names (found again after a failover).
class Client {
 public:
  virtual ~Client();
  ServerTraits& server() { return traits_; }
  /// Runs one command where `opt` says. `cb` runs exactly once, from the loop.
  virtual void command(Args args, ReplyCallback cb, CallOptions opt = {}) = 0;
  /// A new connection for pub/sub on the server that owns `channel` (its
  /// hash tag's slot in a Cluster; the master under Sentinel, which may have
  /// to be found first). `done` runs from the loop.
  virtual void open_subscriber(const std::string& channel,
                               Done<std::unique_ptr<Connection>> done) = 0;
  /// What a subscriber's error reply says about the topology (a MOVED).
  virtual void learn(const std::string& /*error_reply*/) {}
  /// The masters, for commands that concern no one key (`list` SCANs each):
  /// names for CallOptions::node. One server: itself; a Cluster: every master.
  virtual void masters(Done<std::vector<std::string>> done) = 0;
  /// This process will hold or wait for a while: watch for failovers too,
  /// instead of only noticing them when a command fails (Sentinel).
  virtual void stay() {}
  /// Whether `node` (a Result::node) is still the master: under Sentinel the
  /// sentinels are surveyed again (SentinelDiscovery::find) and, if they name
  /// another master now, rlock moves there (ROLE-confirmed) and the outcome
  /// is false; no sentinel answering is an unavailable Error. Without
  /// Sentinel (or with an empty `node`): true, and `done` runs at once.
  virtual void confirm_master(const std::string& /*node*/, Done<bool> done) {
    done(Outcome<bool>{std::nullopt, true});
  }
  /// The master the sentinels name now (SentinelDiscovery::find: asked at
  /// once, not confirmed with ROLE; rlock does not move there): a name as in
  /// Result::node. Without Sentinel: "", and `done` runs at once. A release
  /// asks it at the same time as it is sent (lock/single.h, confirmed_release).
  virtual void named_master(Done<std::string> done) {
    done(Outcome<std::string>{std::nullopt, ""});
  }
  /// The command timeout callers should assume.
  virtual Millis command_timeout() const = 0;
  /// The deployment for people: its URL without the password.
  virtual std::string name() const = 0;
  virtual Loop& loop() = 0;

 protected:
  /// A failover or a moved slot: every open Subscription ends (and its owner
  /// starts it again, at the new home).
  void topology_changed(const Error& why);

 private:
  friend class Subscription;
  ServerTraits traits_;
  std::set<Subscription*> subscriptions_;
};

/// The Client for `cfg`: Sentinel discovery for a redis-sentinel:// URL,
/// otherwise one server that turns out to be a Cluster node or not.
std::unique_ptr<Client> make_client(Loop& loop, const ConnectionConfig& cfg);

/// Runs `args` and waits for the reply by running the loop. Throws on a
/// failure or server error (mapped by server_error), naming `context`.
Reply call(Client& client, Args args, const std::string& context, CallOptions opt = {});

}  // namespace rlock
