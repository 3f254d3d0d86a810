// Redis replies as plain C++ values, and how server errors map to ours.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

struct redisReply;
struct redisReader;

namespace rlock {

struct Reply {
  enum class Type { String, Array, Integer, Nil, Status, Error };
  Type type = Type::Nil;
  std::string str;  // String, Status, Error
  long long integer = 0;
  std::vector<Reply> elements;

  bool is_error() const { return type == Type::Error; }
  bool is_nil() const { return type == Type::Nil; }
  /// Accessors that throw a protocol Error (exit 70) on a type mismatch,
  /// naming `what` was expected.
  long long as_int(const char* what = "an integer") const;
  const std::string& as_string(const char* what = "a string") const;
  const std::vector<Reply>& as_array(const char* what = "an array", size_t min_size = 0) const;
  /// A String or Status as text, an Integer as its decimal form, Nil as "".
  std::string text() const;
};

/// Deep-copies a hiredis reply tree.
Reply convert_reply(const redisReply* r);

/// The outcome of one command: a reply (possibly a server error reply) or a
/// failure of the connection itself (timeout, closed, auth).
struct Result {
  std::optional<Error> failure;
  Reply reply;
  /// With a failure: the command certainly never reached a server (the
  /// connection was never established), so sending it again is safe.
  bool unsent = false;
  /// The server that answered (its address), when a Router sent it: under
  /// Sentinel, which master a grant was made on (Client::confirm_master).
  std::string node;
  bool ok() const { return !failure && !reply.is_error(); }
};

/// The Error a server error reply stands for: NOAUTH/WRONGPASS/NOPERM → 77,
/// LOADING/BUSY/MASTERDOWN/READONLY/TRYAGAIN/CLUSTERDOWN and OOM → 69, else 70.
Error server_error(const std::string& message, const std::string& context);

/// True for Redis's refusal of a write at its maxmemory (OOM), also when a
/// script's error quotes it.
bool is_out_of_memory(const std::string& message);

/// The one line (69) for an OOM refusal; `context` names who refused what
/// ("redis://h:6379 (the acquire script)"), or is empty.
Error out_of_memory(const std::string& context);

/// Throws the failure, or the server error, of `r`; returns its reply otherwise.
const Reply& expect_ok(const Result& r, const std::string& context);

}  // namespace rlock

namespace rlock {

/// The largest reply rlock accepts (a lock's replies are a few KiB; status
/// and list stay far below this: they list at most kStatusRecords records).
inline constexpr size_t kMaxReplyBytes = 8 * 1024 * 1024;
/// The most elements (at every level of nesting) one reply may have: enough
/// for the CLUSTER SLOTS reply of a Cluster whose 16384 slots are all ranges
/// of their own, each with replicas.
inline constexpr size_t kMaxReplyElements = 256 * 1024;

/// Turns the bytes a server sends into Replies: hiredis's reader does the
/// parsing, but every byte is first checked by a small scanner of the RESP
/// structure that refuses, before hiredis allocates anything for it, a reply
/// larger than `max_bytes`, with more than `max_elements` elements (an array
/// header announcing more than are left counts as such), nested deeper than
/// 7, or with a malformed header. So no server can make rlock allocate
/// without bound.
class ReplyParser {
 public:
  explicit ReplyParser(size_t max_bytes = kMaxReplyBytes, size_t max_elements = kMaxReplyElements);
  ~ReplyParser();
  ReplyParser(const ReplyParser&) = delete;
  ReplyParser& operator=(const ReplyParser&) = delete;

  /// Adds bytes. Throws a protocol Error (70) on a reply that is too large or
  /// malformed; the parser is unusable afterwards.
  void feed(const char* data, size_t len);
  /// The next complete reply, if any. Throws like feed().
  std::optional<Reply> next();

 private:
  void scan(const char* data, size_t len);
  void header(const std::string& line);
  void element_done();

  size_t max_bytes_, max_elements_;
  ::redisReader* reader_;
  std::string line_;             // a header line being read
  size_t bulk_left_ = 0;         // payload bytes (and CRLF) still to pass
  std::vector<long long> open_;  // elements still expected by each open array
  size_t reply_bytes_ = 0;       // bytes of the reply being read so far
  size_t reply_elements_ = 0;    // elements announced in it so far
};

}  // namespace rlock
