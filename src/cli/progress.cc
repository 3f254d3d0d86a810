#include "cli/progress.h"

#include <fmt/format.h>

#include <algorithm>

#include "cli/output.h"
#include "cli/wording.h"
#include "core/duration.h"
#include "core/text.h"

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

// The time left until `t`, rounded up to whole seconds: a line redrawn every
// second ticks down by one and reads "0s" only once it is over.
std::string seconds_until(Clock::time_point t) {
  auto left = std::max(Millis(0), std::chrono::duration_cast<Millis>(t - Clock::now()));
  return seconds(std::chrono::ceil<std::chrono::seconds>(left));
}

// A failure's text in a line for people: bounded (it may quote a server).
constexpr size_t kWhyColumns = 200;

// The live line shows at most this much of the holder's command, and leaves
// the command out rather than show less than kMinCommand columns of it.
constexpr size_t kMaxCommand = 40;
constexpr size_t kMinCommand = 12;
// A label cut shorter than this says too little: the line's end is cut instead.
constexpr size_t kMinLabel = 16;

}  // namespace

std::string WaitReporter::place() const {
  if (!last_ || last_->position < 0) return "";
  return ordinal(last_->position + 1) + " in line";
}

void WaitReporter::report(const WaitProgress& p) {
  if (!p.key.empty()) key_ = p.key;  // --and: the key being waited for now
  switch (p.kind) {
    case WaitProgress::Kind::Waiting: {
      last_ = *p.reply;
      outage_.reset();
      started_ = p.started;
      replied_ = p.replied;
      if (tty_) return draw();
      if (!announced_) {
        // The first line says what rlock waits for; later ones that it still does.
        std::string where = place();
        log_info(fmt::format("waiting for '{}'{}; {}", escape_text(key_),
                             where.empty() ? "" : ", " + where, describe_holders(*last_, limit_)));
        timer_ = loop_.after(kProgressEvery, [this] { progress_line(); });
      }
      announced_ = true;
      return;
    }
    case WaitProgress::Kind::Acquired:
      loop_.cancel(timer_);
      timer_ = 0;
      status_line("");
      // Fences start at 1: 0 is another tool's layout, which has none.
      log_info(
          fmt::format("acquired '{}' after {}{}", escape_text(key_),
                      format_duration(std::chrono::duration_cast<Millis>(Clock::now() - p.started)),
                      p.fence > 0 ? fmt::format(" (fence {})", p.fence) : ""));
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
    case WaitProgress::Kind::Outage:
      // The Acquirer tells of an outage once; its facts (place, holder) are stale now.
      started_ = p.started;
      outage_ = Outage{truncate_columns(p.note, kWhyColumns), p.until, p.until_wait};
      if (tty_) return draw();
      log_info(fmt::format("Redis unreachable while waiting for '{}' ({}); {}", escape_text(key_),
                           outage_->why, reconnecting()));
      return;
    case WaitProgress::Kind::Reconnected:
      outage_.reset();
      if (tty_) return draw();
      log_info(fmt::format(
          "reconnected to Redis (unreachable for {})",
          seconds(std::chrono::duration_cast<std::chrono::seconds>(p.replied - p.since))));
      return;
  }
}

std::string WaitReporter::reconnecting() const {
  if (outage_->until_wait)
    return "reconnecting until --wait runs out in " + seconds_until(outage_->until);
  return "reconnecting for up to " + seconds_until(outage_->until) + " more";
}

// "waiting 1m12s for 'deploy:prod', 1st in line; held by ci-4 pid 22836
// [./deploy.sh] since 10:02:11Z, lease runs out in 29s unless renewed": the
// facts, then who holds the lock. To fit the terminal's width, the lease is
// left out first (it saw-tooths with every renewal: the least telling part),
// then the time the lock was taken; then the command is shortened to the room
// left, or left out when that is too little to read. Only then is the end cut.
std::string WaitReporter::holder_line(size_t room) const {
  auto elapsed = std::chrono::duration_cast<Millis>(Clock::now() - replied_);
  std::string where = place();
  std::string facts = fmt::format("waiting {} for '{}'{}; ", seconds(waited()), escape_text(key_),
                                  where.empty() ? "" : ", " + where);
  auto compose = [&](size_t cmd, bool since, bool lease) {
    HolderWords w = holder_words(*last_, limit_, elapsed, cmd, since);
    return facts + w.who + (lease && !w.lease.empty() ? ", " + w.lease : "");
  };
  std::string text = compose(kMaxCommand, true, true);
  if (text_columns(text) <= room) return text;
  text = compose(kMaxCommand, true, false);
  if (text_columns(text) <= room) return text;
  text = compose(kMaxCommand, false, false);
  if (text_columns(text) <= room) return text;
  // " [" and "]" take three columns.
  std::string bare = compose(0, false, false);
  size_t used = text_columns(bare);
  if (used <= room && used + 3 + kMinCommand > room) return bare;
  if (used <= room) return compose(room - used - 3, false, false);
  // A label (a CI job's URL) too long for the line loses its middle: its
  // end, the run's id, tells one job from another.
  const Holder* h = last_->holders.empty() ? nullptr : &last_->holders.front();
  if (h && !h->info.label.empty()) {
    size_t label = text_columns(escape_text(h->info.label));
    if (label > used - room && label - (used - room) >= kMinLabel)
      return facts + holder_words(*last_, limit_, elapsed, 0, false, label - (used - room)).who;
  }
  return bare;  // status_line cuts its end
}

// On a terminal, the live line, redrawn every second.
void WaitReporter::draw() {
  // "rlock: " comes first, and the last column stays empty (no wrap).
  size_t width = stderr_columns();
  size_t room = width > 8 ? width - 8 : 0;
  std::string text;
  if (outage_)
    text = fmt::format("waiting {} for '{}'; Redis unreachable, {} ({})", seconds(waited()),
                       escape_text(key_), reconnecting(), outage_->why);
  else if (last_)
    text = holder_line(room);
  else
    return;
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
  std::string where = place();
  std::string state =
      outage_ ? "Redis unreachable, " + reconnecting()
              : describe_holders(*last_, limit_,
                                 std::chrono::duration_cast<Millis>(Clock::now() - replied_));
  log_info(fmt::format("still waiting for '{}' after {}{}; {}", escape_text(key_),
                       seconds(waited()), where.empty() || outage_ ? "" : ", " + where, state));
  timer_ = loop_.after(kProgressEvery, [this] { progress_line(); });
}

}  // namespace rlock
