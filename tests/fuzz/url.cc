// parse_url (or, for redis-sentinel:// and rediss-sentinel://, parse_sentinel_url) on any
// bytes: Endpoints within the ranges of the man page's URLS, or a usage Error (exit 64).
// Any other exception escapes and libFuzzer reports it. Endpoint::display() must not depend
// on the password (it is what rlock prints about a server), and an error message may not
// show it either.
#include "net/url.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "core/text.h"
#include "fuzz_util.h"

namespace {

void check_endpoint(const rlock::Endpoint& ep, std::string_view url) {
  std::string in = fuzz::hex_escape(url);
  FUZZ_CHECK(ep.db >= 0 && ep.db <= (1 << 20), "'%s': db %d", in.c_str(), ep.db);
  if (ep.kind == rlock::Endpoint::Kind::Unix) {
    FUZZ_CHECK(!ep.path.empty() && ep.path[0] == '/', "'%s': unix path '%s'", in.c_str(),
               fuzz::hex_escape(ep.path).c_str());
  } else {
    FUZZ_CHECK(!ep.host.empty(), "'%s': empty host", in.c_str());
    FUZZ_CHECK(ep.port >= 1 && ep.port <= 65535, "'%s': port %d", in.c_str(), ep.port);
  }

  // The password may not show: the text must be the same with another password or none.
  std::string shown = ep.display();
  rlock::Endpoint other = ep;
  other.password = ep.password ? *ep.password + "\x01other" : "\x01other";
  FUZZ_CHECK(other.display() == shown, "'%s': display() '%s' depends on the password", in.c_str(),
             fuzz::hex_escape(shown).c_str());
  other.password.reset();
  FUZZ_CHECK(other.display() == shown, "'%s': display() '%s' depends on the password", in.c_str(),
             fuzz::hex_escape(shown).c_str());
}

// Where the password is written in `url` ("redis://user:PASSWORD@host…"), when that is
// beyond doubt: one '@' and no '/' or '?' before it. Empty if there is none.
std::string_view written_password(std::string_view url) {
  auto scheme = url.find("://");
  auto at = url.find('@');
  if (scheme == std::string_view::npos || at == std::string_view::npos || at < scheme ||
      url.find('@', at + 1) != std::string_view::npos)
    return {};
  auto userinfo = url.substr(scheme + 3, at - scheme - 3);
  auto colon = userinfo.find(':');
  if (colon == std::string_view::npos || userinfo.find_first_of("/?") != std::string_view::npos)
    return {};
  return userinfo.substr(colon + 1);
}

std::string message_of(std::string_view url) {
  try {
    if (rlock::is_sentinel_url(url))
      rlock::parse_sentinel_url(url);
    else
      rlock::parse_url(url);
  } catch (const rlock::Error& e) {
    return e.what();
  }
  return {};
}

// STYLE.md: a URL in a message never carries its password. The message shows it when it
// contains the password and stops containing it once the password is overwritten (which
// rules out the host, the user or the message's own words happening to contain it).
void check_message(std::string_view url, const rlock::Error& e) {
  auto password = written_password(url);
  std::string_view message = e.what();
  if (password.empty() || message.find(password) == std::string_view::npos) return;
  // The same text elsewhere in the URL (the user "p%20t%40ss", the password
  // "p%20t%") may be shown rightly: nothing tells the two apart.
  if (url.find(password) != static_cast<size_t>(password.data() - url.data()) ||
      url.find(password, password.data() - url.data() + 1) != std::string_view::npos)
    return;
  // Nor can the escaped rest of the URL as messages show it: a byte 0xa0 in the user is
  // shown "\xa0", which holds a password beginning "0p".
  size_t at = password.data() - url.data();
  std::string masked(url);
  masked.replace(at, password.size(), "***");
  if (rlock::escape_text(masked).find(password) != std::string::npos) return;
  std::string other(url);
  other.replace(at, password.size(), password.size(), 'Q');
  FUZZ_CHECK(message_of(other).find(password) != std::string::npos,
             "'%s': the message shows the password: %s", fuzz::hex_escape(url).c_str(),
             fuzz::hex_escape(message).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view url(reinterpret_cast<const char*>(data), size);
  try {
    if (rlock::is_sentinel_url(url)) {
      rlock::SentinelUrl s = rlock::parse_sentinel_url(url);
      std::string in = fuzz::hex_escape(url);
      FUZZ_CHECK(!s.sentinels.empty() && s.sentinels.size() <= rlock::kMaxSentinels,
                 "'%s': %zu sentinels", in.c_str(), s.sentinels.size());
      // Any bytes but spaces and ASCII controls (Sentinel's own rule for a name).
      bool name_ok = !s.master_name.empty() && s.master_name.size() <= 256;
      for (unsigned char c : s.master_name) name_ok = name_ok && c > 0x20 && c != 0x7f;
      FUZZ_CHECK(name_ok, "'%s': master name '%s'", in.c_str(),
                 fuzz::hex_escape(s.master_name).c_str());
      for (auto& e : s.sentinels) {
        FUZZ_CHECK(!e.password && e.user.empty(), "'%s': credentials on a sentinel", in.c_str());
        check_endpoint(e, url);
      }
      FUZZ_CHECK(s.master.db >= 0 && s.master.db <= (1 << 20), "'%s': db %d", in.c_str(),
                 s.master.db);
    } else {
      check_endpoint(rlock::parse_url(url), url);
    }
  } catch (const rlock::Error& e) {
    fuzz::check_usage(e, url);
    check_message(url, e);
  }
  return 0;
}
