// key_slot against the slots a real Redis Cluster reports (CLUSTER KEYSLOT).
#include "net/slot.h"

#include <gtest/gtest.h>

namespace rlock {
namespace {

TEST(KeySlot, MatchesClusterKeyslot) {
  // Values printed by `redis-cli cluster keyslot` on Redis 7.0.
  EXPECT_EQ(key_slot("foo"), 12182);
  EXPECT_EQ(key_slot("lock:{a}"), 15495);
  EXPECT_EQ(key_slot("lock:{deploy:prod}"), 15549);
  EXPECT_EQ(key_slot("{user1000}.following"), 3443);
}

TEST(KeySlot, OnlyTheFirstNonEmptyTagCounts) {
  // An empty tag "{}" means the whole key is hashed.
  EXPECT_EQ(key_slot("a{}b"), 13694);
  EXPECT_EQ(key_slot("{}{x}"), 3257);
  EXPECT_EQ(key_slot("lock:{a}:fence"), key_slot("lock:{a}"));
  EXPECT_EQ(key_slot("lock:release:{a}:0123"), key_slot("a"));
  EXPECT_EQ(key_slot("x{a}{b}"), key_slot("a"));
  EXPECT_EQ(key_slot("x{a"), key_slot("x{a"));  // unclosed: the whole key
}

TEST(KeySlot, AlwaysInRange) {
  for (const char* k : {"", "{", "}", "{}", "\xff\xfe", "a very long key name indeed"}) {
    int s = key_slot(k);
    EXPECT_GE(s, 0);
    EXPECT_LT(s, kClusterSlots);
  }
}

}  // namespace
}  // namespace rlock
