#include "core/text.h"

#include <algorithm>
#include <cstdint>

namespace rlock {

namespace {

constexpr char kHex[] = "0123456789abcdef";

void append_hex_byte(std::string& out, unsigned char c) {
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 0xf];
}

void append_u_escape(std::string& out, uint32_t cp) {
  out += "\\u00";
  out += kHex[(cp >> 4) & 0xf];
  out += kHex[cp & 0xf];
}

}  // namespace

size_t utf8_sequence_length(std::string_view s) {
  if (s.empty()) return 0;
  auto c = static_cast<unsigned char>(s[0]);
  if (c < 0x80) return 1;
  size_t n = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
  if (n == 0 || s.size() < n) return 0;
  uint32_t cp = c & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) {
    auto cc = static_cast<unsigned char>(s[k]);
    if ((cc & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3f);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

namespace {

// Unicode's bidirectional formatting characters (U+061C, U+200E, U+200F,
// U+202A–U+202E, U+2066–U+2069): printable, but they reorder what a terminal
// shows after them, so a host name could display as another.
bool bidi_control(std::string_view seq) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(seq[k]); };
  if (seq.size() == 2) return b(0) == 0xd8 && b(1) == 0x9c;
  if (seq.size() != 3 || b(0) != 0xe2) return false;
  if (b(1) == 0x80) return b(2) == 0x8e || b(2) == 0x8f || (b(2) >= 0xaa && b(2) <= 0xae);
  return b(1) == 0x81 && b(2) >= 0xa6 && b(2) <= 0xa9;
}

std::string escape(std::string_view s, bool backslash) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '\\' && backslash) {
      out += "\\\\";
      ++i;
      continue;
    }
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f)
        append_hex_byte(out, c);
      else
        out += static_cast<char>(c);
      ++i;
      continue;
    }
    size_t n = utf8_sequence_length(s.substr(i));
    // C1 controls (U+0080–U+009F) are encoded as C2 80 … C2 9F.
    bool c1 = n == 2 && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0;
    if (n == 0 || c1 || bidi_control(s.substr(i, n))) {
      size_t len = n == 0 ? 1 : n;
      for (size_t k = 0; k < len; ++k) append_hex_byte(out, static_cast<unsigned char>(s[i + k]));
      i += len;
      continue;
    }
    out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace

std::string truncate_text(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  size_t cut = max >= 3 ? max - 3 : 0;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "\xe2\x80\xa6";
}

std::string escape_text(std::string_view s) {
  return escape(s, true);
}

bool is_printable_text(std::string_view s) {
  size_t backslashes = static_cast<size_t>(std::count(s.begin(), s.end(), '\\'));
  return escape_text(s).size() == s.size() + backslashes;
}

std::string escape_controls(std::string_view s) {
  return escape(s, false);
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
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
          if (c < 0x20 || c == 0x7f)
            append_u_escape(out, c);
          else
            out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    size_t n = utf8_sequence_length(s.substr(i));
    if (n == 0) {
      out += "\\ufffd";
      ++i;
    } else if (n == 2 && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) {
      append_u_escape(out, static_cast<unsigned char>(s[i + 1]));
      i += 2;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out + "\"";
}

size_t text_columns(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xc0) != 0x80) ++n;
  return n;
}

std::string truncate_columns(std::string_view s, size_t columns) {
  if (text_columns(s) <= columns) return std::string(s);
  if (columns == 0) return "";
  std::string out;
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c & 0xc0) != 0x80 && ++n == columns) break;  // the last column is for "…"
    out += s[i];
  }
  return out + "\u2026";
}

std::string wrap_text(std::string_view first, std::string_view text, size_t width) {
  std::string out(first), indent(text_columns(first), ' ');
  size_t col = text_columns(first);
  bool line_empty = true;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    size_t end = text.find(' ', i);
    std::string_view word = text.substr(i, end == std::string_view::npos ? end : end - i);
    i = end == std::string_view::npos ? text.size() : end;
    size_t w = text_columns(word);
    if (!line_empty && col + 1 + w > width) {
      out += "\n" + indent;
      col = indent.size();
      line_empty = true;
    }
    if (!line_empty) {
      out += ' ';
      ++col;
    }
    out += word;
    col += w;
    line_empty = false;
  }
  return out + "\n";
}

std::string ascii_lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

}  // namespace rlock
