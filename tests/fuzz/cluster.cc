// What a Cluster node sends about the topology (src/net/cluster.cc): error replies parsed as
// MOVED/ASK redirects, and CLUSTER SLOTS replies (bytes fed to the bounded ReplyParser,
// each reply taken apart). Only rlock::Error may escape, and what is accepted stays within
// the ranges rlock relies on: a slot in 0..16383, a port in 1..65535, a host of at most
// 255 bytes without control characters or spaces.
//
// Input: a first byte 'R' makes the rest one error reply text for parse_redirect; any
// other first byte makes the rest the bytes of server replies for parse_cluster_slots.
#include "net/cluster.h"

#include <cstdint>
#include <string_view>

#include "fuzz_util.h"
#include "net/slot.h"

namespace {

void check_host(std::string_view host, std::string_view in) {
  FUZZ_CHECK(host.size() <= 255, "'%s': host of %zu bytes", fuzz::hex_escape(in).c_str(),
             host.size());
  for (unsigned char c : host)
    FUZZ_CHECK(c > 0x20 && c != 0x7f, "'%s': host '%s'", fuzz::hex_escape(in).c_str(),
               fuzz::hex_escape(host).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (!in.empty() && in[0] == 'R') {
    auto r = rlock::parse_redirect(in.substr(1));
    if (r) {
      FUZZ_CHECK(r->slot >= 0 && r->slot < rlock::kClusterSlots, "slot %d", r->slot);
      FUZZ_CHECK(r->port >= 1 && r->port <= 65535, "port %d", r->port);
      check_host(r->host, in);
    }
    return 0;
  }
  try {
    rlock::ReplyParser parser;
    parser.feed(in.data(), in.size());
    while (auto reply = parser.next()) {
      try {
        for (auto& range : rlock::parse_cluster_slots(*reply)) {
          FUZZ_CHECK(
              range.first >= 0 && range.first <= range.last && range.last < rlock::kClusterSlots,
              "slots %d-%d", range.first, range.last);
          FUZZ_CHECK(range.port >= 1 && range.port <= 65535, "port %d", range.port);
          check_host(range.host, in);
        }
      } catch (const rlock::Error& e) {
        FUZZ_CHECK(e.exit_status() == rlock::exitcode::kProtocol, "exit %d: %s", e.exit_status(),
                   e.what());
        FUZZ_CHECK(fuzz::printable_utf8(e.what()), "message '%s'",
                   fuzz::hex_escape(e.what()).c_str());
      }
    }
  } catch (const rlock::Error&) {
    // The parser refused the bytes: what rlock does with a hostile server.
  }
  return 0;
}
