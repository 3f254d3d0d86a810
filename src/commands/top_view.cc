// What `rlock top` draws (commands/top.h): pure functions of the snapshots.
#include <fmt/format.h>

#include <algorithm>

#include "cli/table.h"
#include "commands/top.h"
#include "core/duration.h"
#include "core/text.h"

namespace rlock {

namespace {

// Whole seconds from one second on ("5m2s", not "5m2.345s").
std::string age(int64_t ms) {
  if (ms <= 0) return "-";
  if (ms >= 1000) ms -= ms % 1000;
  return format_duration(Millis(ms));
}

// A holder's lease left: "no expiry" for a key written without one (Redis's
// PTTL -1: a foreign SET without PX), which only a break frees.
std::string lease_left(Millis left) {
  return left < Millis(0) ? "no expiry" : age(left.count());
}

// "ci-4 pid 22836", or its --label: who a holder or waiter is.
std::string top_who(const HolderInfo& i) {
  if (!i.label.empty()) return escape_text(i.label);
  if (i.host.empty()) return "?";
  return fmt::format("{} pid {}", escape_text(i.host), i.pid);
}

// `s` cut to `columns` from its start, keeping its end ("…-job-4711"): where
// two CI jobs differ.
std::string keep_end(const std::string& s, size_t columns) {
  size_t n = text_columns(s);
  if (n <= columns || columns == 0) return s;
  // Drop whole UTF-8 characters from the front until the rest and "…" fit.
  size_t drop = n - columns + 1, at = 0;
  while (drop > 0 && at < s.size()) {
    size_t len = utf8_sequence_length(std::string_view(s).substr(at));
    at += len ? len : 1;
    --drop;
  }
  return "…" + s.substr(at);
}

std::string shape(const LockStatus& st) {
  if (st.holders.empty()) return st.waiter_count > 0 ? "free, waited" : "free";
  const Holder& h = st.holders.front();
  if (h.done_ms > 0) return "done";
  if (h.kept_ms > 0) return "kept";
  if (st.limit > 0) return fmt::format("pool {}/{}", st.holder_count, st.limit);
  if (h.shared) return fmt::format("shared {}", st.holder_count);
  return "exclusive";
}

std::string holder_cell(const LockStatus& st) {
  if (st.holders.empty()) return "-";
  std::string w = top_who(st.holders.front().info);
  if (st.holder_count > 1) w += fmt::format(" +{}", st.holder_count - 1);
  return keep_end(w, 32);
}

std::string pad_to(std::string s, size_t width) {
  s = truncate_columns(s, width);
  return s;
}

}  // namespace

TopRow top_row(const std::string& key, LockStatus st) {
  TopRow r{key, std::move(st)};
  if (!r.st.holders.empty() && r.st.holders.front().since_ms > 0)
    r.held_ms = std::max<int64_t>(0, r.st.now_ms - r.st.holders.front().since_ms);
  for (const Waiter& w : r.st.waiters)
    if (w.since_ms > 0)
      r.oldest_wait_ms = std::max<int64_t>(r.oldest_wait_ms, r.st.now_ms - w.since_ms);
  return r;
}

TopSort next_sort(TopSort s) {
  switch (s) {
    case TopSort::Attention:
      return TopSort::Key;
    case TopSort::Key:
      return TopSort::Held;
    case TopSort::Held:
      return TopSort::Waiters;
    case TopSort::Waiters:
      return TopSort::Attention;
  }
  return TopSort::Attention;
}

const char* sort_name(TopSort s) {
  switch (s) {
    case TopSort::Attention:
      return "attention";
    case TopSort::Key:
      return "key";
    case TopSort::Held:
      return "held";
    case TopSort::Waiters:
      return "waiters";
  }
  return "attention";
}

void sort_rows(std::vector<TopRow>& rows, TopSort by) {
  auto attention = [](const TopRow& a, const TopRow& b) {
    if (a.oldest_wait_ms != b.oldest_wait_ms) return a.oldest_wait_ms > b.oldest_wait_ms;
    if (a.held_ms != b.held_ms) return a.held_ms > b.held_ms;
    return a.key < b.key;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const TopRow& a, const TopRow& b) {
    switch (by) {
      case TopSort::Key:
        return a.key < b.key;
      case TopSort::Held:
        if (a.held_ms != b.held_ms) return a.held_ms > b.held_ms;
        return a.key < b.key;
      case TopSort::Waiters:
        if (a.st.waiter_count != b.st.waiter_count) return a.st.waiter_count > b.st.waiter_count;
        return attention(a, b);
      case TopSort::Attention:
        break;
    }
    return attention(a, b);
  });
}

