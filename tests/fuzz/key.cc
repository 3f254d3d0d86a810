// validate_key, validate_prefix, validate_token and LockNames. The validators throw only
// usage Errors, and accept exactly what their contracts in key.h describe (checked against
// fuzz::printable_utf8, an independent UTF-8 reading). Every name of a valid key carries the
// Cluster hash tag {KEY} exactly once, and Redis Cluster hashes it by KEY alone.
//
// Input: KEY, optionally followed by a NUL byte and PREFIX (default "lock:"). A NUL is a
// control character, so no valid key or prefix contains one. The token checked is KEY.
#include "lock/key.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"

namespace {

bool accepts(void (*validate)(std::string_view), std::string_view s) {
  try {
    validate(s);
    return true;
  } catch (const rlock::Error& e) {
    fuzz::check_usage(e, s);
    return false;
  }
}

bool no_braces(std::string_view s) {
  return s.find_first_of("{}") == std::string_view::npos;
}

// The part of a key name Redis Cluster hashes: between the first '{' and the first '}' after
// it, if that is not empty (cluster-spec "Hash tags").
std::string_view hash_tag(std::string_view name) {
  auto open = name.find('{');
  if (open == std::string_view::npos) return name;
  auto close = name.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return name;
  return name.substr(open + 1, close - open - 1);
}

size_t count(std::string_view s, std::string_view what) {
  size_t n = 0;
  for (auto at = s.find(what); at != std::string_view::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

void check_names(const std::string& key, const std::string& prefix) {
  rlock::LockNames n(key, prefix);
  std::string tag = "{" + key + "}";
  for (const std::string& name :
       {n.lock, n.base, n.channel, n.sub("fence"), n.sub("h:tok"), n.waiter_channel("tok")}) {
    FUZZ_CHECK(count(name, tag) == 1 && hash_tag(name) == key,
               "key '%s', prefix '%s': name '%s' does not carry {KEY} once",
               fuzz::hex_escape(key).c_str(), fuzz::hex_escape(prefix).c_str(),
               fuzz::hex_escape(name).c_str());
  }
  FUZZ_CHECK(n.lock == prefix + tag && n.channel == prefix + "release:" + tag,
             "key '%s', prefix '%s': lock '%s', channel '%s'", fuzz::hex_escape(key).c_str(),
             fuzz::hex_escape(prefix).c_str(), fuzz::hex_escape(n.lock).c_str(),
             fuzz::hex_escape(n.channel).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto nul = in.find('\0');
  std::string key(in.substr(0, nul));
  std::string prefix = nul == std::string_view::npos ? "lock:" : std::string(in.substr(nul + 1));
  std::string k = fuzz::hex_escape(key), p = fuzz::hex_escape(prefix);

  bool key_ok = accepts(rlock::validate_key, key);
  bool key_spec = !key.empty() && key.size() <= 512 && no_braces(key) && fuzz::printable_utf8(key);
  FUZZ_CHECK(key_ok == key_spec, "validate_key('%s') %s", k.c_str(),
             key_ok ? "accepted it" : "rejected it");

  bool prefix_ok = accepts(rlock::validate_prefix, prefix);
  bool prefix_spec = prefix.size() <= 256 && no_braces(prefix) && fuzz::printable_utf8(prefix);
  FUZZ_CHECK(prefix_ok == prefix_spec, "validate_prefix('%s') %s", p.c_str(),
             prefix_ok ? "accepted it" : "rejected it");

  bool token_ok = accepts(rlock::validate_token, key);
  bool token_spec = !key.empty() && key.size() <= 128 && key.find(' ') == std::string::npos &&
                    fuzz::printable_utf8(key);
  FUZZ_CHECK(token_ok == token_spec, "validate_token('%s') %s", k.c_str(),
             token_ok ? "accepted it" : "rejected it");

  if (key_ok && prefix_ok) check_names(key, prefix);
  return 0;
}
