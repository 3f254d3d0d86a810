// `rlock status KEY`: who holds it, since when, TTL, fence; who waits.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "cli/output.h"
#include "cli/table.h"
#include "commands/commands.h"
#include "core/duration.h"
#include "lock/layout.h"

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

// A server time for people: "10:53:01Z" within a day of the server's now,
// else with its date.
std::string clock_time(int64_t ms, int64_t now_ms) {
  std::string iso = utc_iso(ms);
  if (std::max(elapsed_ms(ms, now_ms), elapsed_ms(now_ms, ms)) < 86'400'000)
    return iso.substr(11, 8) + "Z";
  return iso.substr(0, 19) + "Z";
}

// When the lease of a holder kept by --min-hold ends (server ms).
int64_t kept_until(const Holder& h, int64_t now_ms) {
  int64_t until = 0;
  if (__builtin_add_overflow(now_ms, h.ttl_left.count(), &until)) until = INT64_MAX;
  return until;
}

// "kept by --min-hold until 10:54:01Z; its command exited 0": a holder whose
// command has ended, so that it does not read as a running one.
std::string kept_words(const Holder& h, int64_t now_ms) {
  // run --done-for: "done at 10:02:11Z; taken until 11:02:11Z (--done-for)".
  if (h.done_ms > 0)
    return fmt::format("done at {}; taken until {} (--done-for)", clock_time(h.done_ms, now_ms),
                       clock_time(kept_until(h, now_ms), now_ms));
  std::string how = h.exit_status >= 0 ? fmt::format("its command exited {}", h.exit_status)
                                       : std::string("its command has ended");
  return fmt::format("kept by --min-hold until {}; {}", clock_time(kept_until(h, now_ms), now_ms),
                     how);
}

// Durations in a terminal's columns: whole seconds once a second or more
// (an age rounded down, a time left rounded up).
std::string age_for_table(int64_t ms) {
  if (ms >= 1000) ms -= ms % 1000;
  return format_duration(Millis(ms));
}
std::string left_for_table(Millis left) {
  if (left >= Millis(1000)) left = std::chrono::ceil<std::chrono::seconds>(left);
  return format_duration(std::max(left, Millis(0)));
}

// "ci@ci-4:22836": who and where, in one column.
std::string who_short(const HolderInfo& i) {
  std::string user = i.user.empty() ? "" : escape_text(i.user) + "@";
  return fmt::format("{}{}:{}", user, escape_text(i.host), i.pid);
}

// A holder in another tool's layout: what the layout keeps of it.
std::string who_opaque(const Holder& h) {
  if (h.holds > 0) return fmt::format("Redisson id {}, holds {}", escape_text(h.token), h.holds);
  return "a holder of the plain layout (the key keeps its token only)";
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

// The first line of status: "deploy: held (fence 7)", "deploy: free (last fence 7)".
std::string headline(const std::string& key, const LockStatus& s) {
  if (s.layout != Layout::Rlock)
    return fmt::format("{}: {} (--layout {})", key, s.holders.empty() ? "free" : "held",
                       layout_name(s.layout));
  if (s.holders.empty()) return fmt::format("{}: free (last fence {})", key, s.fence);
  if (s.holders.front().done_ms > 0)
    return fmt::format("{}: done (fence {})", key, s.holders.front().fence);
  if (s.holders.front().shared)
    return fmt::format("{}: held shared by {} holder{} (last fence {})", key, s.holder_count,
                       s.holder_count == 1 ? "" : "s", s.fence);
  if (s.limit > 0)
    return fmt::format("{}: held by {} of {} (last fence {})", key, s.holder_count, s.limit,
                       s.fence);
  if (s.holders.front().since_ms == 0)
    return fmt::format("{}: held by a client that is not rlock (last rlock fence {})", key,
                       s.fence);
  return fmt::format("{}: held (fence {})", key, s.holders.front().fence);
}

// The line after the holders listed when there are more.
std::string more_holders(const LockStatus& s) {
  if (s.holder_count <= static_cast<long>(s.holders.size())) return "";
  return fmt::format("  … and {} more holders\n", s.holder_count - s.holders.size());
}

// What follows the waiters: the ones left out, and in quorum mode what each
// master said.
std::vector<std::string> tail_lines(const LockStatus& s) {
  std::vector<std::string> out;
  if (s.waiter_count > static_cast<long>(s.waiters.size()))
    out.push_back(fmt::format("  … and {} more waiters", s.waiter_count - s.waiters.size()));
  if (s.quorum > 0) {
    out.push_back(fmt::format("  masters  {} of {} make a quorum", s.quorum, s.masters.size()));
    for (auto& m : s.masters) out.push_back(fmt::format("    {}  {}", m.name, master_line(m)));
  }
  return out;
}

}  // namespace

// A free lock's last events (its history): who held it last and how it ended.
std::string last_lines(const LockStatus& s) {
  if (!s.holders.empty() || !s.waiters.empty()) return "";
  std::string out;
  for (auto it = s.last.rbegin(); it != s.last.rend(); ++it)
    out += "  last    " + event_line(*it) + "\n";
  return out;
}

