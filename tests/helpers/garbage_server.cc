// garbage_server: a TCP server on 127.0.0.1 that speaks broken Redis, so the tests can
// drive rlock's "unavailable" and "protocol error" paths against a real socket.
//
//   garbage_server PORT MODE [PIDFILE]
//
// PORT 0 lets the kernel pick; the bound port is printed on stdout (one line, flushed)
// once the socket listens. MODE:
//   garbage        answer every read with bytes that are not RESP ("HELLO?? \x01\x02\r\n")
//                  and keep the connection open
//   close          accept and close at once
//   silent         accept and read, never answer
//   badtype        answer every command with ":42\r\n" (an integer where rlock expects
//                  something else)
//   reply=TEXT     answer every command with TEXT, where \r \n \\ and \xNN are decoded
//                  (e.g. 'reply=*1\r\n$2\r\nhi\r\n')
//   flood=TEXT     answer the first command with TEXT (decoded as above), then send
//                  ":1\r\n" without end, as fast as the client reads
//                  (e.g. 'flood=*100000000\r\n': an endless array)
//   sentinel=HOST:PORT:EPOCH
//                  a sentinel that names HOST:PORT with configuration epoch EPOCH:
//                  SENTINEL get-master-addr-by-name gets [HOST, PORT], SENTINEL MASTER
//                  gets ip, port and config-epoch, anything else +OK
// Many connections at once (poll); runs until killed.
#include <poll.h>
#include <signal.h>

#include <cctype>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "helper_net.h"

