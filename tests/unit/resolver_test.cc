// AddressBook: numeric hosts need no lookup; a name is looked up off the loop and the
// answer comes from the loop, never from inside lookup(); callers that ask meanwhile
// share one lookup; a name that does not resolve keeps the addresses it had.
#include "net/resolver.h"

#include <gtest/gtest.h>

namespace rlock {
namespace {

Endpoint tcp(const char* host, int port = 6379) {
  Endpoint ep;
  ep.host = host;
  ep.port = port;
  return ep;
}

TEST(AddressBook, NumericHostsAndPathsNeedNoLookup) {
  Loop loop;
  AddressBook v4(loop, tcp("127.0.0.1"), Millis(1000));
  auto a = v4.ready(true);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->size(), 1u);
  EXPECT_EQ(a->front().text, "127.0.0.1:6379");
  AddressBook v6(loop, tcp("::1", 7000), Millis(1000));
  ASSERT_TRUE(v6.ready(true));
  EXPECT_EQ(v6.ready(true)->front().text, "[::1]:7000");
  Endpoint unix_ep;
  unix_ep.kind = Endpoint::Kind::Unix;
  unix_ep.path = "/tmp/redis.sock";
  AddressBook u(loop, unix_ep, Millis(1000));
  ASSERT_TRUE(u.ready(true));
}

TEST(AddressBook, ANameIsLookedUpOffTheLoopAndSharedByEveryCaller) {
  Loop loop;
  AddressBook book(loop, tcp("localhost"), Millis(5000));
  EXPECT_FALSE(book.ready(false));  // never looked up yet
  int answered = 0;
  bool inside = true;
  auto check = [&](std::optional<Error> err, const std::vector<Address>& addrs) {
    EXPECT_FALSE(inside) << "answered from inside lookup()";
    EXPECT_FALSE(err) << err->what();
    EXPECT_FALSE(addrs.empty());
    ++answered;
  };
  book.lookup(check);
  book.lookup(check);
  inside = false;
  loop.run_until([&] { return answered == 2; });
  // Fresh for a while: a new connection uses it, a reconnect looks again.
  EXPECT_TRUE(book.ready(false));
  EXPECT_FALSE(book.ready(true));
}

TEST(AddressBook, ANameThatDoesNotResolveIsAnUnavailableError) {
  Loop loop;
  AddressBook book(loop, tcp("rlock-test-no-such-host.invalid"), Millis(2000));
  std::optional<Error> got;
  bool done = false;
  book.lookup([&](std::optional<Error> err, const std::vector<Address>& addrs) {
    got = err;
    EXPECT_TRUE(addrs.empty());
    done = true;
  });
  loop.run_until([&] { return done; });
  ASSERT_TRUE(got);
  EXPECT_EQ(got->exit_status(), 69);
  EXPECT_NE(std::string(got->what()).find("rlock-test-no-such-host.invalid"), std::string::npos);
}

}  // namespace
}  // namespace rlock
