// Tokens of other tools' layouts bound to their holder process (holder_token.h).
#include "lock/holder_token.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>

namespace rlock {
namespace {

TEST(HolderToken, KeepsTheLayoutsShapes) {
  EXPECT_TRUE(std::regex_match(bound_token(Layout::Plain, getpid()), std::regex("[0-9a-f]{32}")));
  std::string id = bound_token(Layout::Redisson, getpid());
  EXPECT_TRUE(std::regex_match(
      id, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}:" +
                     std::to_string(getpid()))))
      << id;
  EXPECT_NE(bound_token(Layout::Plain, getpid()), bound_token(Layout::Plain, getpid()));
}

TEST(HolderToken, ItsHolderAndItsHoldersDescendantsFindIt) {
  for (Layout l : {Layout::Plain, Layout::Redisson}) {
    EXPECT_EQ(bound_holder(l, bound_token(l, getpid()), getpid()), getpid());
    EXPECT_EQ(bound_holder(l, bound_token(l, getppid()), getpid()), getppid());
    EXPECT_EQ(bound_holder(l, bound_token(l, 1), getpid()), 1);
  }
}

TEST(HolderToken, AnotherProcessTreesTokenIsNotFound) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  for (Layout l : {Layout::Plain, Layout::Redisson}) {
    std::string t = bound_token(l, child);
    EXPECT_EQ(bound_holder(l, t, child), child);            // from the holder itself
    EXPECT_EQ(bound_holder(l, t, getpid()), std::nullopt);  // not an ancestor of ours
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

TEST(HolderToken, ForeignAndForgedTokensAreNotFound) {
  pid_t self = getpid();
  for (const char* t :
       {"", "svc-token", "0123456789abcdef0123456789abcdef", "0123456789ABCDEF0123456789ABCDEF",
        "0123456789abcdef0123456789abcde", "c0ffee00-0000-4000-8000-000000000000:1", "x"})
    for (Layout l : {Layout::Plain, Layout::Redisson})
      EXPECT_EQ(bound_holder(l, t, self), std::nullopt) << t;
  // a Redisson id of ours with another pid (pid 1: everyone's ancestor)
  std::string id = bound_token(Layout::Redisson, self);
  std::string renamed = id.substr(0, id.find(':')) + ":1";
  EXPECT_EQ(bound_holder(Layout::Redisson, renamed, self), std::nullopt);
  for (const char* tail : {":", ":0", ":01", ":-1", ":99999999999", ": 1"})
    EXPECT_EQ(bound_holder(Layout::Redisson, id.substr(0, id.find(':')) + tail, self),
              std::nullopt);
  // one digit of H changed
  std::string plain = bound_token(Layout::Plain, self);
  plain[31] = plain[31] == '0' ? '1' : '0';
  EXPECT_EQ(bound_holder(Layout::Plain, plain, self), std::nullopt);
  // a token of one layout is not one of the other
  EXPECT_EQ(bound_holder(Layout::Plain, bound_token(Layout::Redisson, self), self), std::nullopt);
  EXPECT_EQ(bound_holder(Layout::Redisson, bound_token(Layout::Plain, self), self), std::nullopt);
}

TEST(HolderToken, TheBindingNamesHostBootPidAndStart) {
  HostIdentity a{"h", "boot-1"};
  std::string h = holder_binding("0123456789abcdef", a, 42, 7);
  EXPECT_EQ(h.size(), 16u);
  EXPECT_EQ(h, holder_binding("0123456789abcdef", a, 42, 7));
  EXPECT_NE(h, holder_binding("0123456789abcdee", a, 42, 7));
  EXPECT_NE(h, holder_binding("0123456789abcdef", {"h2", "boot-1"}, 42, 7));
  EXPECT_NE(h, holder_binding("0123456789abcdef", {"h", "boot-2"}, 42, 7));
  EXPECT_NE(h, holder_binding("0123456789abcdef", a, 43, 7));
  EXPECT_NE(h, holder_binding("0123456789abcdef", a, 42, 8));
  // fields cannot be shifted into one another
  EXPECT_NE(holder_binding("r", {"ab", "c"}, 1, 2), holder_binding("r", {"a", "bc"}, 1, 2));
}

TEST(RandomHex, TwoLowercaseDigitsPerByteAndNeverTheSame) {
  std::string a = random_hex(16), b = random_hex(16);
  ASSERT_EQ(a.size(), 32u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos) << a;
  EXPECT_NE(a, b);
  EXPECT_EQ(random_hex(8).size(), 16u);
  EXPECT_EQ(random_hex(100).size(), 64u);  // at most 32 bytes
  EXPECT_EQ(random_hex(0), "");
}

}  // namespace
}  // namespace rlock