std::string status_text(const std::string& key, const LockStatus& s) {
  std::string out = headline(key, s) + "\n" + last_lines(s);
  for (auto& h : s.holders) {
    const char* role = h.done_ms > 0 ? "done  " : h.shared ? "shared" : "holder";
    if (h.kept_ms > 0)
      out += fmt::format("  {}  {}\n          ran as {}\n", role, kept_words(h, s.now_ms),
                         who(h.info));
    else
      out += fmt::format("  {}  {}\n", role, h.opaque ? who_opaque(h) : who(h.info));
    if (!h.info.label.empty())
      out += fmt::format("          label {}\n", escape_text(h.info.label));
    if (h.since_ms > 0)
      out +=
          fmt::format("          since {} ({} ago), {} left, fence {}{}, token {}\n",
                      utc_iso(h.since_ms), age(s.now_ms, h.since_ms), format_duration(h.ttl_left),
                      h.fence, h.slot_text().empty() ? "" : ", slot " + escape_text(h.slot_text()),
                      escape_text(h.token));
    else
      out += fmt::format("          {} left, token {}\n", format_duration(h.ttl_left),
                         escape_text(h.token));
  }
  out += more_holders(s);
  long n = 0;
  for (auto& w : s.waiters) {
    out += fmt::format("  waiter {}. {}{}{}, waiting {}\n", ++n, w.shared ? "(shared) " : "",
                       w.priority ? fmt::format("(priority {}) ", w.priority) : "", who(w.info),
                       age(s.now_ms, w.since_ms));
    if (!w.info.label.empty())
      out += fmt::format("          label {}\n", escape_text(w.info.label));
  }
  for (auto& l : tail_lines(s)) out += l + "\n";
  return out;
}

std::string status_table(const std::string& key, const LockStatus& s, size_t width) {
  std::string out = truncate_columns(headline(key, s), width) + "\n";
  if (s.holders.empty() && s.waiters.empty()) {
    for (auto it = s.last.rbegin(); it != s.last.rend(); ++it)
      out += truncate_columns("  " + event_line(*it), width) + "\n";
    return out;
  }
  std::vector<std::vector<std::string>> rows{
      {"ROLE", "WHO", "SINCE", "AGE", "LEFT", "FENCE", "COMMAND"}};
  for (auto& h : s.holders) {
    const char* role = h.done_ms > 0   ? "done"
                       : h.kept_ms > 0 ? "kept"
                       : h.shared      ? "shared"
                                       : "holder";
    if (h.opaque)
      rows.push_back({role, h.holds > 0 ? "Redisson" : "plain", "?", "?",
                      left_for_table(h.ttl_left), "-", ""});
    else if (h.info.host.empty() || h.since_ms == 0)
      rows.push_back({role, h.info.host.empty() ? "not rlock" : who_short(h.info), "?", "?",
                      left_for_table(h.ttl_left), "-", escape_text(h.info.cmd)});
    else
      rows.push_back({role, h.info.label.empty() ? who_short(h.info) : escape_text(h.info.label),
                      clock_time(h.since_ms, s.now_ms),
                      age_for_table(elapsed_ms(s.now_ms, h.since_ms)), left_for_table(h.ttl_left),
                      std::to_string(h.fence), escape_text(h.info.cmd)});
  }
  long n = 0;
  for (auto& w : s.waiters)
    rows.push_back({fmt::format("waiter {}{}{}", ++n, w.shared ? " s" : "",
                                w.priority ? fmt::format(" p{}", w.priority) : ""),
                    w.info.label.empty() ? who_short(w.info) : escape_text(w.info.label),
                    clock_time(w.since_ms, s.now_ms),
                    age_for_table(elapsed_ms(s.now_ms, w.since_ms)), "", "",
                    escape_text(w.info.cmd)});
  // Who and where (user@host:pid) stay readable; the command gives way first,
  // and on a narrow terminal SINCE (AGE says it too) before it is cut short.
  size_t command = 0;
  for (auto& r : rows) command = std::max(command, text_columns(r.back()));
  Table t = layout_table(rows, width, 2, {{1, 32}});
  if (t.widths.back() < std::min<size_t>(command, 16)) {
    for (auto& r : rows) r.erase(r.begin() + 2);
    t = layout_table(rows, width, 2, {{1, 32}});
  }
  std::string under(2 + t.widths[0] + 2, ' ');  // lines under a holder's row
  out += t.lines[0] + "\n";
  for (size_t i = 0; i < s.holders.size(); ++i) {
    const Holder& h = s.holders[i];
    out += t.lines[i + 1] + "\n";
    if (h.kept_ms > 0) out += truncate_columns(under + kept_words(h, s.now_ms), width) + "\n";
    // Under a label, who and where it runs; a semaphore's slot.
    std::string more = h.info.label.empty() ? "" : who_short(h.info);
    if (!h.slot_text().empty())
      more += fmt::format("{}slot {}", more.empty() ? "" : ", ", escape_text(h.slot_text()));
    if (!more.empty()) out += truncate_columns(under + more, width) + "\n";
    out += truncate_columns(under + "token " + escape_text(h.token), width) + "\n";
  }
  out += more_holders(s);
  for (size_t i = s.holders.size() + 1; i < t.lines.size(); ++i) out += t.lines[i] + "\n";
  for (auto& l : tail_lines(s)) out += truncate_columns(l, width) + "\n";
  return out;
}

