#include "core/log.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <string>

#include "core/stderr_writer.h"
#include "core/text.h"

namespace rlock {

namespace {
OutputMode g_mode;
bool g_status_shown = false;

void clear_status() {
  if (g_status_shown) {
    stderr_write("\r\033[K");
    g_status_shown = false;
  }
}

void line(std::string_view head, std::string_view message) {
  clear_status();
  std::string out;
  out.reserve(head.size() + message.size() + 1);
  out.append(head);
  out += escape_controls(message);
  out += '\n';
  stderr_write(out);
}

}  // namespace

void set_output_mode(OutputMode m) {
  g_mode = m;
}

bool stderr_is_tty() {
  // Asked once: what descriptor 2 is does not change while rlock runs (a
  // keeper points it at /dev/null after the answer: it then writes nothing
  // anybody reads, so a stale "terminal" there costs nothing).
  static const bool tty = isatty(STDERR_FILENO) == 1;
  return tty;
}

size_t terminal_columns(int fd) {
  struct winsize ws {};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

size_t stderr_columns() {
  return terminal_columns(STDERR_FILENO);
}

void log_error(std::string_view message) {
  line("rlock: ", message);
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
  line(
      fmt::format("rlock: [{:02}:{:02}:{:02}.{:03}] ", tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000),
      message);
}

void print_err(std::string_view text) {
  clear_status();
  stderr_write(text);
}

void status_line(std::string_view message) {
  if (g_mode.quiet || !stderr_is_tty()) return;
  if (message.empty()) {
    clear_status();
    return;
  }
  // A line longer than the terminal would wrap, and "\r" would then redraw
  // only its last row: the line never takes the last column.
  size_t width = stderr_columns();
  std::string text = truncate_columns(escape_controls(message), width > 8 ? width - 8 : 0);
  stderr_write("\r\033[Krlock: " + text);
  g_status_shown = true;
}

}  // namespace rlock
