// Other tools' layouts: the keys rlock adds beside a layout's lock.
#include "lock/layout.h"

#include <gtest/gtest.h>

#include "net/slot.h"

namespace rlock {
namespace {

TEST(LayoutTombstone, IsInTheLockSlot) {
  for (const char* key : {"coupon:issue:42", "a", "x y", "ünïcode", "k:with:colons"}) {
    for (const char* prefix : {"lock:", "", "app:"}) {
      LockNames plain = LockNames::of(Layout::Plain, key, prefix);
      std::string t = layout_tombstone(plain, "0123456789abcdef0123456789abcdef");
      EXPECT_EQ(key_slot(t), key_slot(plain.lock)) << t;
      EXPECT_EQ(t.rfind(prefix, 0), 0u) << t;  // an ACL of ~PREFIX* covers it
    }
    LockNames r = LockNames::of(Layout::Redisson, key, "lock:");
    std::string t = layout_tombstone(r, "c0ffee00-0000-4000-8000-000000000000:1");
    EXPECT_EQ(key_slot(t), key_slot(r.lock)) << t;
  }
}

TEST(LayoutTombstone, Names) {
  LockNames plain = LockNames::of(Layout::Plain, "coupon:issue:42", "lock:");
  EXPECT_EQ(layout_tombstone(plain, "tok"), "lock:rlock-released:{lock:coupon:issue:42}:tok");
  LockNames r = LockNames::of(Layout::Redisson, "orders", "lock:");
  EXPECT_EQ(layout_tombstone(r, "id:7"), "redisson_unlock_latch:{orders}:id:7");
}

}  // namespace
}  // namespace rlock
