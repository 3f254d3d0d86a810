// RLOCK_HELD's line format (hostile input is skipped, never trusted) and the process
// facts nesting and --while-pid rely on (a reused PID is told apart by its start time).
#include "hold/held.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "hold/keeper.h"
#include "proc/procinfo.h"

namespace rlock {
namespace {

TEST(Held, RoundTrip) {
  std::vector<HeldEntry> in{{"tok1", "a key", "lock:", "redis://h:1/0"},
                            {"tok2", "b", "p:", "redis://x:2/0 redis://y:3/0", 4242, 77, true}};
  auto out = parse_held(format_held(in).c_str());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].key, "a key");
  EXPECT_EQ(out[1].where, "redis://x:2/0 redis://y:3/0");
  EXPECT_EQ(out[1].keeper, 4242);
  EXPECT_EQ(out[1].keeper_start, 77u);
  EXPECT_TRUE(out[1].nested);
  EXPECT_FALSE(out[0].nested);
}

TEST(Held, MalformedLinesAreSkipped) {
  auto out = parse_held(
      "only-two\tfields\n"
      "t\tk\tp\tw\tkeeper=abc\n"
      "t\tk\tp\tw\tkeeper=12\n"
      "t\tk\tp\tw\tkeeper=12:x\n"
      "t\tk\tp\tw\tkeeper=12:5\tdeeper\n"
      "t\tk\tp\tw\tnot-a-keeper=5\n"
      "\tk\tp\tw\n"
      "t\t\tp\tw\n"
      "t\tk\tp\tw\x01\n"
      "good\tk\tp\tw\n"
      "pid1\tk\tp\tw\tkeeper=1:5");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].token, "good");
  EXPECT_EQ(out[1].keeper, 1);  // a container's entrypoint may be pid 1
}

TEST(Held, TooLongIsIgnoredWhole) {
  std::string big(kMaxHeldBytes + 10, 'x');
  EXPECT_TRUE(parse_held(big.c_str()).empty());
  EXPECT_TRUE(parse_held(nullptr).empty());
}

TEST(Held, HeldWithReplacesTheSameLock) {
  std::vector<HeldEntry> in{{"old", "k", "lock:", "w"}, {"x", "j", "lock:", "w"}};
  auto out = parse_held(held_with(in, {"new", "k", "lock:", "w"}).c_str());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].key, "j");
  EXPECT_EQ(out[1].token, "new");
}

TEST(ProcInfo, SelfAndAncestors) {
  if (!kProcInfoKnown) GTEST_SKIP() << "no process information on this system";
  auto me = proc_info(getpid());
  ASSERT_TRUE(me.has_value());
  EXPECT_EQ(me->ppid, getppid());
  EXPECT_TRUE(is_ancestor(getppid(), getpid()));
  EXPECT_TRUE(is_ancestor(getpid(), getpid()));
  EXPECT_FALSE(is_ancestor(getpid(), getppid()));
  EXPECT_FALSE(proc_info(0).has_value());
}

TEST(ProcInfo, ReusedPidIsNotTheWatchedProcess) {
  if (!kProcInfoKnown) GTEST_SKIP() << "no process information on this system";
  auto me = proc_info(getpid());
  ASSERT_TRUE(me.has_value());
  EXPECT_TRUE(watched_alive(getpid(), me->start));
  // Another start time under the same PID: a process that reused it.
  EXPECT_FALSE(watched_alive(getpid(), me->start + 1));
}

TEST(ProcInfo, AnEndedProcessIsNotAlive) {
  if (!kProcInfoKnown) GTEST_SKIP() << "no process information on this system";
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  int st = 0;
  waitpid(child, &st, 0);
  EXPECT_FALSE(watched_alive(child, 0));
}

