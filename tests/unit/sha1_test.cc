// The compile-time SHA-1 (src/sha1.h) against FIPS 180 test vectors and against
// OpenSSL over every length around the padding boundaries.
#include "core/sha1.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <string>

namespace {

std::string hex(const std::array<char, 40>& a) {
  return std::string(a.data(), a.size());
}

std::string openssl_sha1(const std::string& s) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EXPECT_EQ(EVP_Digest(s.data(), s.size(), md, &n, EVP_sha1(), nullptr), 1);
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    static const char* kHex = "0123456789abcdef";
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

// Evaluated by the compiler: a broken constexpr path fails the build.
static_assert(rlock::sha1_hex("abc")[0] == 'a' && rlock::sha1_hex("abc")[39] == 'd');

TEST(Sha1, KnownVectors) {
  EXPECT_EQ(hex(rlock::sha1_hex("")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(hex(rlock::sha1_hex("abc")), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(hex(rlock::sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
}

TEST(Sha1, MatchesOpenSslAtEveryPaddingBoundary) {
  for (size_t len = 0; len <= 200; ++len) {
    std::string s;
    for (size_t i = 0; i < len; ++i)
      s += static_cast<char>((i * 131 + len) & 0xff);  // high bytes too
    EXPECT_EQ(hex(rlock::sha1_hex(s)), openssl_sha1(s)) << "length " << len;
    // Two parts hash as their concatenation, wherever they are split.
    size_t cut = len / 3;
    EXPECT_EQ(
        hex(rlock::sha1_hex(std::string_view(s).substr(0, cut), std::string_view(s).substr(cut))),
        openssl_sha1(s))
        << "length " << len << " split at " << cut;
  }
}

}  // namespace
