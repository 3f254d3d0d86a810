// The history's events as people and tools see them: parsing what the scripts
// answer (bounded whatever was written), merging quorum masters' logs (one line
// per event, one ending per tenure), and the lines `rlock history` prints.
#include "lock/history.h"

#include <gtest/gtest.h>

#include "reply_builders.h"

namespace rlock {
namespace {

using test::str;

Reply flat(std::initializer_list<std::string> items) {
  Reply r;
  r.type = Reply::Type::Array;
  for (auto& i : items) r.elements.push_back(str(i));
  return r;
}

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

TEST(History, ParsesTheFlatFormAndBoundsIt) {
  Event e = parse_flat_event(flat({"1795792827533-0", "ev", "released", "tok", "t1", "fence", "7",
                                   "who", std::string(5000, 'x')}));
  EXPECT_EQ(e.ms, 1795792827533);
  EXPECT_EQ(e.ev, "released");
  EXPECT_EQ(e.get("fence"), "7");
  EXPECT_LE(e.get("who").size(), 1024u);
  EXPECT_EQ(e.get("missing"), "");
  // an id that is no id, and a reply that is no array, are no event
  EXPECT_EQ(parse_flat_event(flat({"nonsense", "ev", "x"})).ms, 0);
  EXPECT_EQ(parse_flat_event(str("x")).ms, 0);
  // at most 32 fields, whatever was written
  Reply many = flat({"1-0"});
  for (int i = 0; i < 200; ++i) {
    many.elements.push_back(str("f" + std::to_string(i)));
    many.elements.push_back(str("v"));
  }
  EXPECT_LE(parse_flat_event(many).fields.size(), 32u);
}

TEST(History, MergesQuorumMastersOneLinePerEventOldestFirst) {
  std::vector<std::vector<Event>> masters = {{event(100, "acquired", "t", {{"fence", "3"}}),
                                              event(200, "released", "t", {{"fence", "9"}})},
                                             {event(101, "acquired", "t", {{"fence", "5"}}),
                                              event(201, "released", "t", {{"fence", "9"}})},
                                             {event(102, "acquired", "t", {{"fence", "4"}})}};
  auto out = merge_events(masters, 3);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].ev, "acquired");
  EXPECT_EQ(out[0].ms, 100);  // the earliest
  EXPECT_EQ(out[0].masters, 3);
  EXPECT_EQ(out[0].of, 3);
  // the acquisition shows the fence its holder used: the ending's (the committed one)
  EXPECT_EQ(out[0].get("fence"), "9");
  EXPECT_EQ(out[1].ev, "released");
  EXPECT_EQ(out[1].masters, 2);
}

TEST(History, AMasterThatWasDownReachesFurtherBackItsOlderEventsAreLeftOut) {
  // Each master's newest 3. The third was down for the newest tenure: its window reaches
  // back to an older one, which the others hold too but did not answer.
  std::vector<std::vector<Event>> masters = {
      {event(200, "released", "a"), event(300, "acquired", "b"), event(400, "released", "b")},
      {event(201, "released", "a"), event(301, "acquired", "b"), event(401, "released", "b")},
      {event(50, "acquired", "old"), event(60, "released", "old"), event(202, "released", "a")}};
  auto out = merge_events(masters, 3, 3);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].get("tok"), "a");
  EXPECT_EQ(out[0].masters, 3);
  EXPECT_EQ(out[1].get("tok"), "b");
  EXPECT_EQ(out[1].masters, 2);  // the third really lacks it: its window reaches past it
  EXPECT_EQ(out[2].masters, 2);
  // Without a window every event is known: the old tenure shows on the one master.
  auto all = merge_events(masters, 3);
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[0].get("tok"), "old");
  EXPECT_EQ(all[0].masters, 1);
  // A master that answered fewer than its window (a fresh one) sets no horizon.
  std::vector<std::vector<Event>> fresh = {
      {event(100, "acquired", "x"), event(110, "released", "x"), event(500, "acquired", "y")},
      {event(101, "acquired", "x"), event(111, "released", "x"), event(501, "acquired", "y")},
      {event(502, "acquired", "y")}};
  auto kept = merge_events(fresh, 3, 3);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].get("tok"), "x");
  EXPECT_EQ(kept[0].masters, 2);
}

