#include "proc/child.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#ifdef __linux__
#include <pty.h>
#endif

#include "core/error.h"

namespace rlock {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr auto kPollEvery = 10ms;
constexpr auto kPatience = 10s;

/// A fresh directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "rlock-child-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

/// Polls until `pred` holds or the patience runs out.
template <class Pred>
bool eventually(Pred pred) {
  auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(kPollEvery);
  }
  return true;
}

/// The exit status of `child`, or -1 (and a failure) if it runs too long.
int reap(Child& child) {
  std::optional<int> status;
  if (eventually([&] { return (status = child.try_reap()).has_value(); })) return *status;
  ADD_FAILURE() << "child " << child.pid() << " still running after 10s";
  return -1;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The content of a file a child writes as "write to .tmp, then mv", so its
/// appearance means it is complete.
std::string wait_for_file(const std::string& path) {
  if (!eventually([&] { return fs::exists(path); })) {
    ADD_FAILURE() << path << " did not appear within 10s";
    return "";
  }
  return slurp(path);
}

/// Shell text that writes `what`'s output to `file` atomically.
std::string publish(const std::string& what, const std::string& file) {
  return what + " > '" + file + ".tmp' && mv '" + file + ".tmp' '" + file + "'";
}

void write_file(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
}

/// Gone for good: no such process, or a zombie nobody reaps (PID 1 in a
/// container may not).
bool process_gone(pid_t pid) {
  if (kill(pid, 0) < 0 && errno == ESRCH) return true;
#ifdef __linux__
  std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  auto paren = stat.rfind(')');
  return paren != std::string::npos && stat.size() > paren + 2 && stat[paren + 2] == 'Z';
#else
  return false;
#endif
}

Child spawn_sh(const std::string& script, std::vector<std::string> env = {}) {
  return Child::spawn({{"sh", "-c", script}, std::move(env), false});
}

Error spawn_error(const SpawnSpec& spec) {
  try {
    Child child = Child::spawn(spec);
    reap(child);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "spawning " << spec.argv[0] << " did not throw";
  return Error(ErrorKind::Protocol, "no error");
}

TEST(Child, PassesTheExitCodeThrough) {
  Child child = spawn_sh("exit 3");
  EXPECT_EQ(reap(child), 3);
  EXPECT_FALSE(child.running());
  EXPECT_EQ(child.try_reap(), 3);
}

TEST(Child, KilledBySignalNExitsWith128PlusN) {
  Child child = spawn_sh("kill -TERM $$");
  EXPECT_EQ(reap(child), 128 + SIGTERM);
}

TEST(Child, CommandNotFoundIs127) {
  Error e = spawn_error({{"rlock-no-such-command-xyz"}, {}, false});
  EXPECT_EQ(e.kind(), ErrorKind::Exec);
  EXPECT_EQ(e.exit_status(), 127);
  EXPECT_STREQ(e.what(), "cannot run 'rlock-no-such-command-xyz': No such file or directory");
}

TEST(Child, MissingPathIs127) {
  Error e = spawn_error({{"/nonexistent-dir/cmd"}, {}, false});
  EXPECT_EQ(e.exit_status(), 127);
  EXPECT_STREQ(e.what(), "cannot run '/nonexistent-dir/cmd': No such file or directory");
}

TEST(Child, FileWithoutExecutePermissionIs126) {
  TempDir dir;
  write_file(dir / "script", "#!/bin/sh\nexit 0\n", 0644);
  Error e = spawn_error({{dir / "script"}, {}, false});
  EXPECT_EQ(e.kind(), ErrorKind::Exec);
  EXPECT_EQ(e.exit_status(), 126);
  EXPECT_EQ(std::string(e.what()), "cannot run '" + (dir / "script") + "': Permission denied");
}

TEST(Child, NotExecutableInPathIs126EvenIfLaterDirsLackIt) {
  TempDir dir;
  fs::create_directory(dir / "a");
  fs::create_directory(dir / "b");
  write_file(dir / "a/tool", "#!/bin/sh\nexit 0\n", 0644);
  Error e = spawn_error({{"tool"}, {"PATH=" + (dir / "a") + ":" + (dir / "b")}, false});
  EXPECT_EQ(e.exit_status(), 126);
  EXPECT_STREQ(e.what(), "cannot run 'tool': Permission denied");
}

TEST(Child, SearchesThePathOfTheChildEnvironment) {
  TempDir dir;
  fs::create_directory(dir / "empty");
  fs::create_directory(dir / "bin");
  write_file(dir / "bin/tool", "#!/bin/sh\nexit 7\n", 0755);
  Child child = Child::spawn({{"tool"}, {"PATH=" + (dir / "empty") + ":" + (dir / "bin")}, false});
  EXPECT_EQ(reap(child), 7);
}

TEST(Child, RunsAScriptWithoutInterpreterLineWithSh) {
  TempDir dir;
  write_file(dir / "script", "exit 5\n", 0755);
  Child child = Child::spawn({{dir / "script"}, {}, false});
  EXPECT_EQ(reap(child), 5);
}

TEST(Child, SeesTheAddedEnvironment) {
  TempDir dir;
  std::string out = dir / "env";
  Child child = spawn_sh(publish("printf '%s' \"$RLOCK_KEY\"", out), {"RLOCK_KEY=jobs/nightly"});
  EXPECT_EQ(wait_for_file(out), "jobs/nightly");
  EXPECT_EQ(reap(child), 0);
}

TEST(Child, AddedEntriesReplaceInheritedOnes) {
  TempDir dir;
  std::string out = dir / "env";
  setenv("RLOCK_CHILD_TEST_VAR", "old", 1);
  Child child =
      spawn_sh(publish("env | grep '^RLOCK_CHILD_TEST_VAR='", out), {"RLOCK_CHILD_TEST_VAR=new"});
  unsetenv("RLOCK_CHILD_TEST_VAR");
  EXPECT_EQ(wait_for_file(out), "RLOCK_CHILD_TEST_VAR=new\n");
  EXPECT_EQ(reap(child), 0);
}

TEST(Child, RunsInAProcessGroupOfItsOwn) {
  TempDir dir;
  std::string out = dir / "ids";
  Child child = spawn_sh(publish("echo $$ $(ps -o pgid= -p $$)", out) + "; exec sleep 30");
  EXPECT_EQ(getpgid(child.pid()), child.pid());
  EXPECT_NE(getpgid(child.pid()), getpgrp());
  std::istringstream ids(wait_for_file(out));
  pid_t pid = 0, pgid = 0;
  ids >> pid >> pgid;
  EXPECT_EQ(pid, child.pid());
  EXPECT_EQ(pgid, child.pid());
  child.signal_group(SIGTERM);
  EXPECT_EQ(reap(child), 128 + SIGTERM);
}

TEST(Child, SignalGroupReachesGrandchildren) {
  TempDir dir;
  std::string out = dir / "grandchild";
  Child child = spawn_sh("sleep 30 & " + publish("echo $!", out) + "; wait");
  pid_t grandchild = std::stoi(wait_for_file(out));
  ASSERT_GT(grandchild, 0);
  child.signal_group(SIGTERM);
  EXPECT_EQ(reap(child), 128 + SIGTERM);
  EXPECT_TRUE(eventually([&] { return process_gone(grandchild); }));
}

TEST(Child, SignalAfterReapIsANoOp) {
  Child child = spawn_sh("exit 0");
  EXPECT_EQ(reap(child), 0);
  child.signal_group(SIGKILL);
  EXPECT_EQ(child.try_reap(), 0);
}

TEST(Child, HandlersAndMaskOfTheParentAreNotInherited) {
  struct sigaction handler {
  }, old_action{};
  handler.sa_handler = [](int) {};
  sigaction(SIGTERM, &handler, &old_action);
  sigset_t term, old_mask;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_BLOCK, &term, &old_mask);

  Child child = spawn_sh("kill -TERM $$; exit 0");
  int status = reap(child);

  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  sigaction(SIGTERM, &old_action, nullptr);
  EXPECT_EQ(status, 128 + SIGTERM);
}

TEST(Child, DestructorKillsAndReapsTheWholeGroup) {
  TempDir dir;
  std::string out = dir / "grandchild";
  pid_t pid;
  pid_t grandchild;
  {
    Child child = spawn_sh("sleep 30 & " + publish("echo $!", out) + "; wait");
    pid = child.pid();
    grandchild = std::stoi(wait_for_file(out));
  }
  EXPECT_EQ(kill(pid, 0), -1);  // reaped, not a zombie
  EXPECT_EQ(errno, ESRCH);
  EXPECT_TRUE(eventually([&] { return process_gone(grandchild); }));
}

TEST(Child, MoveTransfersOwnership) {
  Child first = spawn_sh("exit 4");
  pid_t pid = first.pid();
  Child second(std::move(first));
  EXPECT_EQ(first.pid(), -1);  // NOLINT(bugprone-use-after-move): the moved-from state
  EXPECT_FALSE(first.running());
  EXPECT_EQ(first.try_reap(), std::nullopt);
  EXPECT_EQ(second.pid(), pid);
  EXPECT_EQ(reap(second), 4);
}

TEST(ExitStatusOf, MapsCodesAndSignals) {
  auto status_of = [](auto body) {
    pid_t pid = fork();
    if (pid == 0) body();
    int st = 0;
    waitpid(pid, &st, 0);
    return exit_status_of(st);
  };
  EXPECT_EQ(status_of([] { _exit(0); }), 0);
  EXPECT_EQ(status_of([] { _exit(42); }), 42);
  EXPECT_EQ(status_of([] {
              raise(SIGKILL);
              _exit(0);
            }),
            128 + SIGKILL);
}

#ifdef __linux__

TEST(Child, InheritsNoCloseOnExecDescriptorButKeepsThoseThePassedOnPurpose) {
  TempDir dir;
  std::string out = dir / "fds";
  // Like rlock's own sockets and pipes: close-on-exec, must not reach the child.
  int own = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(own, 3);
  ASSERT_EQ(fcntl(own, F_DUPFD_CLOEXEC, 201), 201);
  // Like `rlock run k -- cmd 3>log` or make's jobserver: passed on purpose.
  int passed = open("/dev/null", O_RDONLY);
  ASSERT_EQ(dup2(passed, 200), 200);

  Child child = spawn_sh(publish("ls /proc/self/fd", out));
  std::set<int> fds;
  std::istringstream listing(wait_for_file(out));
  for (int fd; listing >> fd;) fds.insert(fd);
  close(own);
  close(201);
  close(passed);
  close(200);

  EXPECT_EQ(reap(child), 0);
  EXPECT_EQ(fds.count(201), 0u);
  EXPECT_EQ(fds.count(200), 1u);
}

TEST(Child, DiesWithItsParent) {
  TempDir dir;
  std::string out = dir / "pid";
  pid_t rlock = fork();
  if (rlock == 0) {
    try {
      Child child = spawn_sh(publish("echo $$", out) + "; exec sleep 30");
      pause();
    } catch (...) {
    }
    _exit(1);
  }
  pid_t command = std::stoi(wait_for_file(out));
  kill(rlock, SIGKILL);
  waitpid(rlock, nullptr, 0);
  EXPECT_TRUE(eventually([&] { return process_gone(command); }));
}

/// Runs `body` in a new session whose controlling terminal is a fresh pty and
/// returns its exit status (or -1 if it hangs or stops, e.g. on SIGTTOU).
int in_terminal_session(int (*body)()) {
  int master;
  pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) return -1;
  if (pid == 0) _exit(body());
  int st = 0;
  bool ended = eventually([&] {
    pid_t r = waitpid(pid, &st, WNOHANG | WUNTRACED);
    return r == pid;
  });
  close(master);
  if (!ended || WIFSTOPPED(st)) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return -1;
  }
  return exit_status_of(st);
}

