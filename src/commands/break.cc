// `rlock break KEY`: the operator's override for a stuck lock; with --token,
// for one hung holder of a pool or a shared lock.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "cli/output.h"
#include "commands/commands.h"

namespace rlock {

namespace {

// "'deploy' is not held by token T; nothing to break".
std::string not_held_line(const std::string& key, const BreakRequest& req) {
  if (req.token.empty()) return fmt::format("'{}' is not held; nothing to break", key);
  return fmt::format(
      "'{}' is not held by token {}; nothing to break (rlock status {} shows "
      "its holders)",
      key, req.token, key);
}

bool holds(const LockStatus& st, const BreakRequest& req) {
  if (req.token.empty()) return !st.holders.empty();
  return std::any_of(st.holders.begin(), st.holders.end(),
                     [&](const Holder& h) { return h.token == req.token; });
}

}  // namespace

int cmd_break(const GlobalOptions& g, const std::string& key, bool yes, const BreakRequest& req) {
  Session s(g);
  auto lock = s.lock(key, g.prefix);
  if (!yes) {
    if (!isatty(STDIN_FILENO))
      throw_usage("refusing to break a lock without a terminal to confirm on: add --yes");
    auto st = wait_for<LockStatus>(s.loop, [&](Done<LockStatus> d) { lock->status(std::move(d)); });
    // (status lists up to its record limit: a token beyond it is asked about anyway)
    if (st.holders.empty() ||
        (!holds(st, req) && st.holder_count <= static_cast<long>(st.holders.size()))) {
      log_info(not_held_line(key, req));
      return exitcode::kFree;
    }
    print_err(status_text(key, st));
    print_err(req.token.empty()
                  ? fmt::format("Break '{}' and wake its waiters? [y/N] ", key)
                  : fmt::format("Evict the holder with token {} from '{}' and wake the next "
                                "waiter? [y/N] ",
                                req.token, key));
    if (!read_yes_answer()) {
      log_info("not broken");
      return exitcode::kFree;
    }
  }
  long n = wait_for<long>(s.loop, [&](Done<long> d) { lock->break_lock(req, std::move(d)); });
  if (n == 0) {
    log_info(not_held_line(key, req));
    return exitcode::kFree;
  }
  if (n < 0) {
    log_info(fmt::format("'{}' is not held; removed {} dead waiter{} that blocked its line", key,
                         -n, n == -1 ? "" : "s"));
    return exitcode::kOk;
  }
  std::string why = req.reason.empty() ? "" : fmt::format("; reason: {}", req.reason);
  if (!req.token.empty()) {
    if (s.quorum())
      log_info(
          fmt::format("evicted the holder with token {} from '{}' (on {} of {} masters; the "
                      "next in line woken{})",
                      req.token, key, n, s.clients.size(), why));
    else
      log_info(fmt::format("evicted the holder with token {} from '{}' (the next in line woken{})",
                           req.token, key, why));
    return exitcode::kOk;
  }
  if (s.quorum())
    log_info(fmt::format("broke '{}' (its holder removed on {} of {} masters, waiters woken{})",
                         key, n, s.clients.size(), why));
  else
    log_info(fmt::format("broke '{}' ({} holder{} removed, waiters woken{})", key, n,
                         n == 1 ? "" : "s", why));
  return exitcode::kOk;
}

}  // namespace rlock
