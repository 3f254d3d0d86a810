// What a Cluster node says about where keys live, parsed and checked: MOVED/ASK
// redirects and CLUSTER SLOTS replies, well-formed or hostile.
#include "net/cluster.h"

#include <gtest/gtest.h>

#include "reply_builders.h"

namespace rlock {
namespace {

using test::arr;
using test::num;
using test::str;

TEST(Redirect, MovedAndAsk) {
  auto m = parse_redirect("MOVED 3999 127.0.0.1:6381");
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->ask);
  EXPECT_EQ(m->slot, 3999);
  EXPECT_EQ(m->host, "127.0.0.1");
  EXPECT_EQ(m->port, 6381);
  auto a = parse_redirect("ASK 0 10.0.0.2:7000");
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->ask);
  EXPECT_EQ(a->slot, 0);
}

TEST(Redirect, IPv6AndUnknownHosts) {
  auto v6 = parse_redirect("MOVED 16383 ::1:6381");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 6381);
  auto br = parse_redirect("MOVED 1 [fe80::1]:7000");
  ASSERT_TRUE(br);
  EXPECT_EQ(br->host, "fe80::1");
  // Redis 7 leaves the host out when the node does not know its own.
  auto none = parse_redirect("MOVED 5 :6380");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->host, "");
}

TEST(Redirect, AnythingElseIsNotARedirect) {
  for (const char* m :
       {"ERR unknown", "MOVED", "MOVED 3999", "MOVED x 1.2.3.4:5", "MOVED 16384 1.2.3.4:5",
        "MOVED -1 1.2.3.4:5", "MOVED 1 1.2.3.4", "MOVED 1 1.2.3.4:0", "MOVED 1 1.2.3.4:65536",
        "MOVED 1 a b:5", "MOVED 1 host\x01:5", "ASK 1 1.2.3.4:5 extra", "TRYAGAIN"})
    EXPECT_FALSE(parse_redirect(m)) << m;
}

TEST(ClusterSlots, RangesAndMasters) {
  Reply r = arr({arr({num(0), num(5460), arr({str("127.0.0.1"), num(30001), str("id1")}),
                      arr({str("127.0.0.1"), num(30004), str("id4")})}),
                 arr({num(5461), num(16383), arr({str(""), num(30002), str("id2")})})});
  auto ranges = parse_cluster_slots(r);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].first, 0);
  EXPECT_EQ(ranges[0].last, 5460);
  EXPECT_EQ(ranges[0].host, "127.0.0.1");
  EXPECT_EQ(ranges[0].port, 30001);
  EXPECT_EQ(ranges[1].host, "");  // the node we asked
  Reply unknown = arr({arr({num(1), num(1), arr({str("?"), num(1), str("x")})})});
  EXPECT_EQ(parse_cluster_slots(unknown)[0].host, "");
}

TEST(ClusterSlots, HostileRepliesAreProtocolErrors) {
  auto node = [](Reply host, Reply port) { return arr({std::move(host), std::move(port)}); };
  std::vector<Reply> bad = {
      str("not an array"),
      arr({str("not an entry")}),
      arr({arr({num(0), num(1)})}),                                            // no node
      arr({arr({num(5), num(1), node(str("h"), num(1))})}),                    // first > last
      arr({arr({num(0), num(16384), node(str("h"), num(1))})}),                // past the end
      arr({arr({num(-1), num(1), node(str("h"), num(1))})}),                   // negative
      arr({arr({num(0), num(1), node(str("h"), num(0))})}),                    // port 0
      arr({arr({num(0), num(1), node(str("h"), num(70000))})}),                // port too big
      arr({arr({num(0), num(1), node(str("h\nforged"), num(1))})}),            // control char
      arr({arr({num(0), num(1), node(str(std::string(300, 'h')), num(1))})}),  // too long
      arr({arr({str("0"), num(1), node(str("h"), num(1))})}),                  // slot not int
  };
  for (auto& r : bad) {
    try {
      parse_cluster_slots(r);
      ADD_FAILURE() << "accepted a bad reply";
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_status(), 70) << e.what();
    }
  }
}

TEST(ClusterSlots, NotACluster) {
  EXPECT_TRUE(not_a_cluster("ERR This instance has cluster support disabled"));
  EXPECT_TRUE(not_a_cluster("ERR unknown command 'CLUSTER', with args beginning with: "));
  EXPECT_FALSE(not_a_cluster("NOPERM this user has no permissions"));
}

}  // namespace
}  // namespace rlock
