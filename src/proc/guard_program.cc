// The group guard as a program of its own (docs/DESIGN.md, "The one event loop"):
// built freestanding (no libc, no C++ runtime, raw system calls) into a static
// executable of a few hundred bytes, embedded in rlock and exec'd from memory
// after a vfork, which copies none of rlock's page tables. It has memory of
// its own, so the OOM killer or a core dump that takes rlock does not take it.
//
// Its whole job, as the forked guard's (proc/guard.cc): with its pipe on
// descriptor 0, every signal blocked (the mask it was exec'd with) and, if it
// replaces a guard that died, the group as argv[1], read
// records of 4 bytes (proc/guard.h): the command's process group (named by the
// command's child before exec, then by rlock), 0: rlock stood down, a negative
// -N: the lease lasts N ms more (a group still running when they pass without
// newer word is stopped, SIGSTOP, and continued by the next word), 1: rlock is
// in charge (no deadline; continued too). End of file means rlock died: SIGKILL
// to the group.
//
// Linux on x86-64 and AArch64 only (CMakeLists.txt builds it there); elsewhere
// the guard is forked.
#include <asm/unistd.h>

namespace {

#if defined(__x86_64__)
long sys(long n, long a = 0, long b = 0, long c = 0, long d = 0) {
  register long r10 asm("r10") = d;
  long r;
  asm volatile("syscall"
               : "=a"(r)
               : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
               : "rcx", "r11", "memory");
  return r;
}
#elif defined(__aarch64__)
long sys(long n, long a = 0, long b = 0, long c = 0, long d = 0) {
  register long x8 asm("x8") = n;
  register long x0 asm("x0") = a;
  register long x1 asm("x1") = b;
  register long x2 asm("x2") = c;
  register long x3 asm("x3") = d;
  asm volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
  return x0;
}
#else
#error "the guard program is built for x86-64 and AArch64 only"
#endif

constexpr long kEINTR = 4;
constexpr long kSIGKILL = 9;
constexpr long kSIGCONT = 18;  // the same numbers on x86-64 and AArch64
constexpr long kSIGSTOP = 19;
constexpr long kCLOCK_MONOTONIC = 1;
constexpr long kCLOCK_BOOTTIME = 7;
// The longest one wait: ppoll's timeout stops while the machine is suspended (the
// lease's time on the server does not), so a resume past the lease's end is found
// within this much (rlock's own clock is the same: core/loop.h).
constexpr long kLongestWaitMs = 1000;
constexpr short kPOLLIN = 1;
constexpr long kPR_SET_NAME = 15;
constexpr long kRLIMIT_NOFILE = 7;

[[noreturn]] void leave() {
  for (;;) sys(__NR_exit_group, 0);
}

// Reads exactly `len` bytes of descriptor 0, or fewer at end of file or on an error.
long read_fully(char* buf, long len) {
  long got = 0;
  while (got < len) {
    long n = sys(__NR_read, 0, reinterpret_cast<long>(buf + got), len - got);
    if (n == -kEINTR) continue;
    if (n <= 0) break;
    got += n;
  }
  return got;
}

struct Timespec {
  long sec, nsec;
};

long now_ms() {
  Timespec t{0, 0};
  if (sys(__NR_clock_gettime, kCLOCK_BOOTTIME, reinterpret_cast<long>(&t)) != 0)
    sys(__NR_clock_gettime, kCLOCK_MONOTONIC, reinterpret_cast<long>(&t));
  return t.sec * 1000 + t.nsec / 1'000'000;
}

// Whether descriptor 0 has something to read (or its end of file) within `ms`.
bool readable_within(long ms) {
  struct {
    int fd;
    short events, revents;
  } p = {0, kPOLLIN, 0};
  Timespec t{ms / 1000, (ms % 1000) * 1'000'000};
  long r;
  do {
    // No signal mask: the kernel reads no size then.
    r = sys(__NR_ppoll, reinterpret_cast<long>(&p), 1, reinterpret_cast<long>(&t), 0);
  } while (r == -kEINTR);
  return r != 0;
}

// Every descriptor but the pipe: the guard must hold no terminal, socket or
// caller's pipe open (a reader waiting for end of file would wait for it).
void close_others() {
  if (sys(__NR_close_range, 1, ~0u, 0) == 0) return;
  // Linux before 5.9: one by one, up to the limit (at most 65,536).
  unsigned long lim[2] = {65536, 65536};  // soft, hard
  sys(__NR_prlimit64, 0, kRLIMIT_NOFILE, 0, reinterpret_cast<long>(lim));
  unsigned long max = lim[0] > 65536 ? 65536 : lim[0];
  for (unsigned long fd = 1; fd < max; ++fd) sys(__NR_close, static_cast<long>(fd));
}

// The group given as argv[1] (a guard that replaces one that died), or 0.
int group_argument(const long* stack) {
  if (stack[0] < 2) return 0;  // argc
  const char* s = reinterpret_cast<const char*>(stack[2]);
  long v = 0;
  for (; *s >= '0' && *s <= '9' && v < (1L << 31); ++s) v = v * 10 + (*s - '0');
  return *s == '\0' && v > 1 && v < (1L << 31) ? static_cast<int>(v) : 0;
}

}  // namespace

// `stack`: the kernel's initial stack (argc, then argv).
extern "C" [[noreturn]] void rlock_guard_main(const long* stack) {
  // kGuardName (proc/guard.h): no "rlock" in it, which `pkill -9 rlock` would match.
  static const char name[] = "lockguard";
  sys(__NR_prctl, kPR_SET_NAME, reinterpret_cast<long>(name));
  close_others();
  int pgid = group_argument(stack), record;
  long deadline = -1;  // the lease's end (now_ms), or none
  bool stopped = false;
  for (;;) {
    if (deadline >= 0) {
      long left = deadline - now_ms();
      if (left > 0 && !readable_within(left < kLongestWaitMs ? left : kLongestWaitMs))
        continue;  // the clock decides
      if (left <= 0) {
        // rlock said nothing by the lease's end (stopped, frozen, starved):
        // the group must not run on without a lease; rlock's next word continues it.
        if (pgid > 1) stopped = sys(__NR_kill, -static_cast<long>(pgid), kSIGSTOP) == 0;
        deadline = -1;
        continue;
      }
    }
    if (read_fully(reinterpret_cast<char*>(&record), sizeof record) != sizeof record) break;
    if (record == 0) leave();  // stand down
    if (record > 1) {
      pgid = record;
      continue;
    }
    deadline = record < 0 ? now_ms() - static_cast<long>(record) : -1;
    if (stopped) sys(__NR_kill, -static_cast<long>(pgid), kSIGCONT);
    stopped = false;
  }
  if (pgid > 1) sys(__NR_kill, -static_cast<long>(pgid), kSIGKILL);  // rlock died
  leave();
}

// The entry point: the kernel's initial stack, realigned for the call.
#if defined(__x86_64__)
asm(".text\n"
    ".globl _start\n"
    "_start:\n"
    "  xor %ebp, %ebp\n"
    "  mov %rsp, %rdi\n"
    "  and $-16, %rsp\n"
    "  call rlock_guard_main\n"
    "  hlt\n");
#elif defined(__aarch64__)
asm(".text\n"
    ".globl _start\n"
    "_start:\n"
    "  mov x29, #0\n"
    "  mov x30, #0\n"
    "  mov x0, sp\n"
    "  bl rlock_guard_main\n");
#endif