/// 0 when the child ran in the terminal's foreground group and the terminal
/// came back to the session afterwards.
int foreground_round_trip() {
  // Exits 0 when its own group is the terminal's foreground group.
  const char* script =
      "read -r _ _ _ _ pgrp _ _ tpgid _ < /proc/$$/stat; [ \"$pgrp\" = \"$tpgid\" ]";
  try {
    Child child = Child::spawn({{"sh", "-c", script}, {}, true});
    std::optional<int> status;
    while (!(status = child.try_reap())) usleep(10'000);
    if (*status != 0) return 10 + *status;
    return tcgetpgrp(STDIN_FILENO) == getpgrp() ? 0 : 3;
  } catch (...) {
    return 4;
  }
}

/// 0 when a background child leaves the terminal where it was.
int background_stays_background() {
  const char* script =
      "read -r _ _ _ _ pgrp _ _ tpgid _ < /proc/$$/stat; [ \"$pgrp\" != \"$tpgid\" ]";
  try {
    Child child = Child::spawn({{"sh", "-c", script}, {}, false});
    std::optional<int> status;
    while (!(status = child.try_reap())) usleep(10'000);
    if (*status != 0) return 10 + *status;
    return tcgetpgrp(STDIN_FILENO) == getpgrp() ? 0 : 3;
  } catch (...) {
    return 4;
  }
}

TEST(Child, TakesTheTerminalForegroundAndGivesItBack) {
  EXPECT_EQ(in_terminal_session(foreground_round_trip), 0);
}

TEST(Child, LeavesTheTerminalAloneWhenNotForeground) {
  EXPECT_EQ(in_terminal_session(background_stays_background), 0);
}

#endif  // __linux__

}  // namespace
}  // namespace rlock
