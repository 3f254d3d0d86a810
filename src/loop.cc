#include "loop.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace rlock {

namespace {

// The write end of the current loop's self-pipe; the only global the signal
// handler touches.
volatile sig_atomic_t g_pipe_write = -1;

void on_signal_handler(int sig) {
  int saved = errno;
  if (g_pipe_write >= 0) {
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

Loop::Loop() {
  if (pipe(pipe_) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  set_flags(pipe_[0]);
  set_flags(pipe_[1]);
  g_pipe_write = pipe_[1];
}

Loop::~Loop() {
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
    auto until = std::chrono::ceil<Millis>(timers_.begin()->first - now);
    wait = std::max(Millis(0), std::min(wait, until));
  }
  std::vector<pollfd> fds;
  fds.reserve(watches_.size() + 1);
  fds.push_back({pipe_[0], POLLIN, 0});
  for (auto& [fd, w] : watches_) fds.push_back({fd, w.events, 0});
  int n = poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
  if (n < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "poll");
  if (n > 0) {
    if (fds[0].revents) drain_signals();
    for (size_t i = 1; i < fds.size(); ++i) {
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
