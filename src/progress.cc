#include "progress.h"

#include <fmt/format.h>

#include "duration.h"
#include "output.h"

namespace rlock {

WaitReporter::WaitReporter(Loop& loop, std::string key, int limit)
    : loop_(loop), key_(std::move(key)), limit_(limit), tty_(stderr_is_tty()) {}

WaitReporter::~WaitReporter() {
  loop_.cancel(timer_);
}

Millis WaitReporter::waited() const {
  return std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started_);
}

namespace {

// "0s", "59s", "1m12s": a duration for people, in whole seconds.
std::string seconds(Millis d) {
  return d < Millis(1000) ? "0s" : format_duration(d);
}

}  // namespace

std::string WaitReporter::place() const {
  if (!last_ || last_->position < 0) return "";
  return ordinal(last_->position + 1) + " in line";
}

void WaitReporter::report(const WaitProgress& p) {
  switch (p.kind) {
    case WaitProgress::Kind::Waiting: {
      last_ = *p.reply;
      started_ = p.started;
      replied_ = p.replied;
      if (tty_) return draw();
      if (!announced_) {
        // The first line says what rlock waits for; later ones that it still does.
        std::string where = place();
        log_info(fmt::format("waiting for '{}', {}{}", escape_text(key_),
                             describe_holders(*last_, limit_), where.empty() ? "" : ", " + where));
        timer_ = loop_.after(kProgressEvery, [this] { progress_line(); });
      }
      announced_ = true;
      return;
    }
    case WaitProgress::Kind::Acquired:
      loop_.cancel(timer_);
      timer_ = 0;
      status_line("");
      log_info(fmt::format(
          "acquired '{}' after {} (fence {})", escape_text(key_),
          format_duration(std::chrono::duration_cast<Millis>(Clock::now() - p.started)), p.fence));
      return;
    case WaitProgress::Kind::Stopped:
      loop_.cancel(timer_);
      timer_ = 0;
      status_line("");
      return;
    case WaitProgress::Kind::Warning:
      status_line("");
      log_error("warning: " + p.note);
      if (tty_) draw();
      return;
  }
}

// The live line: "waiting 1m12s for 'deploy:prod', 1st in line, holder's
// lease 29s left; held by ci-4 pid 22836 [./deploy.sh] since 10:02:11Z". The
// facts come first. To fit the terminal's width, the command is shortened,
// then left out, then the time it was taken, then who holds it; only then is
// the end cut.
void WaitReporter::draw() {
  if (!last_) return;
  auto elapsed = std::chrono::duration_cast<Millis>(Clock::now() - replied_);
  std::string where = place();
  // "rlock: " comes first, and the last column stays empty (no wrap).
  size_t width = stderr_columns();
  size_t room = width > 8 ? width - 8 : 0;
  std::string facts = fmt::format("waiting {} for '{}'{}", seconds(waited()), escape_text(key_),
                                  where.empty() ? "" : ", " + where);
  std::string text;
  auto fits = [&](size_t cmd, bool since, bool who) {
    HolderWords w = holder_words(*last_, limit_, elapsed, cmd, since);
    text = facts + (w.lease.empty() ? "" : ", " + w.lease) + (who ? "; " + w.who : "");
    return text_columns(text) <= room;
  };
  bool done = false;
  for (size_t cmd = 40; !done && cmd > 0; cmd -= 10) done = fits(cmd, true, true);
  if (!done) done = fits(0, true, true) || fits(0, false, true) || fits(0, false, false);
  status_line(text);
  loop_.cancel(timer_);
  timer_ = loop_.after(Millis(1000), [this] {
    timer_ = 0;
    draw();
  });
}

void WaitReporter::progress_line() {
  timer_ = 0;
  if (!last_) return;
  auto elapsed = std::chrono::duration_cast<Millis>(Clock::now() - replied_);
  std::string where = place();
  log_info(fmt::format("still waiting for '{}' after {}{}; {}", escape_text(key_),
                       seconds(waited()), where.empty() ? "" : ", " + where,
                       describe_holders(*last_, limit_, elapsed)));
  timer_ = loop_.after(kProgressEvery, [this] { progress_line(); });
}

}  // namespace rlock
