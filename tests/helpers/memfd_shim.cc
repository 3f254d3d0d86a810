// LD_PRELOAD'ed by tests/holder.bats: memfd_create as a system that will not let rlock
// exec its guard program from memory, so that rlock forks its guard instead
// (src/proc/guard.cc). RLOCK_TEST_MEMFD, read once at load:
//   refuse   memfd_create fails with ENOSYS (Linux before 3.17, a seccomp filter)
//   noexec   the memfd is made non-executable, so execveat fails with EACCES
//            (vm.memfd_noexec=2; Linux 6.3 or later, else memfd_create fails)
//   killexec the guard program's process is killed at its execveat (a seccomp filter
//            that kills; rlock calls it through syscall(3))
//   slowname rlock's own writes of one 4-byte record to a pipe (the group it names to
//            its guard, its stand-down) wait 5 s first: rlock is slow to name the
//            group (a loaded machine), its command's child is not
//   noguard  memfd_create and fork both fail (a process limit): no guard at all
//            (rlock forks only its guard; its command is vforked, except in a
//            sanitizer build, which this mode is not for)
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace {
constexpr unsigned kExec = 0x0010U;          // MFD_EXEC
constexpr unsigned kNoExecSeal = 0x0008U;    // MFD_NOEXEC_SEAL
constexpr unsigned kAllowSealing = 0x0002U;  // MFD_ALLOW_SEALING
int mode = 0;  // 1 refuse, 2 noexec, 3 noguard, 4 killexec, 5 slowname
pid_t rlock_pid = 0;
// The real functions, found at load: never looked up in a vfork child.
using SyscallFn = long (*)(long, ...);
SyscallFn real_syscall = nullptr;
using WriteFn = ssize_t (*)(int, const void*, size_t);
WriteFn real_write = nullptr;
__attribute__((constructor)) void read_mode() {
  const char* m = getenv("RLOCK_TEST_MEMFD");
  if (m && strcmp(m, "refuse") == 0) mode = 1;
  if (m && strcmp(m, "noexec") == 0) mode = 2;
  if (m && strcmp(m, "noguard") == 0) mode = 3;
  if (m && strcmp(m, "killexec") == 0) mode = 4;
  if (m && strcmp(m, "slowname") == 0) mode = 5;
  rlock_pid = getpid();
  real_write = reinterpret_cast<WriteFn>(dlsym(RTLD_NEXT, "write"));
  real_syscall = reinterpret_cast<SyscallFn>(dlsym(RTLD_NEXT, "syscall"));
}
}  // namespace

extern "C" int memfd_create(const char* name, unsigned int flags) {
  if (mode == 1 || mode == 3) {
    errno = ENOSYS;
    return -1;
  }
  if (mode == 2) flags = (flags & ~kExec) | kNoExecSeal | kAllowSealing;
  return static_cast<int>(syscall(SYS_memfd_create, name, flags));
}

extern "C" pid_t fork() {
  if (mode == 3) {
    errno = EAGAIN;
    return -1;
  }
  static auto real = reinterpret_cast<pid_t (*)()>(dlsym(RTLD_NEXT, "fork"));
  return real();
}

extern "C" long syscall(long n, ...) {
  va_list ap;
  va_start(ap, n);
  long a[6];
  for (long& v : a) v = va_arg(ap, long);
  va_end(ap);
  if (mode == 4 && n == SYS_execveat) real_syscall(SYS_kill, real_syscall(SYS_getpid), SIGKILL);
  return real_syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

extern "C" ssize_t write(int fd, const void* buf, size_t len) {
  struct stat st;
  if (mode == 5 && len == 4 && getpid() == rlock_pid && fstat(fd, &st) == 0 &&
      S_ISFIFO(st.st_mode)) {
    struct timespec five = {5, 0};
    nanosleep(&five, nullptr);
  }
  return real_write(fd, buf, len);
}
