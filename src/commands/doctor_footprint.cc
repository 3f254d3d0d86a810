#include "commands/doctor_footprint.h"

#include <fmt/format.h>

#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/async.h"
#include "net/reply.h"

namespace rlock {

namespace {

// What SCAN saw of one KEY's keys.
enum : uint8_t { kLock = 1, kFence = 2, kOther = 4 };

// SCAN MATCH treats * ? [ ] \ specially; the prefix is literal.
std::string glob_escape_view(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

Result footprint_ask(Client& c, Args args, const std::string& node) {
  CallOptions opt;
  opt.node = node;
  return settle<Result>(c.loop(), [&](std::function<void(Result)> done) {
    c.command(std::move(args), std::move(done), std::move(opt));
  });
}

}  // namespace

Footprint measure_footprint(Client& c, const std::string& node, const std::string& prefix) {
  Footprint f;
  const std::string head = prefix + "{";
  std::unordered_map<std::string, uint8_t> seen;  // KEY -> what was seen of it
  std::vector<std::string> names;                 // every key seen, for the sample
  std::string cursor = "0";
  do {
    Result got = footprint_ask(
        c, {"SCAN", cursor, "MATCH", glob_escape_view(head) + "*", "COUNT", "1000"}, node);
    const Reply& r = expect_ok(got, "SCAN");
    auto& e = r.as_array("a SCAN reply", 2);
    cursor = e[0].as_string("a SCAN cursor");
    for (auto& k : e[1].as_array("SCAN keys")) {
      const std::string& name = k.as_string("a key name");
      size_t close = name.find('}', head.size());
      if (name.compare(0, head.size(), head) != 0 || close == std::string::npos) continue;
      std::string_view rest = std::string_view(name).substr(close + 1);
      uint8_t& saw = seen[name.substr(head.size(), close - head.size())];
      ++f.keys;
      if (rest.empty() || rest == ":holders") {
        ++f.locks;
        saw |= kLock;
      } else if (rest == ":fence") {
        ++f.fences;
        saw |= kFence;
      } else {
        if (rest == ":log") ++f.histories;
        saw |= kOther;
      }
      names.push_back(name);
    }
    if (f.keys >= kFootprintMaxKeys) f.complete = cursor == "0";
  } while (cursor != "0" && f.keys < kFootprintMaxKeys);
  for (auto& [key, saw] : seen)
    if (saw == kFence) ++f.idle_fences;
  // MEMORY USAGE of keys spread evenly over what SCAN saw, extrapolated.
  if (names.empty()) {
    f.bytes = 0;
    return f;
  }
  size_t step = std::max<size_t>(1, names.size() / kFootprintSample);
  int64_t total = 0;
  for (size_t i = 0; i < names.size() && f.sampled < kFootprintSample; i += step) {
    Result r = footprint_ask(c, {"MEMORY", "USAGE", names[i]}, node);
    if (r.failure) throw *r.failure;
    if (r.reply.is_nil()) continue;  // gone since SCAN saw it
    if (r.reply.type != Reply::Type::Integer || r.reply.integer < 0) return f;  // refused
    total += std::min<int64_t>(r.reply.integer, INT64_MAX / kFootprintMaxKeys);
    ++f.sampled;
  }
  if (f.sampled > 0) f.bytes = total / f.sampled * f.keys;
  return f;
}

std::string format_bytes(int64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes) / 1024.0;
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(units)) {
    v /= 1024.0;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, units[u]);
}

}  // namespace rlock
