#include "lock/lock.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>

#include "core/duration.h"
#include "core/text.h"
#include "lock/holder_token.h"
#include "lock/scripts.h"
#include "proc/procinfo.h"

namespace rlock {

namespace {

int64_t num(const Reply& r) {
  if (r.type == Reply::Type::Integer) return r.integer;
  if (r.type == Reply::Type::String && !r.str.empty()) {
    try {
      return std::stoll(r.str);
    } catch (...) {
    }
  }
  return 0;
}

HolderInfo info_from(const Reply* e) {
  HolderInfo i;
  i.host = e[0].text();
  i.pid = static_cast<long>(num(e[1]));
  i.user = e[2].text();
  i.cmd = e[3].text();
  return i;
}

// One holder record, its `size` values from `e` (at least 9): token, pttl, host,
// pid, user, cmd, since, fence, ttl, then what later protocols added.
Holder parse_holder(const Reply* e, size_t size) {
  Holder x;
  x.token = e[0].text();
  x.ttl_left = Millis(num(e[1]));
  x.info = info_from(e + 2);
  x.since_ms = num(e[6]);
  x.fence = num(e[7]);
  x.ttl = Millis(num(e[8]));
  // Protocol 4 marks a lease kept by --min-hold; anything but a time is not a mark.
  if (size >= 11) {
    x.kept_ms = std::max<int64_t>(0, num(e[9]));
    int64_t code = num(e[10]);
    const std::string& t = e[10].str;
    bool digits =
        !t.empty() && t.size() <= 3 && t.find_first_not_of("0123456789") == std::string::npos;
    if (x.kept_ms > 0 && digits && code <= 255) x.exit_status = static_cast<int>(code);
  }
  // The release after 0.4.0 adds the mode and the done mark.
  if (size >= 13) {
    x.shared = e[11].str == "shared";
    x.done_ms = std::max<int64_t>(0, num(e[12]));
  }
  if (size >= 15) {
    x.info.label = e[13].text();
    x.slot = std::clamp<int64_t>(num(e[14]), 0, 1'000'000);
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
    x.lease_left = Millis(num(f[1]));
    x.info = info_from(&f[2]);
    x.since_ms = num(f[6]);
    x.shared = f.size() >= 8 && f[7].str == "shared";
    if (f.size() >= 10) {
      x.info.label = f[8].text();
      x.priority = static_cast<int>(std::clamp<int64_t>(num(f[9]), -1000, 1000));
    }
    out.push_back(std::move(x));
  }
  return out;
}

AcquireReply parse_acquire(const Reply& r, int limit, bool shared, const std::string& key) {
  auto& e = r.as_array("an acquire reply", 2);
  const std::string& tag = e[0].as_string("an acquire status");
  AcquireReply a;
  if (tag == "OK") {
    if (e.size() < 3) throw_protocol("short acquire reply");
    a.state = AcquireReply::State::Acquired;
    a.fence = num(e[1]);
    a.ttl = Millis(num(e[2]));
    if (e.size() > 3) a.now_ms = num(e[3]);
    if (e.size() > 4) a.slot = static_cast<long>(std::clamp<int64_t>(num(e[4]), 0, 1'000'000));
  } else if (tag == "SUPERSEDED") {
    a.state = AcquireReply::State::Superseded;
    a.by = e[1].text();
  } else if (tag == "TAKEN" || tag == "QUEUED" || tag == "DONE" || tag == "FULL") {
    a.state = tag == "TAKEN"    ? AcquireReply::State::Taken
              : tag == "QUEUED" ? AcquireReply::State::Queued
              : tag == "DONE"   ? AcquireReply::State::Done
                                : AcquireReply::State::Full;
    if (e.size() < 4) throw_protocol("short acquire reply");
    a.position = static_cast<long>(num(e[1]));
    a.free = static_cast<long>(num(e[2]));
    a.holders = parse_holders(e[3]);
    a.holder_count =
        e.size() > 4 ? static_cast<long>(num(e[4])) : static_cast<long>(a.holders.size());
    if (a.state == AcquireReply::State::Taken && e.size() > 5 &&
        e[5].type == Reply::Type::Integer && (e[5].integer == 0 || e[5].integer == 1))
      a.cluster = static_cast<int>(e[5].integer);
    if (a.state == AcquireReply::State::Done && (a.holders.empty() || a.holders[0].done_ms <= 0))
      throw_protocol("a DONE acquire reply without the holder that did it");
  } else if (tag == "MIXED") {
    long stored = static_cast<long>(num(e[1]));
    if (stored < 0)
      throw_usage(fmt::format(
          "'{}' is held as a shared lock (--shared); --limit {} cannot share it", key, limit));
    if (shared)
      throw_usage(fmt::format("'{}' is a semaphore with --limit {}; --shared cannot share it", key,
                              stored));
    if (stored == 0)
      throw_usage(
          fmt::format("'{}' is held as a plain lock (without --limit); --limit {} cannot share it",
                      key, limit));
    if (limit == 0)
      throw_usage(
          fmt::format("'{}' is a semaphore with --limit {}; use the same --limit", key, stored));
    throw_usage(fmt::format("'{}' is a semaphore with --limit {}, not {}", key, stored, limit));
  } else if (tag == "GONE") {
    a.state = AcquireReply::State::Gone;
    a.broken = num(e[1]) == 2;
  } else if (tag == "STALE") {
    // Only a late copy of an attempt whose connection is gone gets this.
    throw_protocol("acquire reply for an attempt that is not the newest");
  } else {
    throw_protocol(fmt::format("unexpected acquire status '{}'", escape_text(tag)));
  }
  return a;
}

// Runs a script and hands its reply to `parse`; parse errors become the outcome.
template <class T>
void run(Client& c, const Script& s, const LockNames& n, const Args& argv,
         std::function<T(const Reply&)> parse, Done<T> done, Millis timeout = Millis(0),
         const std::vector<ScriptCall>& undo = {}, const std::string& node = {}) {
  run_script(
      c, s, keys_of(n), argv,
      [parse = std::move(parse), done = std::move(done), name = s.name](Result r) {
        Outcome<T> o;
        try {
          o.value = parse(expect_ok(r, fmt::format("{} script", name)));
          if constexpr (requires(T & t) { t.node = r.node; }) o.value.node = r.node;
        } catch (const Error& e) {
          o.error = e;
        }
        done(std::move(o));
      },
      timeout, undo, node);
}

}  // namespace

HolderInfo local_holder_info(std::string cmd, long pid) {
  HolderInfo i;
  i.host = host_name();
  i.user = login_name_from_env();
  // Shown to people, and sent back to every waiter: a long command line must
  // not make the lock's replies large.
  i.cmd = truncate_text(cmd, kMaxHolderField);
  i.pid = pid;
  return i;
}

LockStatus parse_status_reply(const Reply& r) {
  auto& e = r.as_array("a status reply", 5);
  LockStatus s;
  s.limit = static_cast<int>(num(e[0]));
  s.fence = num(e[1]);
  s.now_ms = num(e[2]);
  s.holders = parse_holders(e[3]);
  s.waiters = parse_waiters(e[4]);
  s.holder_count = e.size() > 6 ? static_cast<long>(num(e[5])) : s.holders.size();
  s.waiter_count = e.size() > 6 ? static_cast<long>(num(e[6])) : s.waiters.size();
  if (e.size() > 7 && e[7].type == Reply::Type::Array)
    for (auto& ev : e[7].elements)
      if (Event x = parse_flat_event(ev); x.ms > 0 && s.last.size() < 8) s.last.push_back(x);
  return s;
}

namespace {

// One lock of a 'line' list reply, its 13 values from `f`: limit, counts, then
// what a line shows of the first holder (list.lua).
LockStatus parse_list_line(const Reply* f, int64_t now) {
  LockStatus s;
  s.now_ms = now;
  s.limit = static_cast<int>(std::clamp<int64_t>(num(f[0]), 0, 1'000'000));
  s.holder_count = static_cast<long>(std::max<int64_t>(0, num(f[1])));
  s.waiter_count = static_cast<long>(std::max<int64_t>(0, num(f[2])));
  if (s.holder_count == 0) return s;
  Holder h;
  h.ttl_left = Millis(num(f[3]));
  h.info.host = f[4].text();
  h.info.pid = static_cast<long>(num(f[5]));
  h.info.cmd = f[6].text();
  h.since_ms = num(f[7]);
  h.fence = num(f[8]);
  h.kept_ms = std::max<int64_t>(0, num(f[9]));
  h.shared = f[10].str == "shared";
  h.done_ms = std::max<int64_t>(0, num(f[11]));
  h.info.label = f[12].text();
  s.holders.push_back(std::move(h));
  return s;
}

}  // namespace

std::vector<LockStatus> parse_list_reply(const Reply& r, size_t n, ListReply kind) {
  auto& e = r.as_array("a list reply", 2);
  const size_t end = e.size() - 1;  // the server time is last
  const int64_t now = num(e.back());
  std::vector<LockStatus> out;
  if (kind == ListReply::Line) {
    constexpr size_t kStride = 13;
    if (e.size() != n * kStride + 1) throw_protocol("a list reply of another length");
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) out.push_back(parse_list_line(&e[i * kStride], now));
    return out;
  }
  // Full: a status reply, {} (free) or a plain holder's flat record per lock.
  constexpr size_t kFlat = 17;  // the tag 1, the fence counter, 15 holder values
  out.reserve(std::min(n, end));
  for (size_t i = 0; i < end;) {
    if (out.size() == n) throw_protocol("a list reply of another length");
    if (e[i].type == Reply::Type::Integer && e[i].integer == 1) {
      if (end - i < kFlat) throw_protocol("a list reply of another length");
      LockStatus& s = out.emplace_back();
      s.now_ms = now;
      s.fence = num(e[i + 1]);
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
                         bool with_since) {
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
  std::string lease = fmt::format("lease runs out in {} unless renewed", format_duration(left));
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
            fmt::format("free again in {}", format_duration(left))};
  std::string since =
      h.since_ms > 0 && with_since ? " since " + utc_iso(h.since_ms).substr(11, 8) + "Z" : "";
  // A label says what the job is (a CI job's URL): it stands for host, pid and command.
  if (!h.info.label.empty())
    return {
        fmt::format("held{} by {}{}", h.shared ? " shared" : "", escape_text(h.info.label), since),
        lease};
  return {fmt::format("held{} by {} pid {}{}{}", h.shared ? " shared" : "",
                      escape_text(h.info.host), h.info.pid, cmd, since),
          lease};
}

std::string describe_holders(const AcquireReply& a, int limit, Millis elapsed, size_t cmd_columns) {
  HolderWords w = holder_words(a, limit, elapsed, cmd_columns);
  return w.lease.empty() ? w.who : w.who + ", " + w.lease;
}

std::string new_token() {
  return random_hex(16);
}

std::string Lock::fresh_token(long /*holder_pid*/) const {
  return new_token();
}

void SingleLock::acquire(const std::string& token, Millis ttl, bool queue, const HolderInfo& info,
                         long attempt, Done<AcquireReply> done, Millis timeout) {
  acquire_in(queue ? "wait" : "try", token, ttl, info, attempt, std::move(done), timeout);
}

void SingleLock::regrant(const std::string& token, Millis ttl, const HolderInfo& info,
                         Done<AcquireReply> done, Millis timeout) {
  acquire_in("regrant", token, ttl, info, 0, std::move(done), timeout);
}

void SingleLock::acquire_in(const char* mode, const std::string& token, Millis ttl,
                            const HolderInfo& info, long attempt, Done<AcquireReply> done,
                            Millis timeout) {
  Args argv{token,
            std::to_string(ttl.count()),
            std::to_string(limit_),
            mode,
            std::to_string(kQueueLease.count()),
            names_.channel,
            info.host,
            std::to_string(info.pid),
            info.user,
            info.cmd,
            std::to_string(attempt),
            shared_ ? "shared" : "",
            info.label,
            std::to_string(line_.priority),
            line_.supersede ? "1" : "",
            std::to_string(line_.max_waiters),
            std::to_string(history_)};
  int limit = limit_;
  bool shared = shared_;
  std::string key = names_.key;
  run<AcquireReply>(
      client_, acquire_script(), names_, argv,
      [limit, shared, key](const Reply& r) { return parse_acquire(r, limit, shared, key); },
      std::move(done), timeout,
      // A timed-out attempt may still run on the server: its undo goes right
      // behind it on the same connection, and touches nothing a later attempt
      // of this token did.
      {ScriptCall{&undo_script(),
                  {token, std::to_string(attempt), names_.channel, std::to_string(history_)}}});
}

Done<ExtendReply> confirmed_renewal(Client& client, Done<ExtendReply> done) {
  Client* c = &client;
  return [c, done = std::move(done)](Outcome<ExtendReply> o) mutable {
    if (o.error || !o.value.held) return done(std::move(o));
    std::string node = o.value.node;
    c->confirm_master(node, [node, o, done = std::move(done)](Outcome<bool> ok) mutable {
      if (ok.error) {
        o.error = Error(ErrorKind::Unavailable,
                        fmt::format("renewed on {}, but no sentinel confirmed it is still the "
                                    "master: {}",
                                    escape_text(node), ok.error->what()));
      } else if (!ok.value) {
        o.error = Error(ErrorKind::Unavailable,
                        fmt::format("renewed on {}, which the sentinels no longer name as the "
                                    "master (failover): the renewal does not count",
                                    escape_text(node)));
      }
      done(std::move(o));
    });
  };
}

void SingleLock::extend(const std::string& token, Millis ttl, Done<ExtendReply> done,
                        Millis timeout) {
  run<ExtendReply>(
      client_, extend_script(), names_,
      {token, std::to_string(ttl.count()), std::to_string(history_), line_.supersede ? "1" : ""},
      [](const Reply& r) {
        auto& e = r.as_array("an extend reply", 1);
        ExtendReply x;
        x.held = num(e[0]) == 1;
        if (x.held && e.size() >= 3) {
          x.ttl = Millis(num(e[1]));
          x.fence = num(e[2]);
        }
        if (x.held && e.size() >= 4) x.superseded_by = e[3].as_string("who supersedes it");
        if (!x.held && e.size() >= 2) {
          x.released = num(e[1]) == 1;
          x.broken = num(e[1]) == 2;
        }
        return x;
      },
      confirmed_renewal(client_, std::move(done)), timeout);
}

namespace {

ReleaseReply parse_release(const Reply& r) {
  auto& e = r.as_array("a release reply", 1);
  ReleaseReply x;
  switch (num(e[0])) {
    case 1:
      x.state = ReleaseReply::State::Released;
      break;
    case 2:
      x.state = ReleaseReply::State::KeptForMinHold;
      x.left = Millis(e.size() > 1 ? num(e[1]) : 0);
      break;
    case 3:
      x.state = ReleaseReply::State::AlreadyReleased;
      break;
    case 4:
      x.state = ReleaseReply::State::KeptAsDone;
      x.left = Millis(e.size() > 1 ? num(e[1]) : 0);
      break;
    case 5:
      x.state = ReleaseReply::State::KeptForNested;
      x.left = Millis(e.size() > 1 ? num(e[1]) : 0);
      x.nested = e.size() > 2 ? static_cast<long>(std::clamp<int64_t>(num(e[2]), 0, 1 << 30)) : 0;
      break;
    default:
      x.state = ReleaseReply::State::NotHeld;
  }
  return x;
}

// One release try; on a broken connection, another on a new one after a
// short pause, until `until`.
void release_until(Client& c, const LockNames& n, Args argv, Clock::time_point until, int tries,
                   Done<ReleaseReply> done) {
  Millis left = std::chrono::duration_cast<Millis>(until - Clock::now());
  run<ReleaseReply>(
      c, release_script(), n, argv, parse_release,
      [&c, n, argv, until, tries, done = std::move(done)](Outcome<ReleaseReply> o) mutable {
        Millis pause = std::min(Millis(50) * (1 << std::min(tries, 4)), Millis(500));
        bool retry =
            o.error && o.error->kind() == ErrorKind::Unavailable && Clock::now() + pause < until;
        if (!retry) return done(std::move(o));
        c.loop().after(pause, [&c, n, argv, until, tries, done = std::move(done)]() mutable {
          release_until(c, n, std::move(argv), until, tries + 1, std::move(done));
        });
      },
      std::max(left, Millis(1)));
}

}  // namespace

void SingleLock::release(const std::string& token, Millis min_hold, Done<ReleaseReply> done,
                         Millis timeout, int exit_status, Millis done_for,
                         const std::string& lost) {
  Millis window = timeout.count() > 0 ? timeout : client_.command_timeout();
  // The tombstone outlives every retry of this release.
  Millis tomb = std::min(window + Millis(5000), Millis(86'400'000));
  // The id tells a retry of this release from another release of the token.
  Args argv{token,
            std::to_string(min_hold.count()),
            names_.channel,
            std::to_string(tomb.count()),
            new_token(),
            exit_status >= 0 && exit_status <= 255 ? std::to_string(exit_status) : "",
            std::to_string(done_for.count()),
            std::to_string(history_),
            truncate_text(lost, 512)};
  release_until(client_, names_, std::move(argv), later(Clock::now(), window), 0, std::move(done));
}

void SingleLock::give_back(const std::string& token, Done<ReleaseReply> done, Millis timeout) {
  // No release id: release.lua then writes no tombstone.
  Args argv{token, "0", names_.channel, "0", "", "", "0", std::to_string(history_), ""};
  release_until(client_, names_, std::move(argv), later(Clock::now(), timeout), 0, std::move(done));
}

void SingleLock::confirm_master(const std::string& token, const AcquireReply& granted,
                                Done<bool> done, Millis cleanup) {
  std::string node = granted.node;
  // Captured by value: the callback may outlive this Lock (not the Client).
  Client* c = &client_;
  LockNames n = names_;
  client_.confirm_master(
      node, [c, n, token, node, cleanup, done = std::move(done)](Outcome<bool> o) mutable {
        if (o.error || o.value) return done(std::move(o));
        // Void: released where it was made (token-checked, one try within
        // `cleanup`), whatever the release says; the lease expires there anyway.
        Millis tomb = cleanup + Millis(5000);
        Args argv{token, "0", n.channel, std::to_string(tomb.count()), new_token()};
        run<ReleaseReply>(
            *c, release_script(), n, argv, parse_release,
            [done = std::move(done)](Outcome<ReleaseReply>) {
              done(Outcome<bool>{std::nullopt, false});
            },
            std::max(cleanup, Millis(1)), {}, node);
      });
}

void SingleLock::leave(const std::string& token, Done<bool> done, Millis timeout) {
  run<bool>(
      client_, leave_script(), names_, {token, names_.channel, std::to_string(history_)},
      [](const Reply& r) { return r.as_int("a leave reply") == 1; }, std::move(done), timeout);
}

void SingleLock::status(Done<LockStatus> done) {
  Args argv{std::to_string(kStatusRecords)};
  if (!status_events()) argv.push_back("0");
  run<LockStatus>(client_, status_script(), names_, argv, parse_status_reply, std::move(done));
}

// How long a broken holder's token keeps its tombstone ("broken", break.lua):
// longer than any renewal of the holder still in flight when the break reached
// this master, so that quorum mode does not grant the token here again.
constexpr Millis kBreakTombstone{30'000};

void SingleLock::break_lock(Done<long> done) {
  // Who breaks it, for the history: the operator's user, host and pid.
  HolderInfo me = local_holder_info("rlock break", static_cast<long>(getpid()));
  std::string by = fmt::format("{}@{} pid {}", me.user, me.host, me.pid);
  run<long>(
      client_, break_script(), names_,
      {names_.channel, std::to_string(history_), by, std::to_string(kBreakTombstone.count())},
      [](const Reply& r) { return static_cast<long>(r.as_int("a break reply")); }, std::move(done));
}

void SingleLock::forget(Done<ForgetReply> done) {
  run<ForgetReply>(
      client_, forget_script(), names_, {},
      [](const Reply& r) {
        auto& e = r.as_array("a forget reply", 1);
        ForgetReply f;
        long long n = e[0].as_int("a forget status");
        if (n == 1) {
          f.state = ForgetReply::State::Removed;
        } else if (n < 0) {
          f.state = ForgetReply::State::InUse;
          f.holders = e.size() > 1 ? static_cast<long>(num(e[1])) : 0;
          f.waiters = e.size() > 2 ? static_cast<long>(num(e[2])) : 0;
        }
        return f;
      },
      std::move(done));
}

void SingleLock::commit_fence(const std::string& token, int64_t fence, Done<FenceReply> done,
                              Millis timeout) {
  run<FenceReply>(
      client_, fence_script(), names_, {token, std::to_string(fence)},
      [](const Reply& r) {
        auto& e = r.as_array("a fence reply", 2);
        FenceReply f;
        f.counter = static_cast<int64_t>(e[0].as_int("a fence counter"));
        f.held = e[1].as_int("a fence reply's holder flag") == 1;
        return f;
      },
      std::move(done), timeout);
}

void SingleLock::confirm_replicas(int replicas, Millis budget, const std::string& what,
                                  Done<bool> done) {
  // The server gives up a little before the client does, so that the answer
  // (how many confirmed) arrives instead of a timeout.
  Millis server = std::max(Millis(1), budget - std::min(budget / 4, Millis(500)));
  std::string key = names_.key;
  client_.command(
      {"WAIT", std::to_string(replicas), std::to_string(server.count())},
      [replicas, server, what, key, done = std::move(done)](Result r) {
        Outcome<bool> o;
        try {
          long long n = expect_ok(r, "WAIT").as_int("a WAIT reply");
          if (n < replicas)
            throw Error(
                ErrorKind::Unavailable,
                fmt::format("only {} of {} replicas confirmed {} of '{}' within {} "
                            "(--sync-replicas)",
                            std::max(n, 0LL), replicas, what, key, format_duration(server)));
          o.value = true;
        } catch (const Error& e) {
          o.error = e;
        }
        done(std::move(o));
      },
      // On the connection that wrote the lease: WAIT counts its writes.
      CallOptions{budget, {}, names_.lock, {}});
}

}  // namespace rlock
