#include "hold/keeper.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "hold/verdict.h"
#include "hold/watchdog.h"
#include "proc/procinfo.h"

namespace rlock {

namespace {

// What the keeper tells the process that forked it, on its ready pipe: it
// can be told to stop, or PID ended first (the lease is released); and what
// that process answers on the go pipe once the caller has the token.
constexpr char kKeeperReady = 'r';
constexpr char kKeeperEnded = 'e';
constexpr char kKeeperGo = 'g';

void write_byte(int fd, char c) {
  while (write(fd, &c, 1) < 0 && errno == EINTR) {
  }
}

char read_byte(int fd) {
  char c = 0;
  ssize_t n;
  do {
    n = read(fd, &c, 1);
  } while (n < 0 && errno == EINTR);
  return n == 1 ? c : 0;
}

class Keeper {
 public:
  Keeper(Lock& lock, std::string token, const Acquired& a, const KeeperSpec& o,
         const WatchedProcess& watched, int ready_fd, int go_fd)
      : lock_(lock),
        token_(std::move(token)),
        opts_(o),
        watched_(watched),
        ready_fd_(ready_fd),
        go_fd_(go_fd),
        fence_(a.fence),
        watchdog_(lock, token_, a, o.sync_replicas,
                  Watchdog::Events{[this](const std::string&) { lost(); }, [this] { finish(); }}) {
    // SIGUSR1 is the owner's release (rlock release): quietly. Any other stop
    // signal (an operator's kill) gives the lock up while PID runs: PID hears
    // of it as of a lost lease.
    loop().on_signal(SIGUSR1, [this](int) {
      asked_ = !finishing_;
      finish();
    });
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
      if (!watched_.alive()) return finish();
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
    // Through the handle opened at the start where there is one: never a
    // process that reused PID's pid, whether /proc can be read or not.
    if (watched_.alive()) {
      if (opts_.on_lost == OnLost::Term) watched_.signal(SIGTERM);
      if (opts_.on_lost == OnLost::Kill) watched_.signal(SIGKILL);
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
    lock_.release(token_, Millis(0), [this](Outcome<ReleaseReply> o) {
      if (asked_) tell_owner(o);
      done_ = true;
    });
  }

  // The owner's release waits for this keeper to end, then reads what its
  // release found (hold/verdict.h): a hold a failover lost (the master the
  // sentinels name lacked it) or a release the sentinels could not confirm.
  // Written whatever it found, so that the owner's release can tell "nothing
  // to report" from "no verdict came" (it warns then); not when the release
  // failed (the owner's own release then meets the same failure). When PID
  // ended first nobody asked, and nobody hears of it (the man page, acquire
  // --while-pid).
  void tell_owner(const Outcome<ReleaseReply>& o) {
    if (o.error) return;
    KeeperVerdict v;
    v.failover_lost = o.value.state == ReleaseReply::State::NotHeld && !o.value.moved_from.empty();
    v.fence = fence_;
    v.unconfirmed = o.value.unconfirmed;
    (void)write_keeper_verdict(static_cast<long>(getpid()), token_, v);
  }

  Lock& lock_;
  std::string token_;
  KeeperSpec opts_;
  const WatchedProcess& watched_;
  int ready_fd_, go_fd_;
  int64_t fence_;
  Watchdog watchdog_;
  Loop::TimerId watch_timer_ = 0, ready_timer_ = 0;
  // asked_: stopped by its owner's release (SIGUSR1), which waits for the verdict.
  bool finishing_ = false, lost_ = false, done_ = false, asked_ = false;
};

// The keeper's process, forked with every signal blocked: detached at once
// (no terminal: a Ctrl-C at the caller's prompt is not the keeper's; nothing
// of the caller's kept open: $(...) returns as soon as the caller exits; nor
// its directory: an unmountable file system), its handlers installed, then
// the signal mask `mask` put back. Never returns.
[[noreturn]] void be_keeper(Lock& lock, const std::string& token, const Acquired& acquired,
                            const KeeperSpec& spec, const WatchedProcess& watched, int ready_fd,
                            int go_fd, const sigset_t& mask) {
  setsid();
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    if (null > 2) close(null);
  }
  close_inherited_descriptors();
  (void)chdir("/");
  // A signal meant for the caller's group (a Ctrl-C while it printed) may be
  // pending here too: discarded (POSIX: setting SIG_IGN discards a pending
  // signal), so that the keeper does not take it for its own. SIGUSR1 stays
  // blocked, never discarded: it can only be the owner's release.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(sig, &ign, nullptr);
  }
  int status;
  {
    Keeper k(lock, token, acquired, spec, watched, ready_fd, go_fd);
    sigprocmask(SIG_SETMASK, &mask, nullptr);
    status = k.run();
  }
  _exit(status);
}

}  // namespace

void StartedKeeper::go() {
  if (go_fd_ >= 0) write_byte(go_fd_, kKeeperGo);
}

void StartedKeeper::abandon() {
  if (go_fd_ < 0) return;
  close(go_fd_);
  go_fd_ = -1;
}

// Forked once the lease is granted; this process waits for the keeper to say
// that it is ready to be told to stop, so that the caller's release, once
// the caller has the token, always finds a keeper that hears it.
StartedKeeper start_keeper(Lock& lock, const std::string& token, const Acquired& acquired,
                           const KeeperSpec& spec, const WatchedProcess& watched) {
  // Without a keeper nobody would renew or release the lease: give it back
  // before saying so, whatever step failed.
  auto give_up = [&](const char* step, int err) -> void {
    wait_for<ReleaseReply>(
        lock.loop(), [&](Done<ReleaseReply> d) { lock.release(token, Millis(0), std::move(d)); });
    throw Error(ErrorKind::Exec,
                fmt::format("cannot start the keeper: {}: {}", step, strerror(err)),
                exitcode::kNoKeeper);
  };
  int ready[2] = {-1, -1}, go[2] = {-1, -1};
  auto close_pipes = [&] {
    for (int fd : {ready[0], ready[1], go[0], go[1]})
      if (fd >= 0) close(fd);
  };
  if (pipe(ready) != 0 || pipe(go) != 0) {
    int err = errno;
    close_pipes();
    give_up("pipe", err);
  }
  for (int fd : {ready[0], ready[1], go[0], go[1]}) fcntl(fd, F_SETFD, FD_CLOEXEC);
  // Blocked across the fork: in this process until its _exit (a signal
  // handler here would write to the self-pipe the keeper shares); in the
  // keeper until its own handlers are in place.
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    sigprocmask(SIG_SETMASK, &old, nullptr);
    close_pipes();
    give_up("fork", err);
  }
  if (pid == 0) {
    close(ready[0]);
    close(go[1]);
    be_keeper(lock, token, acquired, spec, watched, ready[1], go[0], old);
  }
  close(ready[1]);
  close(go[0]);
  char said = read_byte(ready[0]);
  close(ready[0]);
  return StartedKeeper(pid,
                       said == kKeeperReady   ? StartedKeeper::Said::Ready
                       : said == kKeeperEnded ? StartedKeeper::Said::Ended
                                              : StartedKeeper::Said::Died,
                       go[1]);
}

bool watched_alive(long pid, uint64_t start) {
  return WatchedProcess(static_cast<pid_t>(pid), start).alive();
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

}  // namespace rlock
