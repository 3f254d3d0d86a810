#include "cli/output.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include "core/error.h"
#include "core/stderr_writer.h"

namespace rlock {

namespace {
OutputMode g_mode;
bool g_status_shown = false;
bool g_reader_gone = false;  // stdout_reader_gone()

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
  return isatty(STDERR_FILENO) == 1;
}

namespace {
size_t columns_of(int fd) {
  struct winsize ws {};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}
}  // namespace

size_t stderr_columns() {
  return columns_of(STDERR_FILENO);
}

bool stdout_is_tty() {
  return isatty(STDOUT_FILENO) == 1;
}

size_t stdout_columns() {
  return columns_of(STDOUT_FILENO);
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

void print_out(std::string_view text) {
  while (!text.empty()) {
    ssize_t n = write(STDOUT_FILENO, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) throw stdout_reader_left();
    if (n <= 0)
      throw Error(ErrorKind::Protocol, fmt::format("cannot write to standard output: {}",
                                                   n < 0 ? strerror(errno) : "nothing written"));
    text.remove_prefix(static_cast<size_t>(n));
  }
}

bool stdout_reader_gone() {
  return g_reader_gone;
}

Error stdout_reader_left() {
  g_reader_gone = true;
  return Error(ErrorKind::Protocol, "standard output: its reader closed it", 128 + SIGPIPE,
               Cause::ReaderGone);
}

void end_if_reader_gone() {
  if (!g_reader_gone) return;
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPIPE, &sa, nullptr);
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  sigprocmask(SIG_UNBLOCK, &pipe, nullptr);
  raise(SIGPIPE);
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

}  // namespace rlock
