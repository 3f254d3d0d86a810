#include "commands/list_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "cli/output.h"
#include "cli/table.h"
#include "cli/wording.h"
#include "core/duration.h"
#include "core/text.h"

namespace rlock {

namespace {

// The HOLDER column: host:pid of a single holder, "2/3" for a semaphore, "3
// shared" for the shared holders of a lock; "… +2 nested" when nested runs hold
// it under the first holder (docs/GUIDE.md "Nesting").
std::string holder_column(const LockStatus& st, const std::string& who) {
  std::string nested;
  if (!st.holders.empty() && st.holders.front().nested > 0)
    nested = fmt::format(" +{} nested", st.holders.front().nested);
  if (st.limit) return fmt::format("{}/{}{}", st.holder_count, st.limit, nested);
  if (!st.holders.empty() && st.holders.front().shared)
    return fmt::format("{} shared{}", st.holder_count, nested);
  return who + nested;
}

// A Prometheus label value, escaped once as the text format wants (a
// backslash, a double quote, a newline). Text that is not printable UTF-8 (a
// foreign key with control bytes) is given in rlock's escaped form (`\xHH`,
// a backslash doubled), which could also be the name of another, printable
// key: the key's series then carry the label key_escaped="1" as well, so that
// two keys never give one series (docs/recipes/prometheus.md).
std::string label_value(const std::string& s) {
  std::string shown = is_printable_text(s) ? s : escape_text(s);
  std::string out;
  out.reserve(shown.size());
  for (char c : shown) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out;
}

// The labels that name a lock's series: key="KEY", and key_escaped="1" when
// KEY had to be escaped (label_value).
std::string key_labels(const std::string& key) {
  std::string labels = "key=\"" + label_value(key) + "\"";
  if (!is_printable_text(key)) labels += ",key_escaped=\"1\"";
  return labels;
}

// Unix milliseconds as Prometheus seconds ("1764410522.123").
std::string seconds_of(int64_t ms) {
  return fmt::format("{}.{:03}", ms / 1000, ms % 1000);
}

// The terminal's table narrows KEY and HOLDER (a label, a CI job's URL) only
// when its lines do not fit, and cuts them in the middle: two keys or URLs that
// differ only at their end stay apart (the man page, list).
const std::vector<ColumnCap> kListCaps{{0, 32, true}, {1, 24, true}};

// A row of the terminal's table.
std::vector<std::string> table_row(const std::string& key, const LockStatus& st) {
  const Holder& h = st.holders.front();
  // A label (a CI job's URL) says more than host:pid.
  std::string who = !h.info.label.empty() ? escape_text(h.info.label)
                    : h.info.host.empty()
                        ? "?"
                        : fmt::format("{}:{}", escape_text(h.info.host), h.info.pid);
  // A lease kept by --min-hold or --done-for runs no command any more.
  std::string cmd = (h.done_ms > 0   ? "(done) "
                     : h.kept_ms > 0 ? "(kept) "
                                     : "") +
                    escape_text(h.info.cmd);
  return {escape_text(key),        holder_column(st, who),          lease_left_cell(h.ttl_left),
          std::to_string(h.fence), std::to_string(st.waiter_count), cmd};
}

}  // namespace

void Prometheus::add(const std::string& key, const LockStatus& st) {
  const Holder& h = st.holders.front();
  const std::string labels = key_labels(key);
  const std::string k = "{" + labels + "}";
  int64_t held_ms = h.since_ms > 0 && st.now_ms > h.since_ms ? st.now_ms - h.since_ms : 0;
  // A lease left as a hostile reply gives it stays within a year, and its end
  // within int64 whatever the server's time.
  int64_t left_ms = std::clamp<int64_t>(h.ttl_left.count(), 0, 366LL * 24 * 3600 * 1000);
  // A lease that only marks the lock done for its period (--done-for) holds
  // nothing: 0, so that a "held too long" alert does not fire for a day.
  const int64_t lease_end = st.now_ms > INT64_MAX - left_ms ? INT64_MAX : st.now_ms + left_ms;
  values_[kHeld] += fmt::format("rlock_held{} {}\n", k, h.done_ms > 0 ? 0 : 1);
  values_[kHolders] += fmt::format("rlock_holders{} {}\n", k, st.holder_count);
  values_[kWaiters] += fmt::format("rlock_waiters{} {}\n", k, st.waiter_count);
  // A key without an expiry (a foreign SET without PX) has no lease to run out.
  const bool no_expiry = h.ttl_left < Millis(0);
  if (no_expiry)
    values_[kLeaseLeft] += fmt::format("rlock_lease_left_seconds{} +Inf\n", k);
  else
    values_[kLeaseLeft] += fmt::format("rlock_lease_left_seconds{} {:.3f}\n", k, left_ms / 1000.0);
  values_[kHeldFor] += fmt::format("rlock_held_seconds{} {:.3f}\n", k, held_ms / 1000.0);
  values_[kFence] += fmt::format("rlock_fence{} {}\n", k, h.fence);
  // Times rather than ages: `time() - rlock_acquired_timestamp_seconds` stays
  // right between two writes of the file. Server times; unknown for a holder
  // that is not rlock (no sample then).
  if (h.since_ms > 0)
    values_[kAcquiredAt] +=
        fmt::format("rlock_acquired_timestamp_seconds{} {}\n", k, seconds_of(h.since_ms));
  if (st.now_ms > 0 && !no_expiry)
    values_[kExpiresAt] +=
        fmt::format("rlock_lease_expiry_timestamp_seconds{} {}\n", k, seconds_of(lease_end));
  // The lease of a lock marked done lasts as long as its period; a key
  // without an expiry has no end (no sample, as for the expiry above).
  if (h.done_ms > 0 && st.now_ms > 0 && !no_expiry)
    values_[kDoneUntil] +=
        fmt::format("rlock_done_until_timestamp_seconds{} {}\n", k, seconds_of(lease_end));
  // Who holds it, as labels of a constant 1 (the info-metric convention).
  values_[kHolderInfo] += fmt::format(
      "rlock_holder_info{{{},host=\"{}\",pid=\"{}\",user=\"{}\",label=\"{}\"}} 1\n", labels,
      label_value(h.info.host), h.info.pid, label_value(h.info.user), label_value(h.info.label));
}

std::string Prometheus::text() const {
  static const char* kHelp[kFamilies][2] = {
      {"rlock_held",
       "1 for a lock that is held, 0 for one only marked done for a period by --done-for (free "
       "locks are not listed)."},
      {"rlock_holders", "How many hold the lock (a semaphore's or shared lock's holders)."},
      {"rlock_waiters", "How many wait in the lock's line."},
      {"rlock_lease_left_seconds",
       "Seconds left on the first holder's lease (a live holder renews it; +Inf: no expiry)."},
      {"rlock_held_seconds", "Seconds since the first holder acquired the lock."},
      {"rlock_fence", "The first holder's fencing token."},
      {"rlock_acquired_timestamp_seconds",
       "When the first holder acquired the lock (Unix time, the server's clock)."},
      {"rlock_lease_expiry_timestamp_seconds",
       "When the first holder's lease runs out unless renewed (Unix time, the server's clock)."},
      {"rlock_done_until_timestamp_seconds",
       "When a lock marked done by --done-for may run again (Unix time, the server's clock)."},
      {"rlock_holder_info", "The first holder: host, pid, user and --label, as labels."}};
  std::string out;
  for (size_t i = 0; i < kFamilies; ++i) {
    if (values_[i].empty() && i >= kAcquiredAt) continue;  // a family with no sample
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{}", kHelp[i][0], kHelp[i][1], kHelp[i][0],
                       values_[i]);
  }
  return out;
}

