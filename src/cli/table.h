// Tables for people on a terminal (`status` and `list` there): a header row,
// columns two spaces apart, every line within the terminal's width.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace rlock {

/// Column `index` is at most `columns` wide; longer cells are cut with "…".
struct ColumnCap {
  size_t index = 0;
  size_t columns = 0;
};

struct Table {
  std::vector<std::string> lines;  // one per row, without "\n", trailing spaces trimmed
  std::vector<size_t> widths;      // of each column, as laid out
};

/// Lays out `rows` (the first is the header; cells are escaped text) left
/// aligned, each line prefixed by `indent` spaces. The caps apply first; then
/// the last column gives up what the line needs to fit `width`, down to the
/// header's own width; a line still too wide is cut at `width`.
Table layout_table(const std::vector<std::vector<std::string>>& rows, size_t width,
                   size_t indent = 0, const std::vector<ColumnCap>& caps = {});

}  // namespace rlock
