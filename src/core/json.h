// JSON objects for --json output, written field by field: a value that is
// not known is left out rather than written as null, "" or 0 (the man page,
// JSON OUTPUT, says which fields each object may lack).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rlock {

/// The digits of a JSON integer in `s` ("-12", "7"), when `s` is one that
/// fits int64 and nothing else: values read from Redis are anybody's to write.
std::optional<int64_t> parse_int64(std::string_view s);

/// One JSON object, its fields in the order they are added; names and string
/// values are escaped (json_string). The caller keeps names unique.
class JsonObject {
 public:
  JsonObject& str(std::string_view name, std::string_view value);
  /// The string, when it is not empty.
  JsonObject& str_if(std::string_view name, std::string_view value);
  JsonObject& num(std::string_view name, int64_t value);
  /// The number, when it is above 0 (a pid, a fence, a slot: 0 = unknown).
  JsonObject& num_if(std::string_view name, int64_t value);
  JsonObject& boolean(std::string_view name, bool value);
  /// Text that is JSON already (an array, an object).
  JsonObject& raw(std::string_view name, std::string_view json);
  bool empty() const { return out_.empty(); }
  std::string text() const { return "{" + out_ + "}"; }

 private:
  void name(std::string_view n);
  std::string out_;
};

}  // namespace rlock
