// fault_proxy: a TCP proxy between rlock and redis-server that the tests can break on
// command, to simulate dropped connections and network partitions.
//
//   fault_proxy LISTEN_PORT TARGET_HOST TARGET_PORT CONTROL_DIR [DELAY_MS]
//
// Listens on 127.0.0.1:LISTEN_PORT (0 = the kernel picks) and prints the bound port on
// stdout (one line, flushed) once listening. Each accepted connection gets its own
// connection to TARGET_HOST:TARGET_PORT and bytes are forwarded both ways, half-closes
// included. With DELAY_MS (> 0), every byte the target sends reaches the client DELAY_MS
// later, in order (an EOF too): a slow server, whose replies come last while what it
// does with a request happens on time (requests are not delayed). DELAY_MS may be a
// decimal (0.5: half a millisecond, kept to the microsecond; the wait is a ppoll with a
// nanosecond timeout and the proxy's timer slack is set to 1 ns: what it adds is the
// scheduler's wake-up, tens of microseconds on an idle machine).
// Driven by signals, so a shell can steer it without a protocol:
//   SIGUSR1   cut: close every current connection (both sides) at once; new
//             connections are accepted and forwarded as before
//   SIGUSR2   toggle blackhole: connections are still accepted and kept open, but every
//             byte read from either side is dropped (buffered bytes too), like a
//             partition; toggling back forwards new data again
//   SIGWINCH  arm: the next bytes a client sends on any connection are not forwarded;
//             that connection is cut instead (both sides), once; `armed` in the state
//             file says whether that is still to come; with a file CONTROL_DIR/reset,
//             the client's side is reset (RST) rather than closed, and if that file
//             holds a word, the cut waits for bytes with that word in them; with a
//             file CONTROL_DIR/after instead, the client's bytes are forwarded and the
//             connection is cut when the target's next bytes on it arrive (they are
//             dropped): the request runs, its reply is lost; a word in `after` (or in
//             `reset`, which still makes the cut an RST) picks the bytes to wait for
//   SIGTERM, SIGINT, SIGHUP   exit 0
// And by one file, read at each accept: with CONTROL_DIR/reset_first holding a number N,
// each of the first N connections accepted (counted from the start, as `accepted`) is
// reset (RST) at once, before a byte is read or the target is asked: a server that is
// going down, whatever the client sends. Write it before the clients connect.
// And CONTROL_DIR/delay_ms, read at each accept too: holding a DELAY_MS (a decimal), the
// connections accepted from then on get that delay instead of the command line's (0: none);
// those already open keep theirs. One proxy per node can then be fast or slow by turns
// (the bench's round trips, where Cluster and Sentinel announce one address per node).
// After every change it rewrites CONTROL_DIR/state atomically, lines KEY=VALUE:
//   pid port mode(forward|blackhole) armed seq(signals handled) cuts accepted active
//   delay_ms (as given: 50, 0.5) resets(connections reset by reset_first)
//   dropped(bytes a blackhole read and dropped, either side)
// so a test sends a signal and then waits for `seq` to grow instead of sleeping.
// Single-threaded, one poll loop; signals arrive through a self-pipe.
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "helper_net.h"

namespace {

constexpr const char* kProg = "fault_proxy";
constexpr size_t kMaxBuffered = 256 * 1024;

int g_signal_pipe[2] = {-1, -1};

void on_signal(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  ssize_t ignored = write(g_signal_pipe[1], &b, 1);
  (void)ignored;
  errno = saved;
}

using Clock = std::chrono::steady_clock;

// Bytes read (or an EOF seen, when `bytes` is empty) that are held until `due` (DELAY_MS).
struct Late {
  Clock::time_point due;
  std::string bytes;
};

// Bytes flowing one way: read from one socket, buffered, written to the other.
struct Flow {
  std::string buf;
  std::deque<Late> late;  // read but not yet due (DELAY_MS); moved into buf when due
  size_t late_bytes = 0;
  bool eof = false;       // the reading side reached end of stream (and it is due)
  bool read_eof = false;  // the reading side reached end of stream (maybe not yet due)
  bool shut = false;      // the writing side was shut down after the EOF was passed on

