#include "net/url.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace rlock {
namespace {

int usage_status(const char* url) {
  try {
    parse_url(url);
  } catch (const Error& e) {
    return e.exit_status();
  }
  return 0;
}

TEST(Url, PlainHostPortDb) {
  Endpoint e = parse_url("redis://example.org:6380/3");
  EXPECT_EQ(e.kind, Endpoint::Kind::Tcp);
  EXPECT_EQ(e.host, "example.org");
  EXPECT_EQ(e.port, 6380);
  EXPECT_EQ(e.db, 3);
  EXPECT_FALSE(e.tls);
  EXPECT_FALSE(e.password.has_value());
}

TEST(Url, DefaultsPortAndDb) {
  Endpoint e = parse_url("redis://localhost");
  EXPECT_EQ(e.port, 6379);
  EXPECT_EQ(e.db, 0);
}

TEST(Url, UserAndPasswordArePercentDecoded) {
  Endpoint e = parse_url("redis://alice:p%40ss%3Aword@h:1/0");
  EXPECT_EQ(e.user, "alice");
  EXPECT_EQ(*e.password, "p@ss:word");
  Endpoint p = parse_url("redis://:secret@h");
  EXPECT_EQ(p.user, "");
  EXPECT_EQ(*p.password, "secret");
}

TEST(Url, TlsScheme) {
  EXPECT_TRUE(parse_url("rediss://h:6380").tls);
}

TEST(Url, Ipv6InBrackets) {
  Endpoint e = parse_url("redis://[::1]:7000/2");
  EXPECT_EQ(e.host, "::1");
  EXPECT_EQ(e.port, 7000);
  EXPECT_EQ(e.db, 2);
  EXPECT_EQ(parse_url("redis://[::1]").port, 6379);
}

TEST(Url, UnixSocketWithDb) {
  Endpoint e = parse_url("unix:///run/redis/redis.sock?db=4");
  EXPECT_EQ(e.kind, Endpoint::Kind::Unix);
  EXPECT_EQ(e.path, "/run/redis/redis.sock");
  EXPECT_EQ(e.db, 4);
}

TEST(Url, DisplayHidesPassword) {
  std::string d = parse_url("redis://u:topsecret@h:1/0").display();
  EXPECT_EQ(d.find("topsecret"), std::string::npos);
}

TEST(Url, BadInputIsUsageError) {
  for (const char* bad :
       {"", "localhost:6379", "http://h", "redis://h:0", "redis://h:70000", "redis://h:abc",
        "redis://h/x", "redis://::1:6379", "redis://[::1", "unix://relative.sock",
        "redis://h?bogus=1", "redis://h/1?db=x", "redis://u:%zz@h"}) {
    EXPECT_EQ(usage_status(bad), 64) << bad;
  }
}

TEST(Url, EmptyHostEmptyPasswordNulAndControlsAreUsageErrors) {
  for (const char* bad :
       {"redis://", "redis://:6379", "redis:///0", "redis://u:p@", "redis://:@h", "redis://u:@h",
        "redis://u%00:p@h", "redis://u:p%00@h", "redis://h%0a", "redis://u%0a:p@h", "rediss://",
        "unix://%00/x", "redis://h%", "redis://u:%-0@h", "redis://u:%-1@h", "unix:///tmp/%-f",
        "redis://u:%+1@h"}) {
    EXPECT_EQ(usage_status(bad), 64) << bad;
  }
  std::string nl = "redis://ho\nst";
  nl[10] = '\n';
  EXPECT_EQ(usage_status(nl.c_str()), 64);
}

std::string message_of(const std::string& url) {
  try {
    parse_url(url);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Url, ErrorsNeverShowThePassword) {
  for (std::string url :
       {"redis://:topsecret@h:99999/0", "redis://u:topsecret@h/x", "redis://u:topsecret@h?x=1",
        "redis://u:topsecret%zz@h", "redis://u:topsecret@[::1", "redis://:topsecret@",
        "redis-sentinel://u:topsecret@h/m", "redis://u:top@secret@h:0", "redis://u:top:secret@"}) {
    std::string m = message_of(url);
    ASSERT_FALSE(m.empty()) << url;
    EXPECT_EQ(m.find("secret"), std::string::npos) << m;
    EXPECT_NE(m.find("***"), std::string::npos) << m;
  }
}

TEST(Url, RedactHidesQueryValuesButDb) {
  EXPECT_EQ(redact_url("redis://h:1?db=2&password=s3cret&x"), "redis://h:1?db=2&password=***&x");
  EXPECT_EQ(redact_url("redis://u:p?ss@h/0"), "redis://u:***@h/0");
  EXPECT_EQ(redact_url("unix:///s.sock?db=1&pass=x"), "unix:///s.sock?db=1&pass=***");
  EXPECT_EQ(*parse_url("redis://u:p?s3/cret@h").password, "p?s3/cret");
  for (std::string url : {"redis://:pw@h:1?db=1&password=s3cret", "redis://u:p?s3cret@h:0",
                          "redis://u:p/s3cret@h:99999"}) {
    std::string m = message_of(url);
    ASSERT_FALSE(m.empty()) << url;
    EXPECT_EQ(m.find("s3cret"), std::string::npos) << m;
  }
}

TEST(Url, RedactKeepsTheUserAndEscapesControls) {
  EXPECT_EQ(redact_url("redis://alice:pw@h:1/0"), "redis://alice:***@h:1/0");
  EXPECT_EQ(redact_url("redis://pw@h"), "redis://pw@h");  // a user name, not a secret
  EXPECT_EQ(redact_url("redis://h:1"), "redis://h:1");
  EXPECT_EQ(redact_url("no scheme:pw@h"), "no scheme:pw@h");
  EXPECT_EQ(redact_url("redis://a\x1b:p@h"), "redis://a\\x1b:***@h");
  std::string esc = "redis://h\x1b[2J";
  esc[9] = '\x1b';
  EXPECT_EQ(redact_url(esc), "redis://h\\x1b[2J");
}

TEST(Url, CanonicalSpellsOneServerOneWay) {
  for (std::string url : {"redis://localhost:6379/0", "redis://localhost", "redis://localhost/",
                          "redis://LocalHost:6379", "redis://alice:pw@localhost/0",
                          "redis://localhost:6379?db=0", "redis://u@localhost:6379/"})
    EXPECT_EQ(canonical_url(url), "redis://localhost:6379/0") << url;
  EXPECT_EQ(canonical_url("rediss://[::1]:7000/2"), "rediss://[::1]:7000/2");
  EXPECT_NE(canonical_url("redis://localhost/1"), canonical_url("redis://localhost/0"));
  EXPECT_NE(canonical_url("redis://localhost:6380"), canonical_url("redis://localhost"));
  for (std::string url : {
           "unix:///run/r.sock",
           "unix:///run/r.sock?db=0",
           "unix:////run//r.sock",
       })
    EXPECT_EQ(canonical_url(url), "unix:///run/r.sock?db=0") << url;
  EXPECT_EQ(canonical_url("redis-sentinel://u:pw@b,A:26380/m"),
            canonical_url("redis-sentinel://a:26380,b:26379/m/0"));
  EXPECT_EQ(canonical_url("redis-sentinel://b,a:26380/m/0"),
            "redis-sentinel://a:26380,b:26379/m/0");
  // never a password, even in a URL that does not parse
  EXPECT_EQ(canonical_url("redis://u:s3cret@h:99999").find("s3cret"), std::string::npos);
}

TEST(Url, SentinelIsNotYetSupportedButSaysSo) {
  try {
    parse_url("redis-sentinel://h:26379/mymaster");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_status(), 64);
    EXPECT_NE(std::string(e.what()).find("Sentinel"), std::string::npos);
  }
}

}  // namespace
}  // namespace rlock

