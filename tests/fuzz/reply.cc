// Bytes from a server, as rlock reads them (src/net/redis.cc): fed in chunks to the reply parser,
// each reply converted to an rlock::Reply and taken apart with the accessors the lock
// protocol uses. Only rlock::Error may escape the parser and the accessors, every message
// built from server text is one printable line, and no input may make the parser allocate
// without bound (scripts/fuzz.sh runs with -malloc_limit_mb and -rss_limit_mb).
//
// Input: a digit n ('0'-'8'; any other first byte counts as 0), then n bytes of chunk sizes,
// then the bytes the server sends. They are fed in chunks whose sizes cycle through the n
// sizes (a size of 0 feeds all that is left); n = 0 feeds everything at once.
#include "net/reply.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "fuzz_util.h"

namespace {

using rlock::Reply;

// rlock's reply path (src/net/redis.cc, Connection::read_some): the bounded ReplyParser in
// front of hiredis's reader and convert_reply.
class Parser {
 public:
  void feed(std::string_view bytes) { parser_.feed(bytes.data(), bytes.size()); }
  std::optional<Reply> next() { return parser_.next(); }

 private:
  rlock::ReplyParser parser_;
};

// An error built from server text is one printable line with an exit status of the table.
void check_error(const rlock::Error& e) {
  int s = e.exit_status();
  FUZZ_CHECK(s == rlock::exitcode::kUnavailable || s == rlock::exitcode::kProtocol ||
                 s == rlock::exitcode::kPermission,
             "exit status %d for: %s", s, e.what());
  FUZZ_CHECK(fuzz::printable_utf8(e.what()), "message is not one printable line: '%s'",
             fuzz::hex_escape(e.what()).c_str());
}

template <class F>
void expect_only_rlock_errors(F&& f) {
  try {
    f();
  } catch (const rlock::Error& e) {
    check_error(e);
  }
}

// Everything the lock protocol does with a reply (src/lock/lock.cc, src/net/redis.cc), on any
// shape.
void take_apart(const Reply& r) {
  (void)r.text();
  (void)r.is_nil();
  expect_only_rlock_errors([&] { (void)r.as_int("a break reply"); });
  expect_only_rlock_errors([&] { (void)r.as_string("an acquire status"); });
  expect_only_rlock_errors([&] { (void)r.as_array("a status reply", 5); });
  expect_only_rlock_errors([&] { (void)r.as_array("a holder record", r.elements.size() + 1); });
  rlock::Result result;
  result.reply = r;
  expect_only_rlock_errors([&] { (void)rlock::expect_ok(result, "acquire script"); });
  if (r.is_error()) check_error(rlock::server_error(r.str, ""));
  if (r.type == Reply::Type::Array)
    for (const Reply& e : r.as_array()) take_apart(e);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t n = !in.empty() && in[0] >= '0' && in[0] <= '8' ? in[0] - '0' : 0;
  if (in.size() < 1 + n) return 0;
  std::string_view sizes = in.substr(1, n), wire = in.substr(1 + n);

  Parser parser;
  try {
    for (size_t i = 0; !wire.empty(); ++i) {
      size_t chunk = sizes.empty() ? 0 : static_cast<unsigned char>(sizes[i % sizes.size()]);
      if (chunk == 0 || chunk > wire.size()) chunk = wire.size();
      parser.feed(wire.substr(0, chunk));
      wire.remove_prefix(chunk);
      while (std::optional<Reply> r = parser.next()) take_apart(*r);
    }
  } catch (const rlock::Error& e) {
    // rlock drops the connection here, as it would on a server that does not speak RESP.
    check_error(e);
  }
  return 0;
}
