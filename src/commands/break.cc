// `rlock break KEY`: the operator's override for a stuck lock.
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>

#include "cli/output.h"
#include "commands/commands.h"

namespace rlock {

int cmd_break(const GlobalOptions& g, const std::string& key, bool yes) {
  Session s(g);
  auto lock = s.lock(key, g.prefix);
  if (!yes) {
    if (!isatty(STDIN_FILENO))
      throw_usage("refusing to break a lock without a terminal to confirm on: add --yes");
    auto st = wait_for<LockStatus>(s.loop, [&](Done<LockStatus> d) { lock->status(std::move(d)); });
    if (st.holders.empty()) {
      log_info(fmt::format("'{}' is not held; nothing to break", key));
      return exitcode::kFree;
    }
    print_err(status_text(key, st));
    print_err(fmt::format("Break '{}' and wake its waiters? [y/N] ", key));
    std::string answer;
    if (!std::getline(std::cin, answer) || (answer != "y" && answer != "Y" && answer != "yes")) {
      log_info("not broken");
      return exitcode::kFree;
    }
  }
  long n = wait_for<long>(s.loop, [&](Done<long> d) { lock->break_lock(std::move(d)); });
  if (n == 0) {
    log_info(fmt::format("'{}' is not held; nothing to break", key));
    return exitcode::kFree;
  }
  if (n < 0) {
    log_info(fmt::format("'{}' is not held; removed {} dead waiter{} that blocked its line", key,
                         -n, n == -1 ? "" : "s"));
    return exitcode::kOk;
  }
  if (s.quorum())
    log_info(fmt::format("broke '{}' (its holder removed on {} of {} masters, waiters woken)", key,
                         n, s.clients.size()));
  else
    log_info(
        fmt::format("broke '{}' ({} holder{} removed, waiters woken)", key, n, n == 1 ? "" : "s"));
  return exitcode::kOk;
}

}  // namespace rlock
