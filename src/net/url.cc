#include "net/url.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "core/error.h"
#include "core/text.h"

namespace rlock {

namespace {

int parse_int(std::string_view s, int lo, int hi, std::string_view what, std::string_view url) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v < lo || v > hi)
    throw_usage(fmt::format("invalid {} '{}' in URL '{}'", what, escape_text(s), redact_url(url)));
  return v;
}

std::string percent_decode(std::string_view s, std::string_view url) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 3 > s.size())
        throw_usage(fmt::format("bad percent-escape in URL '{}'", redact_url(url)));
      int v = 0;
      auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
      // Two hex digits: from_chars would also take a sign ("%-1").
      if (ec != std::errc() || p != s.data() + i + 3 ||
          !std::isxdigit(static_cast<unsigned char>(s[i + 1])))
        throw_usage(fmt::format("bad percent-escape in URL '{}'", redact_url(url)));
      if (v == 0)
        throw_usage(fmt::format("invalid URL '{}': a percent-escape decodes to a NUL byte",
                                redact_url(url)));
      out += static_cast<char>(v);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool has_control(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

// Splits "?db=N&x=y" query parameters; only db is understood.
void parse_query(std::string_view q, Endpoint& ep, std::string_view url) {
  while (!q.empty()) {
    auto amp = q.find('&');
    auto item = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view{} : q.substr(amp + 1);
    auto eq = item.find('=');
    auto name = item.substr(0, eq);
    auto value = eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
    if (name == "db")
      ep.db = parse_int(value, 0, 1 << 20, "database number", url);
    else
      throw_usage(
          fmt::format("unknown URL parameter '{}' in '{}'", escape_text(name), redact_url(url)));
  }
}

}  // namespace

namespace {

// The query of a URL for messages: values other than db= may be secrets
// (redis-py's ?password=), shown as "***".
std::string redact_query(std::string_view query) {
  std::string out;
  while (true) {
    auto amp = query.find('&');
    auto item = query.substr(0, amp);
    auto eq = item.find('=');
    if (eq == std::string_view::npos || item.substr(0, eq) == "db")
      out += escape_text(item);
    else
      out += escape_text(item.substr(0, eq)) + "=***";
    if (amp == std::string_view::npos) return out;
    out += '&';
    query = query.substr(amp + 1);
  }
}

}  // namespace

std::string redact_url(std::string_view url) {
  auto sep = url.find("://");
  std::string out;
  std::string_view rest = url;
  if (sep != std::string_view::npos) {
    out = escape_text(url.substr(0, sep + 3));
    rest = url.substr(sep + 3);
    // Everything between "user:" and the last '@' is the password (a password
    // may itself hold '@', ':', '/' or '?', percent-encoded or not).
    auto at = rest.rfind('@');
    if (at != std::string_view::npos) {
      auto userinfo = rest.substr(0, at);
      auto colon = userinfo.find(':');
      out += escape_text(userinfo.substr(0, colon));
      if (colon != std::string_view::npos) out += ":***";
      out += '@';
      rest = rest.substr(at + 1);
    }
  }
  auto q = rest.find('?');
  if (q == std::string_view::npos) return out + escape_text(rest);
  return out + escape_text(rest.substr(0, q)) + "?" + redact_query(rest.substr(q + 1));
}

std::string Endpoint::display() const {
  if (kind == Kind::Unix)
    return fmt::format("unix://{}{}", escape_text(path), db ? fmt::format("?db={}", db) : "");
  std::string h = host.find(':') != std::string::npos ? fmt::format("[{}]", host) : host;
  std::string u = user.empty() ? "" : escape_text(user) + "@";
  return fmt::format("{}://{}{}:{}/{}", tls ? "rediss" : "redis", u, escape_text(h), port, db);
}

