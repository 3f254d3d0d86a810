// How waiting for a lock looks to people, for `run` and `acquire`: on a
// terminal, one live line redrawn in place every second that fits the
// terminal's width (the command is cut, not the facts); elsewhere (a CI log),
// one line when waiting starts and a short progress line every
// kProgressEvery, so a job that waits shows it is alive; then "acquired …
// after …". An outage of Redis while waiting replaces the live line's facts
// (they are stale), or is one line off a terminal, and so is its end. -q
// silences all of it. The Acquirer only reports what happens (WaitProgress);
// this decides what to print.
#pragma once

#include <string>

#include "core/loop.h"
#include "hold/acquirer.h"

namespace rlock {

/// Off a terminal, a waiter says it still waits this often (CI systems kill
/// a step that prints nothing for 10 minutes; more often would only be noise).
inline constexpr Millis kProgressEvery{30000};

class WaitReporter {
 public:
  WaitReporter(Loop& loop, std::string key, int limit);
  ~WaitReporter();
  WaitReporter(const WaitReporter&) = delete;
  WaitReporter& operator=(const WaitReporter&) = delete;

  /// Takes what the Acquirer reports.
  void report(const WaitProgress& p);

 private:
  void draw();
  void progress_line();
  std::string place() const;
  Millis waited() const;
  /// The live line's text for `room` columns: who holds the lock first.
  std::string holder_line(size_t room) const;
  /// "reconnecting for up to 28s more" or "… until --wait runs out in 12s".
  std::string reconnecting() const;

  struct Outage {
    std::string why;  // the last failure
    Clock::time_point until;
    bool until_wait = false;
  };

  Loop& loop_;
  std::string key_;
  int limit_;
  bool tty_;
  std::optional<AcquireReply> last_;
  std::optional<Outage> outage_;
  Clock::time_point started_{}, replied_{};
  bool announced_ = false;
  Loop::TimerId timer_ = 0;
};

}  // namespace rlock
