#include "core/stderr_writer.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

namespace rlock {

namespace {

constexpr size_t kChunk = 512;

// The queue and its counter. Only rlock's single thread touches them (signal
// handlers never print).
std::string g_queue;
size_t g_unreported = 0;  // messages dropped, not yet reported on stderr

bool writable_now() {
  pollfd p{STDERR_FILENO, POLLOUT, 0};
  int n;
  do {
    n = poll(&p, 1, 0);
  } while (n < 0 && errno == EINTR);
  // POLLERR/POLLHUP/POLLNVAL: the write below fails and says why.
  return n > 0;
}

void drop_queue() {
  if (!g_queue.empty()) ++g_unreported;
  g_queue.clear();
}

// Writes one chunk; false when nothing more can be written now.
bool write_chunk() {
  if (!writable_now()) return false;
  size_t len = std::min(g_queue.size(), kChunk);
  ssize_t n;
  do {
    n = write(STDERR_FILENO, g_queue.data(), len);
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    g_queue.erase(0, static_cast<size_t>(n));
    return true;
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
  // EPIPE, ENOSPC, EBADF, EIO…: what is queued cannot be written.
  drop_queue();
  return false;
}

}  // namespace

void stderr_pump() {
  while (!g_queue.empty() && write_chunk()) {
  }
  if (g_queue.empty() && g_unreported > 0) {
    // Report once stderr works again; if this line cannot be written either,
    // it is simply dropped (not counted again).
    std::string note = "rlock: (" + std::to_string(g_unreported) +
                       " message(s) dropped: stderr was not writable)\n";
    g_unreported = 0;
    g_queue = std::move(note);
    while (!g_queue.empty() && write_chunk()) {
    }
    if (!g_queue.empty()) g_queue.clear();
    g_unreported = 0;
  }
}

void stderr_write(std::string_view text) {
  if (text.empty()) return;
  try {
    if (g_queue.size() + text.size() > kStderrBuffer) {
      ++g_unreported;
    } else {
      g_queue.append(text);
    }
  } catch (...) {
    // Out of memory while queueing a message: drop it rather than die.
    ++g_unreported;
  }
  stderr_pump();
}

bool stderr_pending() {
  return !g_queue.empty();
}

void stderr_drain(std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!g_queue.empty()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{STDERR_FILENO, POLLOUT, 0};
    int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) break;
    stderr_pump();
  }
  g_queue.clear();
}

}  // namespace rlock
