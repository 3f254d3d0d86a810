// `rlock status KEY`: who holds it, since when, TTL, fence; who waits.
#include <fmt/format.h>

#include "commands/commands.h"
#include "duration.h"
#include "output.h"

namespace rlock {

namespace {

// now - since, both from the server (so anything): saturating, never below 0.
int64_t elapsed_ms(int64_t now_ms, int64_t since_ms) {
  int64_t d = 0;
  if (__builtin_sub_overflow(now_ms, since_ms, &d)) d = since_ms < 0 ? INT64_MAX : 0;
  return std::max<int64_t>(0, d);
}

std::string age(int64_t now_ms, int64_t since_ms) {
  return format_duration(Millis(elapsed_ms(now_ms, since_ms)));
}

// Holder details come from Redis: escaped, they cannot forge a line.
std::string who(const HolderInfo& i) {
  if (i.host.empty()) return "unknown client (no holder details)";
  return fmt::format("{} pid {} user {}: {}", escape_text(i.host), i.pid,
                     i.user.empty() ? "?" : escape_text(i.user),
                     i.cmd.empty() ? "?" : escape_text(i.cmd));
}

// What one master of a quorum says: "held by TOKEN, 29.2s left, fence 7",
// "free (last fence 7)", "no answer: …".
std::string master_line(const MasterStatus& m) {
  if (m.error) return "no answer: " + std::string(m.error->what());
  const LockStatus& s = m.status;
  if (s.holders.empty()) return fmt::format("free (last fence {})", s.fence);
  const Holder& h = s.holders.front();
  return fmt::format("held by {}, {} left, fence {}", escape_text(h.token),
                     format_duration(h.ttl_left), h.fence);
}

std::string master_json(const MasterStatus& m) {
  if (m.error)
    return fmt::format("{{\"url\":{},\"answered\":false,\"error\":{}}}", json_string(m.name),
                       json_string(m.error->what()));
  const LockStatus& s = m.status;
  std::string holder = "null";
  if (!s.holders.empty()) {
    const Holder& h = s.holders.front();
    holder = fmt::format("{{\"token\":{},\"ttl_left_ms\":{},\"fence\":{}}}", json_string(h.token),
                         h.ttl_left.count(), h.fence);
  }
  return fmt::format("{{\"url\":{},\"answered\":true,\"fence\":{},\"holder\":{}}}",
                     json_string(m.name), s.fence, holder);
}

}  // namespace

std::string status_text(const std::string& key, const LockStatus& s) {
  std::string out;
  if (s.holders.empty()) {
    out += fmt::format("{}: free (last fence {})\n", key, s.fence);
  } else if (s.limit > 0) {
    out += fmt::format("{}: held by {} of {} (last fence {})\n", key, s.holder_count, s.limit,
                       s.fence);
  } else if (s.holders.front().since_ms == 0) {
    out +=
        fmt::format("{}: held by a client that is not rlock (last rlock fence {})\n", key, s.fence);
  } else {
    out += fmt::format("{}: held (fence {})\n", key, s.holders.front().fence);
  }
  for (auto& h : s.holders) {
    out += fmt::format("  holder  {}\n", who(h.info));
    if (h.since_ms > 0)
      out += fmt::format("          since {} ({} ago), {} left, fence {}, token {}\n",
                         utc_iso(h.since_ms), age(s.now_ms, h.since_ms),
                         format_duration(h.ttl_left), h.fence, escape_text(h.token));
    else
      out += fmt::format("          {} left, token {}\n", format_duration(h.ttl_left),
                         escape_text(h.token));
  }
  if (s.holder_count > static_cast<long>(s.holders.size()))
    out += fmt::format("  … and {} more holders\n", s.holder_count - s.holders.size());
  long n = 0;
  for (auto& w : s.waiters)
    out +=
        fmt::format("  waiter {}. {}, waiting {}\n", ++n, who(w.info), age(s.now_ms, w.since_ms));
  if (s.waiter_count > n) out += fmt::format("  … and {} more waiters\n", s.waiter_count - n);
  if (s.quorum > 0) {
    out += fmt::format("  masters  {} of {} make a quorum\n", s.quorum, s.masters.size());
    for (auto& m : s.masters) out += fmt::format("    {}  {}\n", m.name, master_line(m));
  }
  return out;
}

std::string status_json(const std::string& key, const LockStatus& s) {
  std::string holders, waiters;
  for (auto& h : s.holders) {
    if (!holders.empty()) holders += ",";
    holders += fmt::format(
        "{{\"token\":{},\"host\":{},\"pid\":{},\"user\":{},\"command\":{},\"since\":{},"
        "\"since_ms\":{},\"age_ms\":{},\"ttl_left_ms\":{},\"ttl_ms\":{},\"fence\":{}}}",
        json_string(h.token), json_string(h.info.host), h.info.pid, json_string(h.info.user),
        json_string(h.info.cmd), h.since_ms ? json_string(utc_iso(h.since_ms)) : "null", h.since_ms,
        h.since_ms ? elapsed_ms(s.now_ms, h.since_ms) : 0, h.ttl_left.count(), h.ttl.count(),
        h.fence);
  }
  long n = 0;
  for (auto& w : s.waiters) {
    if (!waiters.empty()) waiters += ",";
    waiters += fmt::format(
        "{{\"position\":{},\"token\":{},\"host\":{},\"pid\":{},\"user\":{},\"command\":{},"
        "\"since\":{},\"waited_ms\":{}}}",
        ++n, json_string(w.token), json_string(w.info.host), w.info.pid, json_string(w.info.user),
        json_string(w.info.cmd), json_string(utc_iso(w.since_ms)),
        elapsed_ms(s.now_ms, w.since_ms));
  }
  std::string masters;
  if (s.quorum > 0) {
    for (auto& m : s.masters) masters += (masters.empty() ? "" : ",") + master_json(m);
    masters = fmt::format(",\"quorum\":{},\"masters\":[{}]", s.quorum, masters);
  }
  return fmt::format(
      "{{\"key\":{},\"held\":{},\"limit\":{},\"fence\":{},\"server_time\":{},\"holders\":[{}],"
      "\"waiters\":[{}],\"holder_count\":{},\"waiter_count\":{}{}}}",
      json_string(key), s.holders.empty() ? "false" : "true", s.limit, s.fence,
      json_string(utc_iso(s.now_ms)), holders, waiters, s.holder_count, s.waiter_count, masters);
}

int cmd_status(const GlobalOptions& g, const std::string& key) {
  Session s(g);
  auto lock = s.lock(key, g.prefix);
  auto st = wait_for<LockStatus>(s.loop, [&](Done<LockStatus> d) { lock->status(std::move(d)); });
  if (g.json)
    print_out(status_json(key, st) + "\n");
  else
    print_out(status_text(key, st));
  return st.holders.empty() ? exitcode::kFree : exitcode::kOk;
}

}  // namespace rlock
