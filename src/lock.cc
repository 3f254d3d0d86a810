#include "lock.h"

#include <pwd.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <sys/random.h>
#endif

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "scripts.h"
#include "text.h"

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

HolderInfo info_from(const std::vector<Reply>& e, size_t at) {
  HolderInfo i;
  i.host = e[at].text();
  i.pid = static_cast<long>(num(e[at + 1]));
  i.user = e[at + 2].text();
  i.cmd = e[at + 3].text();
  return i;
}

std::vector<Holder> parse_holders(const Reply& r) {
  std::vector<Holder> out;
  for (auto& h : r.as_array("a list of holders")) {
    auto& e = h.as_array("a holder record", 9);
    Holder x;
    x.token = e[0].text();
    x.ttl_left = Millis(num(e[1]));
    x.info = info_from(e, 2);
    x.since_ms = num(e[6]);
    x.fence = num(e[7]);
    x.ttl = Millis(num(e[8]));
    out.push_back(std::move(x));
  }
  return out;
}

// Runs a script and hands its reply to `parse`; parse errors become the outcome.
template <class T>
void run(Client& c, const Script& s, const LockNames& n, const Args& argv,
         std::function<T(const Reply&)> parse, Done<T> done, Millis timeout = Millis(0),
         const std::vector<ScriptCall>& undo = {}) {
  run_script(
      c, s, keys_of(n), argv,
      [parse = std::move(parse), done = std::move(done), name = s.name](Result r) {
        Outcome<T> o;
        try {
          o.value = parse(expect_ok(r, fmt::format("{} script", name)));
        } catch (const Error& e) {
          o.error = e;
        }
        done(std::move(o));
      },
      timeout, undo);
}

}  // namespace

HolderInfo local_holder_info(std::string cmd, long pid) {
  HolderInfo i;
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  i.host = host;
  if (passwd* pw = getpwuid(geteuid()))
    i.user = pw->pw_name;
  else
    i.user = std::to_string(geteuid());
  i.cmd = std::move(cmd);
  i.pid = pid;
  return i;
}

std::string new_token() {
  unsigned char b[16];
  if (getentropy(b, sizeof b) != 0)
    throw Error(ErrorKind::Protocol, fmt::format("cannot get random bytes: {}", strerror(errno)));
  std::string out;
  for (unsigned char c : b) out += fmt::format("{:02x}", c);
  return out;
}

void Lock::acquire(const std::string& token, Millis ttl, bool queue, const HolderInfo& info,
                   Done<AcquireReply> done, Millis timeout) {
  Args argv{token,
            std::to_string(ttl.count()),
            std::to_string(limit_),
            queue ? "wait" : "try",
            std::to_string(kQueueLease.count()),
            names_.channel,
            info.host,
            std::to_string(info.pid),
            info.user,
            info.cmd};
  int limit = limit_;
  std::string key = names_.key;
  run<AcquireReply>(
      client_, acquire_script(), names_, argv,
      [limit, key](const Reply& r) {
        auto& e = r.as_array("an acquire reply", 2);
        const std::string& tag = e[0].as_string("an acquire status");
        AcquireReply a;
        if (tag == "OK") {
          a.state = AcquireReply::State::Acquired;
          a.fence = num(e[1]);
          if (e.size() < 3) throw_protocol("short acquire reply");
          a.ttl = Millis(num(e[2]));
        } else if (tag == "TAKEN" || tag == "QUEUED") {
          a.state = tag == "TAKEN" ? AcquireReply::State::Taken : AcquireReply::State::Queued;
          if (e.size() < 4) throw_protocol("short acquire reply");
          a.position = static_cast<long>(num(e[1]));
          a.free = static_cast<long>(num(e[2]));
          a.holders = parse_holders(e[3]);
        } else if (tag == "MIXED") {
          long stored = static_cast<long>(num(e[1]));
          if (stored == 0)
            throw_usage(
                fmt::format("'{}' is held as a plain lock (without --limit); --limit {} "
                            "cannot share it",
                            key, limit));
          if (limit == 0)
            throw_usage(fmt::format("'{}' is a semaphore with --limit {}; use the same --limit",
                                    key, stored));
          throw_usage(
              fmt::format("'{}' is a semaphore with --limit {}, not {}", key, stored, limit));
        } else {
          throw_protocol(fmt::format("unexpected acquire status '{}'", escape_text(tag)));
        }
        return a;
      },
      std::move(done), timeout,
      // A timed-out acquire may still run on the server: release and leave
      // right behind it, on the same connection, so nothing is orphaned.
      {ScriptCall{&release_script(), {token, "0", names_.channel}},
       ScriptCall{&leave_script(), {token, names_.channel}}});
}

void Lock::extend(const std::string& token, Millis ttl, Done<ExtendReply> done, Millis timeout) {
  run<ExtendReply>(
      client_, extend_script(), names_, {token, std::to_string(ttl.count())},
      [](const Reply& r) {
        auto& e = r.as_array("an extend reply", 1);
        ExtendReply x;
        x.held = num(e[0]) == 1;
        if (x.held && e.size() >= 3) {
          x.ttl = Millis(num(e[1]));
          x.fence = num(e[2]);
        }
        return x;
      },
      std::move(done), timeout);
}

void Lock::release(const std::string& token, Millis min_hold, Done<ReleaseReply> done,
                   Millis timeout) {
  run<ReleaseReply>(
      client_, release_script(), names_, {token, std::to_string(min_hold.count()), names_.channel},
      [](const Reply& r) {
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
          default:
            x.state = ReleaseReply::State::NotHeld;
        }
        return x;
      },
      std::move(done), timeout);
}

void Lock::leave(const std::string& token, Done<bool> done) {
  run<bool>(
      client_, leave_script(), names_, {token, names_.channel},
      [](const Reply& r) { return r.as_int("a leave reply") == 1; }, std::move(done));
}

void Lock::status(Done<LockStatus> done) {
  run<LockStatus>(
      client_, status_script(), names_, {},
      [](const Reply& r) {
        auto& e = r.as_array("a status reply", 5);
        LockStatus s;
        s.limit = static_cast<int>(num(e[0]));
        s.fence = num(e[1]);
        s.now_ms = num(e[2]);
        s.holders = parse_holders(e[3]);
        for (auto& w : e[4].as_array("a list of waiters")) {
          auto& f = w.as_array("a waiter record", 7);
          Waiter x;
          x.token = f[0].text();
          x.lease_left = Millis(num(f[1]));
          x.info = info_from(f, 2);
          x.since_ms = num(f[6]);
          s.waiters.push_back(std::move(x));
        }
        return s;
      },
      std::move(done));
}

void Lock::break_lock(Done<long> done) {
  run<long>(
      client_, break_script(), names_, {names_.channel},
      [](const Reply& r) { return static_cast<long>(r.as_int("a break reply")); }, std::move(done));
}

}  // namespace rlock
