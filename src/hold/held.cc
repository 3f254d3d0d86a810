#include "hold/held.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/text.h"
#include "hold/nest.h"
#include "lock/holder_token.h"
#include "net/url.h"
#include "proc/procinfo.h"

namespace rlock {

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    size_t at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

bool plain_field(std::string_view f) {
  return valid_utf8_no_controls(f);
}

}  // namespace

std::vector<HeldEntry> parse_held(const char* text) {
  std::vector<HeldEntry> out;
  if (!text) return out;
  std::string_view all(text, strnlen(text, kMaxHeldBytes + 1));
  if (all.size() > kMaxHeldBytes) return out;  // not ours: nothing is trusted
  for (std::string_view line : split(all, '\n')) {
    if (out.size() >= kMaxHeldEntries) break;
    auto f = split(line, '\t');
    if (f.size() < 4 || f.size() > 6) continue;
    bool ok = !f[0].empty() && f[0].size() <= 128 && !f[1].empty() && f[1].size() <= 512;
    for (auto field : f) ok = ok && plain_field(field);
    if (!ok) continue;
    HeldEntry e{std::string(f[0]), std::string(f[1]), std::string(f[2]), std::string(f[3])};
    if (f.size() >= 5) {
      // keeper=PID:START
      std::string_view k = f[4];
      if (k.substr(0, 7) != "keeper=") continue;
      k.remove_prefix(7);
      size_t colon = k.find(':');
      if (colon == std::string_view::npos) continue;
      std::string pid(k.substr(0, colon)), start(k.substr(colon + 1));
      auto digits = [](const std::string& d, size_t max) {
        return !d.empty() && d.size() <= max &&
               d.find_first_not_of("0123456789") == std::string::npos;
      };
      if (!digits(pid, 9) || !digits(start, 19)) continue;
      e.keeper = std::atol(pid.c_str());
      e.keeper_start = std::strtoull(start.c_str(), nullptr, 10);
      if (e.keeper < 1) continue;
    }
    if (f.size() == 6) {
      if (f[5] != "nested") continue;
      e.nested = true;
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<HeldEntry> held_from_env() {
  return parse_held(getenv("RLOCK_HELD"));
}

std::string format_held(const std::vector<HeldEntry>& entries) {
  std::string out;
  for (const auto& e : entries) {
    if (!out.empty()) out += '\n';
    out += fmt::format("{}\t{}\t{}\t{}", e.token, e.key, e.prefix, e.where);
    if (e.keeper > 0) {
      out += fmt::format("\tkeeper={}:{}", e.keeper, e.keeper_start);
      if (e.nested) out += "\tnested";
    }
  }
  return out;
}

namespace {

// WHERE spelled one way: each URL canonical (one server spelled two ways is
// one lock), in sorted order (a quorum's masters in any order), never a
// control character (a tab or newline would break the line format).
std::string canonical_where(const std::vector<std::string>& urls) {
  std::vector<std::string> shown;
  for (const auto& url : urls) {
    std::string c = canonical_url(url);
    for (char& ch : c)
      if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?';
    shown.push_back(std::move(c));
  }
  std::sort(shown.begin(), shown.end());
  std::string out;
  for (const auto& c : shown) out += (out.empty() ? "" : " ") + c;
  return out;
}

std::vector<std::string> urls_of(std::string_view where) {
  std::vector<std::string> urls;
  for (auto u : split(where, ' '))
    if (!u.empty()) urls.emplace_back(u);
  return urls;
}

// WHERE of an entry is compared canonically too: one written by hand, or by
// a version that wrote URLs as given, still names its lock.
bool same_lock(const HeldEntry& e, const std::string& key, const std::string& prefix,
               const std::string& where) {
  if (e.key != key || e.prefix != prefix) return false;
  return e.where == where || canonical_where(urls_of(e.where)) == canonical_where(urls_of(where));
}

}  // namespace

std::string lock_location(const std::vector<std::string>& urls, Layout layout) {
  // Two layouts for one name are two locks: RLOCK_HELD tells them apart.
  if (layout != Layout::Rlock) return canonical_where(urls) + " layout=" + layout_name(layout);
  return canonical_where(urls);
}

const HeldEntry* find_held(const std::vector<HeldEntry>& entries, const std::string& key,
                           const std::string& prefix, const std::string& where) {
  for (const auto& e : entries)
    if (same_lock(e, key, prefix, where)) return &e;
  return nullptr;
}

std::string held_with(std::vector<HeldEntry> entries, const HeldEntry& add) {
  std::erase_if(entries,
                [&](const HeldEntry& e) { return same_lock(e, add.key, add.prefix, add.where); });
  entries.push_back(add);
  while (entries.size() > kMaxHeldEntries) entries.erase(entries.begin());
  return format_held(entries);
}

std::vector<HeldEntry> find_all_held(const std::vector<HeldEntry>& entries,
                                     const std::vector<std::string>& keys,
                                     const std::string& prefix, const std::string& where) {
  std::vector<HeldEntry> found;
  for (const std::string& k : keys)
    if (const HeldEntry* e = find_held(entries, k, prefix, where)) found.push_back(*e);
  if (!found.empty() && found.size() < keys.size())
    throw_usage(fmt::format(
        "'{}' is held by an enclosing holder, but not every key given here is: taking the rest "
        "inside it could deadlock with a holder that takes them the other way round; take them "
        "all together around both (--and)",
        escape_text(found.front().key)));
  return found;
}

void check_held_room(const std::vector<HeldEntry>& entries, const std::vector<std::string>& keys,
                     const std::string& prefix, const std::string& where) {
  std::vector<HeldEntry> mine;
  for (const std::string& k : keys)
    // The longest a line can be: a token of rlock's and a keeper's fields.
    mine.push_back({std::string(32, 'f'), k, prefix, where, 2147483647, UINT64_MAX, true});
  std::vector<HeldEntry> all = entries;
  std::erase_if(all, [&](const HeldEntry& e) {
    return std::any_of(mine.begin(), mine.end(),
                       [&](const HeldEntry& m) { return same_lock(e, m.key, m.prefix, m.where); });
  });
  all.insert(all.end(), mine.begin(), mine.end());
  if (all.size() > kMaxHeldEntries || format_held(all).size() > kMaxHeldBytes)
    throw_usage(fmt::format(
        "too many keys or too long names: RLOCK_HELD, which tells the command what it holds, "
        "would pass its {} entries or {} bytes; take fewer keys (--and) in one run",
        kMaxHeldEntries, kMaxHeldBytes));
}

std::string held_with_each(std::vector<HeldEntry> entries, const std::vector<HeldEntry>& add) {
  for (const HeldEntry& a : add) {
    std::erase_if(entries,
                  [&](const HeldEntry& e) { return same_lock(e, a.key, a.prefix, a.where); });
    entries.push_back(a);
  }
  while (entries.size() > kMaxHeldEntries) entries.erase(entries.begin());
  return format_held(entries);
}

std::optional<Holder> verify_held(Loop& loop, Lock& lock, const HeldEntry& entry,
                                  std::string& why) {
  LockStatus st =
      wait_for<LockStatus>(loop, [&](Done<LockStatus> d) { lock.status(std::move(d)); });
  const Holder* h = nullptr;
  for (const auto& x : st.holders)
    if (x.token == entry.token) h = &x;
  if (!h) {
    why = "its token no longer holds the lock (the run that took it has ended?)";
    return std::nullopt;
  }
  if (h->kept_ms > 0 || h->done_ms > 0) {
    why = "its lease is kept after its command ended (--min-hold or --done-for)";
    return std::nullopt;
  }
  if (h->opaque) {
    // Another tool's layout keeps no holder details, and anyone can read the
    // token with status: the token itself must be bound to an ancestor of
    // this process (holder_token.h). A service's token, or one of a process
    // that is not an ancestor, never is.
    auto pid = bound_holder(lock.names().layout, h->token, getpid());
    if (!pid) {
      why = "its token is not one an ancestor of this process took";
      return std::nullopt;
    }
    Holder found = *h;
    found.info.pid = *pid;
    return found;
  }
  if (h->info.host != local_holder_info("", 0).host) {
    why = fmt::format("its holder is on another host ({})", escape_text(h->info.host));
    return std::nullopt;
  }
  // pid 1 too: a container's entrypoint script may hold a lock for its life.
  auto ancestor = [](long pid) {
    return pid >= 1 && pid <= 0x7fffffff && is_ancestor(static_cast<pid_t>(pid), getpid());
  };
  if (!ancestor(h->info.pid)) {
    // Inside a nested run whose enclosing holder has ended meanwhile: the
    // nested hold (on this host, an ancestor) holds the lock for it.
    for (const NestedHold& n : nested_holds(loop, lock, entry.token))
      if (n.host == h->info.host && ancestor(n.pid)) {
        Holder found = *h;
        found.info.pid = n.pid;
        return found;
      }
    why = fmt::format("its holder (pid {}) is not an ancestor of this process", h->info.pid);
    return std::nullopt;
  }
  return *h;
}

bool group_inside_holder(pid_t group, const HeldEntry& e, pid_t holder) {
  if (group <= 0 || holder <= 0) return false;
  if (e.keeper > 0) return getpgid(holder) == group;
  auto leader = proc_info(group);
  return leader && leader->ppid == holder;
}

void refuse_upgrade(const std::string& key, bool shared, const Holder& enclosing) {
  if (!enclosing.shared || shared) return;
  throw_usage(fmt::format(
      "'{}' is held shared by an enclosing holder (pid {}): an exclusive hold inside it would "
      "wait for itself; use --shared here, or take it exclusively around both",
      key, enclosing.info.pid));
}

}  // namespace rlock
