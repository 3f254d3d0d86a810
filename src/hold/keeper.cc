#include "hold/keeper.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "hold/watchdog.h"
#include "proc/procinfo.h"

namespace rlock {

namespace {

void write_byte(int fd, char c) {
  while (write(fd, &c, 1) < 0 && errno == EINTR) {
  }
}

class Keeper {
 public:
  Keeper(Lock& lock, std::string token, const Acquired& a, const KeeperSpec& o, uint64_t start,
         int ready_fd, int go_fd)
      : lock_(lock),
        token_(std::move(token)),
        opts_(o),
        start_(start),
        ready_fd_(ready_fd),
        go_fd_(go_fd),
        watchdog_(lock, token_, a, o.sync_replicas,
                  Watchdog::Events{[this](const std::string&) { lost(); }, [this] { finish(); }}) {
    // SIGUSR1 is the owner's release (rlock release): quietly. Any other stop
    // signal (an operator's kill) gives the lock up while PID runs: PID hears
    // of it as of a lost lease.
    loop().on_signal(SIGUSR1, [this](int) { finish(); });
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
      loop().on_signal(sig, [this](int) { lost(); });
  }

  ~Keeper() {
    loop().cancel(watch_timer_);
    loop().cancel(ready_timer_);
    if (go_fd_ >= 0) loop().unwatch(go_fd_);
  }

  int run() {
    watchdog_.start();
    // Ready once the release channel is subscribed (a release with the token
    // is heard from the first moment the caller has it), or after the
    // command timeout without it (renewals find a release all the same).
    watchdog_.listen([this] { ready(); });
    ready_timer_ = loop().after(lock_.command_timeout(), [this] {
      ready_timer_ = 0;
      ready();
    });
    watch();
    loop().run_until([this] { return done_; });
    return lost_ ? exitcode::kLost : exitcode::kOk;
  }

 private:
  Loop& loop() { return lock_.loop(); }

  void ready() {
    if (ready_fd_ < 0) return;
    loop().cancel(ready_timer_);
    ready_timer_ = 0;
    write_byte(ready_fd_, kKeeperReady);
    close(ready_fd_);
    ready_fd_ = -1;
    loop().watch(go_fd_, POLLIN, [this](short) { on_go(); });
  }

  // The caller has the token ('g'), or the forking process could not hand it
  // over (EOF): nobody could ever release it then.
  void on_go() {
    char c = 0;
    ssize_t n;
    do {
      n = read(go_fd_, &c, 1);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && errno == EAGAIN) return;
    loop().unwatch(go_fd_);
    close(go_fd_);
    go_fd_ = -1;
    if (n != 1 || c != kKeeperGo) finish();
  }

  void watch() {
    watch_timer_ = loop().after(kWatchPidEvery, [this] {
      watch_timer_ = 0;
      if (!watched_alive(opts_.while_pid, start_)) return finish();
      watch();
    });
  }

  // The lease is gone (or could not be renewed in time): PID alone hears of
  // it, as --on-lost says, and the keeper ends.
  void lost() {
    if (finishing_) return;
    // The owner's release signals the keeper (SIGUSR1) before it releases in
    // Redis: a release that made the lease look lost has its signal here
    // already, maybe unread (a keeper stopped past the release and continued
    // finds its timers due too). PID is never signalled for its own release.
    loop().deliver_signals();
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
    watchdog_.stop();
    loop().cancel(watch_timer_);
    watch_timer_ = 0;
    if (ready_fd_ >= 0) {  // PID ended before the caller had the token
      loop().cancel(ready_timer_);
      ready_timer_ = 0;
      write_byte(ready_fd_, kKeeperEnded);
      close(ready_fd_);
      ready_fd_ = -1;
    }
    lock_.release(token_, Millis(0), [this](Outcome<ReleaseReply>) { done_ = true; });
  }

  Lock& lock_;
  std::string token_;
  KeeperSpec opts_;
  uint64_t start_;
  int ready_fd_, go_fd_;
  Watchdog watchdog_;
  Loop::TimerId watch_timer_ = 0, ready_timer_ = 0;
  bool finishing_ = false, lost_ = false, done_ = false;
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
                   const KeeperSpec& o, uint64_t pid_start, int ready_fd, int go_fd,
                   const sigset_t& mask) {
  Keeper k(lock, token, acquired, o, pid_start, ready_fd, go_fd);
  sigprocmask(SIG_SETMASK, &mask, nullptr);
  return k.run();
}

}  // namespace rlock
