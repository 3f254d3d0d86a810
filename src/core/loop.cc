#include "core/loop.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
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

void on_signal_handler(int sig) {
  int saved = errno;
  if (getpid() != g_pipe_owner) {
    // A child between fork (or vfork) and exec, which unblocks its signals
    // just before exec without first resetting every handler (one system
    // call saved per handled signal on every `run`): the signal gets its
    // default action here, as it would after exec, and never reaches the
    // parent's self-pipe.
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

void set_flags(int fd) {
  fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

}  // namespace

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
  if (pipe(pipe_) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  set_flags(pipe_[0]);
  set_flags(pipe_[1]);
  g_pipe_write = pipe_[1];
  g_pipe_owner = getpid();
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
  for (auto& [sig, cb] : signal_handlers_) signal(sig, SIG_DFL);
  g_pipe_write = -1;
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

void Loop::on_signal(int sig, std::function<void(int)> cb) {
  signal_handlers_[sig] = std::move(cb);
  g_pipe_owner = getpid();  // a process forked to carry on (a keeper) owns its handlers
  struct sigaction sa {};
  sa.sa_handler = on_signal_handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(sig, &sa, nullptr);
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
      }
    }
  }
}

void Loop::run_once(Millis max_wait) {
  auto now = Clock::now();
  Millis wait = max_wait;
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