namespace rlock {
namespace {

TEST(SentinelUrl, HostsMasterAndDb) {
  SentinelUrl u = parse_sentinel_url("redis-sentinel://alice:pw@s1:26380,[::1],s3/mymaster/2");
  ASSERT_EQ(u.sentinels.size(), 3u);
  EXPECT_EQ(u.sentinels[0].host, "s1");
  EXPECT_EQ(u.sentinels[0].port, 26380);
  EXPECT_EQ(u.sentinels[1].host, "::1");
  EXPECT_EQ(u.sentinels[1].port, 26379);
  EXPECT_EQ(u.sentinels[2].port, 26379);
  EXPECT_EQ(u.master_name, "mymaster");
  EXPECT_EQ(u.master.db, 2);
  EXPECT_EQ(u.master.user, "alice");
  EXPECT_EQ(*u.master.password, "pw");
  EXPECT_FALSE(u.master.tls);
  // The URL's credentials are the master's, not the sentinels'.
  EXPECT_FALSE(u.sentinels[0].password.has_value());
}

TEST(SentinelUrl, TlsSchemeAndQueryDb) {
  SentinelUrl u = parse_sentinel_url("rediss-sentinel://h/m?db=3");
  EXPECT_TRUE(u.master.tls);
  EXPECT_TRUE(u.sentinels[0].tls);
  EXPECT_EQ(u.master.db, 3);
  EXPECT_TRUE(is_sentinel_url("redis-sentinel://h/m"));
  EXPECT_FALSE(is_sentinel_url("redis://h"));
}

TEST(SentinelUrl, BadOnesAreUsageErrorsWithoutThePassword) {
  for (const char* url :
       {"redis-sentinel://:secret@h", "redis-sentinel://:secret@h/", "redis-sentinel://:secret@/m",
        "redis-sentinel://:secret@h,,h2/m", "redis-sentinel://:secret@h:0/m",
        "redis-sentinel://:secret@h/m/x", "redis-sentinel://:secret@h/my%20master",
        "redis-sentinel://:secret@h/m%01", "redis-sentinel://:secret@h:1:2/m"}) {
    try {
      parse_sentinel_url(url);
      ADD_FAILURE() << "accepted " << url;
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_status(), 64) << url;
      EXPECT_EQ(std::string(e.what()).find("secret"), std::string::npos) << e.what();
    }
  }
  std::string many = "redis-sentinel://";
  for (int i = 0; i < 65; ++i) many += (i ? ",h" : "h");
  EXPECT_THROW(parse_sentinel_url(many + "/m"), Error);
  // A plain parse of a Sentinel URL says what it is.
  EXPECT_THROW(parse_url("redis-sentinel://h/m"), Error);
}

}  // namespace
}  // namespace rlock
