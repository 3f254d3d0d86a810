// rlock's footprint on one server, for `rlock doctor` (the man page's doctor,
// "footprint"): how many locks, history streams and fence counters live under
// the prefix, and about how much memory they take. Bounded: SCAN stops after
// kFootprintMaxKeys keys, and MEMORY USAGE is asked of a sample only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "net/redis.h"

namespace rlock {

/// The most keys the footprint's SCAN reads on one server.
inline constexpr long kFootprintMaxKeys = 100'000;
/// How many of them MEMORY USAGE is asked about.
inline constexpr long kFootprintSample = 32;
/// More fence counters of idle keys than this: a warning. Each is a counter
/// without expiry (fences never go back) left by a KEY nobody has locked,
/// waited for or recorded history of for a week: key names that never repeat.
inline constexpr long kIdleFencesWarn = 10'000;

struct Footprint {
  long keys = 0;         // rlock's keys seen (PREFIX{…}…)
  long locks = 0;        // held: PREFIX{KEY} or its :holders
  long histories = 0;    // PREFIX{KEY}:log streams
  long fences = 0;       // PREFIX{KEY}:fence counters
  long idle_fences = 0;  // fences whose KEY has no other key (no lock, line or history)
  bool complete = true;  // false: SCAN stopped at kFootprintMaxKeys
  long sampled = 0;      // keys MEMORY USAGE answered for
  /// The sampled keys' mean size times `keys`; nullopt where MEMORY USAGE is
  /// refused or unknown.
  std::optional<int64_t> bytes;
};

/// Measures rlock's keys under `prefix` on `node` (a master's name from
/// Client::masters(); empty: the one server). Reads only (SCAN, MEMORY
/// USAGE). Throws the failure of a SCAN (an ACL refusal: a permission Error).
Footprint measure_footprint(Client& c, const std::string& node, const std::string& prefix);

/// "1.2 MiB": a byte count for people.
std::string format_bytes(int64_t bytes);

}  // namespace rlock
