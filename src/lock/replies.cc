#include "lock/replies.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "core/text.h"

namespace rlock {

int64_t reply_int(const Reply& r) {
  if (r.type == Reply::Type::Integer) return r.integer;
  if (r.type == Reply::Type::String && !r.str.empty()) {
    try {
      return std::stoll(r.str);
    } catch (...) {
    }
  }
  return 0;
}

namespace {

// A holder's time left as a script tells it: -1 (no expiry) and -2 as Redis
// says them; a score far in the future (one another program wrote, such as
// 1e300) reaches us overflowed, as a huge negative, and counts as the longest
// lease, 2^52 ms, as anything longer does (docs/PROTOCOL.md, fit_marker).
Millis holder_left(const Reply& r) {
  constexpr int64_t kLongest = int64_t{1} << 52;
  int64_t v = reply_int(r);
  if (v < -2 || v > kLongest) return Millis(kLongest);
  return Millis(v);
}

// A holder's slot: a number (a count's), or a named pool's name, which is
// never all digits (options.cc); anything else, or a name longer than a pool
// name may be, is none.
void parse_slot(const Reply& r, long& slot, std::string& name) {
  const std::string& s = r.str;
  bool digits =
      !s.empty() && s.size() <= 7 && s.find_first_not_of("0123456789") == std::string::npos;
  if (r.type == Reply::Type::Integer || digits) {
    slot = static_cast<long>(std::clamp<int64_t>(reply_int(r), 0, 1'000'000));
  } else if (r.type == Reply::Type::String && !s.empty() && s != "0" && s.size() <= kMaxPoolName) {
    name = r.text();
  }
}

HolderInfo info_from(const Reply* e) {
  HolderInfo i;
  i.host = e[0].text();
  i.pid = static_cast<long>(reply_int(e[1]));
  i.user = e[2].text();
  i.cmd = e[3].text();
  return i;
}

// One holder record, its `size` values from `e` (at least 9): token, pttl, host,
// pid, user, cmd, since, fence, ttl, then what later protocols added.
Holder parse_holder(const Reply* e, size_t size) {
  Holder x;
  x.token = e[0].text();
  x.ttl_left = holder_left(e[1]);
  x.info = info_from(e + 2);
  x.since_ms = reply_int(e[6]);
  x.fence = reply_int(e[7]);
  x.ttl = Millis(reply_int(e[8]));
  // Protocol 4 marks a lease kept by --min-hold; anything but a time is not a mark.
  if (size >= 11) {
    x.kept_ms = std::max<int64_t>(0, reply_int(e[9]));
    int64_t code = reply_int(e[10]);
    const std::string& t = e[10].str;
    bool digits =
        !t.empty() && t.size() <= 3 && t.find_first_not_of("0123456789") == std::string::npos;
    if (x.kept_ms > 0 && digits && code <= 255) x.exit_status = static_cast<int>(code);
  }
  // The release after 0.4.0 adds the mode and the done mark.
  if (size >= 13) {
    x.shared = e[11].str == "shared";
    x.done_ms = std::max<int64_t>(0, reply_int(e[12]));
  }
  if (size >= 15) {
    x.info.label = e[13].text();
    parse_slot(e[14], x.slot, x.slot_name);
  }
  // Nested holds (protocol 4, nest.lua): when the holder's release came, and how many.
  if (size >= 17) {
    x.ended_ms = std::max<int64_t>(0, reply_int(e[15]));
    x.nested = static_cast<long>(std::clamp<int64_t>(reply_int(e[16]), 0, 1'000'000'000));
  }
  return x;
}

std::vector<Holder> parse_holders(const Reply& r) {
  std::vector<Holder> out;
  for (auto& h : r.as_array("a list of holders")) {
    auto& e = h.as_array("a holder record", 9);
    out.push_back(parse_holder(e.data(), e.size()));
  }
  return out;
}

std::vector<Waiter> parse_waiters(const Reply& r) {
  std::vector<Waiter> out;
  for (auto& w : r.as_array("a list of waiters")) {
    auto& f = w.as_array("a waiter record", 7);
    Waiter x;
    x.token = f[0].text();
    x.lease_left = Millis(reply_int(f[1]));
    x.info = info_from(&f[2]);
    x.since_ms = reply_int(f[6]);
    x.shared = f.size() >= 8 && f[7].str == "shared";
    if (f.size() >= 10) {
      x.info.label = f[8].text();
      x.priority = static_cast<int>(std::clamp<int64_t>(reply_int(f[9]), -1000, 1000));
    }
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace

AcquireReply parse_acquire(const Reply& r, int limit, bool shared, const std::string& key,
                           const std::string& pool) {
  auto& e = r.as_array("an acquire reply", 2);
  const std::string& tag = e[0].as_string("an acquire status");
  AcquireReply a;
  if (tag == "OK") {
    if (e.size() < 3) throw_protocol("short acquire reply");
    a.state = AcquireReply::State::Acquired;
    a.fence = reply_int(e[1]);
    a.ttl = Millis(reply_int(e[2]));
    if (e.size() > 3) a.now_ms = reply_int(e[3]);
    if (e.size() > 4) parse_slot(e[4], a.slot, a.slot_name);
  } else if (tag == "SUPERSEDED") {
    a.state = AcquireReply::State::Superseded;
    a.by = e[1].text();
  } else if (tag == "TAKEN" || tag == "QUEUED" || tag == "DONE" || tag == "FULL") {
    a.state = tag == "TAKEN"    ? AcquireReply::State::Taken
              : tag == "QUEUED" ? AcquireReply::State::Queued
              : tag == "DONE"   ? AcquireReply::State::Done
                                : AcquireReply::State::Full;
    if (e.size() < 4) throw_protocol("short acquire reply");
    a.position = static_cast<long>(reply_int(e[1]));
    a.free = static_cast<long>(reply_int(e[2]));
    a.holders = parse_holders(e[3]);
    a.holder_count =
        e.size() > 4 ? static_cast<long>(reply_int(e[4])) : static_cast<long>(a.holders.size());
    if (a.state == AcquireReply::State::Taken && e.size() > 5 &&
        e[5].type == Reply::Type::Integer && (e[5].integer == 0 || e[5].integer == 1))
      a.cluster = static_cast<int>(e[5].integer);
    if (a.state == AcquireReply::State::Done && (a.holders.empty() || a.holders[0].done_ms <= 0))
      throw_protocol("a DONE acquire reply without the holder that did it");
  } else if (tag == "MIXED") {
    long stored = static_cast<long>(reply_int(e[1]));
    // The pools' definitions as --limit takes them: a count, or the names
    // (the other holders', protocol 4: the reply's third value).
    std::string mine = pool.empty() ? std::to_string(limit) : pool;
    std::string theirs = std::to_string(stored);
    if (e.size() > 2 && e[2].type == Reply::Type::String && !e[2].str.empty())
      theirs = escape_text(truncate_text(e[2].str, kMaxPoolNames * (kMaxPoolName + 1)));
    if (stored < 0)
      throw_usage(fmt::format(
          "'{}' is held as a shared lock (--shared); --limit {} cannot share it", key, mine));
    if (shared)
      throw_usage(fmt::format("'{}' is a semaphore with --limit {}; --shared cannot share it", key,
                              theirs));
    if (stored == 0)
      throw_usage(fmt::format(
          "'{}' is held as a plain lock (without --limit); --limit {} cannot share it", key, mine));
    if (limit == 0)
      throw_usage(
          fmt::format("'{}' is a semaphore with --limit {}; use the same --limit", key, theirs));
    throw_usage(
        fmt::format("'{}' is a semaphore with --limit {}, not {}: holders of one KEY give "
                    "the same --limit",
                    key, theirs, mine));
  } else if (tag == "GONE") {
    a.state = AcquireReply::State::Gone;
    a.broken = reply_int(e[1]) == 2;
  } else if (tag == "STALE") {
    // Only a late copy of an attempt whose connection is gone gets this.
    throw_protocol("acquire reply for an attempt that is not the newest");
  } else {
    throw_protocol(fmt::format("unexpected acquire status '{}'", escape_text(tag)));
  }
  return a;
}

LockStatus parse_status_reply(const Reply& r) {
  auto& e = r.as_array("a status reply", 5);
  LockStatus s;
  s.limit = static_cast<int>(reply_int(e[0]));
  s.fence = reply_int(e[1]);
  s.now_ms = reply_int(e[2]);
  s.holders = parse_holders(e[3]);
  s.waiters = parse_waiters(e[4]);
  s.holder_count = e.size() > 6 ? static_cast<long>(reply_int(e[5])) : s.holders.size();
  s.waiter_count = e.size() > 6 ? static_cast<long>(reply_int(e[6])) : s.waiters.size();
  if (e.size() > 7 && e[7].type == Reply::Type::Array)
    for (auto& ev : e[7].elements)
      if (Event x = parse_flat_event(ev); x.ms > 0 && s.last.size() < 8) s.last.push_back(x);
  return s;
}

namespace {

// One lock of a 'line' list reply, its 15 values from `f`: limit, counts, then
// what a line shows of the first holder (list.lua).
LockStatus parse_list_line(const Reply* f, int64_t now) {
  LockStatus s;
  s.now_ms = now;
  s.limit = static_cast<int>(std::clamp<int64_t>(reply_int(f[0]), 0, 1'000'000));
  s.holder_count = static_cast<long>(std::max<int64_t>(0, reply_int(f[1])));
  s.waiter_count = static_cast<long>(std::max<int64_t>(0, reply_int(f[2])));
  if (s.holder_count == 0) return s;
  Holder h;
  h.ttl_left = holder_left(f[3]);
  h.info.host = f[4].text();
  h.info.pid = static_cast<long>(reply_int(f[5]));
  h.info.cmd = f[6].text();
  h.since_ms = reply_int(f[7]);
  h.fence = reply_int(f[8]);
  h.kept_ms = std::max<int64_t>(0, reply_int(f[9]));
  h.shared = f[10].str == "shared";
  h.done_ms = std::max<int64_t>(0, reply_int(f[11]));
  h.info.label = f[12].text();
  h.info.user = f[13].text();
  h.nested = static_cast<long>(std::clamp<int64_t>(reply_int(f[14]), 0, 1'000'000'000));
  s.holders.push_back(std::move(h));
  return s;
}

}  // namespace

std::vector<LockStatus> parse_list_reply(const Reply& r, size_t n, ListReply kind) {
  auto& e = r.as_array("a list reply", 2);
  const size_t end = e.size() - 1;  // the server time is last
  const int64_t now = reply_int(e.back());
  std::vector<LockStatus> out;
  if (kind == ListReply::Line) {
    constexpr size_t kStride = 15;
    if (e.size() != n * kStride + 1) throw_protocol("a list reply of another length");
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) out.push_back(parse_list_line(&e[i * kStride], now));
    return out;
  }
  // Full: a status reply, {} (free) or a plain holder's flat record per lock.
  constexpr size_t kFlat = 19;  // the tag 1, the fence counter, 17 holder values
  out.reserve(std::min(n, end));
  for (size_t i = 0; i < end;) {
    if (out.size() == n) throw_protocol("a list reply of another length");
    if (e[i].type == Reply::Type::Integer && e[i].integer == 1) {
      if (end - i < kFlat) throw_protocol("a list reply of another length");
      LockStatus& s = out.emplace_back();
      s.now_ms = now;
      s.fence = reply_int(e[i + 1]);
      s.holders.push_back(parse_holder(&e[i + 2], kFlat - 2));
      s.holder_count = 1;
      i += kFlat;
    } else if (e[i].type == Reply::Type::Array && e[i].elements.empty()) {
      out.emplace_back().now_ms = now;  // free
      ++i;
    } else {
      out.push_back(parse_status_reply(e[i++]));
    }
  }
  if (out.empty()) throw_protocol("a list reply of another length");
  return out;
}

ReleaseReply parse_release(const Reply& r) {
  auto& e = r.as_array("a release reply", 1);
  ReleaseReply x;
  switch (reply_int(e[0])) {
    case 1:
      x.state = ReleaseReply::State::Released;
      break;
    case 2:
      x.state = ReleaseReply::State::KeptForMinHold;
      x.left = Millis(e.size() > 1 ? reply_int(e[1]) : 0);
      break;
    case 3:
      x.state = ReleaseReply::State::AlreadyReleased;
      break;
    case 4:
      x.state = ReleaseReply::State::KeptAsDone;
      x.left = Millis(e.size() > 1 ? reply_int(e[1]) : 0);
      break;
    case 5:
      x.state = ReleaseReply::State::KeptForNested;
      x.left = Millis(e.size() > 1 ? reply_int(e[1]) : 0);
      x.nested =
          e.size() > 2 ? static_cast<long>(std::clamp<int64_t>(reply_int(e[2]), 0, 1 << 30)) : 0;
      break;
    default:
      x.state = ReleaseReply::State::NotHeld;
  }
  return x;
}

}  // namespace rlock
