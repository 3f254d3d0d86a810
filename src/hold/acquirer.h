// Getting the lock, waiting for it if need be: subscribe to this waiter's own
// wake-up channel first, then try; a release wakes only the waiter whose turn
// it is. Re-checks on a timer cover lost messages and foreign releases: the
// head of the line every second at most, the others at a third of their
// place's lease (which the same call renews). Used by `run` and `acquire`.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <random>

#include "core/lifetime.h"
#include "lock/lock.h"
#include "net/subscription.h"

namespace rlock {

/// How long a waiter rides out an unavailable Redis (restart, failover)
/// before it gives up with 69. The first contact is retried only with an
/// explicit --wait, and only when it failed in a way that may pass (a reset
/// or a timeout: Error::transient), until the wait runs out.
inline constexpr Millis kOutageBudget{30000};

/// An outage reported to the waiting person (WaitProgress::Outage) once it has
/// lasted this long: a connection cut and at once restored is not one.
inline constexpr Millis kOutageNotice{1000};

/// The longest a waiter that gives up waits for its clean-up (release and
/// leave) to be answered; the commands are sent either way (usually on the
/// connection already open, where this is ample).
inline constexpr Millis kCleanupBound{250};

struct WaitSpec {
  Millis ttl{30000};
  std::optional<Millis> wait;  // nullopt = forever
  bool no_wait = false;
  HolderInfo info;
  /// --sync-replicas: a grant counts only once this many replicas confirm it.
  int sync_replicas = 0;
  /// The holders in words for the messages of a refusal ("'K' is held by …"):
  /// the face's describe_holders (cli/wording.h), given by the commands; a
  /// bare "held" without it.
  std::function<std::string(const AcquireReply&, int limit)> describe;
};

/// What happens while an Acquirer waits, for whoever shows it (progress.h).
struct WaitProgress {
  enum class Kind {
    Waiting,      // a reply while waiting: `reply` is the line's state as of `replied`
    Acquired,     // after waiting: `fence`
    Stopped,      // no longer waiting (acquired, given up, failed)
    Warning,      // waiting goes on, less well: `note` says why
    Outage,       // Redis unreachable since `since` (`note`: the last failure); retrying until
                  // `until` at most, when --wait runs out if `until_wait`
    Reconnected,  // the outage that began at `since` is over
  } kind = Kind::Waiting;
  const AcquireReply* reply = nullptr;
  std::string note;
  Clock::time_point started, replied, since, until;
  bool until_wait = false;
  int64_t fence = 0;
  /// `--and`: the key this is about (empty: the only one).
  std::string key;
};

// Time kept between "the lease might run out" and "it does": the renewal
// deadline is expiry minus this, so the child hears about a lost lease before
// anyone else can take the lock (covers clock drift and the signal's delivery).
inline Millis safety_margin(Millis ttl) {
  return std::clamp(ttl / 5, Millis(50), Millis(2000));
}

struct Acquired {
  int64_t fence = 0;
  Millis ttl{0};
  /// When (the lease clock, core/loop.h) the attempt was sent: the lease runs out no
  /// earlier than this + ttl, so deadlines derive from it.
  Clock::time_point sent;
  /// `--and`: every key's fence, in the user's order (empty for one key).
  std::vector<int64_t> fences;
  /// A semaphore's slot (RLOCK_SLOT), 0 for none; a named pool's name.
  long slot = 0;
  std::string slot_name;
};

/// Getting a lock, waiting for it if need be: one (Acquirer) or several
/// keys at once (MultiAcquirer, hold/multi_acquirer.h).
class Acquisition {
 public:
  virtual ~Acquisition() = default;
  virtual void start(Done<Acquired> done) = 0;
  /// Where the progress of a wait goes (nowhere by default).
  virtual void on_progress(std::function<void(const WaitProgress&)> cb) = 0;
  /// Stops waiting: leaves the line (best effort), then calls `done`. The
  /// start() callback is not called afterwards.
  virtual void cancel(std::function<void()> done) = 0;
};

/// The Acquisition for `lock`: a MultiAcquirer for a MultiLock, else an Acquirer.
std::unique_ptr<Acquisition> make_acquisition(Lock& lock, std::string token, WaitSpec spec);

/// One attempt to get the lock, possibly waiting. Outcomes: Acquired, or an
/// Error: NotAcquired (taken and not waiting, or --wait ran out), a usage
/// Error (--limit mismatch), Unavailable/Permission/Protocol from Redis, and
/// Unavailable when fewer replicas than --sync-replicas confirm the grant
/// (the lease is then released again). A
/// failed attempt leaves nothing behind in Redis (best-effort cleanup with
/// the token).
class Acquirer : public Acquisition {
 public:
  Acquirer(Lock& lock, std::string token, WaitSpec spec);
  ~Acquirer() override;
  Acquirer(const Acquirer&) = delete;
  Acquirer& operator=(const Acquirer&) = delete;

