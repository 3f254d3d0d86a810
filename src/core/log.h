// rlock's lines on standard error: messages for people, -v traces and the
// waiting status line. Every layer may log here (lower layers mostly return
// values or throw, and trace what they did with -v); what goes to standard
// output, and the wording of a command's results, belongs to the face
// (cli/output.h).
//
// Nothing here throws on a failed or stalled stderr (see stderr_writer.h), and
// every message passes through escape_controls(), so no text can forge a line
// or send a terminal escape.
#pragma once

#include <cstddef>
#include <string_view>

namespace rlock {

/// Global output settings, set once by run_cli from -q/-v.
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
/// Text on stderr as is (the break prompt), without "rlock: ".
void print_err(std::string_view text);

/// A status line on a terminal, rewritten in place ("\r\033[K…"); clear it
/// with an empty message. No-op unless stderr is a terminal and not -q.
void status_line(std::string_view message);
bool stderr_is_tty();
/// The width of the terminal on stderr (80 when it cannot be told).
size_t stderr_columns();
/// The width of the terminal on descriptor `fd` (80 when it cannot be told).
size_t terminal_columns(int fd);

}  // namespace rlock
