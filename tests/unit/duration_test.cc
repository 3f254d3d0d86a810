#include "core/duration.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace rlock {
namespace {

TEST(Duration, ParsesEveryUnitOfTheSpec) {
  EXPECT_EQ(parse_duration("250ms"), Millis(250));
  EXPECT_EQ(parse_duration("30s"), Millis(30'000));
  EXPECT_EQ(parse_duration("5m"), Millis(300'000));
  EXPECT_EQ(parse_duration("2h"), Millis(7'200'000));
  EXPECT_EQ(parse_duration("1h30m"), Millis(5'400'000));
  EXPECT_EQ(parse_duration("1m30s500ms"), Millis(90'500));
}

TEST(Duration, BareNumberIsSecondsAndFractionsWork) {
  EXPECT_EQ(parse_duration("10"), Millis(10'000));
  EXPECT_EQ(parse_duration("1.5s"), Millis(1'500));
  EXPECT_EQ(parse_duration("0"), Millis(0));
}

TEST(Duration, ExactDecimalsRoundedToTheNearestMillisecondHalvesUp) {
  // Exact decimal arithmetic: 0.1 + 0.2 is 0.3 here, unlike in binary floating point.
  EXPECT_EQ(parse_duration("0.1s0.2s"), Millis(300));
  EXPECT_EQ(parse_duration("2.5ms"), Millis(3));
  EXPECT_EQ(parse_duration("2.4999ms"), Millis(2));
  EXPECT_EQ(parse_duration("0.0005s"), Millis(1));
  EXPECT_EQ(parse_duration(".5s"), Millis(500));
  EXPECT_EQ(parse_duration("5."), Millis(5'000));
  // 18 decimals of the unit are kept: exact for d and h too (0.0000011632d is
  // 100.50048 ms, 0.00002791666667h is 100.500000012 ms).
  EXPECT_EQ(parse_duration("0.0000011632d"), Millis(101));
  EXPECT_EQ(parse_duration("0.00002791666667h"), Millis(101));
  EXPECT_EQ(parse_duration("1.49999999999999999999ms"), Millis(1));
  // Leading zeros do not count against the 12-digit bound.
  EXPECT_EQ(parse_duration("0000000000000000000000001s"), Millis(1'000));
  EXPECT_EQ(parse_duration("366d"), kMaxDuration);
  EXPECT_EQ(parse_duration("365d24h"), kMaxDuration);
  EXPECT_EQ(parse_duration("366.000000000000000000000d"), kMaxDuration);
}

TEST(Duration, AnyExcessOverTheCapIsRefused) {
  // However small: within the 18 decimals kept, and beyond them.
  for (const char* over : {"366d0.4ms", "366.0000000001d", "527040.0000000001m",
                           "366.0000000000000000001d", "31622400000.000000000000000000001ms"}) {
    try {
      parse_duration(over, "--ttl");
      ADD_FAILURE() << "accepted '" << over << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_status(), 64) << over;
    }
  }
}

TEST(Duration, RejectsGarbageWithUsageError) {
  for (const char* bad : {"", "abc", "5x", "-1s", "1h30", "s", ".s", "1..2s", "1e9999h", " 5s"}) {
    try {
      parse_duration(bad, "--ttl");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_status(), 64) << bad;
      EXPECT_NE(std::string(e.what()).find("--ttl"), std::string::npos) << e.what();
    }
  }
}

TEST(Duration, AtMost366Days) {
  EXPECT_EQ(parse_duration("366d"), Millis(31'622'400'000));
  EXPECT_EQ(parse_duration("8784h"), Millis(31'622'400'000));
  std::string four_hundred_digits(400, '9');
  for (std::string bad :
       {std::string("366d1ms"), std::string("3000000h"), std::string("4000000000000000000ms"),
        four_hundred_digits, four_hundred_digits + ".5s", std::string("1e400"),
        std::string("9") + std::string(300, '0') + "ms"}) {
    try {
      parse_duration(bad, "--wait");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_status(), 64) << bad;
    }
  }
}

TEST(Duration, TooLongSaysTheLimit) {
  try {
    parse_duration("3000000h", "--ttl");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("at most 366 days"), std::string::npos) << e.what();
  }
}

TEST(Duration, FormatsForPeople) {
  EXPECT_EQ(format_duration(Millis(250)), "250ms");
  EXPECT_EQ(format_duration(Millis(1500)), "1.5s");
  EXPECT_EQ(format_duration(Millis(30'000)), "30s");
  EXPECT_EQ(format_duration(Millis(5'400'000)), "1h30m");
  EXPECT_EQ(format_duration(Millis(INT64_MIN)).front(), '-');
}

}  // namespace
}  // namespace rlock
