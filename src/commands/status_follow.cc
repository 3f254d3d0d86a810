// `rlock status KEY --follow`: who holds KEY now, then one line each time
// that changes (etcdctl's `elect -l`; docs/recipes/standby.md), until a stop
// signal. A release is heard at once on the lock's release channel (and the
// status read again kHandover later, for the next in line); what publishes
// nothing (an acquisition, an expiry, another tool's release) is seen by
// reading the status again every kFollowPoll. A read that fails is asked
// again after a pause, as history --follow does.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>

#include "cli/output.h"
#include "commands/commands.h"
#include "core/json.h"
#include "core/lifetime.h"
#include "net/subscription.h"
#include "proc/signals.h"

namespace rlock {

namespace {

// How often the status is read when the channel says nothing.
constexpr Millis kFollowPoll{1000};
// A release wakes the next in line, which takes the lock a round trip or two
// later: the status is read again this soon after a release is heard.
constexpr Millis kHandover{200};

// What tells one holder from the next: their tokens, in order ("" for free).
std::string holders_key(const LockStatus& s) {
  std::string out;
  for (const Holder& h : s.holders) out += h.token + "\n";
  return out;
}

// The server's time of the reading (the local clock when it gave none).
int64_t reading_ms(const LockStatus& s) {
  if (s.now_ms > 0) return s.now_ms;
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// "ci-4 pid 4242, label nightly, fence 12": text from Redis, escaped.
std::string holder_words(const Holder& h) {
  if (h.opaque)
    return h.holds > 0
               ? fmt::format("Redisson id {}", escape_text(h.token))
               : fmt::format("a holder of the plain layout (token {})", escape_text(h.token));
  if (h.info.host.empty()) return "a client that is not rlock";
  std::string out = fmt::format("{} pid {}", escape_text(h.info.host), h.info.pid);
  if (!h.info.label.empty()) out += ", label " + escape_text(h.info.label);
  if (h.since_ms > 0) out += fmt::format(", fence {}", h.fence);
  if (h.shared) out += ", shared";
  if (h.done_ms > 0)
    out += ", done (--done-for)";
  else if (h.kept_ms > 0)
    out += ", kept by --min-hold";
  return out;
}

// "2024-05-01 10:53:01Z  deploy: held by ci-4 pid 4242, fence 12", or
// "... deploy: free (last fence 12)", its time as history shows one; several
// holders (--shared, --limit) one after the other.
std::string change_line(const std::string& key, const LockStatus& s) {
  std::string iso = utc_iso(reading_ms(s));  // 2024-05-01T10:53:01.123Z
  std::string head =
      fmt::format("{} {}Z  {}: ", iso.substr(0, 10), iso.substr(11, 8), escape_text(key));
  if (s.holders.empty()) return head + fmt::format("free (last fence {})\n", s.fence);
  long count = std::max<long>(s.holder_count, static_cast<long>(s.holders.size()));
  std::string who;
  if (count > 1) who = fmt::format("{} holders: ", count);
  for (size_t i = 0; i < s.holders.size(); ++i) who += (i ? "; " : "") + holder_words(s.holders[i]);
  if (count > static_cast<long>(s.holders.size()))
    who += fmt::format("; and {} more", count - static_cast<long>(s.holders.size()));
  return head + "held by " + who + "\n";
}

// The same as one JSON object: typed, absent values absent.
std::string change_json(const std::string& key, const LockStatus& s) {
  std::string holders;
  for (const Holder& h : s.holders) {
    JsonObject o;
    o.str("token", h.token);
    if (!h.info.host.empty()) o.str("host", h.info.host).num("pid", h.info.pid);
    o.str_if("user", h.info.user).str_if("label", h.info.label);
    if (h.since_ms > 0) o.num("fence", h.fence);
    o.num_if("slot", h.slot).str_if("slot_name", h.slot_name);
    o.str("mode", h.shared ? "shared" : "exclusive");
    holders += (holders.empty() ? "" : ",") + o.text();
  }
  JsonObject o;
  o.str("time", utc_iso(reading_ms(s)))
      .str("key", key)
      .boolean("held", !s.holders.empty())
      .num("fence", s.fence)
      .num("holder_count", std::max<long>(s.holder_count, static_cast<long>(s.holders.size())))
      .raw("holders", "[" + holders + "]");
  return o.text() + "\n";
}

class StatusFollow {
 public:
  StatusFollow(Session& s, Lock& lock, const GlobalOptions& g, std::string key)
      : s_(s), lock_(lock), json_(g.json), key_(std::move(key)) {}
  ~StatusFollow() {
    life_.end();
    s_.loop.cancel(timer_);
  }

  /// Prints `now` (the state when it starts), then every change, until a
  /// stop signal (returns) or a reader that left or a refusal (throws).
  void run(const LockStatus& now) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP})
      if (!ignored_at_start(sig)) s_.loop.on_signal(sig, [this](int) { stop_ = true; });
    bool pipe = watch_stdout_reader(s_.loop, [this](const Error& e) { end(e); });
    show(now);
    Subscription::Events ev;
    ev.message = life_.guard([this](const std::string&) {
      look();
      again_after(kHandover);
    });
    ev.ready = life_.guard([this] { look(); });  // anything published before is not heard
    ev.failed = [](const Error& e) { log_verbose("status --follow: " + std::string(e.what())); };
    channel_ = std::make_unique<Subscriptions>(lock_.clients(), lock_.names().channel, ev);
    channel_->start();
    again_after(kFollowPoll);
    s_.loop.run_until([this] { return stop_; });
    channel_.reset();
    if (pipe) s_.loop.unwatch(STDOUT_FILENO);
    if (fatal_) throw *fatal_;
  }