ListOutput::ListOutput(const GlobalOptions& g, bool prometheus)
    : g_(g), prometheus_(prometheus), table_(!g.json && !prometheus && stdout_is_tty()) {}

void ListOutput::add(const std::string& key, const LockStatus& st) {
  if (prometheus_) {
    metrics_.add(key, st);
  } else if (g_.json) {
    out_ += (any_ ? "," : "[") + status_json(key, st, false);
  } else if (table_) {
    rows_.push_back(table_row(key, st));
  } else {
    // KEY HOLDER TTL_MS FENCE WAITERS CMD LABEL, bare values, tab-separated (cut -f):
    // every field is escaped, so none can hold a tab or newline.
    const Holder& h = st.holders.front();
    std::string who =
        h.info.host.empty() ? "?" : fmt::format("{}:{}", escape_text(h.info.host), h.info.pid);
    fmt::format_to(std::back_inserter(out_), "{}\t{}\t{}\t{}\t{}\t{}\t{}\n", escape_text(key),
                   holder_column(st, who), h.ttl_left.count(), h.fence, st.waiter_count,
                   escape_text(h.info.cmd), escape_text(h.info.label));
  }
  any_ = true;
}

void ListOutput::flush() {
  print_out(out_);
  out_.clear();
}

// The first few are named, each on a line; the rest are counted by finish().
constexpr size_t kUnreadableNamed = 10;

void ListOutput::unreadable(const std::string& key, const Error& why) {
  if (unreadable_++ == 0) first_unreadable_ = key;
  if (unreadable_ <= kUnreadableNamed)
    log_error(fmt::format("warning: lock '{}' not listed: {}", escape_text(key), why.what()));
}

void ListOutput::finish() {
  if (table_ && rows_.size() > 1)
    for (auto& line : layout_table(rows_, stdout_columns(), 0, kListCaps).lines)
      out_ += line + "\n";
  if (prometheus_) out_ = metrics_.text();
  if (g_.json) out_ += any_ ? "]\n" : "[]\n";
  flush();
  // The listing is whole but for these: the output is all there, the status says
  // it is not the whole truth.
  if (unreadable_ > 0)
    throw Error(
        ErrorKind::Protocol,
        fmt::format(
            "{} lock{} not listed (the first: '{}'): a key of another type among "
            "its keys{}",
            unreadable_, unreadable_ == 1 ? "" : "s", escape_text(first_unreadable_),
            unreadable_ > kUnreadableNamed ? "; the first 10 are named above" : ", named above"),
        -1, Cause::Foreign);
}

}  // namespace rlock
