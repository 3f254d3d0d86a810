// Is the server behind a rediss:// URL speaking plain text? Redis sends
// nothing back to a TLS ClientHello (it waits for the end of a line that
// never comes), so a handshake with a plain-text server would only time out.
// A PlainProbe asks on a second connection, in plain text, and tells.
#pragma once

#include <functional>
#include <memory>

#include "loop.h"
#include "transport.h"

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

}  // namespace rlock
