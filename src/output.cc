#include "output.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>

namespace rlock {

namespace {
OutputMode g_mode;
bool g_status_shown = false;
}  // namespace

void set_output_mode(OutputMode m) {
  g_mode = m;
}

bool stderr_is_tty() {
  return isatty(STDERR_FILENO) == 1;
}

static void clear_status() {
  if (g_status_shown) {
    fputs("\r\033[K", stderr);
    g_status_shown = false;
  }
}

void log_error(std::string_view message) {
  clear_status();
  fmt::print(stderr, "rlock: {}\n", message);
  fflush(stderr);
}

void log_info(std::string_view message) {
  if (g_mode.quiet) return;
  log_error(message);
}

void log_verbose(std::string_view message) {
  if (!g_mode.verbose) return;
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  time_t secs = static_cast<time_t>(ms / 1000);
  struct tm tm {};
  localtime_r(&secs, &tm);
  clear_status();
  fmt::print(stderr, "rlock: [{:02}:{:02}:{:02}.{:03}] {}\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
             ms % 1000, message);
  fflush(stderr);
}

void status_line(std::string_view message) {
  if (g_mode.quiet || !stderr_is_tty()) return;
  if (message.empty()) {
    clear_status();
  } else {
    fmt::print(stderr, "\r\033[Krlock: {}", message);
    g_status_shown = true;
  }
  fflush(stderr);
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20)
          out += fmt::format("\\u{:04x}", c);
        else
          out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string utc_iso(int64_t unix_ms) {
  time_t secs = static_cast<time_t>(unix_ms / 1000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, unix_ms % 1000);
}

}  // namespace rlock
