// What the fuzz targets share: a check that libFuzzer reports as a crash, and a reference
// "printable UTF-8 line" predicate written differently from rlock's (table-driven, after The
// Unicode Standard's table 3-7) so the two can be compared.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/error.h"

/// A broken promise: print it and abort(), which libFuzzer reports as a deadly signal and
/// saves the input.
#define FUZZ_CHECK(cond, ...)                                                    \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "\nFUZZ_CHECK failed (%s:%d): ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                                         \
      std::fprintf(stderr, "\n  check: %s\n", #cond);                            \
      std::abort();                                                              \
    }                                                                            \
  } while (0)

namespace fuzz {

/// For messages: `s` with every byte outside printable ASCII as \xHH.
inline std::string hex_escape(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

/// Well-formed UTF-8 without C0 controls (tab and newline included), DEL or C1 controls.
inline bool printable_utf8(std::string_view s) {
  auto in = [](unsigned char c, int lo, int hi) { return c >= lo && c <= hi; };
  size_t i = 0;
  while (i < s.size()) {
    auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
    size_t left = s.size() - i;
    unsigned char c = b(0);
    size_t n = 0;  // bytes in this sequence, 0 = ill-formed
    if (c >= 0x20 && c < 0x7f)
      n = 1;
    else if (c == 0xc2 && left >= 2 && in(b(1), 0xa0, 0xbf))  // U+00A0.., not C1 controls
      n = 2;
    else if (in(c, 0xc3, 0xdf) && left >= 2 && in(b(1), 0x80, 0xbf))
      n = 2;
    else if (left >= 3 && in(b(2), 0x80, 0xbf) &&
             ((c == 0xe0 && in(b(1), 0xa0, 0xbf)) || (in(c, 0xe1, 0xec) && in(b(1), 0x80, 0xbf)) ||
              (c == 0xed && in(b(1), 0x80, 0x9f)) || (in(c, 0xee, 0xef) && in(b(1), 0x80, 0xbf))))
      n = 3;
    else if (left >= 4 && in(b(2), 0x80, 0xbf) && in(b(3), 0x80, 0xbf) &&
             ((c == 0xf0 && in(b(1), 0x90, 0xbf)) || (in(c, 0xf1, 0xf3) && in(b(1), 0x80, 0xbf)) ||
              (c == 0xf4 && in(b(1), 0x80, 0x8f))))
      n = 4;
    if (n == 0) return false;
    i += n;
  }
  return true;
}

/// Every rlock::Error a parser throws on bad input is a usage error: exit 64.
inline void check_usage(const rlock::Error& e, std::string_view input) {
  FUZZ_CHECK(e.kind() == rlock::ErrorKind::Usage && e.exit_status() == rlock::exitcode::kUsage,
             "input '%s' gave a non-usage error (status %d): %s", hex_escape(input).c_str(),
             e.exit_status(), e.what());
}

}  // namespace fuzz
