#include "cli/table.h"

#include <gtest/gtest.h>

#include "core/text.h"

namespace rlock {
namespace {

TEST(Table, TruncateMiddleKeepsTheStartAndTheEnd) {
  // Cut in the middle: the start and the (larger) end stay, UTF-8 whole.
  EXPECT_EQ(truncate_middle("abcdefghij", 7), "abc\xe2\x80\xa6hij");
  EXPECT_EQ(truncate_middle("abcdefghij", 8), "abc\xe2\x80\xa6ghij");
  EXPECT_EQ(truncate_middle("abcdefghij", 10), "abcdefghij");
  EXPECT_EQ(truncate_middle("abcdefghij", 2), "\xe2\x80\xa6j");
  EXPECT_EQ(truncate_middle("abcdefghij", 1), "\xe2\x80\xa6");
  EXPECT_EQ(truncate_middle("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 4),
            "\xc3\xa9\xe2\x80\xa6\xc3\xa9\xc3\xa9");
  EXPECT_EQ(text_columns(truncate_middle(std::string(300, 'k'), 32)), 32u);
}

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

TEST(Table, CapsCutLongCellsOnlyWhenTheLineDoesNotFitAndEveryLineFitsEvenWhenTheColumnsCannot) {
  Table wide = layout_table({{"KEY", "COMMAND"}, {std::string(100, 'k'), "c"}}, 200, 0, {{0, 10}});
  EXPECT_EQ(wide.widths[0], 100u);  // room enough: no cut
  Table t = layout_table({{"KEY", "COMMAND"}, {std::string(100, 'k'), "c"}}, 30, 0, {{0, 10}});
  EXPECT_EQ(t.widths[0], 21u);  // only what the line needs
  EXPECT_EQ(t.lines[1], std::string(20, 'k') + "\u2026  c");
  Table capped = layout_table({{"KEY", "COMMAND"}, {std::string(100, 'k'), std::string(40, 'c')}},
                              30, 0, {{0, 10}});
  EXPECT_EQ(capped.widths[0], 10u);  // down to its cap, the command down to its header
  Table narrow = layout_table({{"A", "B"}, {std::string(50, 'a'), "b"}}, 20);
  for (auto& l : narrow.lines) EXPECT_LE(text_columns(l), 20u) << l;
}

TEST(Table, KeysThatDifferOnlyAtTheirEndStayApartWhenCutInTheMiddle) {
  std::vector<std::vector<std::string>> rows{
      {"KEY", "HOLDER", "COMMAND"},
      {"deploy:prod:eu-west-1:service-payments-p1",
       "https://github.com/acme/shop/actions/runs/123456", "./deploy.sh"},
      {"deploy:prod:eu-west-1:service-payments-p2",
       "https://github.com/acme/shop/actions/runs/123457", "./deploy.sh"}};
  Table t = layout_table(rows, 80, 0, {{0, 32, true}, {1, 24, true}});
  for (auto& l : t.lines) EXPECT_LE(text_columns(l), 80u) << l;
  EXPECT_NE(t.lines[1].find("payments-p1"), std::string::npos) << t.lines[1];
  EXPECT_NE(t.lines[2].find("payments-p2"), std::string::npos) << t.lines[2];
  EXPECT_NE(t.lines[1].find("/runs/123456"), std::string::npos) << t.lines[1];
  EXPECT_NE(t.lines[2].find("/runs/123457"), std::string::npos) << t.lines[2];
  EXPECT_EQ(t.lines[1].rfind("deploy:prod:", 0), 0u) << t.lines[1];
  EXPECT_NE(t.lines[1].find("./deploy.sh"), std::string::npos) << t.lines[1];
  // At 200 columns nothing is cut.
  Table wide = layout_table(rows, 200, 0, {{0, 32, true}, {1, 24, true}});
  EXPECT_EQ(wide.lines[1].find("\u2026"), std::string::npos) << wide.lines[1];
}

}  // namespace
}  // namespace rlock
