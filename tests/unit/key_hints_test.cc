// The hints of status and list for a KEY or PATTERN meant otherwise.
#include "cli/key_hints.h"

#include <gtest/gtest.h>

namespace rlock {
namespace {

TEST(KeyHints, ShellWordQuotesOnlyWhatAShellWouldTouch) {
  EXPECT_EQ(shell_word("deploy:prod"), "deploy:prod");
  EXPECT_EQ(shell_word("deploy:*"), "'deploy:*'");
  EXPECT_EQ(shell_word("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_word(""), "''");
}

TEST(KeyHints, StatusOfAGlobNamesList) {
  auto h = status_hint("deploy:*", "lock:");
  ASSERT_TRUE(h);
  EXPECT_NE(h->find("did you mean rlock list 'deploy:*'?"), std::string::npos) << *h;
  EXPECT_TRUE(status_hint("job[12]", "lock:"));
  auto p = status_hint("lock:deploy:*", "lock:");  // both: list, without the prefix
  ASSERT_TRUE(p);
  EXPECT_NE(p->find("did you mean rlock list 'deploy:*'?"), std::string::npos) << *p;
  EXPECT_FALSE(status_hint("deploy:prod", "lock:"));
}

TEST(KeyHints, AKeyOrPatternWithThePrefixNamesTheOneWithout) {
  auto s = status_hint("lock:deploy", "lock:");
  ASSERT_TRUE(s);
  EXPECT_NE(s->find("did you mean rlock status deploy?"), std::string::npos) << *s;
  EXPECT_FALSE(status_hint("lock:", "lock:"));  // the prefix alone: a name of its own
  EXPECT_FALSE(status_hint("lock:deploy", ""));
  auto l = list_hint("lock:deploy*", "lock:");
  ASSERT_TRUE(l);
  EXPECT_NE(l->find("did you mean rlock list 'deploy*'?"), std::string::npos) << *l;
  EXPECT_FALSE(list_hint("deploy*", "lock:"));
  EXPECT_FALSE(list_hint("lock:", "lock:"));
}

}  // namespace
}  // namespace rlock
