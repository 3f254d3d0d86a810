#include "cli/suggest.h"

#include <gtest/gtest.h>

namespace rlock {
namespace {

const std::vector<std::string> kNames = {
    "wait", "ttl", "no-wait", "timeout", "url", "connect-timeout", "kill-after"};

TEST(EditDistance, CountsInsertionsDeletionsSubstitutionsAndSwaps) {
  EXPECT_EQ(edit_distance("wait", "wait"), 0u);
  EXPECT_EQ(edit_distance("wiat", "wait"), 1u);  // a swap is one edit
  EXPECT_EQ(edit_distance("wai", "wait"), 1u);
  EXPECT_EQ(edit_distance("waitt", "wait"), 1u);
  EXPECT_EQ(edit_distance("wbit", "wait"), 1u);
  EXPECT_EQ(edit_distance("WAIT", "wait"), 0u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(ClosestName, SuggestsOnlyWhatIsClose) {
  EXPECT_EQ(closest_name("wiat", kNames), "wait");
  EXPECT_EQ(closest_name("timout", kNames), "timeout");
  EXPECT_EQ(closest_name("ttll", kNames), "ttl");
  EXPECT_EQ(closest_name("conect-timeout", kNames), "connect-timeout");
  EXPECT_EQ(closest_name("bogus", kNames), std::nullopt);
  EXPECT_EQ(closest_name("x", kNames), std::nullopt);
  EXPECT_EQ(closest_name("frobnicate", kNames), std::nullopt);
}

TEST(ClosestName, AStartOnlyOneNameHasIsEnough) {
  EXPECT_EQ(closest_name("conn", kNames), "connect-timeout");
  EXPECT_EQ(closest_name("kill", kNames), "kill-after");
  EXPECT_EQ(closest_name("co", kNames), std::nullopt);  // too short to be a start
}

}  // namespace
}  // namespace rlock
