#include "net/plain_probe.h"

#include <poll.h>

#include <string_view>

#include "core/error.h"

namespace rlock {

namespace {

enum class Step { Waiting, SendFailed, Answered };

// One wake-up of a probe: once the stream is ready, `hello` is sent (`sent`
// then true, and the probe waits to read); afterwards the first byte of the
// answer is read into `c`. A hello of a few dozen bytes fits any fresh
// socket's buffer: one write, or the probe has failed.
Step probe_step(Loop& loop, Stream& stream, bool& sent, std::string_view hello, char& c) {
  if (!sent) {
    if (stream.handshake() != Want::Nothing) return Step::Waiting;
    if (stream.write(hello.data(), hello.size()).bytes != hello.size()) return Step::SendFailed;
    sent = true;
    loop.set_events(stream.fd(), POLLIN);
    return Step::Waiting;
  }
  return stream.read(&c, 1).bytes == 0 ? Step::Waiting : Step::Answered;
}

}  // namespace

namespace {
constexpr std::string_view kPing = "PING\r\n";

// A TLS 1.2 ClientHello with two cipher suites and no extensions: enough for
// any TLS server to answer with a ServerHello or an alert. Its "random" holds
// a newline, so a plain-text Redis answers it at once (an error reply)
// instead of waiting for the end of a line.
constexpr std::string_view kClientHello(
    "\x16\x03\x01\x00\x2f"                // record: handshake, 47 bytes
    "\x01\x00\x00\x2b"                    // ClientHello, 43 bytes
    "\x03\x03"                            // TLS 1.2
    "rlock tls probe\r\nrlock tls probe"  // the client's "random": 32 bytes
    "\x00"                                // no session id
    "\x00\x04\xc0\x2f\x00\x9c"            // two cipher suites
    "\x01\x00",                           // no compression; no extensions
    52);
}  // namespace

PlainProbe::PlainProbe(Loop& loop, const Endpoint& ep, const Address& addr,
                       std::function<void()> on_plain)
    : loop_(loop), on_plain_(std::move(on_plain)) {
  try {
    stream_ = open_stream(ep, addr, nullptr);
  } catch (const Error&) {
    return;  // no answer to be had: stay silent
  }
  loop_.watch(stream_->fd(), POLLOUT, [this](short) { on_io(); });
}

PlainProbe::~PlainProbe() {
  stop();
}

void PlainProbe::stop() {
  if (!stream_) return;
  loop_.unwatch(stream_->fd());
  stream_.reset();
}

void PlainProbe::on_io() {
  try {
    char c = 0;
    switch (probe_step(loop_, *stream_, sent_, kPing, c)) {
      case Step::Waiting:
        return;
      case Step::SendFailed:
        return stop();
      case Step::Answered:
        break;
    }
    stop();
    if (c == '+' || c == '-') {
      auto cb = std::move(on_plain_);
      cb();  // may destroy this probe: nothing after it
    }
  } catch (const Error&) {
    stop();
  }
}

TlsProbe::TlsProbe(Loop& loop, const Endpoint& ep, const Address& addr,
                   std::function<void(bool)> done)
    : loop_(loop), done_(std::move(done)) {
  try {
    stream_ = open_stream(ep, addr, nullptr);
  } catch (const Error&) {
    // Refused: nothing listens (any more). From the loop, not from here.
    loop_.after(Millis(0), life_.guard([this] { conclude(false); }));
    return;
  }
  loop_.watch(stream_->fd(), POLLOUT, [this](short) { on_io(); });
}

TlsProbe::~TlsProbe() {
  life_.end();
  if (stream_) loop_.unwatch(stream_->fd());
}

void TlsProbe::conclude(bool tls) {
  if (stream_) loop_.unwatch(stream_->fd());
  stream_.reset();
  if (!done_) return;
  auto cb = std::move(done_);
  done_ = nullptr;
  cb(tls);  // may destroy this probe: nothing after it
}

void TlsProbe::on_io() {
  try {
    char c = 0;
    switch (probe_step(loop_, *stream_, sent_, kClientHello, c)) {
      case Step::Waiting:
        return;
      case Step::SendFailed:
        return conclude(false);
      case Step::Answered:
        break;
    }
    // A TLS record: 0x16 handshake (ServerHello), 0x15 alert.
    conclude(c == 0x16 || c == 0x15);
  } catch (const Error&) {
    conclude(false);
  }
}

}  // namespace rlock