std::string Endpoint::address() const {
  if (kind == Kind::Unix) return path;
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

namespace {

// rest[?query]: cuts the query off `rest` and returns it (empty without '?').
std::string_view take_query(std::string_view& rest) {
  auto q = rest.find('?');
  if (q == std::string_view::npos) return {};
  std::string_view query = rest.substr(q + 1);
  rest = rest.substr(0, q);
  return query;
}

// [userinfo@]rest: fills ep.user and ep.password, returns the rest. The
// userinfo ends at the last '@', so that a password with '/', '?' or ':'
// (which should be %-encoded) is still taken whole, and never shown as part
// of a host, port or db.
std::string_view take_userinfo(std::string_view rest, Endpoint& ep, std::string_view url) {
  auto at = rest.rfind('@');
  if (at == std::string_view::npos) return rest;
  auto userinfo = rest.substr(0, at);
  auto colon = userinfo.find(':');
  ep.user = percent_decode(userinfo.substr(0, colon), url);
  if (has_control(ep.user))
    throw_usage(
        fmt::format("invalid URL '{}': control characters in the user name", redact_url(url)));
  if (colon != std::string_view::npos) {
    ep.password = percent_decode(userinfo.substr(colon + 1), url);
    if (ep.password->empty())
      throw_usage(fmt::format(
          "invalid URL '{}': the password after ':' is empty (leave out the ':' to give "
          "none)",
          redact_url(url)));
  }
  return rest.substr(at + 1);
}

// host, host:port, [v6] or [v6]:port into ep (the port stays when not given).
void parse_host_port(std::string_view authority, Endpoint& ep, std::string_view url) {
  std::string_view port;
  if (!authority.empty() && authority[0] == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos)
      throw_usage(fmt::format("invalid URL '{}': unclosed '[' in IPv6 address", redact_url(url)));
    ep.host = std::string(authority.substr(1, close - 1));
    auto after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':')
        throw_usage(fmt::format("invalid URL '{}': junk after ']'", redact_url(url)));
      port = after.substr(1);
    }
  } else {
    auto colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      if (authority.find(':') != colon)
        throw_usage(fmt::format("invalid URL '{}': write IPv6 addresses in brackets, as [::1]",
                                redact_url(url)));
      port = authority.substr(colon + 1);
      authority = authority.substr(0, colon);
    }
    ep.host = std::string(authority);
  }
  if (ep.host.empty())
    throw_usage(
        fmt::format("invalid URL '{}': no host (write redis://127.0.0.1:6379 for the "
                    "local server)",
                    redact_url(url)));
  for (unsigned char c : ep.host)
    if (c <= 0x20 || c == 0x7f || c == '/' || c == '@' || c == '%' || c == ',')
      throw_usage(fmt::format("invalid URL '{}': bad character in the host", redact_url(url)));
  if (!port.empty()) ep.port = parse_int(port, 1, 65535, "port", url);
}

}  // namespace

Endpoint parse_url(std::string_view url) {
  Endpoint ep;
  auto sep = url.find("://");
  if (sep == std::string_view::npos)
    throw_usage(
        fmt::format("invalid URL '{}': expected redis://host:port/db, rediss://… or unix:///path",
                    redact_url(url)));
  auto scheme = url.substr(0, sep);
  auto rest = url.substr(sep + 3);
  if (scheme == "unix") {
    ep.kind = Endpoint::Kind::Unix;
    auto q = rest.find('?');
    ep.path = percent_decode(rest.substr(0, q), url);
    if (q != std::string_view::npos) parse_query(rest.substr(q + 1), ep, url);
    if (ep.path.empty() || ep.path[0] != '/')
      throw_usage(fmt::format(
          "invalid URL '{}': a unix:// URL needs an absolute path, as in unix:///run/redis.sock",
          redact_url(url)));
    return ep;
  }
  if (scheme == "rediss") {
    ep.tls = true;
  } else if (is_sentinel_url(url)) {
    throw_usage(fmt::format("'{}' is a Sentinel URL", redact_url(url)));  // parse_sentinel_url
  } else if (scheme != "redis") {
    throw_usage(fmt::format(
        "unsupported URL scheme '{}://': use redis://, rediss://, unix:// or redis-sentinel://",
        escape_text(scheme)));
  }
  rest = take_userinfo(rest, ep, url);
  std::string_view query = take_query(rest);
  auto slash = rest.find('/');
  auto authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    auto dbs = rest.substr(slash + 1);
    if (!dbs.empty()) ep.db = parse_int(dbs, 0, 1 << 20, "database number", url);
  }
  parse_host_port(authority, ep, url);
  if (!query.empty()) parse_query(query, ep, url);
  return ep;
}

