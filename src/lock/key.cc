#include "lock/key.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/text.h"

namespace rlock {

// Returns false on malformed UTF-8 (overlongs and surrogates included).
bool valid_utf8_no_controls(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) return false;
      ++i;
      continue;
    }
    int n = (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
    if (n < 0 || i + n >= s.size()) return false;
    uint32_t cp = c & (0x3f >> n);
    for (int k = 1; k <= n; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    if (cp >= 0x80 && cp < 0xa0) return false;  // C1 controls
    i += n + 1;
  }
  return true;
}

void validate_key(std::string_view key) {
  if (key.empty()) throw_usage("invalid key: it is empty");
  if (key.size() > 512)
    throw_usage(fmt::format("invalid key: {} bytes, the limit is 512", key.size()));
  if (key.find_first_of("{}") != std::string_view::npos)
    throw_usage("invalid key: '{' and '}' are not allowed (they would break the Cluster hash tag)");
  if (!valid_utf8_no_controls(key))
    throw_usage("invalid key: it must be UTF-8 text without control characters");
}

void validate_prefix(std::string_view prefix) {
  if (prefix.size() > 256) throw_usage("invalid --prefix: longer than 256 bytes");
  if (prefix.find_first_of("{}") != std::string_view::npos || !valid_utf8_no_controls(prefix))
    throw_usage("invalid --prefix: it must be printable text without '{' or '}'");
}

void validate_token(std::string_view token) {
  if (token.empty() || token.size() > 128 || token.find(' ') != std::string_view::npos ||
      !valid_utf8_no_controls(token))
    throw_usage("invalid token: expected the token printed by 'rlock acquire'");
}

LockNames::LockNames(std::string k, std::string p)
    : key(std::move(k)),
      prefix(std::move(p)),
      lock(fmt::format("{}{{{}}}", prefix, key)),
      base(lock + ":"),
      channel(fmt::format("{}release:{{{}}}", prefix, key)) {}

LockNames LockNames::of(Layout layout, std::string key, std::string prefix) {
  LockNames n(std::move(key), std::move(prefix));
  n.layout = layout;
  if (layout == Layout::Plain) {
    n.lock = n.prefix + n.key;
    n.channel = n.prefix + "release:" + n.key;
  } else if (layout == Layout::Redisson) {
    n.lock = n.key;
    n.channel = "redisson_lock__channel:{" + n.key + "}";
  }
  if (layout != Layout::Rlock) n.base = n.lock + ":";
  return n;
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Plain:
      return "plain";
    case Layout::Redisson:
      return "redisson";
    default:
      return "rlock";
  }
}

Layout parse_layout(std::string_view s, std::string_view what) {
  if (s == "rlock") return Layout::Rlock;
  if (s == "plain") return Layout::Plain;
  if (s == "redisson") return Layout::Redisson;
  throw_usage(fmt::format("invalid {} '{}': use rlock, plain or redisson", what,
                          escape_text(truncate_text(std::string(s), 64))));
}

}  // namespace rlock