  bool wants_read() const { return !read_eof && buf.size() + late_bytes < kMaxBuffered; }
  void clear() {
    buf.clear();
    late.clear();
    late_bytes = 0;
  }
};

struct Session {
  int client = -1;
  int upstream = -1;
  bool connecting = false;
  bool dead = false;
  bool cut_on_reply = false;  // an armed `after` cut: forwarded, the reply is to be dropped
  std::chrono::microseconds delay{0};  // on bytes from the target (fixed at the accept)
  Flow up;                             // client -> upstream
  Flow down;                           // upstream -> client
};

struct Target {
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = AF_INET;
};

struct Proxy {
  int listen_fd = -1;
  int port = 0;
  Target target;
  std::string control_dir;
  bool blackhole = false;
  bool armed = false;                  // cut the next connection whose client sends something
  std::chrono::microseconds delay{0};  // DELAY_MS: on bytes from the target
  std::string delay_text = "0";        // DELAY_MS as given, for the state file
  unsigned long seq = 0, cuts = 0, accepted = 0, resets = 0, dropped = 0;
  std::vector<Session> sessions;
  std::string last_state;
};

Target resolve(const char* host, const char* port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host, port, &hints, &res);
  if (rc != 0 || res == nullptr) {
    std::fprintf(stderr, "%s: cannot resolve %s:%s: %s\n", kProg, host, port, gai_strerror(rc));
    std::exit(1);
  }
  Target t;
  std::memcpy(&t.addr, res->ai_addr, res->ai_addrlen);
  t.len = res->ai_addrlen;
  t.family = res->ai_family;
  freeaddrinfo(res);
  return t;
}

// A DELAY_MS (digits with at most one '.', up to 600000) in microseconds; nullopt when TEXT
// is not one (a sign, an exponent, hex or "inf", which strtod would take, included).
std::optional<long> parse_delay_us(const std::string& text) {
  if (text.empty() || text == "." || text.find_first_not_of("0123456789.") != std::string::npos ||
      text.find('.') != text.rfind('.'))
    return std::nullopt;
  double ms = std::strtod(text.c_str(), nullptr);
  if (ms > 600000) return std::nullopt;
  return std::lround(ms * 1000);
}

void close_session(Session& s) {
  if (s.client >= 0) close(s.client);
  if (s.upstream >= 0) close(s.upstream);
  s.client = s.upstream = -1;
  s.dead = true;
}

void strip_newlines(std::string& s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
}

