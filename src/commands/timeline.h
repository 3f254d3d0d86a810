// A lock's timeline (`rlock history KEY --timeline`, the man page's
// "history"): its history's events drawn as a picture, one row per holder
// host, each hold a bar, waits shaded, the ends that were not a clean release
// marked, under a time axis with its scale. Pure drawing: the events come in,
// text or SVG goes out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lock/history.h"

namespace rlock {

/// One stretch of time on a row.
struct TimelineSpan {
  enum class Kind { Wait, Hold, Kept } kind = Kind::Hold;
  int64_t from_ms = 0, to_ms = 0;
  /// How it ended, drawn at its end: 'E' expired, 'B' broken, 'L' lost, '!'
  /// a command that failed (`exit` says how), 0 nothing to mark.
  char mark = 0;
  std::string exit;   // the failed command's exit status, as recorded
  bool open = false;  // still going (no end recorded)
};

/// A holder host (the `who` of its events without " pid N"; a --label as it is).
struct TimelineRow {
  std::string who;
  std::vector<TimelineSpan> spans;
};

struct Timeline {
  int64_t from_ms = 0, to_ms = 0;  // the window shown (server time, Unix ms)
  std::vector<TimelineRow> rows;   // in order of first appearance
};

/// The timeline of `events` (oldest first, as history reads them). A hold
/// without a recorded end runs to `now_ms`. `since_ms` > 0: the window is
/// [now_ms - since_ms, now_ms]; otherwise it spans the events (to `now_ms`
/// while something is still held). Spans are clipped to the window; rows
/// with nothing in it are left out.
Timeline make_timeline(const std::vector<Event>& events, int64_t now_ms, int64_t since_ms = 0);

/// The picture for a terminal `width` columns wide (at least 40 are used): a
/// header naming `key` and the window, one row per holder, the time axis with
/// its labels, the scale and a legend. `color`: ANSI colours for the bars.
/// Text from Redis is escaped.
std::string draw_timeline(const Timeline& t, const std::string& key, size_t width, bool color);

/// The same picture as a standalone SVG document; every text escaped for XML
/// (and control characters as escape_text shows them).
std::string timeline_svg(const Timeline& t, const std::string& key);

}  // namespace rlock
