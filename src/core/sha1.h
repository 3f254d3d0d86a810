// SHA-1 at compile time, for the script digests that EVALSHA names (Redis names
// scripts by SHA-1; nothing here is used for security). Computing them in the
// compiler keeps OpenSSL out of every run that does not use TLS.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace rlock {

/// The lowercase hex SHA-1 of the concatenation a + b (FIPS 180-4).
constexpr std::array<char, 40> sha1_hex(std::string_view a, std::string_view b = {}) {
  const std::uint64_t len = a.size() + b.size();
  const std::uint64_t blocks = (len + 8) / 64 + 1;  // message, 0x80, 64-bit length
  auto byte = [&](std::uint64_t i) -> std::uint32_t {
    if (i < a.size()) return static_cast<unsigned char>(a[i]);
    if (i < len) return static_cast<unsigned char>(b[i - a.size()]);
    if (i == len) return 0x80;
    std::uint64_t from_end = blocks * 64 - 1 - i;  // 0 = last byte
    if (from_end < 8) return static_cast<std::uint32_t>(((len * 8) >> (8 * from_end)) & 0xff);
    return 0;
  };
  auto rotl = [](std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); };
  std::uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  for (std::uint64_t blk = 0; blk < blocks; ++blk) {
    std::uint32_t w[80] = {};
    for (int t = 0; t < 16; ++t) {
      std::uint64_t at = blk * 64 + static_cast<std::uint64_t>(t) * 4;
      w[t] = byte(at) << 24 | byte(at + 1) << 16 | byte(at + 2) << 8 | byte(at + 3);
    }
    for (int t = 16; t < 80; ++t) w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    std::uint32_t v[5] = {h[0], h[1], h[2], h[3], h[4]};
    for (int t = 0; t < 80; ++t) {
      std::uint32_t f = 0, k = 0;
      if (t < 20) {
        f = (v[1] & v[2]) | (~v[1] & v[3]);
        k = 0x5A827999;
      } else if (t < 40) {
        f = v[1] ^ v[2] ^ v[3];
        k = 0x6ED9EBA1;
      } else if (t < 60) {
        f = (v[1] & v[2]) | (v[1] & v[3]) | (v[2] & v[3]);
        k = 0x8F1BBCDC;
      } else {
        f = v[1] ^ v[2] ^ v[3];
        k = 0xCA62C1D6;
      }
      std::uint32_t tmp = rotl(v[0], 5) + f + v[4] + k + w[t];
      v[4] = v[3];
      v[3] = v[2];
      v[2] = rotl(v[1], 30);
      v[1] = v[0];
      v[0] = tmp;
    }
    for (int i = 0; i < 5; ++i) h[i] += v[i];
  }
  std::array<char, 40> out{};
  constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 40; ++i) out[i] = kHex[(h[i / 8] >> (28 - 4 * (i % 8))) & 0xf];
  return out;
}

}  // namespace rlock
