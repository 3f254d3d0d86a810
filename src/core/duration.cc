#include "core/duration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <ctime>

#include "core/error.h"
#include "core/text.h"

namespace rlock {

namespace {

int64_t unit_ms(std::string_view unit) {
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
  // Exact arithmetic in units of 10^-18 ms (no floating point, so no rounding
  // surprises, and no libm on the start-up path): a term is its whole part and
  // up to 18 decimals, times its unit; `inexact` records a non-zero decimal
  // beyond the 18th, so a value just over the cap is still refused. The
  // largest term, 10^12 d, is below 10^38: it fits in 128 bits.
  using Wide = __int128;
  constexpr int kDecimals = 18;
  constexpr Wide kScale = [] {
    Wide v = 1;
    for (int k = 0; k < kDecimals; ++k) v *= 10;
    return v;
  }();
  const Wide max_total = Wide(kMaxDuration.count()) * kScale;
  Wide total = 0;
  bool inexact = false;
  size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && is_digit(text[i])) ++i;
    std::string_view whole = text.substr(start, i - start);
    std::string_view frac;
    if (i < text.size() && text[i] == '.') {
      size_t fstart = ++i;
      while (i < text.size() && is_digit(text[i])) ++i;
      frac = text.substr(fstart, i - fstart);
      if (whole.empty() && frac.empty()) bad();  // "." alone
    } else if (whole.empty()) {
      bad();
    }
    while (whole.size() > 1 && whole.front() == '0') whole.remove_prefix(1);
    // More than 12 digits is more than 366 days in any unit (10^12 ms).
    if (whole.size() > 12) too_long();
    Wide value = 0;
    for (char c : whole) value = value * 10 + (c - '0');
    value *= kScale;
    Wide place = kScale / 10;
    for (size_t k = 0; k < frac.size(); ++k, place /= 10) {
      if (k < kDecimals)
        value += (frac[k] - '0') * place;
      else if (frac[k] != '0')
        inexact = true;
    }
    size_t ustart = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(ustart, i - ustart);
    if (unit.empty() && (any || i < text.size())) bad();  // "1h30" is ambiguous
    int64_t mult = unit_ms(unit);
    if (mult < 0) bad();
    total += value * mult;
    any = true;
    if (total > max_total || (total == max_total && inexact)) too_long();
  }
  // Rounded to the nearest millisecond, halves up (dropped decimals only ever
  // make the value larger, never reach the next half).
  return Millis(static_cast<int64_t>((total + kScale / 2) / kScale));
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

std::string utc_iso(int64_t unix_ms) {
  // Server times may be anything: shown within years 1970–9999.
  unix_ms = std::clamp<int64_t>(unix_ms, 0, 253'402'300'799'999);
  time_t secs = static_cast<time_t>(unix_ms / 1000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, unix_ms % 1000);
}

std::string utc_when(int64_t unix_ms) {
  std::string iso = utc_iso(unix_ms);  // 2026-11-27T14:03:22.123Z
  return iso.substr(0, 10) + " " + iso.substr(11, 8) + "Z";
}

}  // namespace rlock
