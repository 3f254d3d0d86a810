#include "core/loop.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <limits>
#include <system_error>

#include "core/stderr_writer.h"

namespace rlock {

namespace {

// The write end of the current loop's self-pipe and the process that owns
// it: the only globals the signal handler touches.
volatile sig_atomic_t g_pipe_write = -1;
volatile pid_t g_pipe_owner = 0;
// This process's pid, read when a loop is made and again in a child made by
// fork() (a keeper goes on with its parent's loop), so that on_signal needs no
// system call to know it. vfork() and clone() run no fork handlers: their
// children never use a loop.
pid_t g_self = 0;
// Whether fork() refreshes g_self (pthread_atfork can fail, for want of
// memory): if not, on_signal asks getpid().
bool g_forks_tracked = false;

void refresh_self() {
  g_self = getpid();
}

pid_t self() {
  return g_forks_tracked ? g_self : getpid();
}

void on_signal_handler(int sig) {
  int saved = errno;
  if (g_pipe_write < 0 || getpid() != g_pipe_owner) {
    // A child between fork (or vfork) and exec, which unblocks its signals
    // just before exec without first resetting every handler (one system
    // call saved per handled signal on every `run`), or a process whose loop
    // has ended (its destructor leaves the handlers in place: one system call
    // saved per handled signal at exit): the signal gets its default action
    // here, as it would after exec or with SIG_DFL, and never reaches a
    // self-pipe.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, nullptr);
    kill(getpid(), sig);  // delivered once this handler returns
  } else if (g_pipe_write >= 0) {
    unsigned char b = static_cast<unsigned char>(sig);
    (void)!write(g_pipe_write, &b, 1);
  }
  errno = saved;
}

[[maybe_unused]] void set_flags(int fd) {
  fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

}  // namespace

Clock::time_point Clock::now() noexcept {
  timespec ts{};
#ifdef CLOCK_BOOTTIME
  if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
#endif
    clock_gettime(CLOCK_MONOTONIC, &ts);
  return time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
}

Clock::time_point later(Clock::time_point t, Millis d) {
  using Rep = Clock::duration::rep;
  constexpr Rep kMax = std::numeric_limits<Rep>::max();
  constexpr Rep kMin = std::numeric_limits<Rep>::min();
  constexpr Rep kPerMs = std::chrono::duration_cast<Clock::duration>(Millis(1)).count();
  Rep ms = d.count();
  Rep now = t.time_since_epoch().count();
  Rep add;
  if (ms > kMax / kPerMs)
    add = kMax;
  else if (ms < kMin / kPerMs)
    add = kMin;
  else
    add = ms * kPerMs;
  Rep sum;
  if (__builtin_add_overflow(now, add, &sum)) sum = add > 0 ? kMax : kMin;
  return Clock::time_point(Clock::duration(sum));
}

Loop::Loop() {
  static const bool registered = pthread_atfork(nullptr, nullptr, refresh_self) == 0;
  g_forks_tracked = registered;
  refresh_self();
  outer_pipe_ = g_pipe_write;
  outer_owner_ = g_pipe_owner;
#ifdef __linux__
  // Both flags in the one call (four fcntl calls per end otherwise).
  if (pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe");
#else
  if (pipe(pipe_) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  set_flags(pipe_[0]);
  set_flags(pipe_[1]);
#endif
  g_pipe_write = pipe_[1];
  g_pipe_owner = self();
}

Loop::~Loop() {
  // Callbacks may own objects whose destructors call back into the loop
  // (cancel, unwatch): take them out first, so those calls see an empty but
  // whole loop, then destroy them.
  auto timers = std::move(timers_);
  timers_.clear();
  timer_index_.clear();
  auto watches = std::move(watches_);
  watches_.clear();
  timers.clear();
  watches.clear();
  // The handlers stay installed: with no loop's pipe to write to, each gives
  // its signal the default action (on_signal_handler), as SIG_DFL would. A
  // loop made before this one and still alive gets its pipe back (its drain
  // gives a signal it does not handle the default action too).
  if (g_pipe_write == pipe_[1]) {
    g_pipe_write = outer_pipe_;
    g_pipe_owner = outer_owner_;
  }
  close(pipe_[0]);
  close(pipe_[1]);
}

void Loop::watch(int fd, short events, std::function<void(short)> cb) {
  watches_[fd] = Watch{events, std::make_shared<std::function<void(short)>>(std::move(cb))};
}

void Loop::set_events(int fd, short events) {
  auto it = watches_.find(fd);
  if (it != watches_.end()) it->second.events = events;
}

void Loop::unwatch(int fd) {
  watches_.erase(fd);
}

Loop::TimerId Loop::at(Clock::time_point when, std::function<void()> cb) {
  TimerId id = next_timer_++;
  auto it = timers_.emplace(when, Timer{id, std::move(cb)});
  timer_index_[id] = it;
  return id;
}

void Loop::cancel(TimerId id) {
  auto it = timer_index_.find(id);
  if (it == timer_index_.end()) return;
  timers_.erase(it->second);
  timer_index_.erase(it);
}

Loop::SignalHandler Loop::on_signal(int sig, std::function<void(int)> cb) {
  signal_handlers_[sig] = std::move(cb);
  // A process forked to carry on (a keeper) owns its handlers; g_self is its
  // pid without a system call per signal.
  g_pipe_owner = self();
  struct sigaction sa {};
  struct sigaction old {};
  sa.sa_handler = on_signal_handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(sig, &sa, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}

void Loop::ignore_signal(int sig) {
  signal_handlers_.erase(sig);
  if (sig > 0 && sig < 64) ignored_ |= uint64_t{1} << sig;  // one already in the pipe too
  signal(sig, SIG_IGN);
}

void Loop::drain_signals() {
  unsigned char buf[64];
  for (;;) {
    ssize_t n = read(pipe_[0], buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      auto it = signal_handlers_.find(buf[i]);
      if (it != signal_handlers_.end()) {
        auto cb = it->second;  // a handler may replace itself
        cb(buf[i]);
      } else if (buf[i] < 64 && !(ignored_ & (uint64_t{1} << buf[i]))) {
        // Handled by an earlier loop of this process, not by this one: the
        // default action, as before the handler was installed.
        signal(buf[i], SIG_DFL);
        raise(buf[i]);
      }
    }
  }
}

void Loop::run_once(Millis max_wait) {
  auto now = Clock::now();
  Millis wait = max_wait < Millis(0) || max_wait > kLongestPoll ? kLongestPoll : max_wait;
  if (!timers_.empty()) {
    auto first = timers_.begin()->first;
    auto until = first <= now ? Millis(0) : std::chrono::ceil<Millis>(first - now);
    wait = std::max(Millis(0), std::min(wait, until));
  }
  std::vector<pollfd> fds;
  fds.reserve(watches_.size() + 2);
  fds.push_back({pipe_[0], POLLIN, 0});
  // Queued stderr text goes out when descriptor 2 can take it, never blocking.
  fds.push_back({stderr_pending() ? STDERR_FILENO : -1, POLLOUT, 0});
  for (auto& [fd, w] : watches_) fds.push_back({fd, w.events, 0});
  int n = poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
  if (n < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "poll");
  // Interrupted: a handler wrote to the self-pipe (a stopped process that is
  // continued may also find its timers due); the signal comes first.
  if (n < 0) drain_signals();
  if (n > 0) {
    if (fds[0].revents) drain_signals();
    if (fds[1].revents) stderr_pump();
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      auto it = watches_.find(fds[i].fd);
      if (it == watches_.end()) continue;  // unwatched by an earlier callback
      auto cb = it->second.cb;             // keep alive while it runs
      (*cb)(fds[i].revents);
    }
  }
  now = Clock::now();
  while (!timers_.empty() && timers_.begin()->first <= now) {
    auto it = timers_.begin();
    auto cb = std::move(it->second.cb);
    timer_index_.erase(it->second.id);
    timers_.erase(it);
    cb();
  }
}

void Loop::run_until(const std::function<bool()>& done) {
  while (!done()) run_once();
}

}  // namespace rlock
