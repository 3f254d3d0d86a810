#include "reply.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include "text.h"

namespace rlock {

namespace {

const char* type_name(Reply::Type t) {
  switch (t) {
    case Reply::Type::String:
      return "string";
    case Reply::Type::Array:
      return "array";
    case Reply::Type::Integer:
      return "integer";
    case Reply::Type::Nil:
      return "nil";
    case Reply::Type::Status:
      return "status";
    case Reply::Type::Error:
      return "error";
  }
  return "?";
}

[[noreturn]] void mismatch(const Reply& r, const char* what) {
  throw_protocol(fmt::format("unexpected reply from Redis: wanted {}, got {}{}", what,
                             type_name(r.type),
                             r.is_error() ? " '" + escape_text(r.str) + "'" : ""));
}

bool starts_with(const std::string& s, const char* p) {
  return s.rfind(p, 0) == 0;
}

}  // namespace

long long Reply::as_int(const char* what) const {
  if (type != Type::Integer) mismatch(*this, what);
  return integer;
}

const std::string& Reply::as_string(const char* what) const {
  if (type != Type::String && type != Type::Status) mismatch(*this, what);
  return str;
}

const std::vector<Reply>& Reply::as_array(const char* what, size_t min_size) const {
  if (type != Type::Array || elements.size() < min_size) mismatch(*this, what);
  return elements;
}

std::string Reply::text() const {
  if (type == Type::Integer) return std::to_string(integer);
  return str;
}

Reply convert_reply(const redisReply* r) {
  Reply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.type = Reply::Type::String;
      break;
    case REDIS_REPLY_STATUS:
      out.type = Reply::Type::Status;
      break;
    case REDIS_REPLY_ERROR:
      out.type = Reply::Type::Error;
      break;
    case REDIS_REPLY_INTEGER:
      out.type = Reply::Type::Integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = Reply::Type::Array;
      break;
    default:
      out.type = Reply::Type::Nil;
      break;
  }
  if (r->str) out.str.assign(r->str, r->len);
  out.integer = r->integer;
  if (r->type == REDIS_REPLY_ARRAY) {
    out.elements.reserve(r->elements);
    for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(convert_reply(r->element[i]));
  }
  return out;
}

Error server_error(const std::string& m, const std::string& context) {
  // The server's text is escaped: it may hold anything, newlines included.
  std::string msg =
      context.empty() ? escape_text(m) : fmt::format("{}: {}", context, escape_text(m));
  auto has = [&](const char* s) { return m.find(s) != std::string::npos; };
  // Redis 7 also says "permission" without a NOPERM prefix: inside scripts
  // ("The user executing the script can't …") and when it drops an
  // unauthenticated client's large command ("Protocol error: unauthenticated").
  if (starts_with(m, "NOAUTH") || starts_with(m, "WRONGPASS") || starts_with(m, "NOPERM") ||
      has("invalid password") || has("invalid username-password") ||
      has("user executing the script can't") || has("No permissions to access") ||
      has("Protocol error: unauthenticated"))
    return Error(ErrorKind::Permission, msg);
  if (starts_with(m, "LOADING") || starts_with(m, "BUSY") || starts_with(m, "MASTERDOWN") ||
      starts_with(m, "READONLY") || starts_with(m, "TRYAGAIN") || starts_with(m, "CLUSTERDOWN") ||
      starts_with(m, "NOREPLICAS") || starts_with(m, "MOVED") || starts_with(m, "ASK "))
    return Error(ErrorKind::Unavailable, msg);
  return Error(ErrorKind::Protocol, msg);
}

const Reply& expect_ok(const Result& r, const std::string& context) {
  if (r.failure) throw *r.failure;
  if (r.reply.is_error()) throw server_error(r.reply.str, context);
  return r.reply;
}

}  // namespace rlock
