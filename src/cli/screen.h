// The terminal for a full-screen view (`rlock top`), in plain ANSI escapes: no
// terminal library is loaded (the man page's "top"). Raw input, the
// alternate screen, and the terminal given back as it was on every way out.
#pragma once

#include <termios.h>

#include <cstddef>
#include <string>
#include <vector>

namespace rlock {

/// A key read in raw mode.
struct Key {
  enum Kind { Char, Up, Down, PageUp, PageDown, Enter, Escape, Backspace, Interrupt } kind = Char;
  char c = 0;  // Char: the byte (printable ASCII)
};

/// Decodes the keys at the start of `pending` (raw bytes from the terminal)
/// and removes them; an escape sequence cut short stays for the next read
/// unless `flush` (then a lone ESC is Escape). Unknown sequences are dropped.
std::vector<Key> decode_keys(std::string& pending, bool flush = false);

/// Colours and attributes, unless NO_COLOR is set or TERM is dumb.
bool terminal_wants_color();

/// The width to draw standard output's text in: $COLUMNS (a whole number),
/// else the terminal's, else `off_terminal`.
size_t output_columns(size_t off_terminal);

/// Whether a full screen can be drawn: stdin and stdout are terminals and
/// TERM is set and not "dumb".
bool full_screen_possible();

class Screen {
 public:
  /// Takes the terminal: raw mode on stdin (no echo, no line editing, Ctrl-C
  /// a key), the alternate screen and a hidden cursor on stdout. Throws a
  /// protocol Error when the terminal refuses.
  Screen();
  ~Screen();
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

  /// Gives the terminal back as it was (idempotent; the destructor calls it).
  void restore();
  /// The terminal's size now (rows, columns); 24x80 when it cannot be told.
  std::pair<size_t, size_t> size() const;
  /// Draws `lines` from the top left, each cleared to its end, and clears
  /// below them: one write, no flicker. Lines must fit the width.
  void draw(const std::vector<std::string>& lines);

 private:
  struct termios saved_ {};
  bool active_ = false;
};

}  // namespace rlock
