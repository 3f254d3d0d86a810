// Text that crosses a trust boundary: anything that came from Redis (holder
// host, user and command, key names, tokens, server error strings) or from
// the user's command line (a URL) is escaped before people or tools see it,
// so it can neither forge a line of rlock's output nor send terminal escapes.
#pragma once

#include <string>
#include <string_view>

namespace rlock {

/// For human output: valid, printable UTF-8 passes unchanged; C0 and C1
/// control characters, DEL, tab, Unicode's bidirectional formatting
/// characters (U+202E…) and bytes that are not valid UTF-8 become `\xHH` (one
/// per byte), and a backslash becomes `\\`. The result is one line of
/// printable text, whatever the input, that displays in the order it is.
std::string escape_text(std::string_view s);

/// Whether `s` is valid, printable UTF-8 that escape_text changes in nothing
/// but its backslashes: text that can be shown (or printed for a program) as it
/// is.
bool is_printable_text(std::string_view s);

/// escape_text without doubling backslashes: a last line of defence applied
/// to every message rlock prints, harmless on text that is already escaped.
std::string escape_controls(std::string_view s);

/// A JSON string literal (quotes included) that is valid JSON whatever the
/// bytes: `"` `\` and control characters (C0, DEL, C1) are escaped, and a
/// byte that is not valid UTF-8 becomes U+FFFD.
std::string json_string(std::string_view s);

/// `s` cut to at most `max` bytes, never inside a UTF-8 sequence, with "…"
/// (3 bytes, counted in `max`) when something was cut.
std::string truncate_text(std::string_view s, size_t max);

/// The columns `s` takes on a terminal, counting each UTF-8 character as one
/// (rlock's own texts; text from Redis is escaped first).
size_t text_columns(std::string_view s);

/// `s` with ASCII A-Z lowered (host names, command names; whatever the locale).
std::string ascii_lower(std::string s);

/// `s` cut to at most `columns` columns (UTF-8 characters), with "…" as its
/// last column when something was cut.
std::string truncate_columns(std::string_view s, size_t columns);

/// `text` broken at spaces into lines of at most `width` columns, the first
/// prefixed by `first`, the others indented by as many spaces as `first` has
/// columns; every line ends in "\n". A word longer than a line stays whole.
std::string wrap_text(std::string_view first, std::string_view text, size_t width = 80);

/// The length of the valid UTF-8 sequence at the start of `s` (1–4), or 0
/// when it is not one (truncated, overlong, surrogate, beyond U+10FFFF).
size_t utf8_sequence_length(std::string_view s);

}  // namespace rlock
