// rlock: a distributed lock on Redis for shell users. See man/rlock.1.
#include <fcntl.h>
#include <unistd.h>

#include "app/cli.h"
#include "cli/output.h"
#include "core/stderr_writer.h"
#include "proc/guard.h"
#include "proc/signals.h"

namespace {

// A descriptor 0, 1 or 2 that is closed at start would be handed out to the
// first socket rlock opens, and messages for stderr would then go to Redis.
// A closed stdout gets /dev/null opened for reading only: a write to it still
// fails (EBADF), as to a closed one, so that output nobody can read (a token,
// a listing) is reported (70) rather than dropped with exit 0.
void open_standard_descriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) >= 0) continue;
    int null = open("/dev/null", fd == 2 ? O_WRONLY : O_RDONLY);
    if (null >= 0 && null != fd) close(null);  // lowest free number: fd itself
  }
}

}  // namespace

int main(int argc, char** argv) {
  open_standard_descriptors();
  rlock::ignore_sigpipe();
  rlock::remember_arguments(argc, argv);
  int status = rlock::run_cli(argc, argv);
  // Last messages get a bounded chance to reach a slow stderr; never a hang.
  rlock::stderr_drain(std::chrono::milliseconds(500));
  // A reader that closed standard output (`| head`): killed by SIGPIPE, as
  // coreutils are, with nothing said (docs/GUIDE.md "Exit status").
  rlock::end_if_reader_gone();
  return status;
}
