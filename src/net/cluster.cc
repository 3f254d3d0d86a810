#include "net/cluster.h"

#include <fmt/format.h>

#include <charconv>

#include "core/text.h"
#include "net/slot.h"

namespace rlock {

namespace {

bool parse_int(std::string_view s, int lo, int hi, int& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size() && out >= lo && out <= hi;
}

bool plausible_node_host(std::string_view h) {
  if (h.size() > 255) return false;
  for (unsigned char c : h)
    if (c <= 0x20 || c == 0x7f || c == '/' || c == '@') return false;
  return true;
}

}  // namespace

std::optional<Redirect> parse_redirect(std::string_view m) {
  Redirect r;
  if (m.rfind("MOVED ", 0) == 0) {
    m.remove_prefix(6);
  } else if (m.rfind("ASK ", 0) == 0) {
    r.ask = true;
    m.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  auto space = m.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  if (!parse_int(m.substr(0, space), 0, kClusterSlots - 1, r.slot)) return std::nullopt;
  std::string_view addr = m.substr(space + 1);
  // host:port, where an IPv6 host comes without brackets ("::1:6381"): the
  // port is after the last ':'.
  auto colon = addr.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  if (!parse_int(addr.substr(colon + 1), 1, 65535, r.port)) return std::nullopt;
  std::string_view host = addr.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (!plausible_node_host(host)) return std::nullopt;
  r.host = std::string(host);
  return r;
}

std::vector<SlotRange> parse_cluster_slots(const Reply& r) {
  std::vector<SlotRange> out;
  for (auto& entry : r.as_array("a CLUSTER SLOTS reply")) {
    auto& e = entry.as_array("a CLUSTER SLOTS entry", 3);
    SlotRange s;
    s.first = static_cast<int>(e[0].as_int("a slot number"));
    s.last = static_cast<int>(e[1].as_int("a slot number"));
    if (e[0].integer < 0 || e[1].integer >= kClusterSlots || e[0].integer > e[1].integer)
      throw_protocol(fmt::format("CLUSTER SLOTS names slots {}-{}", e[0].integer, e[1].integer));
    auto& master = e[2].as_array("a CLUSTER SLOTS node", 2);
    s.host = master[0].text();
    if (s.host == "?") s.host.clear();  // an unknown endpoint: the node we asked
    if (!plausible_node_host(s.host))
      throw_protocol(fmt::format("CLUSTER SLOTS names a bad host '{}'",
                                 escape_text(truncate_text(s.host, 64))));
    long long port = master[1].as_int("a port");
    if (port < 1 || port > 65535) throw_protocol(fmt::format("CLUSTER SLOTS names port {}", port));
    s.port = static_cast<int>(port);
    out.push_back(std::move(s));
  }
  return out;
}

bool not_a_cluster(std::string_view m) {
  return m.find("cluster support disabled") != std::string_view::npos ||
         m.rfind("ERR unknown command", 0) == 0;
}

}  // namespace rlock
