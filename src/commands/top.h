// `rlock top [PATTERN]` (the man page's "top"): the locks that need attention
// first, and what just happened to them. top_view.cc draws (pure: snapshots in,
// text out); top.cc gathers the snapshots and runs the screen or the batch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/loop.h"
#include "lock/history.h"
#include "lock/records.h"

namespace rlock {

struct TopOptions {
  bool batch = false;     // -b: plain snapshots (also when stdout is no terminal)
  Millis interval{1000};  // --interval: between refreshes
  long count = 0;         // --count: snapshots before exiting (0: until interrupted)
};

/// How many locks one refresh reads at most (those with a line first): the
/// work per refresh stays bounded however many locks match.
inline constexpr size_t kTopReadCap = 1000;
/// Rows a batch snapshot shows at most.
inline constexpr size_t kTopBatchRows = 50;

/// One lock, as top shows it.
struct TopRow {
  std::string key;
  LockStatus st;
  int64_t held_ms = 0;         // the first holder's time held (0: free)
  int64_t oldest_wait_ms = 0;  // the first waiter's time in line (0: nobody waits)
};

/// A lock's row from its status (server times: `st.now_ms`).
TopRow top_row(const std::string& key, LockStatus st);

/// Orders of the table: what needs attention first (the longest oldest wait,
/// then the longest held), by KEY, by time held, by waiters.
enum class TopSort { Attention, Key, Held, Waiters };
TopSort next_sort(TopSort s);
const char* sort_name(TopSort s);
void sort_rows(std::vector<TopRow>& rows, TopSort by);

/// An event of a shown lock, for the events pane.
struct TopEvent {
  std::string key;
  Event e;
};

/// One refresh.
struct TopSnapshot {
  int64_t now_ms = 0;            // server time (wall clock when no lock answered)
  std::string topology;          // "one server redis://…", "quorum of 3 masters", …
  size_t found = 0;              // locks the last SCAN found (held or waited for)
  size_t unread = 0;             // of them, not read (past kTopReadCap)
  std::vector<TopRow> rows;      // the ones read, sorted
  std::vector<TopEvent> events;  // the newest last
  std::string problem;           // a refresh that failed: why (the last snapshot is shown)
};

/// The header line: time, topology, how many locks are shown, and how many
/// hidden (not read, or rows left out of the `shown`).
std::string top_header(const TopSnapshot& s, size_t shown, TopSort by);
/// The table (a header row, then at most `max_rows` rows), each line within
/// `width`; `cursor` (an index into rows, or -1) is marked with '>'.
std::vector<std::string> top_table(const std::vector<TopRow>& rows, size_t width, size_t max_rows,
                                   long cursor = -1);
/// The newest `max` events as lines within `width`, newest last.
std::vector<std::string> top_events(const std::vector<TopEvent>& events, size_t width, size_t max);
/// A batch snapshot: the header, the table (kTopBatchRows rows at most), the
/// latest events; ends with an empty line.
std::string top_batch_text(const TopSnapshot& s, size_t width);
/// A lock's detail: every holder and waiter with label and priority.
std::vector<std::string> top_detail(const TopRow& row, size_t width);

}  // namespace rlock
