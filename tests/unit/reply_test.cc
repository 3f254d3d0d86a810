#include "net/reply.h"

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include <cerrno>
#include <set>
#include <string>

#include "lock/scripts.h"
#include "net/transport.h"

namespace rlock {
namespace {

Reply parse(const std::string& wire) {
  redisReader* r = redisReaderCreate();
  redisReaderFeed(r, wire.data(), wire.size());
  void* raw = nullptr;
  EXPECT_EQ(redisReaderGetReply(r, &raw), REDIS_OK);
  EXPECT_NE(raw, nullptr);
  Reply out = convert_reply(static_cast<redisReply*>(raw));
  freeReplyObject(raw);
  redisReaderFree(r);
  return out;
}

TEST(Reply, ConvertsNestedArrays) {
  Reply r = parse("*3\r\n$2\r\nOK\r\n:42\r\n*1\r\n$-1\r\n");
  ASSERT_EQ(r.type, Reply::Type::Array);
  EXPECT_EQ(r.elements[0].as_string(), "OK");
  EXPECT_EQ(r.elements[1].as_int(), 42);
  EXPECT_TRUE(r.elements[2].elements[0].is_nil());
}

TEST(Error, CauseSurvivesRewording) {
  Error reset(ErrorKind::Unavailable, "cannot read from 127.0.0.1:1: reset", -1, Cause::Reset);
  EXPECT_TRUE(reset.transient());
  Error worded = reset.reworded("sentinel 127.0.0.1:2: " + std::string(reset.what()));
  EXPECT_EQ(worded.cause(), Cause::Reset);
  EXPECT_EQ(worded.kind(), ErrorKind::Unavailable);
  EXPECT_EQ(worded.exit_status(), 69);
  EXPECT_TRUE(worded.transient());
  Error copy = worded;  // as expect_ok throws it on
  EXPECT_TRUE(copy.transient());
  // Only an unavailable error may pass by itself; a refusal has no cause.
  EXPECT_FALSE(Error(ErrorKind::Permission, "NOPERM", -1, Cause::Reset).transient());
  EXPECT_FALSE(Error(ErrorKind::Unavailable, "cannot connect: Connection refused").transient());
}

TEST(Error, SocketErrorsThatMayPass) {
  EXPECT_EQ(cause_of_errno(ECONNRESET), Cause::Reset);
  EXPECT_EQ(cause_of_errno(EPIPE), Cause::Reset);
  EXPECT_EQ(cause_of_errno(ETIMEDOUT), Cause::Timeout);
  EXPECT_EQ(cause_of_errno(ECONNREFUSED), Cause::Other);
  EXPECT_EQ(cause_of_errno(EHOSTUNREACH), Cause::Other);
}

TEST(Reply, TypeMismatchIsProtocolError) {
  Reply r = parse(":1\r\n");
  try {
    r.as_array("an acquire reply");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_status(), 70);
  }
}

TEST(Reply, ServerErrorsMapToTheExitTable) {
  EXPECT_EQ(server_error("NOAUTH Authentication required.", "").exit_status(), 77);
  EXPECT_EQ(server_error("WRONGPASS invalid username-password pair", "").exit_status(), 77);
  EXPECT_EQ(server_error("NOPERM this user has no permissions", "").exit_status(), 77);
  EXPECT_EQ(server_error("LOADING Redis is loading", "").exit_status(), 69);
  EXPECT_EQ(server_error("READONLY You can't write against a read only replica.", "").exit_status(),
            69);
  EXPECT_EQ(server_error("ERR something odd", "").exit_status(), 70);
  // maxclients: the server closes the connection after saying so; it may pass.
  EXPECT_EQ(server_error("ERR max number of clients reached", "").exit_status(), 69);
  EXPECT_TRUE(server_error("ERR max number of clients reached", "").transient());
}

TEST(Reply, ExpectOkThrowsTheFailure) {
  Result failed{Error(ErrorKind::Unavailable, "down"), Reply{}};
  EXPECT_THROW(expect_ok(failed, "x"), Error);
  Result err{std::nullopt, parse("-NOPERM no\r\n")};
  try {
    expect_ok(err, "x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_status(), 77);
  }
}

// Every script rlock runs. A new script is one more line here.
struct NamedScript {
  const char* name;
  const Script& (*get)();
};
constexpr NamedScript kAllScripts[] = {
    {"acquire", acquire_script}, {"extend", extend_script}, {"release", release_script},
    {"leave", leave_script},     {"undo", undo_script},     {"status", status_script},
    {"break", break_script},     {"forget", forget_script}, {"fence", fence_script},
    {"history", history_script}, {"nest", nest_script},     {"list", list_script},
};

// SHA1 as lower-case hex, computed here through OpenSSL's EVP interface, not
// through scripts.cc, so the test does not take the code's word for it.
std::string sha1_hex_of(const std::string& s) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EXPECT_EQ(EVP_Digest(s.data(), s.size(), md, &n, EVP_sha1(), nullptr), 1);
  EXPECT_EQ(n, 20u);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 0xf];
  }
  return out;
}

