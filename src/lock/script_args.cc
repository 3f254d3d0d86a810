#include "lock/script_args.h"

namespace rlock {

namespace {

std::string ms(Millis m) {
  return std::to_string(m.count());
}

}  // namespace

Args AcquireArgs::to_argv() const {
  return {token,
          ms(ttl),
          std::to_string(limit),
          mode,
          ms(queue_lease),
          channel,
          host,
          std::to_string(pid),
          user,
          cmd,
          std::to_string(attempt),
          shared ? "shared" : "",
          label,
          std::to_string(priority),
          supersede ? "1" : "",
          std::to_string(max_waiters),
          std::to_string(history),
          cancel ? "1" : "",
          pool};
}

Args UndoArgs::to_argv() const {
  return {token, std::to_string(attempt), channel, std::to_string(history)};
}

Args ExtendArgs::to_argv() const {
  return {token, ms(ttl), std::to_string(history), supersede ? "1" : ""};
}

Args ReleaseArgs::to_argv() const {
  Args argv{token, ms(min_hold), channel, ms(tombstone), release_id};
  if (!history) return argv;
  argv.insert(argv.end(),
              {exit_status >= 0 && exit_status <= 255 ? std::to_string(exit_status) : "",
               ms(done_for), std::to_string(*history), lost});
  return argv;
}

Args LeaveArgs::to_argv() const {
  return {token, channel, std::to_string(history)};
}

Args StatusArgs::to_argv() const {
  Args argv{std::to_string(max_records)};
  if (!events) argv.push_back("0");
  return argv;
}

Args BreakArgs::to_argv() const {
  return {channel, std::to_string(history), by, ms(tombstone), only, reason};
}

Args FenceArgs::to_argv() const {
  return {token, std::to_string(fence), claim ? "1" : "0"};
}

Args HistoryArgs::to_argv() const {
  return {std::to_string(count), after};
}

Args NestArgs::to_argv() const {
  if (op == "hold") return {op, outer, member, ms(ttl)};
  if (op == "end") return {op, outer, member, channel, std::to_string(history)};
  return {op, outer};
}

Args ListArgs::to_argv() const {
  return {full ? "full" : "line", seen};
}

Args LayoutAcquireArgs::to_argv() const {
  return {token, ms(ttl)};
}

Args LayoutExtendArgs::to_argv() const {
  return {token, ms(ttl)};
}

Args PlainReleaseArgs::to_argv() const {
  return {token, channel, payload, ms(tombstone), release_id};
}

Args RedissonReleaseArgs::to_argv() const {
  return {id, channel, ms(tombstone), release_id};
}

Args PlainBreakArgs::to_argv() const {
  return {channel, payload};
}

Args RedissonBreakArgs::to_argv() const {
  return {channel};
}

}  // namespace rlock
