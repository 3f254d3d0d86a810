// Bytes from a server, as rlock reads them (src/redis.cc): fed in chunks to the reply parser,
// each reply converted to an rlock::Reply and taken apart with the accessors the lock
// protocol uses. Only rlock::Error may escape the parser and the accessors, every message
// built from server text is one printable line, and no input may make the parser allocate
// without bound (scripts/fuzz.sh runs with -malloc_limit_mb and -rss_limit_mb).
//
// Input: a digit n ('0'-'8'; any other first byte counts as 0), then n bytes of chunk sizes,
// then the bytes the server sends. They are fed in chunks whose sizes cycle through the n
// sizes (a size of 0 feeds all that is left); n = 0 feeds everything at once.
#include "reply.h"

#include <hiredis/hiredis.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "fuzz_util.h"

namespace {

using rlock::Reply;

// convert_reply keeps every type, byte and element of hiredis's tree.
void check_converted(const redisReply* r, const Reply& out) {
  static constexpr struct {
    int hiredis;
    Reply::Type ours;
  } kTypes[] = {
      {REDIS_REPLY_STRING, Reply::Type::String},   {REDIS_REPLY_ARRAY, Reply::Type::Array},
      {REDIS_REPLY_INTEGER, Reply::Type::Integer}, {REDIS_REPLY_NIL, Reply::Type::Nil},
      {REDIS_REPLY_STATUS, Reply::Type::Status},   {REDIS_REPLY_ERROR, Reply::Type::Error}};
  bool known = false;
  for (auto t : kTypes) {
    if (t.hiredis != r->type) continue;
    known = true;
    FUZZ_CHECK(out.type == t.ours, "hiredis type %d became %d", r->type,
               static_cast<int>(out.type));
  }
  FUZZ_CHECK(known, "hiredis reply type %d", r->type);
  if (r->type == REDIS_REPLY_INTEGER)
    FUZZ_CHECK(out.integer == r->integer, "integer %lld became %lld", r->integer, out.integer);
  if (r->str)
    FUZZ_CHECK(out.str == std::string_view(r->str, r->len), "string '%s' became '%s'",
               fuzz::hex_escape(std::string_view(r->str, r->len)).c_str(),
               fuzz::hex_escape(out.str).c_str());
  if (r->type != REDIS_REPLY_ARRAY) return;
  FUZZ_CHECK(out.elements.size() == r->elements, "array of %zu became %zu", r->elements,
             out.elements.size());
  for (size_t i = 0; i < r->elements; ++i) check_converted(r->element[i], out.elements[i]);
}

// Today's reply path of src/redis.cc (Connection::read_replies): hiredis's reader, then
// convert_reply. When src/reply.h gets its bounded parser (ReplyParser{max_bytes}, feed()
// and next(), throwing rlock::Error on malformed or oversized input), delete this class and
// use that one in LLVMFuzzerTestOneInput: the loop there already speaks feed()/next() and
// treats an rlock::Error as the end of the connection, as rlock does.
class HiredisParser {
 public:
  HiredisParser() : reader_(redisReaderCreate()) {}
  ~HiredisParser() { redisReaderFree(reader_); }
  HiredisParser(const HiredisParser&) = delete;
  HiredisParser& operator=(const HiredisParser&) = delete;

  void feed(std::string_view bytes) {
    if (redisReaderFeed(reader_, bytes.data(), bytes.size()) != REDIS_OK)
      rlock::throw_protocol("Redis reader failed");
  }
  std::optional<Reply> next() {
    void* raw = nullptr;
    if (redisReaderGetReply(reader_, &raw) != REDIS_OK) rlock::throw_protocol(reader_->errstr);
    if (!raw) return std::nullopt;
    auto* r = static_cast<redisReply*>(raw);
    Reply out = rlock::convert_reply(r);
    check_converted(r, out);
    freeReplyObject(r);
    return out;
  }

 private:
  redisReader* reader_;
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

// Everything the lock protocol does with a reply (src/lock.cc, src/redis.cc), on any shape.
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

  HiredisParser parser;  // soon: rlock::ReplyParser parser{max_bytes}; see HiredisParser
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