// Every descriptor this process may open in use, until destroyed: proc_info
// cannot read /proc meanwhile (EMFILE).
class NoDescriptorLeft {
 public:
  NoDescriptorLeft() {
    getrlimit(RLIMIT_NOFILE, &old_);
    struct rlimit low = old_;
    low.rlim_cur = std::min<rlim_t>(old_.rlim_cur, 256);
    setrlimit(RLIMIT_NOFILE, &low);
    for (;;) {
      int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) break;
      held_.push_back(fd);
    }
  }
  ~NoDescriptorLeft() {
    for (int fd : held_) close(fd);
    setrlimit(RLIMIT_NOFILE, &old_);
  }

 private:
  struct rlimit old_ {};
  std::vector<int> held_;
};

// A child that waits for its pipe to close, then exits; `start` is its start time.
pid_t waiting_child(int& pipe_w, uint64_t& start) {
  int p[2];
  if (pipe(p) != 0) return -1;
  pid_t child = fork();
  if (child == 0) {
    close(p[1]);
    char c;
    while (read(p[0], &c, 1) < 0 && errno == EINTR) {
    }
    _exit(0);
  }
  close(p[0]);
  pipe_w = p[1];
  auto info = proc_info(child);
  start = info ? info->start : 0;
  return child;
}

TEST(WatchedProcess, TellsAZombieHasEndedWithNoDescriptorLeft) {
  if (!kProcInfoKnown) GTEST_SKIP() << "no process information on this system";
  int w = -1;
  uint64_t start = 0;
  pid_t child = waiting_child(w, start);
  ASSERT_GT(child, 0);
  int err = 0;
  WatchedProcess watched = WatchedProcess::open(child, start, err);
  EXPECT_EQ(err, 0);
  if (!watched.certain()) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    GTEST_SKIP() << "no process handle (pidfd) on this system";
  }
  EXPECT_TRUE(watched.alive());
  close(w);
  // Ended, not reaped: a zombie, which the kernel still knows by its PID.
  siginfo_t si{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &si, WEXITED | WNOWAIT), 0);
  {
    NoDescriptorLeft full;
    EXPECT_EQ(open("/dev/null", O_RDONLY | O_CLOEXEC), -1);
    // Without a handle, PID's start time cannot be read: it counts as running,
    // and is never signalled.
    EXPECT_TRUE(watched_alive(child, start));
    EXPECT_FALSE(WatchedProcess(child, start).signal(0));
    // With it: ended.
    EXPECT_FALSE(watched.alive());
  }
  waitpid(child, nullptr, 0);
}

TEST(WatchedProcess, SignalsItsProcessWithNoDescriptorLeftAndNothingOnceItEnded) {
  if (!kProcInfoKnown) GTEST_SKIP() << "no process information on this system";
  int w = -1;
  uint64_t start = 0;
  pid_t child = waiting_child(w, start);
  ASSERT_GT(child, 0);
  int err = 0;
  WatchedProcess watched = WatchedProcess::open(child, start, err);
  EXPECT_EQ(err, 0);
  if (watched.certain()) {
    NoDescriptorLeft full;
    EXPECT_TRUE(watched.signal(SIGTERM));
  } else {
    EXPECT_TRUE(watched.signal(SIGTERM));
  }
  int st = 0;
  ASSERT_EQ(waitpid(child, &st, 0), child);
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
  close(w);
  // Reaped: its PID may be anybody's now; the handle signals nobody.
  EXPECT_FALSE(watched.alive());
  EXPECT_FALSE(watched.signal(0));
}

TEST(WatchedProcess, AnotherStartTimeIsAnotherProcess) {
  if (!kProcInfoKnown) GTEST_SKIP() << "no process information on this system";
  auto me = proc_info(getpid());
  ASSERT_TRUE(me.has_value());
  int err = 0;
  WatchedProcess other = WatchedProcess::open(getpid(), me->start + 1, err);
  EXPECT_EQ(err, 0);
  EXPECT_FALSE(other.certain());
  EXPECT_FALSE(other.alive());
  EXPECT_FALSE(other.signal(0));
  WatchedProcess self = WatchedProcess::open(getpid(), me->start, err);
  EXPECT_EQ(err, 0);
  EXPECT_TRUE(self.alive());
}

}  // namespace
}  // namespace rlock
