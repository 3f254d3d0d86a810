// Human durations: "250ms", "30s", "5m", "2h", "1h30m", "1.5s"; a bare number is seconds.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace rlock {

using Millis = std::chrono::milliseconds;

/// The longest duration any option accepts (the man page's DURATIONS).
inline constexpr Millis kMaxDuration{366LL * 24 * 3600 * 1000};

/// Parses a duration. Throws a usage Error naming `what` on bad input, a
/// negative value, or one longer than kMaxDuration. Zero is allowed (callers
/// reject it where it makes no sense).
Millis parse_duration(std::string_view text, std::string_view what = "duration");

/// Formats a duration compactly for people: "1h30m", "29.5s", "250ms".
std::string format_duration(Millis d);

/// Unix milliseconds as "2026-11-23T10:00:00.123Z" (clamped to years 1970-9999).
std::string utc_iso(int64_t unix_ms);

/// Unix milliseconds as people read them in a history: "2026-11-23 10:00:00Z".
std::string utc_when(int64_t unix_ms);

}  // namespace rlock