std::string status_json(const std::string& key, const LockStatus& s, bool events) {
  std::string holders, waiters;
  for (auto& h : s.holders) {
    if (!holders.empty()) holders += ",";
    holders += fmt::format(
        "{{\"token\":{},\"host\":{},\"pid\":{},\"user\":{},\"command\":{},\"since\":{},"
        "\"since_ms\":{},\"age_ms\":{},\"ttl_left_ms\":{},\"ttl_ms\":{},\"fence\":{},"
        "\"kept\":{},\"kept_until\":{},\"exit_status\":{},\"mode\":{},\"done\":{},"
        "\"done_at\":{},\"label\":{},\"slot\":{},\"holds\":{}}}",
        json_string(h.token), json_string(h.info.host), h.info.pid, json_string(h.info.user),
        json_string(h.info.cmd), h.since_ms ? json_string(utc_iso(h.since_ms)) : "null", h.since_ms,
        h.since_ms ? elapsed_ms(s.now_ms, h.since_ms) : 0, h.ttl_left.count(), h.ttl.count(),
        h.fence, h.kept_ms > 0 ? "true" : "false",
        h.kept_ms > 0 ? json_string(utc_iso(kept_until(h, s.now_ms))) : "null",
        h.exit_status >= 0 ? std::to_string(h.exit_status) : "null",
        h.shared ? "\"shared\"" : "\"exclusive\"", h.done_ms > 0 ? "true" : "false",
        h.done_ms > 0 ? json_string(utc_iso(h.done_ms)) : "null",
        h.info.label.empty() ? "null" : json_string(h.info.label),
        !h.slot_name.empty() ? json_string(h.slot_name)
        : h.slot > 0         ? std::to_string(h.slot)
                             : "null",
        h.holds > 0 ? std::to_string(h.holds) : "null");
  }
  long n = 0;
  for (auto& w : s.waiters) {
    if (!waiters.empty()) waiters += ",";
    waiters += fmt::format(
        "{{\"position\":{},\"token\":{},\"host\":{},\"pid\":{},\"user\":{},\"command\":{},"
        "\"since\":{},\"waited_ms\":{},\"mode\":{},\"label\":{},\"priority\":{}}}",
        ++n, json_string(w.token), json_string(w.info.host), w.info.pid, json_string(w.info.user),
        json_string(w.info.cmd), json_string(utc_iso(w.since_ms)), elapsed_ms(s.now_ms, w.since_ms),
        w.shared ? "\"shared\"" : "\"exclusive\"",
        w.info.label.empty() ? "null" : json_string(w.info.label), w.priority);
  }
  std::string masters;
  if (s.quorum > 0) {
    for (auto& m : s.masters) masters += (masters.empty() ? "" : ",") + master_json(m);
    masters = fmt::format(",\"quorum\":{},\"masters\":[{}]", s.quorum, masters);
  }
  // The newest events of its history, oldest first (what `history -n 3` shows).
  if (events) {
    std::string last;
    for (auto it = s.last.rbegin(); it != s.last.rend(); ++it)
      last += (last.empty() ? "" : ",") + event_json(*it);
    masters += fmt::format(",\"last_events\":[{}]", last);
  }
  return fmt::format(
      "{{\"key\":{},\"layout\":\"{}\",\"held\":{},\"done\":{},\"limit\":{},\"fence\":{},"
      "\"server_time\":{},\"holders\":[{}],\"waiters\":[{}],\"holder_count\":{},"
      "\"waiter_count\":{}{}}}",
      json_string(key), layout_name(s.layout), s.holders.empty() ? "false" : "true",
      !s.holders.empty() && s.holders.front().done_ms > 0 ? "true" : "false", s.limit, s.fence,
      s.now_ms > 0 ? json_string(utc_iso(s.now_ms)) : "null", holders, waiters, s.holder_count,
      s.waiter_count, masters);
}

int cmd_status(const GlobalOptions& g, const std::string& key) {
  Session s(g);
  auto lock = s.lock(key, g.prefix);
  auto st = wait_for<LockStatus>(s.loop, [&](Done<LockStatus> d) { lock->status(std::move(d)); });
  // Two layouts for one name are two locks: say so when the other is held.
  if (!s.quorum())
    for (const std::string& other : other_layouts_held(*s.clients.front(), key, g.layout, g.prefix))
      log_info(
          fmt::format("warning: '{}' is also held under {}: two layouts for one name are "
                      "two different locks that do not exclude each other",
                      escape_text(key), other));
  if (g.json)
    print_out(status_json(key, st) + "\n");
  else if (stdout_is_tty())
    print_out(status_table(key, st, stdout_columns()));
  else
    print_out(status_text(key, st));
  return st.holders.empty() ? exitcode::kFree : exitcode::kOk;
}

}  // namespace rlock
