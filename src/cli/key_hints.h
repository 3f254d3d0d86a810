// Hints for a KEY or PATTERN that was probably meant otherwise: a glob given
// to `status` (which takes one name), a PATTERN or KEY written with the
// prefix that rlock adds itself (the man page's status and list; the choice
// is in docs/DECISIONS.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rlock {

/// `s` as one shell word: unchanged when it holds only characters no shell
/// treats specially, else in single quotes ('\'' for a quote inside).
std::string shell_word(std::string_view s);

/// Whether `key` holds a glob character (`*`, `?`, `[`) that `list` would
/// take as a pattern.
bool looks_like_glob(std::string_view key);

/// What `status KEY` adds on stderr when KEY is free: a glob → the `list`
/// to run; a KEY that starts with `prefix` → the KEY without it. nullopt
/// when neither.
std::optional<std::string> status_hint(std::string_view key, std::string_view prefix);

/// What `list PATTERN` adds on stderr when nothing matched and PATTERN starts
/// with `prefix` (which rlock adds already); nullopt otherwise.
std::optional<std::string> list_hint(std::string_view pattern, std::string_view prefix);

}  // namespace rlock
