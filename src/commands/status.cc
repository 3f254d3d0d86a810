// `rlock status KEY`: who holds it, since when, TTL, fence; who waits.
#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "cli/key_hints.h"
#include "cli/output.h"
#include "cli/table.h"
#include "cli/wording.h"
#include "commands/commands.h"
#include "core/duration.h"
#include "core/json.h"
#include "core/log.h"
#include "hold/nest.h"
#include "lock/layout.h"
#include "proc/procinfo.h"

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
  // A key without an expiry (PERSIST) stays done until broken: no end to name.
  if (h.done_ms > 0 && h.ttl_left < Millis(0))
    return fmt::format("done at {}; taken with no expiry: it stays until broken (rlock break)",
                       clock_time(h.done_ms, now_ms));
  if (h.done_ms > 0)
    return fmt::format("done at {}; taken until {} (--done-for)", clock_time(h.done_ms, now_ms),
                       clock_time(kept_until(h, now_ms), now_ms));
  std::string how = h.exit_status >= 0 ? fmt::format("its command exited {}", h.exit_status)
                                       : std::string("its command has ended");
  if (h.ttl_left < Millis(0))
    return fmt::format("kept with no expiry: it stays until broken (rlock break); {}", how);
  return fmt::format("kept by --min-hold until {}; {}", clock_time(kept_until(h, now_ms), now_ms),
                     how);
}

// A holder with nested runs under it (docs/GUIDE.md "Nesting"): "its run ended
// at 10:53:01Z; 2 nested runs still hold it". Whether its process is gone is
// said only where it can be known (its host is this one).
std::string nested_words(const Holder& h, int64_t now_ms) {
  std::string runs = fmt::format("{} nested run{}", h.nested, h.nested == 1 ? "" : "s");
  const char* s = h.nested == 1 ? "s" : "";
  if (h.ended_ms > 0)
    return fmt::format("its run ended at {}; {} still hold{} it", clock_time(h.ended_ms, now_ms),
                       runs, s);
  if (h.process_gone == true)
    return fmt::format("its process (pid {}) is gone; {} still hold{} it", h.info.pid, runs, s);
  return fmt::format("{} under it hold{} it too", runs, s);
}

// One nested hold: "ci-4 pid 22901, 4.2s left".
std::string nested_hold_words(const NestedHold& n) {
  return fmt::format("{} pid {}, {} left", escape_text(n.host), n.pid,
                     format_duration(std::max(n.left, Millis(0))));
}

// Durations in a terminal's columns: whole seconds once a second or more
// (an age rounded down, a time left rounded up).
std::string age_for_table(int64_t ms) {
  if (ms >= 1000) ms -= ms % 1000;
  return format_duration(Millis(ms));
}

// What is left of a lease: a key written without an expiry (a foreign
// client's SET without PX; Redis's PTTL -1) has no lease to count down, and
// stays until someone breaks it.
std::string left_words(Millis left) {
  return left < Millis(0) ? "no expiry" : format_duration(left) + " left";
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
  return fmt::format("held by {}, {}, fence {}", escape_text(h.token), left_words(h.ttl_left),
                     h.fence);
}