// The armed cut happens now: the client gets a reset (RST) with CONTROL_DIR/reset
// present, not an orderly close: its next write fails (EPIPE, ECONNRESET) instead of
// reading an EOF.
void armed_cut(Proxy& p, Session& s) {
  ++p.cuts;
  std::string ignored;
  if (helper::read_file(p.control_dir + "/reset", ignored)) {
    linger hard{1, 0};
    setsockopt(s.client, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  }
  close_session(s);
}

// Bytes read from the target: due at once, or the session's delay later.
void pass_down(const Session& s, Flow& flow, const char* buf, size_t n) {
  if (s.delay.count() <= 0 && flow.late.empty()) {
    flow.buf.append(buf, n);
    return;
  }
  flow.late.push_back(Late{Clock::now() + s.delay, std::string(buf, n)});
  flow.late_bytes += n;
}

// Moves what is due of FLOW's delayed bytes (and a delayed EOF) into its buffer.
void promote_due(Flow& flow, Clock::time_point now) {
  while (!flow.late.empty() && flow.late.front().due <= now) {
    Late& l = flow.late.front();
    if (l.bytes.empty()) flow.eof = true;
    flow.buf += l.bytes;
    flow.late_bytes -= l.bytes.size();
    flow.late.pop_front();
  }
}

// Reads once from FD into FLOW (or drops the bytes in blackhole mode).
void pump_read(Proxy& p, Session& s, int fd, Flow& flow) {
  char buf[65536];
  size_t used = flow.buf.size() + flow.late_bytes;
  size_t room = used < kMaxBuffered ? kMaxBuffered - used : 0;
  ssize_t n = read(fd, buf, room < sizeof buf ? room : sizeof buf);
  if (n > 0 && fd == s.upstream && s.cut_on_reply) {
    // An armed `after` cut: the request was forwarded and this is its reply. Dropped.
    return armed_cut(p, s);
  }
  std::string word, after_word;
  bool after = p.armed && helper::read_file(p.control_dir + "/after", after_word);
  if (p.armed) helper::read_file(p.control_dir + "/reset", word);
  strip_newlines(word);
  strip_newlines(after_word);
  if (!after_word.empty()) word = after_word;
  if (n > 0 && p.armed && fd == s.client &&
      (word.empty() ||
       std::string_view(buf, static_cast<size_t>(n)).find(word) != std::string_view::npos)) {
    // The armed cut: these bytes never reach the target (and if `reset` or
    // `after` holds a word, only bytes with that word in them are cut); or with
    // CONTROL_DIR/after they do, and the reply is what gets cut.
    p.armed = false;
    if (!after) return armed_cut(p, s);
    s.cut_on_reply = true;
    if (!p.blackhole) flow.buf.append(buf, static_cast<size_t>(n));
  } else if (n > 0) {
    if (p.blackhole) {
      p.dropped += static_cast<unsigned long>(n);
      return;
    }
    if (fd == s.upstream) {
      pass_down(s, flow, buf, static_cast<size_t>(n));
    } else {
      flow.buf.append(buf, static_cast<size_t>(n));
    }
  } else if (n == 0) {
    flow.read_eof = true;
    if (fd == s.upstream && (s.delay.count() > 0 || !flow.late.empty())) {
      flow.late.push_back(Late{Clock::now() + s.delay, {}});  // the EOF, in its turn
    } else {
      flow.eof = true;
    }
  } else if (errno != EAGAIN && errno != EINTR) {
    close_session(s);
  }
}

// Writes what FLOW holds to FD; passes an EOF on as a half-close once drained.
void flush(Session& s, Flow& flow, int fd) {
  while (!s.dead && !flow.buf.empty()) {
    ssize_t n = send(fd, flow.buf.data(), flow.buf.size(), MSG_NOSIGNAL);
    if (n > 0) {
      flow.buf.erase(0, static_cast<size_t>(n));
    } else if (errno == EAGAIN || errno == EINTR) {
      return;
    } else {
      close_session(s);
    }
  }
  if (!s.dead && flow.eof && flow.buf.empty() && flow.late.empty() && !flow.shut) {
    shutdown(fd, SHUT_WR);
    flow.shut = true;
  }
}

void handle_session(Proxy& p, Session& s, short client_ev, short upstream_ev) {
  if (s.connecting && upstream_ev != 0) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(s.upstream, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return close_session(s);
    s.connecting = false;
    upstream_ev = 0;
  }
  if (client_ev & (POLLIN | POLLHUP | POLLERR)) pump_read(p, s, s.client, s.up);
  if (!s.dead && !s.connecting && (upstream_ev & (POLLIN | POLLHUP | POLLERR))) {
    pump_read(p, s, s.upstream, s.down);
  }
  if (!s.dead && !s.connecting) flush(s, s.up, s.upstream);
  if (!s.dead) flush(s, s.down, s.client);
  if (!s.dead && s.up.shut && s.down.shut) close_session(s);
}

void accept_all(Proxy& p) {
  int fd;
  while ((fd = helper::accept_nonblocking(p.listen_fd)) >= 0) {
    ++p.accepted;
    std::string first;
    if (helper::read_file(p.control_dir + "/reset_first", first)) {
      char* end = nullptr;
      unsigned long n = std::strtoul(first.c_str(), &end, 10);
      if (end != first.c_str() && p.accepted <= n) {
        ++p.resets;
        linger hard{1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
        close(fd);
        continue;
      }
    }
    // Bytes are passed on as they come: no Nagle wait for an ACK the peer delays (40 ms).
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    Session s;
    s.client = fd;
    s.delay = p.delay;
    std::string delay;
    if (helper::read_file(p.control_dir + "/delay_ms", delay)) {
      strip_newlines(delay);
      if (std::optional<long> us = parse_delay_us(delay)) s.delay = std::chrono::microseconds(*us);
    }
    s.upstream = socket(p.target.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s.upstream < 0) {
      close_session(s);
      continue;
    }
    setsockopt(s.upstream, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(s.upstream, reinterpret_cast<const sockaddr*>(&p.target.addr), p.target.len) == 0) {
      s.connecting = false;
    } else if (errno == EINPROGRESS) {
      s.connecting = true;
    } else {
      close_session(s);  // target down: the client sees its connection closed at once
      continue;
    }
    p.sessions.push_back(std::move(s));
  }
}

void write_state(Proxy& p) {
  std::string state =
      "pid=" + std::to_string(getpid()) + "\nport=" + std::to_string(p.port) +
      "\nmode=" + (p.blackhole ? "blackhole" : "forward") + "\narmed=" + (p.armed ? "1" : "0") +
      "\nseq=" + std::to_string(p.seq) + "\ncuts=" + std::to_string(p.cuts) +
      "\naccepted=" + std::to_string(p.accepted) + "\nactive=" + std::to_string(p.sessions.size()) +
      "\ndelay_ms=" + p.delay_text + "\nresets=" + std::to_string(p.resets) +
      "\ndropped=" + std::to_string(p.dropped) + "\n";
  if (state == p.last_state) return;
  if (!helper::write_file_atomic(p.control_dir + "/state", state)) {
    helper::die(kProg, "writing the state file");
  }
  p.last_state = state;
}

// Handles the signals queued in the self-pipe; returns false when the proxy should exit.
bool handle_signals(Proxy& p) {
  unsigned char sigs[64];
  ssize_t n;
  while ((n = read(g_signal_pipe[0], sigs, sizeof sigs)) > 0) {
    for (ssize_t i = 0; i < n; ++i) {
      if (sigs[i] == SIGUSR1) {
        for (Session& s : p.sessions) close_session(s);
        p.sessions.clear();
        ++p.cuts;
      } else if (sigs[i] == SIGWINCH) {
        p.armed = true;
      } else if (sigs[i] == SIGUSR2) {
        p.blackhole = !p.blackhole;
        for (Session& s : p.sessions) {
          s.up.clear();
          s.down.clear();
          if (s.down.read_eof) s.down.eof = true;  // a delayed EOF was cleared with the bytes
        }
      } else {
        return false;
      }
      ++p.seq;
    }
  }
  return true;
}

// The time until the first delayed bytes are due, for ppoll: TS filled and returned, or
// nullptr (wait without a timeout) when none wait.
const timespec* poll_timeout(const Proxy& p, timespec& ts) {
  std::optional<Clock::time_point> first;
  for (const Session& s : p.sessions)
    if (!s.down.late.empty() && (!first || s.down.late.front().due < *first))
      first = s.down.late.front().due;
  if (!first) return nullptr;
  auto left = std::chrono::ceil<std::chrono::nanoseconds>(*first - Clock::now()).count();
  if (left < 0) left = 0;
  ts.tv_sec = static_cast<time_t>(left / 1000000000);
  ts.tv_nsec = static_cast<long>(left % 1000000000);
  return &ts;
}

void run(Proxy& p) {
  std::vector<pollfd> pfds;
  for (;;) {
    write_state(p);
    pfds.clear();
    pfds.push_back(pollfd{g_signal_pipe[0], POLLIN, 0});
    pfds.push_back(pollfd{p.listen_fd, POLLIN, 0});
    for (const Session& s : p.sessions) {
      short cev = (s.up.wants_read() ? POLLIN : 0) | (!s.down.buf.empty() ? POLLOUT : 0);
      short uev = s.connecting
                      ? POLLOUT
                      : (s.down.wants_read() ? POLLIN : 0) | (!s.up.buf.empty() ? POLLOUT : 0);
      // An fd we wait nothing from stays out of the set, or its POLLHUP would spin us.
      pfds.push_back(pollfd{cev ? s.client : -1, cev, 0});
      pfds.push_back(pollfd{uev ? s.upstream : -1, uev, 0});
    }
    timespec ts{};
    if (ppoll(pfds.data(), pfds.size(), poll_timeout(p, ts), nullptr) < 0) {
      if (errno == EINTR) continue;
      helper::die(kProg, "poll");
    }
    if (pfds[0].revents != 0) {
      if (!handle_signals(p)) return;
      continue;  // sessions may have changed; the others' events are still pending
    }
    Clock::time_point now = Clock::now();
    for (Session& s : p.sessions) promote_due(s.down, now);
    for (size_t i = 0; i < p.sessions.size(); ++i) {
      handle_session(p, p.sessions[i], pfds[2 + 2 * i].revents, pfds[3 + 2 * i].revents);
    }
    std::erase_if(p.sessions, [](const Session& s) { return s.dead; });
    if (pfds[1].revents & POLLIN) accept_all(p);
  }
}

void install_signals() {
  if (pipe2(g_signal_pipe, O_NONBLOCK | O_CLOEXEC) != 0) helper::die(kProg, "pipe2");
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGUSR1, SIGUSR2, SIGWINCH, SIGTERM, SIGINT, SIGHUP})
    sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

}  // namespace

