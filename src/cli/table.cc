#include "cli/table.h"

#include <algorithm>

#include "core/text.h"

namespace rlock {

Table layout_table(const std::vector<std::vector<std::string>>& rows, size_t width, size_t indent,
                   const std::vector<ColumnCap>& caps) {
  Table t;
  size_t n = 0;
  for (auto& r : rows) n = std::max(n, r.size());
  if (n == 0) return t;
  t.widths.assign(n, 0);
  for (auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) t.widths[c] = std::max(t.widths[c], text_columns(r[c]));
  for (auto& cap : caps)
    if (cap.index < n && cap.columns > 0)
      t.widths[cap.index] = std::min(t.widths[cap.index], cap.columns);
  size_t total = indent + 2 * (n - 1);
  for (size_t w : t.widths) total += w;
  if (total > width) {
    size_t last = n - 1;
    size_t floor = rows.front().size() > last ? text_columns(rows.front()[last]) : 0;
    size_t over = total - width;
    size_t give = t.widths[last] > floor ? std::min(over, t.widths[last] - floor) : 0;
    t.widths[last] -= give;
  }
  for (auto& r : rows) {
    std::string line(indent, ' ');
    for (size_t c = 0; c < n; ++c) {
      std::string cell = truncate_columns(c < r.size() ? r[c] : "", t.widths[c]);
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
