#include "net/plain_probe.h"

#include <poll.h>

#include <string_view>

#include "core/error.h"

namespace rlock {

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
    if (!sent_) {
      if (stream_->handshake() != Want::Nothing) return;
      // Six bytes fit any fresh socket's buffer: one write.
      if (stream_->write(kPing.data(), kPing.size()).bytes != kPing.size()) return stop();
      sent_ = true;
      loop_.set_events(stream_->fd(), POLLIN);
      return;
    }
    char c = 0;
    IoResult r = stream_->read(&c, 1);
    if (r.bytes == 0) return;
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
    if (!sent_) {
      if (stream_->handshake() != Want::Nothing) return;
      // 52 bytes fit any fresh socket's buffer: one write.
      if (stream_->write(kClientHello.data(), kClientHello.size()).bytes != kClientHello.size())
        return conclude(false);
      sent_ = true;
      loop_.set_events(stream_->fd(), POLLIN);
      return;
    }
    char c = 0;
    IoResult r = stream_->read(&c, 1);
    if (r.bytes == 0) return;
    // A TLS record: 0x16 handshake (ServerHello), 0x15 alert.
    conclude(c == 0x16 || c == 0x15);
  } catch (const Error&) {
    conclude(false);
  }
}

}  // namespace rlock
