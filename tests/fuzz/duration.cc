// parse_duration and format_duration. Only a usage Error may escape parse_duration, and a
// parsed value is >= 0; any other exception escapes this target and libFuzzer reports it.
//
// Input: text for parse_duration, or '#' and a decimal int64 for format_duration alone:
// rlock formats numbers a server sent (a holder's pttl, the min-hold left), so any int64 may
// reach it, negative ones included.
#include "core/duration.h"

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"

namespace {

using rlock::Millis;

// Anything parse_duration accepted formats without throwing and, up to the 366-day cap,
// reads back within the precision format_duration shows (0.1 s under a minute, 1 s above).
void check_format(Millis d, std::string_view input) {
  std::string shown = rlock::format_duration(d);
  FUZZ_CHECK(!shown.empty(), "'%s': format_duration(%lld) is empty",
             fuzz::hex_escape(input).c_str(), static_cast<long long>(d.count()));
  FUZZ_CHECK((shown[0] == '-') == (d.count() < 0), "format_duration(%lld) = '%s'",
             static_cast<long long>(d.count()), shown.c_str());
  if (d.count() < 0 || d > rlock::kMaxDuration) return;
  Millis back{0};
  try {
    back = rlock::parse_duration(shown);
  } catch (const rlock::Error& e) {
    FUZZ_CHECK(false, "format_duration(%lld) = '%s' does not parse back: %s",
               static_cast<long long>(d.count()), shown.c_str(), e.what());
  }
  auto diff = back > d ? back - d : d - back;
  FUZZ_CHECK(diff < Millis(1000), "format_duration(%lld) = '%s' reads back as %lld",
             static_cast<long long>(d.count()), shown.c_str(),
             static_cast<long long>(back.count()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!text.empty() && text[0] == '#') {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data() + 1, text.data() + text.size(), v);
    if (ec == std::errc() && end == text.data() + text.size()) check_format(Millis(v), text);
    return 0;
  }
  Millis d{0};
  try {
    d = rlock::parse_duration(text, "--ttl");
  } catch (const rlock::Error& e) {
    fuzz::check_usage(e, text);
    return 0;
  }
  FUZZ_CHECK(d.count() >= 0, "'%s' parsed as %lld ms", fuzz::hex_escape(text).c_str(),
             static_cast<long long>(d.count()));
  check_format(d, text);
  return 0;
}
