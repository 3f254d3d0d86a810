// LD_PRELOAD'ed by tests/holder.bats: memfd_create as a system that will not let rlock
// exec its guard program from memory, so that rlock forks its guard instead
// (src/proc/guard.cc). RLOCK_TEST_MEMFD, read once at load:
//   refuse   memfd_create fails with ENOSYS (Linux before 3.17, a seccomp filter)
//   noexec   the memfd is made non-executable, so execveat fails with EACCES
//            (vm.memfd_noexec=2; Linux 6.3 or later, else memfd_create fails)
//   noguard  memfd_create and fork both fail (a process limit): no guard at all
//            (rlock forks only its guard; its command is vforked, except in a
//            sanitizer build, which this mode is not for)
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace {
constexpr unsigned kExec = 0x0010U;          // MFD_EXEC
constexpr unsigned kNoExecSeal = 0x0008U;    // MFD_NOEXEC_SEAL
constexpr unsigned kAllowSealing = 0x0002U;  // MFD_ALLOW_SEALING
int mode = 0;                                // 1 refuse, 2 noexec, 3 noguard
__attribute__((constructor)) void read_mode() {
  const char* m = getenv("RLOCK_TEST_MEMFD");
  if (m && strcmp(m, "refuse") == 0) mode = 1;
  if (m && strcmp(m, "noexec") == 0) mode = 2;
  if (m && strcmp(m, "noguard") == 0) mode = 3;
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