TEST(History, OneTenureHasOneEndingTheMajoritysNotingTheOthers) {
  std::vector<std::vector<Event>> masters = {
      {event(200, "released", "t")}, {event(201, "released", "t")}, {event(900, "expired", "t")}};
  auto out = merge_events(masters, 3);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].ev, "released");
  EXPECT_EQ(out[0].get("also"), "expired on 1");
  EXPECT_NE(event_line(out[0]).find("also: expired on 1"), std::string::npos);
}

TEST(History, LinesAreForPeopleUtcHumanUnitsEscaped) {
  Event e =
      event(1795792827533, "released", "t",
            {{"fence", "7"}, {"who", "ci-4 pid 42\n\x1b[2J"}, {"held", "302000"}, {"exit", "0"}});
  std::string line = event_line(e);
  EXPECT_EQ(line.rfind("2026-11-27 ", 0), 0u) << line;
  EXPECT_NE(line.find("Z  released"), std::string::npos) << line;
  EXPECT_NE(line.find("held 5m2s"), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  // quorum: an acquisition no majority granted says so
  Event a = event(1, "acquired", "t");
  a.masters = 1;
  a.of = 5;
  EXPECT_NE(event_line(a).find("(on 1 of 5 masters: no majority, given back)"), std::string::npos);
}

TEST(History, JsonCarriesEveryFieldButNeverShadowsItsOwn) {
  Event e = event(5, "broken", "t", {{"by", "root@h pid 1"}, {"event", "forged"}});
  std::string j = event_json(e);
  EXPECT_NE(j.find("\"event\":\"broken\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"other\":{\"event\":\"forged\"}"), std::string::npos) << j;
  EXPECT_NE(j.find("\"by\":\"root@h pid 1\""), std::string::npos) << j;
}

TEST(History, JsonIsTypedAndSplitsWhoIntoHostAndPid) {
  std::string j = event_json(event(1795792827533, "released", "t",
                                   {{"fence", "7"},
                                    {"who", "ci-4 pid 22836"},
                                    {"held", "3010"},
                                    {"exit", "0"},
                                    {"slot", "0"},
                                    {"nested", "1"}}));
  EXPECT_EQ(j,
            "{\"id\":\"1795792827533-0\",\"time\":\"2026-11-27T15:20:27.533Z\","
            "\"time_ms\":1795792827533,\"event\":\"released\",\"tok\":\"t\",\"fence\":7,"
            "\"who\":\"ci-4 pid 22836\",\"host\":\"ci-4\",\"pid\":22836,\"held\":3010,\"exit\":0,"
            "\"nested\":true}");
  // A label is a label, whatever it holds; an exit status not known is absent.
  j = event_json(event(5, "acquired", "t", {{"who", "https://ci/job 1"}, {"exit", ""}}));
  EXPECT_NE(j.find("\"label\":\"https://ci/job 1\""), std::string::npos) << j;
  EXPECT_EQ(j.find("\"host\""), std::string::npos) << j;
  EXPECT_EQ(j.find("\"exit\""), std::string::npos) << j;
}

TEST(History, JsonPutsHostileValuesUnderOtherAndStaysValid) {
  std::string j = event_json(event(5, "acquired", "t",
                                   {{"fence", "1e9"},
                                    {"fence", "8"},
                                    {"held", "99999999999999999999"},
                                    {"pid", "x"},
                                    {"k\"\x01", "v"}}));
  EXPECT_EQ(j.find("\"fence\":8"), std::string::npos) << j;  // the first one stands
  EXPECT_NE(j.find("\"other\":{\"fence\":\"1e9\",\"held\":\"99999999999999999999\","
                   "\"pid\":\"x\",\"k\\\"\\u0001\":\"v\"}"),
            std::string::npos)
      << j;
}

}  // namespace
}  // namespace rlock
