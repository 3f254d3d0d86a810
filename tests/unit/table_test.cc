#include "cli/table.h"

#include <gtest/gtest.h>

#include "core/text.h"

namespace rlock {
namespace {

TEST(Table, AlignsColumnsUnderTheHeaderAndTrimsTrailingSpaces) {
  Table t =
      layout_table({{"KEY", "LEFT", "COMMAND"}, {"deploy", "29s", "make"}, {"a", "1s", ""}}, 80, 2);
  ASSERT_EQ(t.lines.size(), 3u);
  EXPECT_EQ(t.lines[0], "  KEY     LEFT  COMMAND");
  EXPECT_EQ(t.lines[1], "  deploy  29s   make");
  EXPECT_EQ(t.lines[2], "  a       1s");
}

TEST(Table, TheLastColumnGivesWayFirstWithAnEllipsis) {
  std::string cmd(200, 'x');
  Table t = layout_table({{"WHO", "FENCE", "COMMAND"}, {"ci@host:1", "7", cmd}}, 40);
  for (auto& l : t.lines) EXPECT_LE(text_columns(l), 40u) << l;
  EXPECT_EQ(t.lines[1].substr(0, 20), "ci@host:1  7      xx");
  EXPECT_NE(t.lines[1].find("\u2026"), std::string::npos);
}

TEST(Table, CapsCutLongCellsAndEveryLineFitsEvenWhenTheColumnsCannot) {
  Table t = layout_table({{"KEY", "COMMAND"}, {std::string(100, 'k'), "c"}}, 30, 0, {{0, 10}});
  EXPECT_EQ(t.widths[0], 10u);
  EXPECT_EQ(t.lines[1], "kkkkkkkkk\u2026  c");
  Table narrow = layout_table({{"A", "B"}, {std::string(50, 'a'), "b"}}, 20);
  for (auto& l : narrow.lines) EXPECT_LE(text_columns(l), 20u) << l;
}

}  // namespace
}  // namespace rlock
