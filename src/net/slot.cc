#include "net/slot.h"

#include <array>
#include <cstdint>

namespace rlock {

namespace {

// CRC16-CCITT as XMODEM computes it (polynomial 0x1021, initial value 0, no
// reflection): the checksum the Cluster specification names.
constexpr std::array<uint16_t, 256> make_table() {
  std::array<uint16_t, 256> t{};
  for (unsigned i = 0; i < 256; ++i) {
    uint16_t crc = static_cast<uint16_t>(i << 8);
    for (int bit = 0; bit < 8; ++bit)
      crc = static_cast<uint16_t>(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    t[i] = crc;
  }
  return t;
}

constexpr std::array<uint16_t, 256> kTable = make_table();

uint16_t crc16(std::string_view s) {
  uint16_t crc = 0;
  for (unsigned char c : s)
    crc = static_cast<uint16_t>((crc << 8) ^ kTable[((crc >> 8) ^ c) & 0xff]);
  return crc;
}

}  // namespace

int key_slot(std::string_view key) {
  auto open = key.find('{');
  if (open != std::string_view::npos) {
    auto close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1)
      key = key.substr(open + 1, close - open - 1);
  }
  return crc16(key) % kClusterSlots;
}

}  // namespace rlock
