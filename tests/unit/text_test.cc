#include "core/text.h"

#include <gtest/gtest.h>

namespace rlock {
namespace {

TEST(EscapeText, PrintableUtf8PassesUnchanged) {
  EXPECT_EQ(escape_text("deploy:prod ./deploy.sh --fast"), "deploy:prod ./deploy.sh --fast");
  EXPECT_EQ(escape_text("h\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92"),
            "h\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92");
}

TEST(EscapeText, ControlsTabDelAndBackslashAreEscaped) {
  EXPECT_EQ(escape_text("a\nrlock: acquired"), "a\\x0arlock: acquired");
  EXPECT_EQ(escape_text("\x1b[2J"), "\\x1b[2J");
  EXPECT_EQ(escape_text("a\tb\rc"), "a\\x09b\\x0dc");
  EXPECT_EQ(escape_text(std::string("n\0l", 3)), "n\\x00l");
  EXPECT_EQ(escape_text("\x7f"), "\\x7f");
  EXPECT_EQ(escape_text("back\\slash"), "back\\\\slash");
  // An escaped text cannot be confused with a real "\x1b": its backslash is doubled.
  EXPECT_EQ(escape_text("\\x1b"), "\\\\x1b");
}

TEST(EscapeText, C1ControlsAndInvalidUtf8BecomeBytes) {
  EXPECT_EQ(escape_text("\xc2\x9b"
                        "31m"),
            "\\xc2\\x9b31m");                      // CSI as UTF-8
  EXPECT_EQ(escape_text("\xc2\xa0"), "\xc2\xa0");  // NBSP is printable
  EXPECT_EQ(escape_text("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(escape_text("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(escape_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // surrogate
  EXPECT_EQ(escape_text("\xe2\x82"), "\\xe2\\x82");                    // truncated
  EXPECT_EQ(escape_text("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // > U+10FFFF
}

TEST(EscapeText, EveryByteGivesOnePrintableLine) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  std::string e = escape_text(all);
  for (unsigned char c : e) {
    EXPECT_TRUE(c >= 0x20 && c != 0x7f) << "byte " << int(c) << " in " << e;
  }
}

TEST(EscapeControls, KeepsBackslashesButEscapesControls) {
  EXPECT_EQ(escape_controls("a\\b\nc"), "a\\b\\x0ac");
  std::string once = escape_text("x\x1b[1m");
  EXPECT_EQ(escape_controls(once), once);
}

TEST(JsonString, EscapesQuotesControlsAndReplacesInvalidBytes) {
  EXPECT_EQ(json_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json_string("l1\nl2\t\r"), "\"l1\\nl2\\t\\r\"");
  EXPECT_EQ(json_string("\x1b[0m\x7f"), "\"\\u001b[0m\\u007f\"");
  EXPECT_EQ(json_string("\xc2\x85"), "\"\\u0085\"");
  EXPECT_EQ(json_string("bad\xff"), "\"bad\\ufffd\"");
  EXPECT_EQ(json_string("\xe2\x82\xac"), "\"\xe2\x82\xac\"");
}

TEST(JsonString, AnyBytesGiveValidUtf8WithoutRawControls) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  std::string j = json_string(all + all);
  for (size_t i = 0; i < j.size();) {
    size_t n = utf8_sequence_length(std::string_view(j).substr(i));
    ASSERT_GT(n, 0u) << "invalid UTF-8 at " << i;
    if (n == 1) {
      EXPECT_GE(static_cast<unsigned char>(j[i]), 0x20);
    }
    i += n;
  }
}

}  // namespace
}  // namespace rlock

namespace rlock {
namespace {

TEST(EscapeText, BidiControlsAreEscapedSoTextShowsInItsOrder) {
  // "ev" RIGHT-TO-LEFT OVERRIDE "il": a terminal would show "evli".
  EXPECT_EQ(escape_text("ev\xe2\x80\xaeil"), "ev\\xe2\\x80\\xaeil");
  EXPECT_EQ(escape_text("\xe2\x81\xa6x\xe2\x81\xa9"), "\\xe2\\x81\\xa6x\\xe2\\x81\\xa9");
  EXPECT_EQ(escape_text("\xe2\x80\x8f\xd8\x9c"), "\\xe2\\x80\\x8f\\xd8\\x9c");
  // Neighbours that are ordinary text stay as they are.
  EXPECT_EQ(escape_text("\xe2\x80\xa6 \xe2\x80\x94"), "\xe2\x80\xa6 \xe2\x80\x94");
}

TEST(Text, ColumnsTruncationAndWrapping) {
  EXPECT_EQ(text_columns("h\xc3\xa9llo"), 5u);
  EXPECT_EQ(truncate_columns("abcdef", 4), "abc\xe2\x80\xa6");
  EXPECT_EQ(truncate_columns("abc", 4), "abc");
  EXPECT_EQ(truncate_columns("h\xc3\xa9llo", 3), "h\xc3\xa9\xe2\x80\xa6");
  EXPECT_EQ(wrap_text("  -x  ", "one two three four", 14),
            "  -x  one two\n      three\n      four\n");
  // A word longer than the line stays whole.
  EXPECT_EQ(wrap_text("", "abcdefghij xy", 5), "abcdefghij\nxy\n");
}

}  // namespace
}  // namespace rlock
