// Connection::format against RESP written out by hand: the bytes rlock sends for any
// arguments (none, empty ones, NUL bytes, CR LF, a megabyte, many), whichever hiredis
// function formats them.
#include <gtest/gtest.h>

#include <string>

#include "net/redis.h"

namespace rlock {
namespace {

std::string resp(const Args& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

TEST(CommandFormat, IsRespByteForByteWhateverTheArguments) {
  std::string every_byte;
  for (int c = 0; c < 256; ++c) every_byte += static_cast<char>(c);
  Args many;
  for (int i = 0; i < 10000; ++i) many.push_back(std::to_string(i) + std::string(i % 3, '\0'));
  const Args cases[] = {
      {},
      {""},
      {"", "", ""},
      {std::string("a\0b", 3), std::string(1, '\0'), "\r\n$3\r\n"},
      {every_byte, every_byte + every_byte},
      {std::string(9, 'x'), std::string(10, 'x'), std::string(99, 'x'), std::string(100, 'x')},
      {"EVALSHA", std::string(1 << 20, 'x'), std::string((1 << 20) - 1, '\0')},
      many,
  };
  for (const Args& a : cases) {
    std::string got = Connection::format(a);
    ASSERT_EQ(got.size(), resp(a).size()) << a.size() << " arguments";
    EXPECT_TRUE(got == resp(a)) << a.size() << " arguments";
  }
  EXPECT_EQ(Connection::format({}), "*0\r\n");
  EXPECT_EQ(Connection::format({"", std::string(1, '\0')}),
            std::string("*2\r\n$0\r\n\r\n$1\r\n\0\r\n", 17));
}

}  // namespace
}  // namespace rlock