namespace {

constexpr const char* kProg = "garbage_server";

enum class Mode { kGarbage, kClose, kSilent, kReply, kFlood, kSentinel };

struct Config {
  Mode mode = Mode::kGarbage;
  std::string reply;    // for kReply
  std::string by_addr;  // kSentinel: the reply to get-master-addr-by-name
  std::string master;   // kSentinel: the reply to SENTINEL MASTER
};

std::string bulk(const std::string& s) {
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

// "HOST:PORT:EPOCH" (HOST without ':').
bool parse_sentinel(std::string_view arg, Config* cfg) {
  size_t a = arg.find(':'), b = arg.rfind(':');
  if (a == std::string_view::npos || a == b || a == 0) return false;
  std::string host(arg.substr(0, a)), port(arg.substr(a + 1, b - a - 1)), epoch(arg.substr(b + 1));
  if (port.empty() || epoch.empty()) return false;
  cfg->mode = Mode::kSentinel;
  cfg->by_addr = "*2\r\n" + bulk(host) + bulk(port);
  cfg->master = "*6\r\n" + bulk("ip") + bulk(host) + bulk("port") + bulk(port) +
                bulk("config-epoch") + bulk(epoch);
  return true;
}

// kSentinel: the reply to one request (its raw bytes).
std::string sentinel_reply(const Config& cfg, std::string_view request) {
  std::string low(request);
  for (char& ch : low) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (low.find("get-master-addr-by-name") != std::string::npos) return cfg.by_addr;
  if (low.find("sentinel") != std::string::npos && low.find("master") != std::string::npos)
    return cfg.master;
  return "+OK\r\n";
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes \r \n \t \\ \xNN; any other backslash sequence is kept as written.
std::string unescape(std::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\\' || i + 1 == in.size()) {
      out += in[i];
      continue;
    }
    char c = in[++i];
    if (c == 'r') {
      out += '\r';
    } else if (c == 'n') {
      out += '\n';
    } else if (c == 't') {
      out += '\t';
    } else if (c == '\\') {
      out += '\\';
    } else if (c == 'x' && i + 2 < in.size() && hex_digit(in[i + 1]) >= 0 &&
               hex_digit(in[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(in[i + 1]) * 16 + hex_digit(in[i + 2]));
      i += 2;
    } else {
      out += '\\';
      out += c;
    }
  }
  return out;
}

bool parse_mode(std::string_view arg, Config* cfg) {
  if (arg == "garbage") {
    cfg->mode = Mode::kGarbage;
  } else if (arg == "close") {
    cfg->mode = Mode::kClose;
  } else if (arg == "silent") {
    cfg->mode = Mode::kSilent;
  } else if (arg == "badtype") {
    cfg->mode = Mode::kReply;
    cfg->reply = ":42\r\n";
  } else if (arg.substr(0, 6) == "reply=") {
    cfg->mode = Mode::kReply;
    cfg->reply = unescape(arg.substr(6));
  } else if (arg.substr(0, 9) == "sentinel=") {
    return parse_sentinel(arg.substr(9), cfg);
  } else if (arg.substr(0, 6) == "flood=") {
    cfg->mode = Mode::kFlood;
    cfg->reply = unescape(arg.substr(6));
  } else {
    return false;
  }
  return true;
}

// Parses a decimal number in B[from, to); -1 if it is not one.
long parse_long(std::string_view b, size_t from, size_t to) {
  if (from >= to) return -1;
  long v = 0;
  for (size_t i = from; i < to; ++i) {
    if (b[i] < '0' || b[i] > '9' || v > 1'000'000'000) return -1;
    v = v * 10 + (b[i] - '0');
  }
  return v;
}

// Length of the first complete request in B: a RESP multibulk ("*N\r\n$L\r\n...") or an
// inline command line. 0 while incomplete. Malformed input counts as one request that
// spans the whole buffer, so every client still gets an answer.
size_t request_length(std::string_view b) {
  if (b.empty()) return 0;
  if (b[0] != '*') {
    size_t nl = b.find('\n');
    return nl == std::string_view::npos ? 0 : nl + 1;
  }
  size_t eol = b.find("\r\n");
  if (eol == std::string_view::npos) return 0;
  long n = parse_long(b, 1, eol);
  if (n < 0) return b.size();
  size_t pos = eol + 2;
  for (long i = 0; i < n; ++i) {
    if (pos >= b.size()) return 0;
    if (b[pos] != '$') return b.size();
    eol = b.find("\r\n", pos);
    if (eol == std::string_view::npos) return 0;
    long len = parse_long(b, pos + 1, eol);
    if (len < 0) return b.size();
    pos = eol + 2 + static_cast<size_t>(len) + 2;
    if (pos > b.size()) return 0;
  }
  return pos;
}

struct Conn {
  int fd;
  std::string in;         // unanswered request bytes (kReply only)
  bool flooding = false;  // kFlood: the first command came, the flood runs
};

// kFlood: one chunk of the endless stream; false when the client is gone.
bool flood_some(Conn& c) {
  static const std::string kChunk = [] {
    std::string s;
    for (int i = 0; i < 16384; ++i) s += ":1\r\n";
    return s;
  }();
  ssize_t n = send(c.fd, kChunk.data(), kChunk.size(), MSG_NOSIGNAL);
  return n >= 0 || errno == EAGAIN || errno == EINTR;
}

// Reacts to bytes read from C; returns false when the connection should be closed.
bool on_data(const Config& cfg, Conn& c, const char* data, size_t n) {
  static const std::string kGarbage = "HELLO?? \x01\x02\r\n";
  std::string out;
  switch (cfg.mode) {
    case Mode::kGarbage:
      out = kGarbage;
      break;
    case Mode::kSilent:
    case Mode::kClose:
      return true;
    case Mode::kFlood:
      if (c.flooding) return true;
      c.flooding = true;
      out = cfg.reply;
      break;
    case Mode::kReply:
    case Mode::kSentinel:
      c.in.append(data, n);
      while (size_t len = request_length(c.in)) {
        out += cfg.mode == Mode::kReply
                   ? cfg.reply
                   : sentinel_reply(cfg, std::string_view(c.in).substr(0, len));
        c.in.erase(0, len);
      }
      break;
  }
  // Replies are tiny; a client that does not read them is not worth buffering for.
  return out.empty() || send(c.fd, out.data(), out.size(), MSG_NOSIGNAL) >= 0;
}

void serve(const Config& cfg, int listen_fd) {
  std::vector<Conn> conns;
  std::vector<pollfd> pfds;
  char buf[16384];
  for (;;) {
    pfds.assign(1, pollfd{listen_fd, POLLIN, 0});
    for (const Conn& c : conns)
      pfds.push_back(pollfd{c.fd, static_cast<short>(POLLIN | (c.flooding ? POLLOUT : 0)), 0});
    if (poll(pfds.data(), pfds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      helper::die(kProg, "poll");
    }
    std::vector<Conn> next;
    for (size_t i = 0; i < conns.size(); ++i) {
      Conn& c = conns[i];
      bool keep = true;
      short rev = pfds[i + 1].revents;
      if (rev & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t n = read(c.fd, buf, sizeof buf);
        if (n > 0) {
          keep = on_data(cfg, c, buf, static_cast<size_t>(n));
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          keep = false;
        }
      }
      if (keep && c.flooding && (rev & POLLOUT)) keep = flood_some(c);
      if (keep) {
        next.push_back(std::move(c));
      } else {
        close(c.fd);
      }
    }
    conns = std::move(next);
    if (pfds[0].revents & POLLIN) {
      int fd;
      while ((fd = helper::accept_nonblocking(listen_fd)) >= 0) {
        if (cfg.mode == Mode::kClose) {
          close(fd);
        } else {
          conns.push_back(Conn{fd, {}});
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  int port = argc >= 3 ? helper::parse_port(argv[1]) : -1;
  if (port < 0 || argc > 4 || !parse_mode(argv[2], &cfg)) {
    std::fprintf(stderr,
                 "usage: %s PORT garbage|close|silent|badtype|reply=TEXT|flood=TEXT|"
                 "sentinel=HOST:PORT:EPOCH [PIDFILE]\n",
                 kProg);
    return 64;
  }
  signal(SIGPIPE, SIG_IGN);
  int bound = 0;
  int listen_fd = helper::listen_loopback(kProg, port, &bound);
  if (argc == 4 && !helper::write_file_atomic(argv[3], std::to_string(getpid()) + "\n")) {
    helper::die(kProg, "writing the pid file");
  }
  helper::announce_port(bound);
  serve(cfg, listen_fd);
}