int main(int argc, char** argv) {
  int port = argc == 5 || argc == 6 ? helper::parse_port(argv[1]) : -1;
  long delay_us = 0;
  if (argc == 6) {
    std::optional<long> us = parse_delay_us(argv[5]);
    if (!us) port = -1;
    delay_us = us.value_or(0);
  }
  if (port < 0 || helper::parse_port(argv[3]) <= 0) {
    std::fprintf(stderr, "usage: %s LISTEN_PORT TARGET_HOST TARGET_PORT CONTROL_DIR [DELAY_MS]\n",
                 kProg);
    return 64;
  }
  install_signals();
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);  // a 0.5 ms delay, not 0.55 ms
  Proxy p;
  p.target = resolve(argv[2], argv[3]);
  p.control_dir = argv[4];
  p.delay = std::chrono::microseconds(delay_us);
  if (argc == 6) p.delay_text = argv[5];
  if (mkdir(p.control_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    helper::die(kProg, "creating the control directory");
  }
  p.listen_fd = helper::listen_loopback(kProg, port, &p.port);
  helper::write_file_atomic(p.control_dir + "/pid", std::to_string(getpid()) + "\n");
  helper::write_file_atomic(p.control_dir + "/port", std::to_string(p.port) + "\n");
  write_state(p);
  helper::announce_port(p.port);
  run(p);
  for (Session& s : p.sessions) close_session(s);
  close(p.listen_fd);
  return 0;
}
