#include "core/json.h"

#include <gtest/gtest.h>

namespace rlock {
namespace {

TEST(Json, ObjectLeavesOutWhatIsNotKnown) {
  std::string j = JsonObject()
                      .str("key", "k\"1")
                      .str_if("label", "")
                      .num("fence", 0)
                      .num_if("slot", 0)
                      .num_if("pid", 42)
                      .boolean("held", true)
                      .raw("holders", "[]")
                      .text();
  EXPECT_EQ(j, "{\"key\":\"k\\\"1\",\"fence\":0,\"pid\":42,\"held\":true,\"holders\":[]}");
  EXPECT_EQ(JsonObject().text(), "{}");
}

TEST(Json, ParsesOnlyWholeIntegersThatFit) {
  EXPECT_EQ(parse_int64("7"), 7);
  EXPECT_EQ(parse_int64("-12"), -12);
  EXPECT_EQ(parse_int64("9223372036854775807"), INT64_MAX);
  EXPECT_FALSE(parse_int64("9223372036854775808"));
  for (const char* bad : {"", "+1", "1e3", "1.5", " 1", "1 ", "0x10", "abc", "-"})
    EXPECT_FALSE(parse_int64(bad)) << bad;
}

}  // namespace
}  // namespace rlock
