// `rlock release KEY --token T`: release only if T still holds it.
#include <fmt/format.h>

#include "commands/commands.h"

namespace rlock {

int cmd_release(const GlobalOptions& g, const std::string& key, const std::string& token) {
  validate_token(token);
  Session s(g);
  auto lock = s.lock(key, g.prefix);
  auto r = wait_for<ReleaseReply>(
      s.loop, [&](Done<ReleaseReply> d) { lock->release(token, Millis(0), std::move(d)); });
  // AlreadyReleased: a retry after a broken connection found that the first
  // try had released it.
  if (r.state == ReleaseReply::State::NotHeld)
    throw Error(ErrorKind::Lost,
                fmt::format("'{}' is not held by this token (expired, released or broken)", key));
  return exitcode::kOk;
}

}  // namespace rlock
