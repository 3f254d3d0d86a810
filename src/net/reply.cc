#include "net/reply.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <cstring>
#include <memory>

#include "core/text.h"

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

bool is_out_of_memory(const std::string& m) {
  // "OOM command not allowed when used memory > 'maxmemory'", first in the
  // reply, or quoted inside a script's error by Redis before 7.
  return m.find("OOM command not allowed") != std::string::npos;
}

Error out_of_memory(const std::string& context) {
  return Error(ErrorKind::Unavailable,
               fmt::format("the server is out of memory (maxmemory): {}refused a write (OOM, "
                           "maxmemory-policy noeviction); free memory or raise maxmemory",
                           context.empty() ? "it " : context + " "));
}

Error server_error(const std::string& m, const std::string& context) {
  // The server's text is escaped: it may hold anything, newlines included.
  std::string msg =
      context.empty() ? escape_text(m) : fmt::format("{}: {}", context, escape_text(m));
  auto has = [&](const char* s) { return m.find(s) != std::string::npos; };
  // Redis 7 also says "permission" without a NOPERM prefix: inside scripts
  // ("The user executing the script can't …") and when it drops an
  // unauthenticated client's large command ("Protocol error: unauthenticated").
  if (m.starts_with("NOAUTH") || m.starts_with("WRONGPASS") || m.starts_with("NOPERM") ||
      has("invalid password") || has("invalid username-password") ||
      has("user executing the script can't") || has("No permissions to access") ||
      has("Protocol error: unauthenticated"))
    return Error(ErrorKind::Permission, msg);
  if (m.starts_with("LOADING") || m.starts_with("BUSY") || m.starts_with("MASTERDOWN") ||
      m.starts_with("READONLY") || m.starts_with("TRYAGAIN") || m.starts_with("CLUSTERDOWN") ||
      m.starts_with("NOREPLICAS") || m.starts_with("MOVED") || m.starts_with("ASK "))
    return Error(ErrorKind::Unavailable, msg);
  if (is_out_of_memory(m)) return out_of_memory(context);
  // A server at its maxclients answers a new connection's first command so,
  // then closes it: like a reset, it may pass by itself.
  if (m.starts_with("ERR max number of clients reached"))
    return Error(ErrorKind::Unavailable, msg, -1, Cause::Reset);
  return Error(ErrorKind::Protocol, msg);
}

const Reply& expect_ok(const Result& r, const std::string& context) {
  if (r.failure) throw *r.failure;
  if (r.reply.is_error()) throw server_error(r.reply.str, context);
  return r.reply;
}

namespace {

[[noreturn]] void bad_reply(const std::string& why) {
  throw_protocol("the server's reply is not acceptable: " + why);
}

// A RESP integer: an optional '-' and 1-18 digits (no overflow possible).
long long resp_number(const std::string& s) {
  size_t i = s.size() > 1 && s[1] == '-' ? 2 : 1;
  if (i >= s.size() || s.size() - i > 18) bad_reply("bad length in a header");
  long long v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') bad_reply("bad length in a header");
    v = v * 10 + (s[i] - '0');
  }
  return s[1] == '-' ? -v : v;
}

}  // namespace

ReplyParser::ReplyParser(size_t max_bytes, size_t max_elements)
    : max_bytes_(max_bytes), max_elements_(max_elements), reader_(redisReaderCreate()) {
  if (!reader_) throw std::bad_alloc();
}

ReplyParser::~ReplyParser() {
  redisReaderFree(reader_);
}

void ReplyParser::feed(const char* data, size_t len) {
  scan(data, len);
  if (redisReaderFeed(reader_, data, len) != REDIS_OK) bad_reply("reader failed");
}

std::optional<Reply> ReplyParser::next() {
  void* raw = nullptr;
  if (redisReaderGetReply(reader_, &raw) != REDIS_OK)
    bad_reply(escape_text(reader_->errstr[0] ? reader_->errstr : "malformed"));
  if (!raw) return std::nullopt;
  std::unique_ptr<redisReply, void (*)(void*)> owned(static_cast<redisReply*>(raw),
                                                     freeReplyObject);
  return convert_reply(owned.get());
}

void ReplyParser::scan(const char* data, size_t len) {
  size_t i = 0;
  while (i < len) {
    if (bulk_left_ > 0) {
      size_t n = std::min(bulk_left_, len - i);
      bulk_left_ -= n;
      i += n;
      reply_bytes_ += n;
      if (bulk_left_ == 0) element_done();
      continue;
    }
    const char* nl = static_cast<const char*>(memchr(data + i, '\n', len - i));
    size_t n = nl ? static_cast<size_t>(nl - (data + i)) + 1 : len - i;
    reply_bytes_ += n;
    if (reply_bytes_ > max_bytes_)
      bad_reply(fmt::format("larger than {} MiB", max_bytes_ / (1024 * 1024)));
    line_.append(data + i, n);
    i += n;
    if (!nl) continue;
    std::string line = std::move(line_);
    line_.clear();
    if (line.size() < 3 || line[line.size() - 2] != '\r') bad_reply("a header without CRLF");
    line.resize(line.size() - 2);
    header(line);
  }
  if (reply_bytes_ > max_bytes_)
    bad_reply(fmt::format("larger than {} MiB", max_bytes_ / (1024 * 1024)));
}

void ReplyParser::header(const std::string& line) {
  size_t left = max_bytes_ > reply_bytes_ ? max_bytes_ - reply_bytes_ : 0;
  switch (line[0]) {
    case '+':
    case '-':
    case ':':
      return element_done();
    case '$': {
      long long n = resp_number(line);
      if (n < 0) return element_done();  // nil
      if (static_cast<unsigned long long>(n) + 2 > left)
        bad_reply(fmt::format("larger than {} MiB", max_bytes_ / (1024 * 1024)));
      bulk_left_ = static_cast<size_t>(n) + 2;
      return;
    }
    case '*': {
      long long n = resp_number(line);
      if (n <= 0) return element_done();  // empty or nil
      // Every element takes at least 3 bytes ("+\r\n"): an announced count
      // that cannot fit is refused before anyone allocates for it.
      if (static_cast<unsigned long long>(n) > left / 3)
        bad_reply(fmt::format("larger than {} MiB (an array of {} elements)",
                              max_bytes_ / (1024 * 1024), n));
      if (static_cast<unsigned long long>(n) > max_elements_ - reply_elements_)
        bad_reply(fmt::format("more than {} elements", max_elements_));
      reply_elements_ += static_cast<size_t>(n);
      if (open_.size() >= 7) bad_reply("arrays nested too deep");
      open_.push_back(n);
      return;
    }
    default:
      bad_reply("unknown type byte " + escape_text(line.substr(0, 1)));
  }
}

void ReplyParser::element_done() {
  while (!open_.empty()) {
    if (--open_.back() > 0) return;
    open_.pop_back();
  }
  reply_bytes_ = 0;  // a whole reply: the next one starts afresh
  reply_elements_ = 0;
}

}  // namespace rlock
