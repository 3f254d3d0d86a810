// Everything rlock writes for people: stderr messages, -v traces, the waiting
// status line, JSON escaping, time formatting. Only main() and the command
// functions call these; lower layers return values or throw.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rlock {

/// Global output settings, set once by main() from -q/-v.
struct OutputMode {
  bool quiet = false;
  bool verbose = false;
};
void set_output_mode(OutputMode m);

/// "rlock: <message>" on stderr (always, even with -q: errors matter).
void log_error(std::string_view message);
/// "rlock: <message>" on stderr unless -q.
void log_info(std::string_view message);
/// With -v: "rlock: [HH:MM:SS.mmm] <message>" on stderr.
void log_verbose(std::string_view message);

/// A status line on a terminal, rewritten in place ("\r\033[K…"); clear it
/// with an empty message. No-op unless stderr is a terminal and not -q.
void status_line(std::string_view message);
bool stderr_is_tty();

/// JSON string literal of `s` (quotes included).
std::string json_string(std::string_view s);
/// Unix milliseconds as "2026-11-23T10:00:00.123Z".
std::string utc_iso(int64_t unix_ms);

}  // namespace rlock
