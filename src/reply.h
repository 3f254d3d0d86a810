// Redis replies as plain C++ values, and how server errors map to ours.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "error.h"

struct redisReply;

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
  bool ok() const { return !failure && !reply.is_error(); }
};

/// The Error a server error reply stands for: NOAUTH/WRONGPASS/NOPERM → 77,
/// LOADING/BUSY/MASTERDOWN/READONLY/TRYAGAIN/CLUSTERDOWN → 69, else 70.
Error server_error(const std::string& message, const std::string& context);

/// Throws the failure, or the server error, of `r`; returns its reply otherwise.
const Reply& expect_ok(const Result& r, const std::string& context);

}  // namespace rlock
