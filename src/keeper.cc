#include "keeper.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "procinfo.h"

namespace rlock {

namespace {

// How often the keeper looks at PID: "within about a second" after it ends.
constexpr Millis kWatchEvery{200};

class Keeper {
 public:
  Keeper(Lock& lock, std::string token, const Acquired& a, const LockOptions& o, uint64_t start)
      : lock_(lock), token_(std::move(token)), acquired_(a), opts_(o), start_(start) {}

  int run() {
    Loop& loop = lock_.loop();
    deadline_ = later(acquired_.sent, acquired_.ttl);
    // SIGUSR1 is the owner's release (rlock release): quietly. Any other stop
    // signal (an operator's kill) gives the lock up while PID runs: PID hears
    // of it as of a lost lease.
    loop.on_signal(SIGUSR1, [this](int) { finish(); });
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) loop.on_signal(sig, [this](int) { lost(); });
    lock_.stay();  // and follow failovers (Sentinel)
    arm_lost_timer();
    schedule_renewal(later(acquired_.sent, acquired_.ttl / 3));
    watch();
    loop.run_until([this] { return done_; });
    return lost_ ? exitcode::kLost : exitcode::kOk;
  }

 private:
  Loop& loop() { return lock_.loop(); }
  Clock::time_point lost_at() const { return later(deadline_, -safety_margin(acquired_.ttl)); }

  void watch() {
    watch_timer_ = loop().after(kWatchEvery, [this] {
      watch_timer_ = 0;
      if (!watched_alive(opts_.while_pid, start_)) return finish();
      watch();
    });
  }

  void arm_lost_timer() {
    loop().cancel(lost_timer_);
    lost_timer_ = loop().at(lost_at(), [this] {
      lost_timer_ = 0;
      lost();
    });
  }

  void schedule_renewal(Clock::time_point when) {
    loop().cancel(renew_timer_);
    renew_timer_ = loop().at(when, [this] {
      renew_timer_ = 0;
      renew();
    });
  }

  void renew() {
    if (finishing_ || renewing_) return;
    renewing_ = true;
    auto sent = Clock::now();
    auto left = std::chrono::duration_cast<Millis>(lost_at() - sent);
    Millis timeout = std::max(Millis(10), std::min(lock_.command_timeout(), left));
    lock_.extend(
        token_, acquired_.ttl,
        [this, sent](Outcome<ExtendReply> o) {
          renewing_ = false;
          if (finishing_) return;
          if (o.error) {
            auto retry = Clock::now() + std::min(Millis(250), acquired_.ttl / 10);
            if (retry < lost_at()) schedule_renewal(retry);
            return;
          }
          if (!o.value.held) return lost();
          deadline_ = later(sent, std::clamp(o.value.ttl, Millis(0), acquired_.ttl));
          arm_lost_timer();
          schedule_renewal(later(sent, acquired_.ttl / 3));
        },
        timeout);
  }

  // The lease is gone (or could not be renewed in time): PID alone hears of
  // it, as --on-lost says, and the keeper ends.
  void lost() {
    if (finishing_) return;
    lost_ = true;
    if (watched_alive(opts_.while_pid, start_)) {
      if (opts_.on_lost == OnLost::Term) kill(static_cast<pid_t>(opts_.while_pid), SIGTERM);
      if (opts_.on_lost == OnLost::Kill) kill(static_cast<pid_t>(opts_.while_pid), SIGKILL);
    }
    finish();
  }

  // Always released, token-checked, even after a loss (a renewal that timed
  // out may have left it ours).
  void finish() {
    if (finishing_) return;
    finishing_ = true;
    loop().cancel(renew_timer_);
    loop().cancel(lost_timer_);
    loop().cancel(watch_timer_);
    lock_.release(token_, Millis(0), [this](Outcome<ReleaseReply>) { done_ = true; });
  }

  Lock& lock_;
  std::string token_;
  Acquired acquired_;
  LockOptions opts_;
  uint64_t start_;
  Clock::time_point deadline_;
  Loop::TimerId renew_timer_ = 0, lost_timer_ = 0, watch_timer_ = 0;
  bool renewing_ = false, finishing_ = false, lost_ = false, done_ = false;
};

}  // namespace

bool watched_alive(long pid, uint64_t start) {
  if (auto info = proc_info(static_cast<pid_t>(pid))) return info->start == start;
#if defined(__linux__) || defined(__APPLE__)
  return false;  // gone, or a zombie: it has ended
#else
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
#endif
}

void close_inherited_descriptors() {
  std::vector<int> inherited;
  if (DIR* d = opendir("/dev/fd")) {
    while (dirent* e = readdir(d)) {
      char* end = nullptr;
      long fd = strtol(e->d_name, &end, 10);
      if (end == e->d_name || *end || fd <= 2 || fd > 1 << 20) continue;
      inherited.push_back(static_cast<int>(fd));
    }
    closedir(d);
  } else {
    for (int fd = 3; fd < 1024; ++fd) inherited.push_back(fd);
  }
  for (int fd : inherited) {
    int flags = fcntl(fd, F_GETFD);
    if (flags >= 0 && !(flags & FD_CLOEXEC)) close(fd);
  }
}

int keep_while_pid(Lock& lock, const std::string& token, const Acquired& acquired,
                   const LockOptions& o, uint64_t pid_start) {
  Keeper k(lock, token, acquired, o, pid_start);
  return k.run();
}

}  // namespace rlock
