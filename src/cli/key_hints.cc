#include "cli/key_hints.h"

#include <fmt/format.h>

#include "core/text.h"

namespace rlock {

std::string shell_word(std::string_view s) {
  auto plain = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == ':' || c == '/' || c == '@' || c == '+' || c == ',' ||
           c == '%' || c == '=';
  };
  bool all_plain = !s.empty();
  for (char c : s) all_plain = all_plain && plain(c);
  if (all_plain) return std::string(s);
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool looks_like_glob(std::string_view key) {
  return key.find_first_of("*?[") != std::string_view::npos;
}

namespace {
bool has_prefix(std::string_view s, std::string_view prefix) {
  return !prefix.empty() && s.size() > prefix.size() && s.substr(0, prefix.size()) == prefix;
}
}  // namespace

std::optional<std::string> status_hint(std::string_view key, std::string_view prefix) {
  // (KEY is valid text, checked before; escaped all the same: it is shown.)
  if (looks_like_glob(key))
    return fmt::format(
        "'{}' is free, and looks like a pattern: status takes one KEY; did you "
        "mean rlock list {}?",
        escape_text(key),
        escape_text(shell_word(has_prefix(key, prefix) ? key.substr(prefix.size()) : key)));
  if (has_prefix(key, prefix))
    return fmt::format(
        "'{}' is free; rlock adds the prefix '{}' itself: did you mean rlock "
        "status {}?",
        escape_text(key), escape_text(prefix), escape_text(shell_word(key.substr(prefix.size()))));
  return std::nullopt;
}

std::optional<std::string> list_hint(std::string_view pattern, std::string_view prefix) {
  if (!has_prefix(pattern, prefix)) return std::nullopt;
  return fmt::format(
      "no lock matches {}; PATTERN is over KEY and rlock adds the prefix '{}' "
      "itself: did you mean rlock list {}?",
      escape_text(shell_word(pattern)), escape_text(prefix),
      escape_text(shell_word(pattern.substr(prefix.size()))));
}

}  // namespace rlock
