// Redis Cluster hash slots: which of the 16384 slots a key (or a shard
// channel) lives in, by the rules of the Cluster specification.
#pragma once

#include <string_view>

namespace rlock {

inline constexpr int kClusterSlots = 16384;

/// The slot of `key`: CRC16 (XMODEM) of its hash tag (the text between the
/// first '{' and the next '}', when that is not empty), else of the whole key,
/// modulo 16384.
int key_slot(std::string_view key);

}  // namespace rlock
