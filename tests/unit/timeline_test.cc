// A lock's timeline (history --timeline): which stretches the events make,
// on which rows, and the picture drawn of them, in text and SVG.
#include "commands/timeline.h"

#include <gtest/gtest.h>

#include <sstream>

#include "core/text.h"

namespace rlock {
namespace {

// 2026-01-01T00:00:00Z
constexpr int64_t T0 = 1767225600000;

Event event(int64_t ms, const std::string& ev, const std::string& tok,
            std::vector<std::pair<std::string, std::string>> fields = {}) {
  Event e;
  e.id = std::to_string(ms) + "-0";
  e.ms = ms;
  e.ev = ev;
  e.fields.emplace_back("tok", tok);
  for (auto& f : fields) e.fields.push_back(f);
  return e;
}

std::vector<Event> sample() {
  return {
      event(T0, "acquired", "a", {{"who", "ci-1 pid 10"}, {"waited", "0"}}),
      event(T0 + 20'000, "acquired", "b", {{"who", "ci-2 pid 20"}, {"waited", "15000"}}),
      event(T0 + 30'000, "released", "a", {{"who", "ci-1 pid 10"}, {"exit", "0"}}),
      event(T0 + 30'000, "acquired", "c", {{"who", "ci-1 pid 11"}, {"waited", "10000"}}),
      event(T0 + 50'000, "released", "c", {{"who", "ci-1 pid 11"}, {"exit", "3"}}),
      event(T0 + 55'000, "expired", "b", {{"who", "ci-2 pid 20"}}),
      event(T0 + 60'000, "acquired", "d", {{"who", "deploy job"}, {"waited", "0"}}),
  };
}

TEST(Timeline, OneRowPerHostEachHoldABarWaitsAndEndsMarked) {
  Timeline t = make_timeline(sample(), T0 + 80'000);
  EXPECT_EQ(t.from_ms, T0);
  EXPECT_EQ(t.to_ms, T0 + 80'000);  // d still holds: to now
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0].who, "ci-1");
  EXPECT_EQ(t.rows[1].who, "ci-2");
  EXPECT_EQ(t.rows[2].who, "deploy job");  // a label is its own row
  auto& ci1 = t.rows[0].spans;
  ASSERT_EQ(ci1.size(), 3u);  // a's hold, c's wait, c's hold
  EXPECT_EQ(ci1[0].kind, TimelineSpan::Kind::Hold);
  EXPECT_EQ(ci1[0].mark, 0);
  EXPECT_EQ(ci1[1].kind, TimelineSpan::Kind::Wait);
  EXPECT_EQ(ci1[1].from_ms, T0 + 20'000);
  EXPECT_EQ(ci1[2].mark, '!');
  EXPECT_EQ(ci1[2].exit, "3");
  auto& ci2 = t.rows[1].spans;
  ASSERT_EQ(ci2.size(), 2u);
  EXPECT_EQ(ci2[0].kind, TimelineSpan::Kind::Wait);
  EXPECT_EQ(ci2[0].from_ms, T0 + 5'000);
  EXPECT_EQ(ci2[1].mark, 'E');
  ASSERT_EQ(t.rows[2].spans.size(), 1u);
  EXPECT_TRUE(t.rows[2].spans[0].open);
  EXPECT_EQ(t.rows[2].spans[0].to_ms, T0 + 80'000);
}

TEST(Timeline, AHoldBegunBeforeTheOldestEventStartsAtWhatItSaysItHeld) {
  Timeline t = make_timeline(
      {event(T0 + 40'000, "broken", "x", {{"who", "h pid 1"}, {"held", "30000"}}),
       event(T0 + 41'000, "kept", "y",
             {{"who", "k pid 2"}, {"held", "1000"}, {"until", std::to_string(T0 + 45'000)}})},
      T0 + 50'000);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].spans[0].from_ms, T0 + 10'000);
  EXPECT_EQ(t.rows[0].spans[0].mark, 'B');
  ASSERT_EQ(t.rows[1].spans.size(), 2u);
  EXPECT_EQ(t.rows[1].spans[1].kind, TimelineSpan::Kind::Kept);
  EXPECT_EQ(t.rows[1].spans[1].to_ms, T0 + 45'000);
  EXPECT_EQ(t.to_ms, T0 + 45'000);
}

TEST(Timeline, SinceShowsTheLastStretchOnly) {
  Timeline t = make_timeline(sample(), T0 + 80'000, 25'000);
  EXPECT_EQ(t.from_ms, T0 + 55'000);
  ASSERT_EQ(t.rows.size(), 2u);  // ci-1 ended before: left out
  EXPECT_EQ(t.rows[0].who, "ci-2");
  EXPECT_EQ(t.rows[0].spans.size(), 1u);  // the end of b's hold, clipped
  EXPECT_EQ(t.rows[0].spans[0].from_ms, T0 + 55'000);
}

TEST(Timeline, DrawsTheCheckedPicture) {
  std::string got = draw_timeline(make_timeline(sample(), T0 + 80'000), "deploy", 60, false);
  // a's hold hides c's wait (it waited while a held); c's hold follows and failed.
  EXPECT_EQ(got,
            "deploy  2026-01-01 00:00:00Z .. 2026-01-01 00:01:20Z (1m20s), one column = 1.8s\n"
            "ci-1        ███████████████████████████!3\n"
            "ci-2          ░░░░░░░░░███████████████████E\n"
            "deploy job                                   ███████████\n"
            "            ┴───────────────┴────────────────┴──────────\n"
            "            00:00:00        00:00:30         00:01:00\n"
            "            UTC, a tick every 30s\n"
            "█ held  ░ waiting\n"
            "▒ kept after its command (--min-hold, --done-for)\n"
            "!N exited N  E expired  B broken  L lost\n");
}

TEST(Timeline, EveryLineFitsTheWidthWhateverTheNames) {
  auto events = sample();
  events.push_back(event(T0 + 70'000, "acquired", "e",
                         {{"who", std::string(300, 'w') + "\x1b[31m\n"}, {"waited", "1"}}));
  for (size_t width : {40u, 61u, 80u, 133u, 200u}) {
    std::string pic = draw_timeline(make_timeline(events, T0 + 80'000), "k\x1b]0;x", width, true);
    EXPECT_EQ(pic.find("\x1b]"), std::string::npos);
    std::istringstream in(pic);
    for (std::string line; std::getline(in, line);) {
      // Without the colours, each line within the width.
      std::string plain;
      for (size_t i = 0; i < line.size(); ++i) {
        if (line[i] == '\x1b') {
          i = line.find('m', i);
          continue;
        }
        plain += line[i];
      }
      if (plain.find("..") != std::string::npos) continue;  // the header may run on
      EXPECT_LE(text_columns(plain), width) << plain;
    }
  }
}

TEST(Timeline, SvgEscapesEveryText) {
  auto events = sample();
  const std::string hostile = "<script>alert('x')</script> & \x1b[2J";
  events.push_back(event(T0 + 65'000, "acquired", "z", {{"who", hostile}}));
  events.push_back(event(T0 + 70'000, "released", "z", {{"who", hostile}, {"exit", "<1>"}}));
  std::string svg = timeline_svg(make_timeline(events, T0 + 80'000), "a<b>&\"c\"");
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(svg.find('\x1b'), std::string::npos);
  EXPECT_NE(svg.find("a&lt;b&gt;&amp;&quot;c&quot;"), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;"), std::string::npos);
  // An exit status that is not a number (anybody may write the history) is drawn as '?'.
  EXPECT_EQ(svg.find("&lt;1&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">!?<"), std::string::npos);
}

TEST(Timeline, NoEventsNoRows) {
  Timeline t = make_timeline({}, T0);
  EXPECT_TRUE(t.rows.empty());
  EXPECT_GT(t.to_ms, t.from_ms);
  EXPECT_NE(draw_timeline(t, "k", 80, false).find("UTC"), std::string::npos);
}

}  // namespace
}  // namespace rlock