std::string master_json(const MasterStatus& m) {
  JsonObject o;
  o.str("url", m.name).boolean("answered", !m.error);
  if (m.error) return o.str("error", m.error->what()).text();
  const LockStatus& s = m.status;
  o.num("fence", s.fence);
  if (!s.holders.empty()) {
    const Holder& h = s.holders.front();
    o.raw("holder", JsonObject()
                        .str("token", h.token)
                        .num("ttl_left_ms", h.ttl_left.count())
                        .num_if("fence", h.fence)
                        .text());
  }
  return o.text();
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

// How a holder holds: every holder says it, exclusive as well as shared (a
// --limit pool's holders hold their slot exclusively).
const char* mode_word(const Holder& h) {
  return h.shared ? "shared" : "exclusive";
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

// Whether process `pid` of this host is gone (a zombie is); nullopt when
// /proc cannot tell (no descriptor left, hidepid): unknown is not gone.
std::optional<bool> gone(long pid) {
  if (pid <= 0 || pid > 0x7fffffff) return false;
  if (kProcInfoKnown) {
    int unreadable = 0;
    if (proc_info(static_cast<pid_t>(pid), &unreadable)) return false;
    if (unreadable) return std::nullopt;
    return true;
  }
  return kill(static_cast<pid_t>(pid), 0) == -1 && errno == ESRCH;
}

// What status adds to holders with nested holds under them (docs/GUIDE.md
// "Nesting"): the holds themselves (best effort: a failure only leaves them
// out) and, on the holder's own host, whether its process is gone.
void add_nested_holds(Loop& loop, Lock& lock, LockStatus& st) {
  const std::string here = local_holder_info("", 0).host;
  for (Holder& h : st.holders) {
    if (h.opaque || h.nested <= 0) continue;
    if (!here.empty() && h.info.host == here) h.process_gone = gone(h.info.pid);
    try {
      h.nested_holds = nested_holds(loop, lock, h.token);
    } catch (const Error& e) {
      log_verbose(
          fmt::format("the nested holds under {} not read: {}", escape_text(h.token), e.what()));
    }
  }
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
          fmt::format("          since {} ({} ago), {}, fence {}{}, {}, token {}\n",
                      utc_iso(h.since_ms), age(s.now_ms, h.since_ms), left_words(h.ttl_left),
                      h.fence, h.slot_text().empty() ? "" : ", slot " + escape_text(h.slot_text()),
                      mode_word(h), escape_text(h.token));
    else
      out += fmt::format("          {}, {}, token {}\n", left_words(h.ttl_left), mode_word(h),
                         escape_text(h.token));
    if (h.nested > 0) {
      out += fmt::format("          {}\n", nested_words(h, s.now_ms));
      for (auto& n : h.nested_holds) out += fmt::format("  nested  {}\n", nested_hold_words(n));
    }
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
                      lease_left_cell(h.ttl_left), "-", ""});
    else if (h.info.host.empty() || h.since_ms == 0)
      rows.push_back({role, h.info.host.empty() ? "not rlock" : who_short(h.info), "?", "?",
                      lease_left_cell(h.ttl_left), "-", escape_text(h.info.cmd)});
    else
      rows.push_back({role, h.info.label.empty() ? who_short(h.info) : escape_text(h.info.label),
                      clock_time(h.since_ms, s.now_ms),
                      age_for_table(elapsed_ms(s.now_ms, h.since_ms)), lease_left_cell(h.ttl_left),
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
  Table t = layout_table(rows, width, 2, {{1, 32, true}});
  if (t.widths.back() < std::min<size_t>(command, 16)) {
    for (auto& r : rows) r.erase(r.begin() + 2);
    t = layout_table(rows, width, 2, {{1, 32, true}});
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
    out += truncate_columns(under + mode_word(h) + ", token " + escape_text(h.token), width) + "\n";
    if (h.nested > 0) {
      out += truncate_columns(under + nested_words(h, s.now_ms), width) + "\n";
      for (auto& n : h.nested_holds)
        out += truncate_columns(under + "nested " + nested_hold_words(n), width) + "\n";
    }
  }
  out += more_holders(s);
  for (size_t i = s.holders.size() + 1; i < t.lines.size(); ++i) out += t.lines[i] + "\n";
  for (auto& l : tail_lines(s)) out += truncate_columns(l, width) + "\n";
  return out;
}

namespace {

// Who a holder or waiter is: each detail when it is known (a holder that is
// not rlock has none).
void who_json(JsonObject& o, const HolderInfo& i) {
  o.str_if("host", i.host).num_if("pid", i.pid).str_if("user", i.user).str_if("command", i.cmd);
}

std::string holder_json(const Holder& h, int64_t now_ms) {
  JsonObject o;
  o.str("token", h.token);
  who_json(o, h.info);
  if (h.since_ms > 0)
    o.str("since", utc_iso(h.since_ms))
        .num("since_ms", h.since_ms)
        .num("age_ms", elapsed_ms(now_ms, h.since_ms));
  o.num("ttl_left_ms", h.ttl_left.count()).num_if("ttl_ms", h.ttl.count()).num_if("fence", h.fence);
  o.boolean("kept", h.kept_ms > 0);
  // A key without an expiry (PERSIST) has no end: ttl_left_ms -1 says so.
  if (h.kept_ms > 0 && h.ttl_left >= Millis(0)) o.str("kept_until", utc_iso(kept_until(h, now_ms)));
  if (h.exit_status >= 0) o.num("exit_status", h.exit_status);
  o.str("mode", h.shared ? "shared" : "exclusive").boolean("done", h.done_ms > 0);
  if (h.done_ms > 0) o.str("done_at", utc_iso(h.done_ms));
  o.str_if("label", h.info.label)
      .num_if("slot", h.slot)
      .str_if("slot_name", h.slot_name)
      .num_if("holds", h.holds);
  // Nested holds (docs/GUIDE.md "Nesting"): how many, and each where status read them.
  o.num("nested", h.nested);
  if (h.ended_ms > 0) o.str("ended", utc_iso(h.ended_ms));
  if (h.process_gone) o.boolean("process_gone", *h.process_gone);
  if (!h.nested_holds.empty()) {
    std::string holds;
    for (auto& n : h.nested_holds) {
      JsonObject nj;
      nj.str("token", n.id)
          .str_if("host", n.host)
          .num_if("pid", n.pid)
          .num("ttl_left_ms", std::max<int64_t>(0, n.left.count()));
      holds += (holds.empty() ? "" : ",") + nj.text();
    }
    o.raw("nested_holds", "[" + holds + "]");
  }
  return o.text();
}

std::string waiter_json(const Waiter& w, long position, int64_t now_ms) {
  JsonObject o;
  o.num("position", position).str("token", w.token);
  who_json(o, w.info);
  o.str("since", utc_iso(w.since_ms))
      .num("waited_ms", elapsed_ms(now_ms, w.since_ms))
      .str("mode", w.shared ? "shared" : "exclusive")
      .str_if("label", w.info.label)
      .num("priority", w.priority);
  return o.text();
}

}  // namespace

std::string status_json(const std::string& key, const LockStatus& s, bool events) {
  std::string holders, waiters;
  long nested = 0;
  for (auto& h : s.holders) {
    nested += h.nested;
    holders += (holders.empty() ? "" : ",") + holder_json(h, s.now_ms);
  }
  long n = 0;
  for (auto& w : s.waiters) waiters += (waiters.empty() ? "" : ",") + waiter_json(w, ++n, s.now_ms);
  JsonObject o;
  o.str("key", key)
      .str("layout", layout_name(s.layout))
      .boolean("held", !s.holders.empty())
      .boolean("done", !s.holders.empty() && s.holders.front().done_ms > 0)
      .num("limit", s.limit)
      .num("fence", s.fence);
  if (s.now_ms > 0) o.str("server_time", utc_iso(s.now_ms));
  o.raw("holders", "[" + holders + "]")
      .raw("waiters", "[" + waiters + "]")
      .num("holder_count", s.holder_count)
      .num("waiter_count", s.waiter_count);
  if (s.quorum > 0) {
    std::string masters;
    for (auto& m : s.masters) masters += (masters.empty() ? "" : ",") + master_json(m);
    o.num("quorum", s.quorum).raw("masters", "[" + masters + "]");
  }
  // The newest events of its history, oldest first (what `history -n 3` shows).
  if (events) {
    std::string last;
    for (auto it = s.last.rbegin(); it != s.last.rend(); ++it)
      last += (last.empty() ? "" : ",") + event_json(*it);
    o.raw("last_events", "[" + last + "]");
  }
  o.num("nested", nested);
  return o.text();
}

int cmd_status(const GlobalOptions& g, const std::string& key) {
  Session s(g);
  auto lock = s.lock(key, g.prefix);
  auto st = wait_for<LockStatus>(s.loop, [&](Done<LockStatus> d) { lock->status(std::move(d)); });
  add_nested_holds(s.loop, *lock, st);
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
  // A glob, or the prefix written out, that names no lock: the command meant.
  // (A held KEY is a lock of that very name: no hint.)
  if (st.holders.empty() && st.waiters.empty() && g.layout == Layout::Rlock)
    if (auto hint = status_hint(key, g.prefix)) log_info(*hint);
  return st.holders.empty() ? exitcode::kFree : exitcode::kOk;
}

}  // namespace rlock
