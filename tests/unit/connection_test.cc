// Connection against small in-test servers: a name with several addresses is tried address
// by address within one command; a server that floods a connection never starves the
// loop's timers.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net/redis.h"
#include "net/resolver.h"

namespace rlock {
namespace {

// A TCP listener on 127.0.0.1 whose port is free to use.
int listen_tcp(int* port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(listen(fd, 8), 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

Address tcp_address(int port) {
  Endpoint ep;
  ep.host = "127.0.0.1";
  ep.port = port;
  return resolve(ep).front();
}

// Answers every read on every accepted connection with +PONG, from `loop`.
struct PongServer {
  explicit PongServer(Loop& l) : loop(l) {
    fd = listen_tcp(&port);
    loop.watch(fd, POLLIN, [this](short) {
      int c = accept(fd, nullptr, nullptr);
      if (c < 0) return;
      conns.push_back(c);
      loop.watch(c, POLLIN, [this, c](short) {
        // One +PONG per PING in what arrived (pipelined commands come together).
        char buf[4096];
        ssize_t n = read(c, buf, sizeof buf);
        std::string in(buf, n > 0 ? static_cast<size_t>(n) : 0);
        for (size_t at = in.find("PING"); at != std::string::npos; at = in.find("PING", at + 1))
          (void)!write(c, "+PONG\r\n", 7);
      });
    });
  }
  ~PongServer() {
    for (int c : conns) {
      loop.unwatch(c);
      close(c);
    }
    loop.unwatch(fd);
    close(fd);
  }
  Loop& loop;
  int fd = -1, port = 0;
  std::vector<int> conns;
};

ConnectionConfig config() {
  ConnectionConfig cfg;
  cfg.connect_timeout = Millis(2000);
  cfg.command_timeout = Millis(2000);
  return cfg;
}

std::optional<Result> ping(Loop& loop, Connection& c) {
  std::optional<Result> out;
  c.command({"PING"}, [&](Result r) { out = std::move(r); });
  loop.run_until([&] { return out.has_value(); });
  return out;
}

TEST(Connection, TriesTheNextAddressWhenOneRefusesWithinOneCommand) {
  Loop loop;
  PongServer server(loop);
  int closed_port = 0;
  close(listen_tcp(&closed_port));  // nothing listens there now: connect is refused
  auto addrs = std::make_shared<AddressBook>(
      loop, std::vector<Address>{tcp_address(closed_port), tcp_address(server.port)});
  Connection c(loop, config(), nullptr, addrs);
  auto r = ping(loop, c);
  ASSERT_FALSE(r->failure) << r->failure->what();
  EXPECT_EQ(r->reply.str, "PONG");
  // The next command stays on the address that worked.
  r = ping(loop, c);
  ASSERT_FALSE(r->failure);
}

TEST(Connection, FailsOnlyWhenEveryAddressRefused) {
  Loop loop;
  int p1 = 0, p2 = 0;
  close(listen_tcp(&p1));
  close(listen_tcp(&p2));
  auto addrs =
      std::make_shared<AddressBook>(loop, std::vector<Address>{tcp_address(p1), tcp_address(p2)});
  Connection c(loop, config(), nullptr, addrs);
  auto r = ping(loop, c);
  ASSERT_TRUE(r->failure);
  EXPECT_EQ(r->failure->exit_status(), 69);
}

TEST(Connection, AFloodOfRepliesNeverStarvesTheTimers) {
  // A server (a child process) that sends pub/sub messages without end.
  char dir[] = "/tmp/rlock-flood-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/s.sock";
  int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(lfd, 1), 0);
  pid_t pid = fork();
  if (pid == 0) {
    int c = accept(lfd, nullptr, nullptr);
    std::string msg;
    for (int i = 0; i < 2000; ++i) msg += "*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nx\r\n";
    while (write(c, msg.data(), msg.size()) > 0) {
    }
    _exit(0);
  }
  close(lfd);
  alarm(30);  // a starved loop would never return: fail rather than hang

  Loop loop;
  ConnectionConfig cfg = config();
  cfg.endpoint.kind = Endpoint::Kind::Unix;
  cfg.endpoint.path = path;
  auto addrs = std::make_shared<AddressBook>(loop, cfg.endpoint, cfg.connect_timeout);
  Connection c(loop, cfg, nullptr, addrs);
  long pushes = 0;
  c.on_push([&](const Reply&) { ++pushes; });
  c.command(
      {"SUBSCRIBE", "c"}, [](Result) {}, Millis(60000));
  bool fired = false;
  auto start = Clock::now();
  loop.after(Millis(300), [&] { fired = true; });
  loop.run_until([&] { return fired; });
  auto took = std::chrono::duration_cast<Millis>(Clock::now() - start);
  alarm(0);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  unlink(path.c_str());
  rmdir(dir);
  EXPECT_GT(pushes, 1000);
  EXPECT_LT(took.count(), 2000) << "the 300ms timer fired after " << took.count() << "ms";
}

}  // namespace
}  // namespace rlock

namespace rlock {
namespace {

TEST(Connection, ACallbackThatThrowsIsNotAConnectionFailureForTheOthers) {
  Loop loop;
  PongServer server(loop);
  auto addrs = std::make_shared<AddressBook>(loop, std::vector<Address>{tcp_address(server.port)});
  Connection c(loop, config(), nullptr, addrs);
  std::optional<Result> second;
  c.command({"PING"}, [](Result) { throw Error(ErrorKind::Protocol, "the caller's own bug"); });
  c.command({"PING"}, [&](Result r) { second = std::move(r); });
  // The first callback's exception goes up to whoever runs the loop...
  EXPECT_THROW(loop.run_until([&] { return second.has_value(); }), Error);
  // ...and the second command is answered as usual, not failed with it.
  loop.run_until([&] { return second.has_value(); });
  ASSERT_FALSE(second->failure) << second->failure->what();
  EXPECT_EQ(second->reply.str, "PONG");
}

TEST(Connection, AWriteToAResetConnectionFailsTheCommandFromTheLoopNotTheCall) {
  // A server that answers the first PING and then resets the connection (RST).
  Loop loop;
  PongServer server(loop);
  auto addrs = std::make_shared<AddressBook>(loop, std::vector<Address>{tcp_address(server.port)});
  Connection c(loop, config(), nullptr, addrs);
  ASSERT_FALSE(ping(loop, c)->failure);
  ASSERT_EQ(server.conns.size(), 1u);
  int peer = server.conns.front();
  linger hard{1, 0};
  setsockopt(peer, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  loop.unwatch(peer);
  close(peer);
  server.conns.clear();
  // The reset arrives while the loop does not run: the next write finds it.
  usleep(50'000);
  std::optional<Result> r;
  // A caller sending to several servers must reach the others: no throw here.
  EXPECT_NO_THROW(c.command({"PING"}, [&](Result x) { r = std::move(x); }));
  EXPECT_FALSE(r.has_value()) << "called back inside command()";
  loop.run_until([&] { return r.has_value(); });
  ASSERT_TRUE(r->failure);
  EXPECT_EQ(r->failure->exit_status(), 69);
}

TEST(Connection, ACommandWrittenOnAStreamResetBeforeAnyReplyMayHaveRun) {
  // A server that reads the first command and resets the connection without a reply (a
  // CLIENT KILL just after a script ran). A reset before any reply is first checked for a
  // TLS port; it is not one here, and the command, which may have run, must not come back
  // as never sent: the Cluster and Sentinel routers send such a command again elsewhere.
  Loop loop;
  int port = 0;
  int fd = listen_tcp(&port);
  loop.watch(fd, POLLIN, [&loop, fd](short) {
    int c = accept(fd, nullptr, nullptr);
    if (c < 0) return;
    loop.watch(c, POLLIN, [&loop, c](short) {
      char buf[4096];
      (void)!read(c, buf, sizeof buf);
      linger hard{1, 0};
      setsockopt(c, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
      loop.unwatch(c);
      close(c);
    });
  });
  auto addrs = std::make_shared<AddressBook>(loop, std::vector<Address>{tcp_address(port)});
  Connection c(loop, config(), nullptr, addrs);
  auto r = ping(loop, c);
  ASSERT_TRUE(r->failure);
  EXPECT_FALSE(r->unsent) << r->failure->what();
  loop.unwatch(fd);
  close(fd);
}

// An object whose destruction calls back into the loop, as a Connection does.
struct CallsBack {
  Loop* loop;
  Loop::TimerId id;
  ~CallsBack() {
    loop->cancel(id);
    loop->unwatch(12345);
  }
};

TEST(Loop, CallbacksDestroyedWithTheLoopMayStillCallIt) {
  // Under the sanitizers, a loop that frees its timer index before the callbacks would be
  // reported here (the callbacks' destructors cancel timers).
  auto loop = std::make_unique<Loop>();
  auto other = loop->after(Millis(60'000), [] {});
  for (int i = 0; i < 10; ++i) {
    auto owner = std::make_shared<CallsBack>(CallsBack{loop.get(), other});
    loop->after(Millis(60'000 + i), [owner] {});
    loop->watch(1000 + i, 0, [owner](short) {});
  }
  loop.reset();
  SUCCEED();
}

}  // namespace
}  // namespace rlock
