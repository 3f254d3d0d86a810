// What rlock writes for people on standard output, beside its lines on
// stderr (core/log.h, included here): only run_cli and the command functions
// print results; lower layers return values or throw.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/duration.h"  // utc_iso
#include "core/error.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/text.h"

namespace rlock {

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
/// A follower (history --follow, status --follow) ends as soon as the reader
/// of its pipe leaves (`| head -2` has its lines), as tail -f does, not at its
/// next line, which may be days away. When standard output is a pipe, watches
/// it on `loop` and calls `gone` once with stdout_reader_left()'s Error; then
/// returns true (the caller unwatches STDOUT_FILENO when it ends).
bool watch_stdout_reader(Loop& loop, std::function<void(const Error&)> gone);
/// If stdout_reader_gone(): dies by SIGPIPE (its default disposition, rlock
/// ignores it while running), as `yes | head` does; else returns.
void end_if_reader_gone();

/// Reads one line of standard input, the answer to a "[y/N]" that break or
/// forget asked on the terminal: true for y, Y or yes; false for anything
/// else, end of input or an error. The one reader of a standard stream outside
/// run_cli (core/iostream_lazy.h), never inlined so that tests/streams.bats
/// finds it by name whatever the build inlines.
[[gnu::noinline]] bool read_yes_answer();

}  // namespace rlock
