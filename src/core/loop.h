// The event loop: one poll() over file descriptors, timers on the lease clock
// (Clock below), and signals delivered through a self-pipe. Single-threaded;
// every callback runs from run_once().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace rlock {

/// The clock of every lease, deadline and timer: CLOCK_BOOTTIME on Linux, which goes on
/// while the machine is suspended, as the lease's time on the server does (the monotonic
/// clock stops then, and a lease would seem to outlive a suspend); CLOCK_MONOTONIC
/// elsewhere (macOS's goes on while asleep). See docs/GUIDE.md, "A suspended machine".
struct Clock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<Clock>;
  static constexpr bool is_steady = true;
  static time_point now() noexcept;
};
using Millis = std::chrono::milliseconds;

/// The longest one poll() waits: its timeout is counted on the monotonic clock, which
/// stops while the machine is suspended, so that a due timer is found within this
/// much of a resume.
inline constexpr Millis kLongestPoll{2000};

/// `t + d`, saturating at the clock's limits instead of overflowing (a user's
/// duration times 10^6 nanoseconds can exceed 64 bits).
Clock::time_point later(Clock::time_point t, Millis d);

class Loop {
 public:
  using TimerId = uint64_t;

  Loop();
  ~Loop();
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  /// Calls `cb(revents)` whenever `fd` is ready for `events` (POLLIN/POLLOUT);
  /// POLLERR/POLLHUP are always reported. Replaces an earlier watch of `fd`.
  void watch(int fd, short events, std::function<void(short)> cb);
  /// Changes the events of a watched fd without replacing its callback.
  void set_events(int fd, short events);
  void unwatch(int fd);

  /// Runs `cb` once at `when` (or soon after). Returns an id for cancel().
  TimerId at(Clock::time_point when, std::function<void()> cb);
  /// at(now + delay); the sum saturates instead of overflowing.
  TimerId after(Millis delay, std::function<void()> cb) {
    return at(later(Clock::now(), delay), std::move(cb));
  }
  /// Cancels a pending timer; harmless for 0, fired or cancelled ids.
  void cancel(TimerId id);

  using SignalHandler = void (*)(int);
  /// Delivers `sig` through the self-pipe to `cb`. Installs the handler (with
  /// SA_RESTART) and returns the disposition it replaced (SIG_ERR if it could
  /// not). The handler stays after the loop ends, giving the signal its
  /// default action from then on.
  SignalHandler on_signal(int sig, std::function<void(int)> cb);
  /// Undoes on_signal: `sig` is ignored (it was ignored before, say).
  void ignore_signal(int sig);

  /// Runs the callbacks of the signals that arrived and were not handled yet
  /// (their handler ran; the loop has not read them). For a decision that a
  /// signal already sent must be able to change.
  void deliver_signals() { drain_signals(); }

  /// Waits for the next event (or `max_wait`, at most kLongestPoll: it may return
  /// with nothing done) and runs the callbacks due.
  /// Signals that arrived are handled before the timers that are due.
  void run_once(Millis max_wait = Millis(60'000));
  /// Runs until `done()` is true. `done` is checked before every wait.
  void run_until(const std::function<bool()>& done);

 private:
  struct Watch {
    short events;
    std::shared_ptr<std::function<void(short)>> cb;
  };
  struct Timer {
    TimerId id;
    std::function<void()> cb;
  };
  void drain_signals();

  std::map<int, Watch> watches_;
  std::multimap<Clock::time_point, Timer> timers_;
  std::map<TimerId, std::multimap<Clock::time_point, Timer>::iterator> timer_index_;
  TimerId next_timer_ = 1;
  std::map<int, std::function<void(int)>> signal_handlers_;
  int pipe_[2] = {-1, -1};
  // The self-pipe of the loop made before this one, if it still lives: its
  // signals go back to it when this one ends.
  int outer_pipe_ = -1;
  pid_t outer_owner_ = 0;
  uint64_t ignored_ = 0;  // signals ignore_signal() gave back to SIG_IGN
};

/// Starts an asynchronous operation and runs `loop` until it calls back; what
/// it called back with. The one way a blocking call is made of an
/// asynchronous one (`wait_for` in lock.h, `call` in redis.cc).
template <class T>
T settle(Loop& loop, const std::function<void(std::function<void(T)>)>& op) {
  std::optional<T> out;
  op([&](T v) { out = std::move(v); });
  loop.run_until([&] { return out.has_value(); });
  return std::move(*out);
}

/// Like settle, but gives up at `deadline`: nullopt when `op` has not called
/// back by then. The callback may still be called later (it then writes to
/// state of its own, never to this frame).
template <class T>
std::optional<T> settle_by(Loop& loop, Clock::time_point deadline,
                           const std::function<void(std::function<void(T)>)>& op) {
  auto out = std::make_shared<std::optional<T>>();
  op([out](T v) { *out = std::move(v); });
  for (auto now = Clock::now(); !out->has_value() && now < deadline; now = Clock::now())
    loop.run_once(std::chrono::ceil<Millis>(deadline - now));
  if (!out->has_value()) return std::nullopt;
  return std::move(**out);
}

}  // namespace rlock
