#include "lock/layout.h"

#include <fmt/format.h>

#include "core/sha1.h"
#include "core/text.h"
#include "lock/holder_token.h"
#include "lock/script_args.h"
#include "lock/scripts.h"
#include "lock/single.h"
#include "lua_scripts.h"

namespace rlock {

namespace {

// The layouts' scripts are self-contained (no prelude: they share nothing
// with rlock's own protocol) and take one key, the lock's.
template <const std::string_view& Body>
const Script& bare(const char* name, bool read_only = false) {
  static constexpr std::array<char, 40> kSha = sha1_hex(Body);
  static const Script s{name, Body, std::string(kSha.data(), kSha.size()), read_only};
  return s;
}

struct Scripts {
  const Script &acquire, &extend, &release, &status, &brk;
};

const Scripts& scripts(Layout l) {
  static const Scripts plain{
      bare<lua::kPlainAcquire>("plain_acquire"), bare<lua::kPlainExtend>("plain_extend"),
      bare<lua::kPlainRelease>("plain_release"), bare<lua::kPlainStatus>("plain_status", true),
      bare<lua::kPlainBreak>("plain_break")};
  static const Scripts redisson{bare<lua::kRedissonAcquire>("redisson_acquire"),
                                bare<lua::kRedissonExtend>("redisson_extend"),
                                bare<lua::kRedissonRelease>("redisson_release"),
                                bare<lua::kRedissonStatus>("redisson_status", true),
                                bare<lua::kRedissonBreak>("redisson_break")};
  return l == Layout::Redisson ? redisson : plain;
}

int64_t num(const Reply& r) {
  if (r.type == Reply::Type::Integer) return r.integer;
  if (r.type == Reply::Type::String && !r.str.empty() && r.str.size() < 20) {
    try {
      return std::stoll(r.str);
    } catch (...) {
    }
  }
  return 0;
}

// A layout's holder: its token (plain) or id (Redisson) and lease; no details.
Holder opaque_holder(const Reply& id, int64_t pttl, int64_t holds) {
  Holder h;
  h.token = id.text();
  h.ttl_left = Millis(pttl);
  h.holds = holds;
  h.opaque = true;
  return h;
}

// Redisson's holders: {{id, holds}, ...}.
std::vector<Holder> redisson_holders(const Reply& list, int64_t pttl) {
  std::vector<Holder> out;
  for (auto& r : list.as_array("a list of Redisson holders")) {
    auto& e = r.as_array("a Redisson holder", 2);
    out.push_back(opaque_holder(e[0], pttl, std::max<int64_t>(1, num(e[1]))));
  }
  return out;
}

Error foreign(const LockNames& n, const Reply& type) {
  return Error(ErrorKind::Protocol,
               fmt::format("the Redis key '{}' of '{}' holds a {}, not a --layout {} lock: "
                           "another program uses that name",
                           escape_text(truncate_text(n.lock, 300)), escape_text(n.key),
                           escape_text(truncate_text(type.text(), 32)), layout_name(n.layout)));
}

// `keys`: the lock's, and for a release or renewal its tombstone.
template <class T>
void run_layout_script(Client& c, const Script& s, const Args& keys, const Args& argv,
                       std::function<T(const Reply&)> parse, Done<T> done,
                       Millis timeout = Millis(0), const std::string& node = {}) {
  run_parsed<T>(c, s, keys, argv, std::move(parse), std::move(done), timeout, {}, node);
}

ReleaseReply parse_layout_release(const Reply& r) {
  ReleaseReply x;
  auto& e = r.as_array("a release reply", 1);
  int64_t v = num(e[0]);
  x.state = v == 1   ? ReleaseReply::State::Released
            : v == 3 ? ReleaseReply::State::AlreadyReleased
                     : ReleaseReply::State::NotHeld;
  return x;
}

// The release id (a retry of one release sends the same) and its
// tombstone's life, which outlives every retry.
Args release_args(const LockNames& n, const std::string& token, Millis tomb) {
  // Plain: the payload is the KEY (the seed's service matches the channel; a
  // listener that reads the message finds the same name); Redisson's release
  // script publishes its own unlock message, "0".
  Millis life = std::min(tomb, Millis(86'400'000));
  if (n.layout == Layout::Plain)
    return PlainReleaseArgs{.token = token,
                            .channel = n.channel,
                            .payload = n.key,
                            .tombstone = life,
                            .release_id = new_token()}
        .to_argv();
  return RedissonReleaseArgs{
      .id = token, .channel = n.channel, .tombstone = life, .release_id = new_token()}
      .to_argv();
}

}  // namespace

std::string layout_tombstone(const LockNames& n, const std::string& token) {
  // The hash tag is the lock key itself (KEY and PREFIX have no braces), so
  // the tombstone is in the lock's Cluster slot and a script may touch both.
  if (n.layout == Layout::Redisson) return "redisson_unlock_latch:{" + n.lock + "}:" + token;
  return n.prefix + "rlock-released:{" + n.lock + "}:" + token;
}

std::string LayoutLock::fresh_token(long holder_pid) const {
  // Bound to its holder (run: rlock itself; acquire: the caller, or
  // --while-pid's PID), which a nested run must find among its ancestors
  // (verify_held): the layouts keep nothing else of a holder.
  return bound_token(layout(), holder_pid);
}

void LayoutLock::do_acquire(const std::string& token, Millis ttl, bool /*queue*/,
                            const HolderInfo& /*info*/, long /*attempt*/, Done<AcquireReply> done,
                            Millis timeout) {
  acquired_ttl_ = ttl;
  LockNames n = names_;
  run_layout_script<AcquireReply>(
      client(), scripts(layout()).acquire, {names_.lock},
      LayoutAcquireArgs{.token = token, .ttl = ttl}.to_argv(),
      [n](const Reply& r) {
        auto& e = r.as_array("an acquire reply", 2);
        const std::string& tag = e[0].as_string("an acquire status");
        AcquireReply a;
        if (tag == "OK") {
          a.state = AcquireReply::State::Acquired;
          a.ttl = Millis(num(e[1]));
        } else if (tag == "TAKEN" && n.layout == Layout::Plain && e.size() >= 3) {
          a.state = AcquireReply::State::Taken;
          a.holders.push_back(opaque_holder(e[1], num(e[2]), 0));
          a.holder_count = 1;
        } else if (tag == "TAKEN" && n.layout == Layout::Redisson && e.size() >= 4) {
          a.state = AcquireReply::State::Taken;
          a.holders = redisson_holders(e[1], num(e[3]));
          a.holder_count = static_cast<long>(std::max<int64_t>(num(e[2]), 1));
        } else if (tag == "FOREIGN") {
          throw foreign(n, e[1]);
        } else {
          throw_protocol(fmt::format("unexpected acquire status '{}'", escape_text(tag)));
        }
        return a;
      },
      std::move(done), timeout);
}

void LayoutLock::do_extend(const std::string& token, Millis ttl, Done<ExtendReply> done,
                           Millis timeout) {
  if (ttl.count() == 0) ttl = acquired_ttl_;
  std::function<ExtendReply(const Reply&)> parse = [](const Reply& r) {
    auto& e = r.as_array("an extend reply", 1);
    ExtendReply x;
    x.held = num(e[0]) == 1 && e.size() >= 2;
    if (x.held) x.ttl = Millis(num(e[1]));
    x.released = !x.held && e.size() >= 2 && num(e[1]) == 1;
    return x;
  };
  // The lock's key alone, as the other tool renews: while its Cluster slot
  // is migrated, a script that also declares the tombstone (which does not
  // exist during a hold) is answered TRYAGAIN until the migration ends, and
  // the lease would run out. Only a renewal that finds the token gone asks
  // again with the tombstone, to tell a release with the token from a loss.
  const Script* s = &scripts(layout()).extend;
  Client* c = &client();
  Args argv = LayoutExtendArgs{.token = token, .ttl = ttl}.to_argv();
  Args both{names_.lock, layout_tombstone(names_, token)};
  run_layout_script<ExtendReply>(
      client(), *s, {names_.lock}, argv, parse,
      [c, s, argv, both, parse, timeout,
       done = confirmed_renewal(client(), std::move(done))](Outcome<ExtendReply> o) mutable {
        if (o.error || o.value.held) return done(std::move(o));
        run_layout_script<ExtendReply>(*c, *s, both, argv, parse, std::move(done), timeout);
      },
      timeout);
}

// A release whose connection broke is tried again on a new one until the
// window closes, with the same release id: a retry whose first try did
// release finds that try's tombstone (layout_tombstone) and says so.
void LayoutLock::do_release(const std::string& token, Millis /*min_hold*/, Done<ReleaseReply> done,
                            Millis timeout, int /*exit_status*/, Millis /*done_for*/,
                            const std::string& /*lost*/) {
  Millis window = timeout.count() > 0 ? timeout : client().command_timeout();
  auto until = later(Clock::now(), window);
  struct Try {
    Client* c;
    const Script* s;
    Args keys, argv;
    Clock::time_point until;
    void go(int tries, Done<ReleaseReply> done) const {
      Millis left = std::chrono::duration_cast<Millis>(until - Clock::now());
      Try self = *this;
      run_layout_script<ReleaseReply>(
          *c, *s, keys, argv, parse_layout_release,
          [self, tries, done = std::move(done)](Outcome<ReleaseReply> o) mutable {
            Millis pause = std::min(Millis(50) * (1 << std::min(tries, 4)), Millis(500));
            if (!o.error || o.error->kind() != ErrorKind::Unavailable ||
                Clock::now() + pause >= self.until)
              return done(std::move(o));
            self.c->loop().after(pause, [self, tries, done = std::move(done)]() mutable {
              self.go(tries + 1, std::move(done));
            });
          },
          std::max(left, Millis(1)));
    }
  };
  Try first{&client(),
            &scripts(layout()).release,
            {names_.lock, layout_tombstone(names_, token)},
            release_args(names_, token, release_tombstone(window)),
            until};
  // One window for every release this one sends (confirmed_release).
  confirmed_release(
      client(),
      [first](Done<ReleaseReply> d) {
        Try t = first;
        t.go(0, std::move(d));
      },
      until, std::move(done));
}

void LayoutLock::confirm_master(const std::string& token, const AcquireReply& granted,
                                Done<bool> done, Millis cleanup) {
  std::string node = granted.node;
  Client* c = &client();
  LockNames n = names_;
  client().confirm_master(
      node, [c, n, token, node, cleanup, done = std::move(done)](Outcome<bool> o) mutable {
        if (o.error || o.value) return done(std::move(o));
        run_layout_script<ReleaseReply>(
            *c, scripts(n.layout).release, {n.lock, layout_tombstone(n, token)},
            release_args(n, token, cleanup + Millis(5000)), parse_layout_release,
            [done = std::move(done)](Outcome<ReleaseReply>) {
              done(Outcome<bool>{std::nullopt, false});
            },
            std::max(cleanup, Millis(1)), node);
      });
}

void LayoutLock::do_leave(const std::string& /*token*/, Done<bool> done, Millis /*timeout*/) {
  // No line: nothing to leave.
  client().loop().after(Millis(0), [done = std::move(done)] {
    done(Outcome<bool>{std::nullopt, false});
  });
}

void LayoutLock::status(Done<LockStatus> done) {
  LockNames n = names_;
  run_layout_script<LockStatus>(
      client(), scripts(layout()).status, {names_.lock}, {},
      [n](const Reply& r) {
        LockStatus s;
        s.layout = n.layout;
        if (n.layout == Layout::Plain) {
          auto& e = r.as_array("a status reply", 3);
          std::string type = e[0].text();
          if (type == "string") {
            s.holders.push_back(opaque_holder(e[1], num(e[2]), 0));
          } else if (type != "none") {
            throw foreign(n, e[0]);
          }
        } else {
          auto& e = r.as_array("a status reply", 4);
          std::string type = e[0].text();
          if (type == "hash") {
            s.holders = redisson_holders(e[1], num(e[3]));
          } else if (type != "none") {
            throw foreign(n, e[0]);
          }
          if (!s.holders.empty()) s.holder_count = std::max<int64_t>(num(e[2]), 1);
        }
        if (s.holder_count == 0) s.holder_count = static_cast<long>(s.holders.size());
        return s;
      },
      std::move(done));
}

void LayoutLock::break_lock(const BreakRequest& req, Done<long> done) {
  // The layouts' break scripts remove the key whoever holds it (break --token
  // is refused with a layout: cli.cc).
  (void)req;
  Args argv = layout() == Layout::Plain
                  ? PlainBreakArgs{.channel = names_.channel, .payload = names_.key}.to_argv()
                  : RedissonBreakArgs{.channel = names_.channel}.to_argv();
  run_layout_script<long>(
      client(), scripts(layout()).brk, {names_.lock}, argv,
      [](const Reply& r) { return static_cast<long>(r.as_int("a break reply")); }, std::move(done));
}

void LayoutLock::forget(Done<ForgetReply> done) {
  // Nothing is kept beside the lock itself: nothing to forget.
  client().loop().after(Millis(0), [done = std::move(done)] {
    done(Outcome<ForgetReply>{std::nullopt, ForgetReply{}});
  });
}

std::vector<std::string> other_layouts_held(Client& client, const std::string& key, Layout layout,
                                            const std::string& prefix) {
  // TYPE and PTTL of every other layout's key, sent together: one round trip
  // (in a Cluster the keys may be on different nodes: one each, at once).
  struct Look {
    LockNames n;
    std::string type, pttl;
  };
  std::vector<Look> looks;
  for (Layout l : {Layout::Rlock, Layout::Plain, Layout::Redisson})
    if (l != layout) looks.push_back({LockNames::of(l, key, prefix), {}, {}});
  auto ask = [&](std::function<void(bool)> done) {
    auto left = std::make_shared<size_t>(2 * looks.size());
    for (Look& look : looks)
      for (auto [cmd, into] : {std::pair{"TYPE", &look.type}, std::pair{"PTTL", &look.pttl}})
        client.command(
            {cmd, look.n.lock},
            [into, left, done](Result r) {
              if (r.ok()) *into = r.reply.text();
              if (--*left == 0) done(true);
            },
            CallOptions{client.command_timeout(), {}, look.n.lock, {}});
  };
  settle<bool>(client.loop(), ask);
  std::vector<std::string> out;
  for (const Look& look : looks) {
    const char* want = look.n.layout == Layout::Redisson ? "hash" : "string";
    // Every layout's lock expires (PX, PEXPIRE): a key without expiry (an
    // application's hash or string of the same name) is something else, as
    // for list.
    if (look.type != want || look.pttl.empty() || look.pttl[0] == '-' || look.pttl == "0") continue;
    out.push_back(fmt::format("--layout {} (key {})", layout_name(look.n.layout),
                              escape_text(truncate_text(look.n.lock, 300))));
  }
  return out;
}

}  // namespace rlock
