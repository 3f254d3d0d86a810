// `rlock forget KEY`: housekeeping for many keys. Fence counters never expire
// (by design), so per-branch lock names pile up in Redis; this removes every
// key of a lock that is free and that nobody waits on, the fence counter
// included. The one exception to "the fence counter is never reset".
#include <fmt/format.h>
#include <unistd.h>

#include "cli/output.h"
#include "commands/commands.h"

namespace rlock {

int cmd_forget(const GlobalOptions& g, const std::string& key, bool yes) {
  Session s(g);
  auto lock = s.lock(key, g.prefix);
  if (!yes) {
    if (!isatty(STDIN_FILENO))
      throw_usage("refusing to forget a lock without a terminal to confirm on: add --yes");
    auto st = wait_for<LockStatus>(s.loop, [&](Done<LockStatus> d) { lock->status(std::move(d)); });
    print_err(status_text(key, st));
    print_err(fmt::format(
        "Remove every trace of '{}', its fence counter included (its fences start again at "
        "1)? [y/N] ",
        escape_text(key)));
    if (!read_yes_answer()) {
      log_info("not forgotten");
      return exitcode::kFree;
    }
  }
  auto r = wait_for<ForgetReply>(s.loop, [&](Done<ForgetReply> d) { lock->forget(std::move(d)); });
  switch (r.state) {
    case ForgetReply::State::InUse:
      log_error(fmt::format(
          "'{}' is in use ({} holder{}, {} waiting): only a free key that nobody waits on is "
          "forgotten",
          escape_text(key), r.holders, r.holders == 1 ? "" : "s", r.waiters));
      return exitcode::kFree;
    case ForgetReply::State::Nothing:
      log_info(fmt::format("'{}' has nothing to forget", escape_text(key)));
      return exitcode::kOk;
    case ForgetReply::State::Removed:
      break;
  }
  log_info(fmt::format("forgot '{}': its fences start again at 1", escape_text(key)));
  return exitcode::kOk;
}

}  // namespace rlock
