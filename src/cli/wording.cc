#include "cli/wording.h"

#include <fmt/format.h>

#include "cli/table.h"
#include "core/duration.h"
#include "core/text.h"

namespace rlock {

std::string lease_left_cell(Millis left) {
  if (left < Millis(0)) return "no expiry";
  if (left >= Millis(1000)) left = std::chrono::ceil<std::chrono::seconds>(left);
  return format_duration(left);
}

std::string ordinal(long n) {
  const char* suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    if (n % 10 == 1)
      suffix = "st";
    else if (n % 10 == 2)
      suffix = "nd";
    else if (n % 10 == 3)
      suffix = "rd";
  }
  return fmt::format("{}{}", n, suffix);
}

HolderWords holder_words(const AcquireReply& a, int limit, Millis elapsed, size_t cmd_columns,
                         bool with_since, size_t label_columns) {
  if (a.holders.empty()) {
    if (a.position > 0) return {fmt::format("free, with {} waiting ahead", a.position), ""};
    return {"taken", ""};
  }
  const Holder& h = a.holders.front();
  if (h.shared && a.holder_count > 1)
    return {fmt::format("held shared by {} holders", a.holder_count), ""};
  // A Redisson hash with several ids (not a semaphore: no "of N").
  if (h.opaque && h.holds > 0 && a.holder_count > 1)
    return {fmt::format("held by {} Redisson ids ({}, …)", a.holder_count,
                        truncate_columns(escape_text(h.token), 48)),
            ""};
  if (a.holder_count > 1 || limit > 0)
    return {fmt::format("held by {} of {} holders", a.holder_count, std::max(limit, 1)), ""};
  // Whole seconds (rounded up) once it is a second or more: a line redrawn
  // every second ticks down by one. A live holder renews its lease every
  // third of its TTL, so the figure jumps back up: the words say it is not
  // when the lock will be free (only when a holder that died lets it go).
  Millis left = std::max(Millis(0), h.ttl_left - elapsed);
  if (left >= Millis(1000)) left = std::chrono::ceil<std::chrono::seconds>(left);
  // A key written without an expiry (Redis's PTTL -1: a foreign SET without
  // PX) never runs out: only a break frees it.
  std::string lease =
      h.ttl_left < Millis(0)
          ? std::string("no expiry: it stays until broken (rlock break)")
          : fmt::format("lease runs out in {} unless renewed", format_duration(left));
  // Holder details come from Redis: escaped before they reach a terminal.
  if (h.opaque && h.holds > 0)
    return {fmt::format("held by Redisson id {}", truncate_columns(escape_text(h.token), 48)),
            lease};
  if (h.opaque)
    return {fmt::format("held by token {} (--layout plain)",
                        truncate_columns(escape_text(h.token), 13)),
            lease};
  if (h.info.host.empty())
    return {fmt::format("held by a client that is not rlock (token {})",
                        truncate_columns(escape_text(h.token), 13)),
            lease};
  std::string cmd =
      cmd_columns == 0 ? "" : " [" + truncate_columns(escape_text(h.info.cmd), cmd_columns) + "]";
  if (h.done_ms > 0)
    return {fmt::format("done by {} pid {}{} at {}Z", escape_text(h.info.host), h.info.pid, cmd,
                        utc_iso(h.done_ms).substr(11, 8)),
            h.ttl_left < Millis(0)
                ? std::string("no expiry: it stays done until broken (rlock break)")
                : fmt::format("free again in {}", format_duration(left))};
  std::string since =
      h.since_ms > 0 && with_since ? " since " + utc_iso(h.since_ms).substr(11, 8) + "Z" : "";
  // A label says what the job is (a CI job's URL): it stands for host, pid and command.
  if (!h.info.label.empty())
    return {fmt::format("held{} by {}{}", h.shared ? " shared" : "",
                        truncate_middle(escape_text(h.info.label), label_columns), since),
            lease};
  return {fmt::format("held{} by {} pid {}{}{}", h.shared ? " shared" : "",
                      escape_text(h.info.host), h.info.pid, cmd, since),
          lease};
}

std::string describe_holders(const AcquireReply& a, int limit, Millis elapsed, size_t cmd_columns) {
  HolderWords w = holder_words(a, limit, elapsed, cmd_columns);
  return w.lease.empty() ? w.who : w.who + ", " + w.lease;
}

std::string holders_in_words(const AcquireReply& a, int limit) {
  return describe_holders(a, limit);
}

std::string failover_lost_words(int64_t fence) {
  std::string twice = "a failover lost this hold: the lock may have been held twice";
  return fence > 0 ? fmt::format("{} (fence {})", twice, fence) : twice;
}

std::string unconfirmed_release_warning(const std::string& what, const std::string& why) {
  return fmt::format(
      "warning: could not confirm with the sentinels that a failover did not lose the hold of "
      "{}: {}",
      what, why);
}

}  // namespace rlock
