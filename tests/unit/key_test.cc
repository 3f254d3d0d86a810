#include "lock/key.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace rlock {
namespace {

bool valid(const std::string& k) {
  try {
    validate_key(k);
    return true;
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_status(), 64);
    return false;
  }
}

TEST(Key, AcceptsPrintableUtf8UpTo512Bytes) {
  EXPECT_TRUE(valid("deploy:prod"));
  EXPECT_TRUE(valid("nightly report"));
  EXPECT_TRUE(valid("caf\xc3\xa9-\xe2\x82\xac"));
  EXPECT_TRUE(valid(std::string(512, 'a')));
}

TEST(Key, RejectsEmptyLongControlsBracesAndBadUtf8) {
  EXPECT_FALSE(valid(""));
  EXPECT_FALSE(valid(std::string(513, 'a')));
  EXPECT_FALSE(valid("a\nb"));
  EXPECT_FALSE(valid("a\tb"));
  EXPECT_FALSE(valid(std::string("a\0b", 3)));
  EXPECT_FALSE(valid("a\x7f"));
  EXPECT_FALSE(valid("x{y}"));
  EXPECT_FALSE(valid("\xff"));
  EXPECT_FALSE(valid("\xc3"));          // truncated
  EXPECT_FALSE(valid("\xc0\xaf"));      // overlong
  EXPECT_FALSE(valid("\xed\xa0\x80"));  // surrogate
  EXPECT_FALSE(valid("\xc2\x85"));      // C1 control (NEL)
}

TEST(Key, NamesShareOneHashTag) {
  LockNames n("deploy:prod", "lock:");
  EXPECT_EQ(n.lock, "lock:{deploy:prod}");
  EXPECT_EQ(n.sub("fence"), "lock:{deploy:prod}:fence");
  EXPECT_EQ(n.channel, "lock:release:{deploy:prod}");
  EXPECT_EQ(n.waiter_channel("abc"), "lock:release:{deploy:prod}:abc");
}

TEST(Key, TokenValidation) {
  EXPECT_NO_THROW(validate_token("0123456789abcdef0123456789abcdef"));
  EXPECT_THROW(validate_token(""), Error);
  EXPECT_THROW(validate_token("has space"), Error);
  EXPECT_THROW(validate_token(std::string(129, 'a')), Error);
}

}  // namespace
}  // namespace rlock
