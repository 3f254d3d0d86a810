#include "duration.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>

#include "error.h"
#include "text.h"

namespace rlock {

namespace {

double unit_ms(std::string_view unit) {
  if (unit == "ms") return 1;
  if (unit == "s" || unit.empty()) return 1000;
  if (unit == "m") return 60'000;
  if (unit == "h") return 3'600'000;
  if (unit == "d") return 86'400'000;
  return -1;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

Millis parse_duration(std::string_view text, std::string_view what) {
  // The text is the user's: escaped in the message (it may hold anything).
  auto bad = [&]() {
    throw_usage(fmt::format("invalid {} '{}': use a number with a unit, like 250ms, 30s, 5m, 1h30m",
                            what, escape_text(text)));
  };
  auto too_long = [&]() {
    throw_usage(fmt::format("invalid {} '{}': durations are at most {} days", what,
                            escape_text(text), kMaxDuration.count() / 86'400'000));
  };
  if (text.empty() || text.size() > 1024) bad();
  double total = 0;
  size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    size_t start = i;
    bool dot = false;
    while (i < text.size() && (is_digit(text[i]) || (text[i] == '.' && !dot))) {
      if (text[i] == '.') dot = true;
      ++i;
    }
    if (i == start || (i - start == 1 && dot)) bad();
    double value = 0;
    // from_chars never throws: a number too large for a double is an error code.
    auto [p, ec] = std::from_chars(text.data() + start, text.data() + i, value);
    if (ec == std::errc::result_out_of_range) too_long();
    if (ec != std::errc() || p != text.data() + i) bad();
    size_t ustart = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(ustart, i - ustart);
    if (unit.empty() && (any || i < text.size())) bad();  // "1h30" is ambiguous
    double mult = unit_ms(unit);
    if (mult < 0) bad();
    total += value * mult;
    any = true;
    if (!std::isfinite(total) || total > static_cast<double>(kMaxDuration.count())) too_long();
  }
  return Millis(static_cast<int64_t>(std::llround(total)));
}

std::string format_duration(Millis d) {
  int64_t ms = d.count();
  std::string sign;
  if (ms < 0) {
    sign = "-";
    // The most negative value has no positive counterpart.
    ms = ms == INT64_MIN ? INT64_MAX : -ms;
  }
  if (ms < 1000) return fmt::format("{}{}ms", sign, ms);
  if (ms < 60'000) {
    if (ms % 1000 == 0) return fmt::format("{}{}s", sign, ms / 1000);
    return fmt::format("{}{:.1f}s", sign, ms / 1000.0);
  }
  int64_t s = ms / 1000;
  int64_t h = s / 3600, m = (s % 3600) / 60, sec = s % 60;
  std::string out = sign;
  if (h) out += fmt::format("{}h", h);
  if (m) out += fmt::format("{}m", m);
  if (sec) out += fmt::format("{}s", sec);
  return out;
}

}  // namespace rlock
