#include "net/resolver.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "core/text.h"

namespace rlock {

namespace {

#ifdef MSG_NOSIGNAL
constexpr int kSendFlags = MSG_NOSIGNAL;
#else
constexpr int kSendFlags = 0;
#endif

// A numeric host (or a Unix path) converted without any lookup.
bool is_numeric(const Endpoint& ep) {
  if (ep.kind == Endpoint::Kind::Unix) return true;
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(ep.host.c_str(), nullptr, &hints, &res) != 0) return false;
  freeaddrinfo(res);
  return true;
}

// Lookup threads still running (abandoned ones included).
std::atomic<int> g_lookup_threads{0};

void set_cloexec_nonblock(int fd) {
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

}  // namespace

// One lookup, shared by the loop and the helper thread. The thread owns the
// write end of the pair and closes it when it is done; the loop owns the read
// end and may close it first (an abandoned lookup): the thread's send then
// fails quietly (no SIGPIPE).
struct AddressBook::Pending {
  std::string host;
  int port = 0;
  std::atomic<bool> done{false};
  std::string error;  // set by the thread when done and it failed
  std::vector<Address> found;
  int read_fd = -1, write_fd = -1;
  Loop::TimerId bound_timer = 0;
};

AddressBook::AddressBook(Loop& loop, Endpoint ep, Millis bound)
    : loop_(loop), ep_(std::move(ep)), bound_(bound) {
  if (is_numeric(ep_)) {
    numeric_ = true;
    last_ = resolve(ep_);  // no lookup: converts in place
  }
}

AddressBook::AddressBook(Loop& loop, std::vector<Address> fixed)
    : loop_(loop), numeric_(true), last_(std::move(fixed)) {}

AddressBook::~AddressBook() {
  life_.end();
  loop_.cancel(patience_timer_);
  if (pending_ && pending_->read_fd >= 0) {
    loop_.cancel(pending_->bound_timer);
    loop_.unwatch(pending_->read_fd);
    close(pending_->read_fd);
  }
}

std::optional<std::vector<Address>> AddressBook::ready(bool fresh) const {
  if (numeric_) return last_;
  if (!fresh && last_at_ && Clock::now() - *last_at_ < kFreshLookup) return last_;
  return std::nullopt;
}

void AddressBook::lookup(Found done) {
  waiting_.push_back(std::move(done));
  if (!last_.empty() && !patience_timer_) {
    auto alive = life_.token();
    patience_timer_ = loop_.after(kLookupPatience, [this, alive] {
      if (!alive) return;
      patience_timer_ = 0;
      answer(Error(ErrorKind::Unavailable,
                   fmt::format("the lookup of '{}' is slow (it goes on)", escape_text(ep_.host))));
    });
  }
  if (!pending_) start_lookup();  // one lookup at a time; its answer is for everyone
}

void AddressBook::start_lookup() {
  auto p = std::make_shared<Pending>();
  p->host = ep_.host;
  p->port = ep_.port;
  if (g_lookup_threads.load() >= kMaxLookupThreads) {
    pending_ = p;
    return cannot_look_up(
        fmt::format("{} earlier lookups have not finished (a resolver that does not answer)",
                    kMaxLookupThreads));
  }
  int fds[2];
#ifdef SOCK_CLOEXEC
  int made = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds);
#else
  int made = socketpair(AF_UNIX, SOCK_STREAM, 0, fds);
#endif
  pending_ = p;
  if (made != 0) return cannot_look_up(strerror(errno));
  set_cloexec_nonblock(fds[0]);
  set_cloexec_nonblock(fds[1]);
#ifdef SO_NOSIGPIPE
  int one = 1;
  setsockopt(fds[1], SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#endif
  p->read_fd = fds[0];
  p->write_fd = fds[1];
  // The thread runs with every signal blocked: signals are the loop's (the
  // self-pipe), and must not interrupt a lookup in another thread.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  std::optional<std::string> failed;
  try {
    g_lookup_threads.fetch_add(1);
    std::thread([p] {
      Endpoint ep;
      ep.host = p->host;
      ep.port = p->port;
      try {
        p->found = resolve(ep);
      } catch (const Error& e) {
        p->error = e.what();
      }
      p->done.store(true, std::memory_order_release);
      char b = 1;
      (void)!send(p->write_fd, &b, 1, kSendFlags);
      close(p->write_fd);
      g_lookup_threads.fetch_sub(1);
    }).detach();
  } catch (const std::system_error& e) {
    g_lookup_threads.fetch_sub(1);
    failed = e.what();
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (failed) {
    close(fds[0]);
    close(fds[1]);
    p->read_fd = -1;
    return cannot_look_up(*failed);
  }
  auto alive = life_.token();
  loop_.watch(p->read_fd, POLLIN, [this, alive, p](short) {
    if (!alive || !p->done.load(std::memory_order_acquire)) return;
    if (!p->error.empty())
      finish(Error(ErrorKind::Unavailable, p->error), {});
    else
      finish(std::nullopt, std::move(p->found));
  });
  p->bound_timer = loop_.after(bound_, [this, alive] {
    if (!alive) return;
    finish(Error(ErrorKind::Unavailable,
                 fmt::format("cannot resolve '{}': no answer within {}ms (--connect-timeout)",
                             escape_text(ep_.host), bound_.count())),
           {});
  });
}

void AddressBook::cannot_look_up(const std::string& why) {
  // Answered from the loop, never from inside lookup().
  loop_.after(Millis(0), [this, alive = life_.token(), why] {
    if (alive)
      finish(Error(ErrorKind::Unavailable,
                   fmt::format("cannot look up '{}': {}", escape_text(ep_.host), why)),
             {});
  });
}

void AddressBook::finish(std::optional<Error> err, std::vector<Address> found) {
  if (pending_) {
    loop_.cancel(pending_->bound_timer);
    if (pending_->read_fd >= 0) {
      loop_.unwatch(pending_->read_fd);
      close(pending_->read_fd);
    }
    pending_.reset();
  }
  if (!err) {
    last_ = std::move(found);
    last_at_ = Clock::now();
  }
  answer(err);
}

void AddressBook::answer(const std::optional<Error>& err) {
  // On a failure (or a slow lookup), the addresses the name had are still the
  // best guess: they go to the callers with the error that says why they are
  // not fresh.
  loop_.cancel(patience_timer_);
  patience_timer_ = 0;
  auto waiting = std::move(waiting_);
  waiting_.clear();
  auto alive = life_.token();
  for (auto& w : waiting) {
    w(err, last_);
    if (!alive) return;
  }
}

}  // namespace rlock