  void start(Done<Acquired> done) override;
  void on_progress(std::function<void(const WaitProgress&)> cb) override {
    progress_ = std::move(cb);
  }
  void cancel(std::function<void()> done) override;
  /// Numbers this token's attempts with `counter`, shared with the Acquirers of
  /// the same token before and after this one (`--and` taking its keys again):
  /// the script answers an attempt numbered below one it has seen STALE.
  void number_attempts_with(std::shared_ptr<long> counter) { attempts_ = std::move(counter); }

 private:
  void start_waiting();
  /// Gives up (see the deadline in acquirer.cc) `after` from now.
  void arm_deadline(Millis after);
  /// Before the first reply: retries a transient failure when --wait allows;
  /// true if a retry was scheduled.
  bool retry_first_contact(const Error& e);
  void subscribe();
  /// Waits on its list (BLPOP) after its first attempt joined the line.
  void watch_list();
  /// Whether attempts join the line (wait mode) rather than try: a line's
  /// waiter joins with its first (a quorum, and --no-wait, only try).
  bool joins() const;
  void listen_for_releases();
  Millis jitter(Millis most);
  void attempt();
  void on_reply(Outcome<AcquireReply> o);
  void confirm(const AcquireReply& a);
  void renew_if_late(const AcquireReply& a);
  void regrant(const Error& why);
  void granted(const AcquireReply& a, Clock::time_point sent, Millis ttl);
  void schedule(Millis delay);
  void finish(Outcome<Acquired> o);
  /// No more attempts, timers or wake-ups; clears the status line.
  void stop();
  void fail_with_cleanup(Error e);
  /// While waiting, an unavailable Redis is retried (with backoff) for up to
  /// kOutageBudget of continuous failure (`retry` runs on `timer`, `at_least` later at
  /// the soonest); true if a retry was scheduled.
  bool ride_out(const Error& e, Loop::TimerId& timer, std::function<void()> retry,
                Millis at_least = Millis(0));
  void report(WaitProgress::Kind kind, const AcquireReply* a = nullptr, int64_t fence = 0);
  /// Tells of an outage that has lasted kOutageNotice (once per outage).
  void report_outage(const Error& e);
  /// Redis answered: the outage, if any, is over (and told so if it was told).
  void outage_over();
  std::string holder_text(const AcquireReply& a) const;

  // Where the Acquirer is. Every change goes through enter(), which allows
  // only these:
  //
  //   Probing ──Queued (joined the line)──▶ OnList ──BLPOP refused──▶ OnChannel
  //    │  └─Taken (not in a line: a quorum, another tool's layout)──▶ OnChannel
  //    │                                        │                         │
  //    └────────────────────────────────────▶ Finished ◀──────────────────┘
  //         granted, refused, failed, given up (--wait), cancelled
  enum class Phase {
    Probing,  // the first attempt(s): not waiting yet; a failure is reported at once
    OnList,   // in line, woken by BLPOP on its own list (Subscription::use_list)
    // Waiting, woken by its own channel (a line whose BLPOP an ACL refused:
    // as 0.4.0 did), or by every master's releases (a quorum).
    OnChannel,
    Finished,  // no more attempts, timers or wake-ups; done_ called, or being called
  };
  static bool allowed(Phase from, Phase to);
  void enter(Phase next);
  bool finished() const { return phase_ == Phase::Finished; }

  Lock& lock_;
  std::string token_;
  WaitSpec spec_;
  Phase phase_ = Phase::Probing;
  Done<Acquired> done_;
  std::function<void(const WaitProgress&)> progress_;
  std::unique_ptr<Subscription> sub_;    // its own wake-up list or channel (a line)
  std::unique_ptr<Subscriptions> subs_;  // the release channel of every master (a quorum)
  size_t refusals_ = 0;                  // masters that refused the release channel (quorum mode)
  // the attempts' and the wake-up channel's: an attempt never cancels a resubscription
  Loop::TimerId retry_timer_ = 0, resubscribe_timer_ = 0, deadline_timer_ = 0;
  // Facts, not phases: each can be true or false in more than one phase.
  // The list's first ready() came (the join needs no attempt); read in OnList
  // only, and kept once the list is left for the channel.
  bool list_ready_ = false;
  int list_failures_ = 0;  // the wake-up list's outages since it last woke this waiter
  // numbers each acquire attempt of token_
  std::shared_ptr<long> attempts_ = std::make_shared<long>(0);
  int regrants_ = 0;  // grants in a row that did not count (see regrant)
  // An attempt is awaiting its reply (in any phase: the first one while
  // Probing, re-checks while waiting, one still in flight when Finished), and
  // a wake-up came meanwhile, so another follows the reply (again_).
  bool in_flight_ = false, again_ = false;
  // A Waiting progress report was made: the Acquired one then follows (the
  // phase cannot tell, a wait may end at its first reply).
  bool waited_ = false;
  Clock::time_point started_, sent_;
  std::optional<AcquireReply> last_;
  std::optional<Clock::time_point> outage_since_;
  // The current outage was told (WaitProgress::Outage): its end is told too.
  // Outages come and go in any waiting phase.
  bool outage_told_ = false;
  std::optional<Clock::time_point> wait_deadline_;  // when --wait runs out, once waiting
  std::optional<Error> outage_error_;               // the last failure of the outage
  std::minstd_rand rng_;
  Lifetime life_;
};

}  // namespace rlock
