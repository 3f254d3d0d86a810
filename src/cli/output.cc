#include "cli/output.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "core/error.h"

namespace rlock {

namespace {
bool g_reader_gone = false;  // stdout_reader_gone()
}  // namespace

bool stdout_is_tty() {
  return isatty(STDOUT_FILENO) == 1;
}

size_t stdout_columns() {
  return terminal_columns(STDOUT_FILENO);
}

void print_out(std::string_view text) {
  while (!text.empty()) {
    ssize_t n = write(STDOUT_FILENO, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) throw stdout_reader_left();
    if (n <= 0)
      throw Error(ErrorKind::Protocol, fmt::format("cannot write to standard output: {}",
                                                   n < 0 ? strerror(errno) : "nothing written"));
    text.remove_prefix(static_cast<size_t>(n));
  }
}

bool stdout_reader_gone() {
  return g_reader_gone;
}

Error stdout_reader_left() {
  g_reader_gone = true;
  return Error(ErrorKind::Protocol, "standard output: its reader closed it", 128 + SIGPIPE,
               Cause::ReaderGone);
}

bool watch_stdout_reader(Loop& loop, std::function<void(const Error&)> gone) {
  struct stat out {};
  if (fstat(STDOUT_FILENO, &out) != 0 || !S_ISFIFO(out.st_mode)) return false;
  loop.watch(STDOUT_FILENO, 0, [&loop, gone = std::move(gone)](short revents) {
    if (!(revents & POLLERR)) return;
    loop.unwatch(STDOUT_FILENO);
    gone(stdout_reader_left());
  });
  return true;
}

void end_if_reader_gone() {
  if (!g_reader_gone) return;
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPIPE, &sa, nullptr);
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  sigprocmask(SIG_UNBLOCK, &pipe, nullptr);
  raise(SIGPIPE);
}
bool read_yes_answer() {
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  return answer == "y" || answer == "Y" || answer == "yes";
}

}  // namespace rlock
