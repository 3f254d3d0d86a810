// Is the server behind a rediss:// URL speaking plain text? Redis sends
// nothing back to a TLS ClientHello (it waits for the end of a line that
// never comes), so a handshake with a plain-text server would only time out.
// A PlainProbe asks on a second connection, in plain text, and tells.
#pragma once

#include <functional>
#include <memory>

#include "core/lifetime.h"
#include "core/loop.h"
#include "net/transport.h"

namespace rlock {

/// Sends "PING\r\n" in plain text to `addr` and calls `on_plain` (once, from
/// the loop) if the answer is a RESP simple string or error ("+PONG",
/// "-NOAUTH …"): the server speaks Redis without TLS. Any other outcome
/// (no answer, a TLS alert, a closed connection, a failure) is silent.
/// Destroying the probe ends it; its callback never runs afterwards.
class PlainProbe {
 public:
  PlainProbe(Loop& loop, const Endpoint& ep, const Address& addr, std::function<void()> on_plain);
  ~PlainProbe();
  PlainProbe(const PlainProbe&) = delete;
  PlainProbe& operator=(const PlainProbe&) = delete;

 private:
  void on_io();
  void stop();

  Loop& loop_;
  std::unique_ptr<Stream> stream_;
  std::function<void()> on_plain_;
  bool sent_ = false;
};

/// The other way round: is the server behind a redis:// URL speaking TLS? A
/// TLS server resets a connection that sends it plain text, as a server that
/// goes down does. A TlsProbe sends a TLS ClientHello (its own bytes: no TLS
/// library) to `addr` and calls `done(true)` if the answer starts like a TLS
/// record (a handshake or an alert), `done(false)` on anything else (a
/// Redis error reply, a closed or refused connection, a failure), from the
/// loop, once. No answer: no call (the owner bounds the wait). Destroying the
/// probe ends it; its callback never runs afterwards.
class TlsProbe {
 public:
  TlsProbe(Loop& loop, const Endpoint& ep, const Address& addr, std::function<void(bool)> done);
  ~TlsProbe();
  TlsProbe(const TlsProbe&) = delete;
  TlsProbe& operator=(const TlsProbe&) = delete;

 private:
  void on_io();
  void conclude(bool tls);

  Loop& loop_;
  std::unique_ptr<Stream> stream_;
  std::function<void(bool)> done_;
  bool sent_ = false;
  Lifetime life_;
};

}  // namespace rlock