bool is_sentinel_url(std::string_view url) {
  return url.rfind("redis-sentinel://", 0) == 0 || url.rfind("rediss-sentinel://", 0) == 0;
}

SentinelUrl parse_sentinel_url(std::string_view url) {
  SentinelUrl out;
  if (!is_sentinel_url(url))
    throw_usage(fmt::format("invalid URL '{}': expected redis-sentinel://host:port,…/MASTERNAME",
                            redact_url(url)));
  bool tls = url.rfind("rediss-", 0) == 0;
  std::string_view rest = url.substr(url.find("://") + 3);
  out.master.tls = tls;
  rest = take_userinfo(rest, out.master, url);
  std::string_view query = take_query(rest);
  // host:port,host:port / MASTERNAME [/db]
  auto slash = rest.find('/');
  std::string_view hosts = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
  auto next = path.find('/');
  out.master_name = percent_decode(path.substr(0, next), url);
  if (next != std::string_view::npos) {
    auto dbs = path.substr(next + 1);
    if (!dbs.empty()) out.master.db = parse_int(dbs, 0, 1 << 20, "database number", url);
  }
  if (out.master_name.empty())
    throw_usage(
        fmt::format("invalid URL '{}': no master name (write redis-sentinel://host:26379/mymaster)",
                    redact_url(url)));
  if (out.master_name.size() > 256)
    throw_usage(
        fmt::format("invalid URL '{}': the master name is longer than 256 bytes", redact_url(url)));
  for (unsigned char c : out.master_name)
    if (c <= 0x20 || c == 0x7f)
      throw_usage(fmt::format("invalid URL '{}': spaces or control characters in the master name",
                              redact_url(url)));
  while (true) {
    auto comma = hosts.find(',');
    Endpoint s;
    s.port = kSentinelPort;
    s.tls = tls;
    parse_host_port(hosts.substr(0, comma), s, url);
    out.sentinels.push_back(std::move(s));
    if (out.sentinels.size() > kMaxSentinels)
      throw_usage(
          fmt::format("invalid URL '{}': more than {} sentinels", redact_url(url), kMaxSentinels));
    if (comma == std::string_view::npos) break;
    hosts = hosts.substr(comma + 1);
  }
  if (!query.empty()) parse_query(query, out.master, url);
  return out;
}

namespace {

// host:port, IPv6 in brackets, the host in lower case (names are not resolved).
std::string canonical_address(const Endpoint& ep) {
  std::string h = ascii_lower(ep.host);
  if (h.find(':') != std::string::npos) h = "[" + h + "]";
  return fmt::format("{}:{}", escape_text(h), ep.port);
}

}  // namespace

std::string canonical_url(std::string_view url) {
  try {
    if (is_sentinel_url(url)) {
      SentinelUrl s = parse_sentinel_url(url);
      std::vector<std::string> hosts;
      for (const auto& e : s.sentinels) hosts.push_back(canonical_address(e));
      std::sort(hosts.begin(), hosts.end());
      hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
      std::string joined;
      for (const auto& h : hosts) joined += (joined.empty() ? "" : ",") + h;
      return fmt::format("{}://{}/{}/{}", s.master.tls ? "rediss-sentinel" : "redis-sentinel",
                         joined, escape_text(s.master_name), s.master.db);
    }
    Endpoint ep = parse_url(url);
    if (ep.kind == Endpoint::Kind::Unix) {
      std::string path;
      for (char c : ep.path)
        if (c != '/' || path.empty() || path.back() != '/') path += c;
      return fmt::format("unix://{}?db={}", escape_text(path), ep.db);
    }
    return fmt::format("{}://{}/{}", ep.tls ? "rediss" : "redis", canonical_address(ep), ep.db);
  } catch (const Error&) {
    return redact_url(url);
  }
}

}  // namespace rlock
