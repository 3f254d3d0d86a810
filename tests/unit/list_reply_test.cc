// The `list` script's 'full' reply (list.lua): a status reply, {} or a plain
// holder's flat record (the tag 1, the fence counter, 17 holder values) per
// lock, then the server time. A reply from a hostile or broken server must give
// a protocol Error, never a read past its end.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "lock/lock.h"
#include "lock/replies.h"
#include "net/reply.h"
#include "reply_builders.h"

namespace rlock {
namespace {

using test::arr;
using test::num;
using test::str;

// A plain holder's flat record: 19 values.
void flat(std::vector<Reply>& out, const std::string& token, long long fence) {
  out.push_back(num(1));
  out.push_back(num(fence));
  for (const char* v : {"", "29000", "host", "42", "user", "cmd", "1795847112116", "", "30000", "",
                        "", "", "", "label", "", ""})
    out.push_back(str(v));
  out.push_back(num(2));  // nested holds
  out[out.size() - 17] = str(token);
}

TEST(ListReply, FlatRecordsFreeLocksAndStatusRepliesInOrder) {
  std::vector<Reply> e;
  flat(e, "tok-a", 7);
  e.push_back(arr({}));  // free
  e.push_back(arr({num(3), num(9), num(5), arr({}), arr({}), num(0), num(0), arr({})}));
  flat(e, "tok-d", 8);
  e.push_back(num(1795847112200));
  auto out = parse_list_reply(arr(std::move(e)), 4, ListReply::Full);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].fence, 7);
  ASSERT_EQ(out[0].holders.size(), 1u);
  EXPECT_EQ(out[0].holders[0].token, "tok-a");
  EXPECT_EQ(out[0].holders[0].info.pid, 42);
  EXPECT_EQ(out[0].holders[0].info.label, "label");
  EXPECT_EQ(out[0].holders[0].nested, 2);
  EXPECT_EQ(out[0].holders[0].ended_ms, 0);
  EXPECT_EQ(out[0].holder_count, 1);
  EXPECT_EQ(out[0].waiter_count, 0);
  EXPECT_EQ(out[0].limit, 0);
  EXPECT_EQ(out[0].now_ms, 1795847112200);
  EXPECT_TRUE(out[1].holders.empty());
  EXPECT_EQ(out[2].limit, 3);
  EXPECT_EQ(out[3].holders[0].token, "tok-d");
  // A reply may cover only the first locks: the caller asks again for the rest.
  std::vector<Reply> part;
  flat(part, "tok-a", 7);
  part.push_back(num(1));
  EXPECT_EQ(parse_list_reply(arr(std::move(part)), 4, ListReply::Full).size(), 1u);
}

TEST(ListReply, ATruncatedOrOverlongReplyIsAProtocolError) {
  auto protocol = [](std::vector<Reply> e, size_t n) {
    try {
      parse_list_reply(arr(std::move(e)), n, ListReply::Full);
    } catch (const Error& err) {
      return err.kind() == ErrorKind::Protocol;
    }
    return false;
  };
  // A flat record cut short, even by one value.
  std::vector<Reply> cut;
  flat(cut, "t", 1);
  cut.pop_back();
  cut.push_back(num(1));
  EXPECT_TRUE(protocol(cut, 1));
  // The tag alone.
  EXPECT_TRUE(protocol({num(1), num(5)}, 1));
  // More locks than were asked about.
  std::vector<Reply> two;
  flat(two, "a", 1);
  flat(two, "b", 2);
  two.push_back(num(1));
  EXPECT_TRUE(protocol(two, 1));
  // Nothing but the server time.
  EXPECT_TRUE(protocol({num(1)}, 1));
}

}  // namespace
}  // namespace rlock