std::string top_header(const TopSnapshot& s, size_t shown, TopSort by) {
  std::string iso = utc_iso(s.now_ms);
  size_t hidden = s.unread + (s.rows.size() > shown ? s.rows.size() - shown : 0);
  return fmt::format("rlock top  {} {}Z  {}  locks: {} shown, {} hidden  sort: {}",
                     iso.substr(0, 10), iso.substr(11, 8), s.topology, shown, hidden,
                     sort_name(by));
}

std::vector<std::string> top_table(const std::vector<TopRow>& rows, size_t width, size_t max_rows,
                                   long cursor) {
  std::vector<std::vector<std::string>> cells{
      {"KEY", "SHAPE", "HOLDER", "HELD", "LEFT", "WAITING", "OLDEST", "FENCE"}};
  for (size_t i = 0; i < rows.size() && i < max_rows; ++i) {
    const TopRow& r = rows[i];
    const LockStatus& st = r.st;
    std::string left = st.holders.empty() ? "-" : lease_left(st.holders.front().ttl_left);
    int64_t fence = st.holders.empty() ? st.fence : st.holders.front().fence;
    cells.push_back({escape_text(r.key), shape(st), holder_cell(st), age(r.held_ms), left,
                     std::to_string(st.waiter_count), age(r.oldest_wait_ms),
                     fence > 0 ? std::to_string(fence) : "-"});
  }
  // The key gives way first: the rest is short.
  Table t = layout_table(cells, width > 2 ? width - 2 : width, 2, {{0, 40}});
  for (size_t i = 0; i < t.lines.size(); ++i)
    if (i > 0 && static_cast<long>(i - 1) == cursor) t.lines[i][0] = '>';
  return t.lines;
}

std::vector<std::string> top_events(const std::vector<TopEvent>& events, size_t width, size_t max) {
  std::vector<std::string> out;
  size_t from = events.size() > max ? events.size() - max : 0;
  for (size_t i = from; i < events.size(); ++i) {
    std::string line = event_line(events[i].e);  // "2026-11-27 14:03:22Z  released  …"
    std::string time = line.substr(11, 9), rest = line.size() > 22 ? line.substr(22) : "";
    out.push_back(truncate_columns(
        fmt::format("{}  {}  {}", time, truncate_columns(escape_text(events[i].key), 30), rest),
        width));
  }
  return out;
}

std::string top_batch_text(const TopSnapshot& s, size_t width) {
  size_t shown = std::min(s.rows.size(), kTopBatchRows);
  // The header whole: a log line.
  std::string out = top_header(s, shown, TopSort::Attention) + "\n";
  if (!s.problem.empty()) out += truncate_columns("problem: " + s.problem, width) + "\n";
  for (auto& l : top_table(s.rows, width, kTopBatchRows)) out += l + "\n";
  out += "\nLATEST EVENTS\n";
  for (auto& l : top_events(s.events, width, 10)) out += l + "\n";
  return out + "\n";
}

std::vector<std::string> top_detail(const TopRow& row, size_t width) {
  const LockStatus& st = row.st;
  std::vector<std::string> out;
  out.push_back(pad_to(fmt::format("{}  {}, fence {}, {} holding, {} waiting", escape_text(row.key),
                                   shape(st), st.fence, st.holder_count, st.waiter_count),
                       width));
  std::vector<std::vector<std::string>> cells{
      {"", "WHO", "USER@HOST:PID", "HELD", "LEFT", "FENCE", "PRIORITY", "COMMAND"}};
  for (const Holder& h : st.holders)
    cells.push_back(
        {"holder", keep_end(top_who(h.info), 32),
         fmt::format("{}@{}:{}", escape_text(h.info.user), escape_text(h.info.host), h.info.pid),
         age(h.since_ms > 0 ? st.now_ms - h.since_ms : 0), lease_left(h.ttl_left),
         std::to_string(h.fence), "", escape_text(h.info.cmd)});
  for (const Waiter& w : st.waiters)
    cells.push_back(
        {w.shared ? "waiter (shared)" : "waiter", keep_end(top_who(w.info), 32),
         fmt::format("{}@{}:{}", escape_text(w.info.user), escape_text(w.info.host), w.info.pid),
         fmt::format("waiting {}", age(w.since_ms > 0 ? st.now_ms - w.since_ms : 0)), "", "",
         std::to_string(w.priority), escape_text(w.info.cmd)});
  for (auto& l : layout_table(cells, width, 0).lines) out.push_back(l);
  return out;
}

}  // namespace rlock
