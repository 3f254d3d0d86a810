#include "core/json.h"

#include <charconv>

#include "core/text.h"

namespace rlock {

std::optional<int64_t> parse_int64(std::string_view s) {
  int64_t v = 0;
  if (s.empty() || s.front() == '+') return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

void JsonObject::name(std::string_view n) {
  if (!out_.empty()) out_ += ',';
  out_ += json_string(n);
  out_ += ':';
}

JsonObject& JsonObject::str(std::string_view n, std::string_view value) {
  name(n);
  out_ += json_string(value);
  return *this;
}

JsonObject& JsonObject::str_if(std::string_view n, std::string_view value) {
  return value.empty() ? *this : str(n, value);
}

JsonObject& JsonObject::num(std::string_view n, int64_t value) {
  name(n);
  out_ += std::to_string(value);
  return *this;
}

JsonObject& JsonObject::num_if(std::string_view n, int64_t value) {
  return value > 0 ? num(n, value) : *this;
}

JsonObject& JsonObject::boolean(std::string_view n, bool value) {
  name(n);
  out_ += value ? "true" : "false";
  return *this;
}

JsonObject& JsonObject::raw(std::string_view n, std::string_view json) {
  name(n);
  out_ += json;
  return *this;
}

}  // namespace rlock
