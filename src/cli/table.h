// Tables for people on a terminal (`status` and `list` there): a header row,
// columns two spaces apart, every line within the terminal's width.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace rlock {

/// `s` cut to at most `columns` columns (UTF-8 characters) by taking out its
/// middle: its start and its end stay, joined by "…" ("deploy:prod:eu…service-p1"),
/// so that names that differ only at their end (a job's URL, a key's last part)
/// still differ. The end keeps the larger half.
std::string truncate_middle(std::string_view s, size_t columns);

/// Column `index` may be narrowed to `columns` when the line does not fit
/// (never when it does); its cells are then cut with "…", in their middle
/// when `middle` (a key, a label, a URL: the end tells rows apart).
struct ColumnCap {
  size_t index = 0;
  size_t columns = 0;
  bool middle = false;
};

struct Table {
  std::vector<std::string> lines;  // one per row, without "\n", trailing spaces trimmed
  std::vector<size_t> widths;      // of each column, as laid out
};

/// Lays out `rows` (the first is the header; cells are escaped text) left
/// aligned, each line prefixed by `indent` spaces, every column as wide as its
/// widest cell while the line fits `width`. When it does not: the last column
/// (the command) gives way first, down to kRoomForLast columns; then the
/// capped columns, down to their caps; then the last column, down to its
/// header's width; then the capped columns, down to kMinCapped; a line still
/// too wide is cut at `width`.
inline constexpr size_t kRoomForLast = 20;
inline constexpr size_t kMinCapped = 12;
Table layout_table(const std::vector<std::vector<std::string>>& rows, size_t width,
                   size_t indent = 0, const std::vector<ColumnCap>& caps = {});

}  // namespace rlock
