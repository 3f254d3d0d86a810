// ReplyParser: the bounded front of hiredis's reader.
#include <gtest/gtest.h>

#include "net/reply.h"

namespace rlock {
namespace {

// Feeds `wire` in pieces of `step` bytes and returns every reply.
std::vector<Reply> parse_all(const std::string& wire, size_t step, ReplyParser& p) {
  std::vector<Reply> out;
  for (size_t i = 0; i < wire.size(); i += step) {
    p.feed(wire.data() + i, std::min(step, wire.size() - i));
    while (auto r = p.next()) out.push_back(std::move(*r));
  }
  return out;
}

int status_of(const std::string& wire, size_t max_bytes = kMaxReplyBytes,
              size_t max_elements = kMaxReplyElements) {
  ReplyParser p(max_bytes, max_elements);
  try {
    parse_all(wire, wire.size() ? wire.size() : 1, p);
  } catch (const Error& e) {
    return e.exit_status();
  }
  return 0;
}

const std::string kAcquireReply =
    "*5\r\n$6\r\nQUEUED\r\n:0\r\n:0\r\n*1\r\n*9\r\n$4\r\ntok1\r\n:2900\r\n$4\r\nhost\r\n"
    "$2\r\n42\r\n$4\r\nuser\r\n$-1\r\n$13\r\n1700000000000\r\n$1\r\n7\r\n$5\r\n30000\r\n:1\r\n";

TEST(ReplyParser, SameRepliesWhateverTheChunking) {
  std::string wire =
      kAcquireReply + "+OK\r\n-ERR x\r\n:42\r\n*0\r\n*-1\r\n$0\r\n\r\n" + kAcquireReply;
  for (size_t step : {1u, 2u, 3u, 7u, 64u, 4096u}) {
    ReplyParser p;
    auto rs = parse_all(wire, step, p);
    ASSERT_EQ(rs.size(), 8u) << "step " << step;
    EXPECT_EQ(rs[0].elements[0].str, "QUEUED");
    EXPECT_EQ(rs[0].elements[3].elements[0].elements[2].str, "host");
    EXPECT_TRUE(rs[0].elements[3].elements[0].elements[5].is_nil());
    EXPECT_EQ(rs[1].str, "OK");
    EXPECT_TRUE(rs[2].is_error());
    EXPECT_EQ(rs[3].integer, 42);
    EXPECT_EQ(rs[4].elements.size(), 0u);
    EXPECT_TRUE(rs[5].is_nil());
    EXPECT_EQ(rs[6].str, "");
    EXPECT_EQ(rs[7].elements[4].integer, 1);
  }
}

TEST(ReplyParser, AHugeArrayHeaderIsRefusedBeforeAnyElement) {
  EXPECT_EQ(status_of("*100000000\r\n"), 70);
  EXPECT_EQ(status_of("*9223372036854775807\r\n"), 70);
  EXPECT_EQ(status_of("*99999999999999999999\r\n"), 70);
}

TEST(ReplyParser, AHugeBulkHeaderIsRefused) {
  EXPECT_EQ(status_of("$1000000000\r\n"), 70);
  EXPECT_EQ(status_of("$9\r\n", 8), 70);
  EXPECT_EQ(status_of("$4\r\nabcd\r\n", 10), 0);
  EXPECT_EQ(status_of("$4\r\nabcd\r\n", 9), 70);
}

TEST(ReplyParser, TooManyElementsInAllAreRefused) {
  std::string nested = "*3\r\n*2\r\n:1\r\n:2\r\n*2\r\n:3\r\n:4\r\n:5\r\n";  // 7 elements
  EXPECT_EQ(status_of(nested, kMaxReplyBytes, 7), 0);
  EXPECT_EQ(status_of(nested, kMaxReplyBytes, 6), 70);
}

TEST(ReplyParser, TheBudgetIsPerReply) {
  std::string one = "$4\r\nabcd\r\n";  // 10 bytes
  ReplyParser p(12);
  std::string wire;
  for (int i = 0; i < 100; ++i) wire += one;
  EXPECT_EQ(parse_all(wire, 5, p).size(), 100u);
}

TEST(ReplyParser, AnEndlessLineIsRefused) {
  ReplyParser p(1024);
  std::string chunk(100, 'x');
  p.feed("+", 1);
  EXPECT_THROW(
      {
        for (int i = 0; i < 20; ++i) p.feed(chunk.data(), chunk.size());
      },
      Error);
}

TEST(ReplyParser, NestingDeeperThanSevenIsRefused) {
  EXPECT_EQ(status_of("*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n"), 0);
  EXPECT_EQ(status_of("*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n"), 70);
}

TEST(ReplyParser, MalformedHeadersAreProtocolErrors) {
  for (const char* bad :
       {"?what\r\n", "*x\r\n", "$-\r\n", "*1\n", "$\r\n", "*1\r\r\n", "%1\r\n", ":1\n"}) {
    EXPECT_EQ(status_of(bad), 70) << bad;
  }
}

}  // namespace
}  // namespace rlock
