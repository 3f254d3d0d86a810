// What a Redis Cluster says about where keys live: MOVED/ASK redirects and the
// CLUSTER SLOTS map, parsed and checked (a node's reply is input like any
// other: bounded, validated, never trusted to be well-formed).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/reply.h"

namespace rlock {

/// "-MOVED 3999 127.0.0.1:6381" or "-ASK 3999 127.0.0.1:6381".
struct Redirect {
  bool ask = false;
  int slot = 0;
  std::string host;  // empty: the host of the node that sent it (Redis 7)
  int port = 0;
};

/// The redirect an error reply stands for, if it is a well-formed one.
std::optional<Redirect> parse_redirect(std::string_view error_reply);

/// One range of slots and the master that serves it.
struct SlotRange {
  int first = 0, last = 0;
  std::string host;  // as announced; "" when the node does not know its own
  int port = 0;
};

/// The ranges of a CLUSTER SLOTS reply (the master of each; replicas are not
/// used). Throws a protocol Error (70) on anything malformed: a slot out of
/// range, a port out of range, a host with control characters or longer than
/// 255 bytes.
std::vector<SlotRange> parse_cluster_slots(const Reply& r);

/// True when an error reply says the server is not a Cluster node
/// ("ERR This instance has cluster support disabled").
bool not_a_cluster(std::string_view error_reply);

}  // namespace rlock