 private:
  void show(const LockStatus& s) {
    std::string now = holders_key(s);
    if (shown_ && *shown_ == now) return;
    shown_ = now;
    try {
      print_out(json_ ? change_json(key_, s) : change_line(key_, s));
    } catch (const Error& e) {
      end(e);
    }
  }

  // Reads the status now (once more after the read in flight, if there is one).
  void look() {
    if (stop_) return;
    if (asking_) {
      again_ = true;
      return;
    }
    asking_ = true;
    lock_.status([this, alive = life_.token()](Outcome<LockStatus> o) {
      if (!alive || stop_) return;
      asking_ = false;
      if (o.error) return failed(*o.error);
      backoff_ = Millis(0);
      show(o.value);
      if (again_) {
        again_ = false;
        return look();
      }
      if (timer_ == 0) again_after(kFollowPoll);  // else a reading is due sooner
    });
  }

  void again_after(Millis d) {
    s_.loop.cancel(timer_);
    timer_ = s_.loop.after(d, life_.guard([this] {
      timer_ = 0;
      look();
    }));
  }

  // A refusal ends the follow; anything else (a lost connection, a restart,
  // a failover) is asked again after a pause that doubles up to 2 s.
  void failed(const Error& e) {
    if (e.kind() == ErrorKind::Permission || e.kind() == ErrorKind::Usage) return end(e);
    backoff_ = std::clamp(backoff_ * 2, Millis(250), Millis(2000));
    log_verbose(
        fmt::format("status --follow: {}; reading again in {}ms", e.what(), backoff_.count()));
    again_ = false;
    again_after(backoff_);
  }

  void end(const Error& e) {
    if (!fatal_) fatal_ = e;
    stop_ = true;
  }

  Session& s_;
  Lock& lock_;
  const bool json_;
  const std::string key_;
  std::optional<std::string> shown_;  // holders_key of the last line printed
  std::unique_ptr<Subscriptions> channel_;
  Loop::TimerId timer_ = 0;
  bool asking_ = false, again_ = false, stop_ = false;
  Millis backoff_{0};
  std::optional<Error> fatal_;
  Lifetime life_;
};

}  // namespace

int cmd_status_follow(const GlobalOptions& g, const std::string& key) {
  Session s(g);
  auto lock = s.lock(key, g.prefix);
  auto now = wait_for<LockStatus>(s.loop, [&](Done<LockStatus> d) { lock->status(std::move(d)); });
  StatusFollow follow(s, *lock, g, key);
  follow.run(now);
  return exitcode::kOk;
}

}  // namespace rlock
