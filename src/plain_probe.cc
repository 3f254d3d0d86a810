#include "plain_probe.h"

#include <poll.h>

#include <string_view>

#include "error.h"

namespace rlock {

namespace {
constexpr std::string_view kPing = "PING\r\n";
}

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

}  // namespace rlock
