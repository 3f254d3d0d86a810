#include "cli/screen.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cli/output.h"
#include "core/error.h"

namespace rlock {

namespace {

// Alternate screen on, cursor hidden / cursor shown, alternate screen off.
constexpr const char* kEnter = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J";
constexpr const char* kLeave = "\x1b[0m\x1b[?25h\x1b[?1049l";

// Writes to the terminal; a failure is left to the next draw (the view ends
// on its own terms, never half way through a restore).
void put(std::string_view s) {
  while (!s.empty()) {
    ssize_t n = write(STDOUT_FILENO, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    s.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

std::vector<Key> decode_keys(std::string& pending, bool flush) {
  std::vector<Key> keys;
  size_t i = 0;
  while (i < pending.size()) {
    auto c = static_cast<unsigned char>(pending[i]);
    if (c == 0x1b) {
      if (i + 1 >= pending.size()) {
        if (!flush) break;
        keys.push_back({Key::Escape});
        ++i;
        continue;
      }
      if (pending[i + 1] != '[' && pending[i + 1] != 'O') {
        keys.push_back({Key::Escape});
        ++i;
        continue;
      }
      // CSI/SS3: parameters, then one final byte in 0x40-0x7e.
      size_t j = i + 2;
      while (j < pending.size() && (pending[j] < 0x40 || pending[j] > 0x7e)) ++j;
      if (j >= pending.size()) {
        if (!flush && j - i < 16) break;
        i = pending.size();
        continue;
      }
      std::string seq = pending.substr(i + 2, j - i - 2) + pending[j];
      if (seq == "A") keys.push_back({Key::Up});
      if (seq == "B") keys.push_back({Key::Down});
      if (seq == "5~") keys.push_back({Key::PageUp});
      if (seq == "6~") keys.push_back({Key::PageDown});
      i = j + 1;
      continue;
    }
    if (c == '\r' || c == '\n')
      keys.push_back({Key::Enter});
    else if (c == 0x03)
      keys.push_back({Key::Interrupt});
    else if (c == 0x7f || c == 0x08)
      keys.push_back({Key::Backspace});
    else if (c >= 0x20 && c < 0x7f)
      keys.push_back({Key::Char, static_cast<char>(c)});
    ++i;
  }
  pending.erase(0, i);
  return keys;
}

bool terminal_wants_color() {
  const char* no = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  return !(no && *no) && !(term && std::strcmp(term, "dumb") == 0);
}

size_t output_columns(size_t off_terminal) {
  if (const char* c = std::getenv("COLUMNS");
      c && *c && std::strlen(c) < 5 && std::strspn(c, "0123456789") == std::strlen(c)) {
    long n = std::strtol(c, nullptr, 10);
    if (n > 0) return static_cast<size_t>(n);
  }
  return stdout_is_tty() ? stdout_columns() : off_terminal;
}

bool full_screen_possible() {
  const char* term = std::getenv("TERM");
  return isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 && term && *term &&
         std::strcmp(term, "dumb") != 0;
}

Screen::Screen() {
  if (tcgetattr(STDIN_FILENO, &saved_) != 0)
    throw Error(ErrorKind::Protocol,
                fmt::format("cannot read the terminal's settings: {}", std::strerror(errno)));
  struct termios raw = saved_;
  raw.c_iflag &= ~static_cast<tcflag_t>(IXON | ICRNL | INLCR | IGNCR);
  raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | ISIG | IEXTEN);
  raw.c_cc[VMIN] = 0;
  raw.c_cc[VTIME] = 0;
  if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) != 0)
    throw Error(ErrorKind::Protocol,
                fmt::format("cannot set the terminal to raw mode: {}", std::strerror(errno)));
  active_ = true;
  put(kEnter);
}

Screen::~Screen() {
  restore();
}

void Screen::restore() {
  if (!active_) return;
  active_ = false;
  put(kLeave);
  tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_);
}

std::pair<size_t, size_t> Screen::size() const {
  struct winsize ws {};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
    return {ws.ws_row, ws.ws_col};
  return {24, 80};
}

void Screen::draw(const std::vector<std::string>& lines) {
  std::string out = "\x1b[H";
  for (size_t i = 0; i < lines.size(); ++i)
    out += lines[i] + "\x1b[K" + (i + 1 < lines.size() ? "\r\n" : "");
  out += "\x1b[J";
  put(out);
}

}  // namespace rlock
