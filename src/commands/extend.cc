// `rlock extend KEY --token T [--ttl D]`: renew a lease T still holds.
#include <fmt/format.h>

#include "cli/output.h"
#include "commands/commands.h"
#include "core/json.h"

namespace rlock {

int cmd_extend(const GlobalOptions& g, const std::vector<std::string>& keys,
               const std::string& token, std::optional<Millis> ttl, int sync_replicas) {
  const std::string& key = keys.front();
  validate_token(token);
  if (ttl && *ttl < Millis(100)) throw_usage("--ttl must be at least 100ms");
  Session s(g);
  auto lock = s.locks(keys, g.prefix);
  auto r = wait_for<ExtendReply>(s.loop, [&](Done<ExtendReply> d) {
    lock->extend(token, ttl.value_or(Millis(0)), std::move(d));
  });
  if (!r.held)
    throw Error(
        ErrorKind::Lost,
        fmt::format("'{}' is not held by this token (expired, released or broken); "
                    "acquire it again",
                    keys.size() > 1 ? fmt::format("{} (or another of its keys)", key) : key));
  if (sync_replicas > 0) {
    try {
      wait_for<bool>(s.loop, [&](Done<bool> d) {
        lock->confirm_replicas(sync_replicas, lock->command_timeout(), "the renewal", std::move(d));
      });
    } catch (const Error& e) {
      // 69 here does not mean "not extended": say what it does mean.
      throw Error(e.kind(),
                  fmt::format("{}; the lease was renewed on the master all the same", e.what()),
                  e.exit_status());
    }
  }
  if (g.json)
    print_out(JsonObject()  // another tool's layout has no fence (0): none then
                  .str("key", key)
                  .str("token", token)
                  .num_if("fence", r.fence)
                  .num("ttl_ms", r.ttl.count())
                  .text() +
              "\n");
  return exitcode::kOk;
}

}  // namespace rlock
