// Lock keys and the Redis names derived from them.
#pragma once

#include <string>
#include <string_view>

namespace rlock {

/// Throws a usage Error unless `key` is 1–512 bytes of valid UTF-8 without
/// control characters, '{' or '}' (they would break the Cluster hash tag).
void validate_key(std::string_view key);

/// Throws a usage Error unless `prefix` is printable and free of '{' and '}'.
void validate_prefix(std::string_view prefix);

/// Throws a usage Error unless `token` looks like a token rlock issued
/// (1–128 bytes of UTF-8 without control characters or spaces).
void validate_token(std::string_view token);

/// True for well-formed UTF-8 without control characters (C0, DEL, C1).
bool valid_utf8_no_controls(std::string_view s);

/// Where a lock's keys are and what they hold (--layout, RLOCK_LAYOUT):
/// rlock's own, the plain `SET PREFIXKEY token NX PX` of the seeds' NestJS
/// service, or Redisson's reentrant hash at KEY (docs/PROTOCOL.md).
enum class Layout { Rlock, Plain, Redisson };

/// "rlock", "plain", "redisson".
const char* layout_name(Layout l);
/// The layout named `s`, or a usage Error naming `what` (an option or variable).
Layout parse_layout(std::string_view s, std::string_view what);

/// All Redis names of one lock. Every key shares the hash tag {KEY}, so a
/// lock lives in one Cluster slot; see docs/PROTOCOL.md. Under another
/// layout (LockNames::of) there is one key, `lock`, and its release channel.
struct LockNames {
  std::string key;      // the user's KEY
  std::string prefix;   // "lock:" by default
  std::string lock;     // PREFIX{KEY}: string holding the holder's token
  std::string base;     // PREFIX{KEY}: — start of every further key
  std::string channel;  // PREFIXrelease:{KEY}
  Layout layout = Layout::Rlock;

  LockNames(std::string key, std::string prefix);
  /// The names of KEY under `layout`: plain PREFIXKEY and PREFIXrelease:KEY;
  /// redisson KEY and redisson_lock__channel:{KEY} (no prefix).
  static LockNames of(Layout layout, std::string key, std::string prefix);
  std::string sub(std::string_view suffix) const { return base + std::string(suffix); }
  /// The notification channel of one waiter: PREFIXrelease:{KEY}:TOKEN.
  std::string waiter_channel(std::string_view token) const {
    return channel + ":" + std::string(token);
  }
  /// The list of one waiter's notices, waited on with BLPOP: PREFIX{KEY}:t:TOKEN.
  std::string waiter_list(std::string_view token) const { return sub("t:") + std::string(token); }
};

}  // namespace rlock
