// Redis connection URLs: redis://, rediss://, unix://, redis-sentinel://.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlock {

/// Where and how to reach one Redis server. Parsed from a URL; secrets may be
/// filled in later from a file or the environment.
struct Endpoint {
  enum class Kind { Tcp, Unix };
  Kind kind = Kind::Tcp;
  std::string host = "127.0.0.1";  // without brackets for IPv6
  int port = 6379;
  std::string path;  // Unix socket path
  bool tls = false;  // rediss://
  std::string user;  // ACL user; empty = default user
  std::optional<std::string> password;
  int db = 0;

  /// For messages: the URL without its password ("redis://user@host:6379/0").
  std::string display() const;
  /// The server's address, "host:port" ("[::1]:6379") or the socket path:
  /// the name of a node. Not escaped.
  std::string address() const;
};

/// Parses a URL of the forms the man page's URLS lists. Throws a usage Error
/// on anything else, naming what is wrong (scheme, port, db, bracket…); the message shows the
/// URL through redact_url(), never with its password. An empty host, an
/// empty password after ':', a %00 anywhere and control characters in the
/// user name or host are errors too.
Endpoint parse_url(std::string_view url);

/// `url` for messages: the password (between "user:" and the last '@') is
/// shown as "***" and control characters are escaped. Works on malformed
/// URLs too.
std::string redact_url(std::string_view url);

/// The server (or Sentinel master) and database `url` names, spelled one way
/// whatever the spelling: default port and db filled in, host in lower case,
/// repeated slashes of a socket path collapsed, sentinels sorted; no user and
/// no password ("redis://127.0.0.1:6379/0", "unix:///run/r.sock?db=0",
/// "redis-sentinel://a:26379,b:26379/mymaster/0"). Two URLs of one server and
/// db give one string; a URL that does not parse gives redact_url(url).
std::string canonical_url(std::string_view url);

/// A redis-sentinel:// (rediss-sentinel://: TLS for sentinels and master)
/// URL: redis-sentinel://[user[:password]@]host[:port][,host[:port]…]/MASTERNAME[/db].
struct SentinelUrl {
  /// The master's user, password, TLS and db (its address comes from the
  /// sentinels).
  Endpoint master;
  /// The sentinels, in the URL's order (port 26379 unless given).
  std::vector<Endpoint> sentinels;
  std::string master_name;
};

inline constexpr int kSentinelPort = 26379;
inline constexpr size_t kMaxSentinels = 64;

/// True for redis-sentinel:// and rediss-sentinel:// URLs.
bool is_sentinel_url(std::string_view url);

/// Parses a Sentinel URL; usage Errors as parse_url (a missing master name,
/// spaces or control characters in it, more than kMaxSentinels hosts…).
SentinelUrl parse_sentinel_url(std::string_view url);

/// The default URL when neither --url nor the environment gives one.
inline constexpr std::string_view kDefaultUrl = "redis://127.0.0.1:6379/0";

}  // namespace rlock