TEST(Scripts, TheTestsSha1IsSha1) {
  // FIPS 180-2 test vectors: the helper above is right before it judges the code.
  EXPECT_EQ(sha1_hex_of("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(sha1_hex_of(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
}

TEST(Scripts, ShaIsOfTheSourceAndStable) {
  // EVALSHA finds a script by the SHA1 of exactly the text EVAL sent (SCRIPT LOAD
  // answers the same), so .sha1 must be the SHA1 of the whole .source, prelude and all.
  for (const NamedScript& n : kAllScripts) {
    SCOPED_TRACE(n.name);
    const Script& s = n.get();
    EXPECT_STREQ(s.name, n.name);
    EXPECT_EQ(s.source(), std::string(s.prelude) + std::string(s.body));
    EXPECT_FALSE(s.body.empty());
    EXPECT_EQ(s.sha1, sha1_hex_of(s.source()));
    // stable: the same object, the same SHA1, on every call
    EXPECT_EQ(&n.get(), &s);
    EXPECT_EQ(n.get().sha1, s.sha1);
  }
}

TEST(Scripts, EachIsSentWithThePreludeLinesItUsesInOrder) {
  // The prelude's definitions a script does not use are left out at build time
  // (cmake/cut_prelude.cmake): what is left is whole lines of the prelude, in its order,
  // starting with the line that names the protocol.
  const std::string& whole = script_prelude();
  bool some_cut = false;
  for (const NamedScript& n : kAllScripts) {
    SCOPED_TRACE(n.name);
    const std::string prelude(n.get().prelude);
    EXPECT_EQ(
        prelude.rfind("\n-- rlock lock protocol " + std::to_string(kProtocolVersion) + " ", 0), 0u);
    ASSERT_FALSE(prelude.empty());
    ASSERT_EQ(prelude.back(), '\n');
    size_t at = 0;
    for (size_t from = 1, nl; from < prelude.size(); from = nl + 1) {
      nl = prelude.find('\n', from);
      std::string line = prelude.substr(from - 1, nl - from + 2);  // "\n...\n"
      at = whole.find(line, at);
      ASSERT_NE(at, std::string::npos) << "not a line of the prelude, in order: " << line;
      at += line.size() - 1;
    }
    some_cut = some_cut || prelude.size() < whole.size();
  }
  EXPECT_TRUE(some_cut) << "every script is sent with the whole prelude";
}

TEST(Scripts, EveryScriptHasItsOwnSource) {
  std::set<std::string> shas;
  for (const NamedScript& n : kAllScripts) {
    EXPECT_TRUE(shas.insert(n.get().sha1).second) << n.name << " has the SHA1 of another script";
  }
}

}  // namespace
}  // namespace rlock
