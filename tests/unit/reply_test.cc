#include "reply.h"

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include "scripts.h"

namespace rlock {
namespace {

Reply parse(const std::string& wire) {
  redisReader* r = redisReaderCreate();
  redisReaderFeed(r, wire.data(), wire.size());
  void* raw = nullptr;
  EXPECT_EQ(redisReaderGetReply(r, &raw), REDIS_OK);
  EXPECT_NE(raw, nullptr);
  Reply out = convert_reply(static_cast<redisReply*>(raw));
  freeReplyObject(raw);
  redisReaderFree(r);
  return out;
}

TEST(Reply, ConvertsNestedArrays) {
  Reply r = parse("*3\r\n$2\r\nOK\r\n:42\r\n*1\r\n$-1\r\n");
  ASSERT_EQ(r.type, Reply::Type::Array);
  EXPECT_EQ(r.elements[0].as_string(), "OK");
  EXPECT_EQ(r.elements[1].as_int(), 42);
  EXPECT_TRUE(r.elements[2].elements[0].is_nil());
}

TEST(Reply, TypeMismatchIsProtocolError) {
  Reply r = parse(":1\r\n");
  try {
    r.as_array("an acquire reply");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_status(), 70);
  }
}

TEST(Reply, ServerErrorsMapToTheExitTable) {
  EXPECT_EQ(server_error("NOAUTH Authentication required.", "").exit_status(), 77);
  EXPECT_EQ(server_error("WRONGPASS invalid username-password pair", "").exit_status(), 77);
  EXPECT_EQ(server_error("NOPERM this user has no permissions", "").exit_status(), 77);
  EXPECT_EQ(server_error("LOADING Redis is loading", "").exit_status(), 69);
  EXPECT_EQ(server_error("READONLY You can't write against a read only replica.", "").exit_status(),
            69);
  EXPECT_EQ(server_error("ERR something odd", "").exit_status(), 70);
}

TEST(Reply, ExpectOkThrowsTheFailure) {
  Result failed{Error(ErrorKind::Unavailable, "down"), Reply{}};
  EXPECT_THROW(expect_ok(failed, "x"), Error);
  Result err{std::nullopt, parse("-NOPERM no\r\n")};
  try {
    expect_ok(err, "x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_status(), 77);
  }
}

TEST(Scripts, ShaIsOfTheSourceAndStable) {
  EXPECT_EQ(acquire_script().sha1.size(), 40u);
  EXPECT_NE(acquire_script().sha1, release_script().sha1);
}

}  // namespace
}  // namespace rlock
