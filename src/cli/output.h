// Everything rlock writes for people: stderr messages, -v traces, the waiting
// status line, standard output, time formatting. Only run_cli and the command
// functions call these; lower layers return values or throw.
//
// Nothing here throws on a failed or stalled stderr (see stderr_writer.h), and
// every message passes through escape_controls(), so no text can forge a line
// or send a terminal escape.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/text.h"

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

/// Standard output is a terminal: status and list then print for people
/// (a header, human units, lines within the terminal's width).
bool stdout_is_tty();
/// The width of the terminal on standard output (80 when it cannot be told).
size_t stdout_columns();

/// Writes `text` to standard output (blocking: stdout is the caller's to
/// read). Throws a protocol Error (70) naming the cause when it fails (a full
/// disk, a stdout closed at start), so the output is never lost silently.
/// A reader that closed the pipe (EPIPE: `| head`) is no error: the Error
/// thrown then has Cause::ReaderGone and status 141, is never shown, and
/// rlock ends as killed by SIGPIPE (end_if_reader_gone), as coreutils do.
void print_out(std::string_view text);
/// Whether a write to standard output found its reader gone (EPIPE).
bool stdout_reader_gone();
/// Standard output's reader is gone (EPIPE, or a pipe whose reader closed
/// it, seen by poll): marks it so (stdout_reader_gone) and returns the
/// Error print_out throws then.
Error stdout_reader_left();
/// If stdout_reader_gone(): dies by SIGPIPE (its default disposition, rlock
/// ignores it while running), as `yes | head` does; else returns.
void end_if_reader_gone();

/// Unix milliseconds as "2026-11-23T10:00:00.123Z".
std::string utc_iso(int64_t unix_ms);

}  // namespace rlock
