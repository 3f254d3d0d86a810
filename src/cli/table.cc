#include "cli/table.h"

#include <algorithm>
#include <cstdint>

#include "core/text.h"

namespace rlock {

std::string truncate_middle(std::string_view s, size_t columns) {
  size_t total = text_columns(s);
  if (total <= columns) return std::string(s);
  if (columns < 2) return truncate_columns(s, columns);
  size_t tail = columns / 2, head = columns - 1 - tail;
  // The byte where the last `tail` characters start.
  size_t from = s.size(), n = 0;
  while (from > 0 && n < tail)
    if ((static_cast<unsigned char>(s[--from]) & 0xc0) != 0x80) ++n;
  std::string start = head == 0 ? "" : truncate_columns(s, head + 1);
  if (!start.empty()) start.resize(start.size() - 3);  // its "…"
  return start + "\u2026" + std::string(s.substr(from));
}

namespace {

// Narrows column `c` of `t` by up to `over` columns, not below `floor`;
// returns what is still over.
size_t give(Table& t, size_t c, size_t floor, size_t over) {
  size_t w = t.widths[c];
  size_t given = w > floor ? std::min(over, w - floor) : 0;
  t.widths[c] -= given;
  return over - given;
}

// Narrows the capped columns, the widest above its floor first, one column at
// a time, until nothing is over or each is at its floor (its cap, or `floor`
// when that is lower); returns what is still over.
size_t give_capped(Table& t, const std::vector<ColumnCap>& caps, size_t floor, size_t over) {
  while (over > 0) {
    size_t best = t.widths.size(), room = 0;
    for (auto& cap : caps) {
      if (cap.index >= t.widths.size() || cap.columns == 0) continue;
      size_t f = std::min(cap.columns, floor);
      if (t.widths[cap.index] > f && t.widths[cap.index] - f > room) {
        best = cap.index;
        room = t.widths[cap.index] - f;
      }
    }
    if (best == t.widths.size()) break;
    --t.widths[best];
    --over;
  }
  return over;
}

}  // namespace

Table layout_table(const std::vector<std::vector<std::string>>& rows, size_t width, size_t indent,
                   const std::vector<ColumnCap>& caps) {
  Table t;
  size_t n = 0;
  for (auto& r : rows) n = std::max(n, r.size());
  if (n == 0) return t;
  t.widths.assign(n, 0);
  for (auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) t.widths[c] = std::max(t.widths[c], text_columns(r[c]));
  size_t total = indent + 2 * (n - 1);
  for (size_t w : t.widths) total += w;
  size_t over = total > width ? total - width : 0;
  const size_t last = n - 1;
  const size_t header = rows.front().size() > last ? text_columns(rows.front()[last]) : 0;
  over = give(t, last, std::max(header, kRoomForLast), over);
  over = give_capped(t, caps, SIZE_MAX, over);
  over = give(t, last, header, over);
  over = give_capped(t, caps, kMinCapped, over);
  std::vector<bool> middle(n, false);
  for (auto& cap : caps)
    if (cap.index < n) middle[cap.index] = cap.middle;
  for (auto& r : rows) {
    std::string line(indent, ' ');
    for (size_t c = 0; c < n; ++c) {
      std::string_view text = c < r.size() ? std::string_view(r[c]) : std::string_view();
      std::string cell =
          middle[c] ? truncate_middle(text, t.widths[c]) : truncate_columns(text, t.widths[c]);
      line += cell;
      if (c + 1 < n) line += std::string(t.widths[c] - text_columns(cell) + 2, ' ');
    }
    line.erase(line.find_last_not_of(' ') + 1);
    if (text_columns(line) > width) line = truncate_columns(line, width);
    t.lines.push_back(std::move(line));
  }
  return t;
}

}  // namespace rlock
