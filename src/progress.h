// How waiting for a lock looks to people, for `run` and `acquire`: on a
// terminal, one live line redrawn in place every second that fits the
// terminal's width (the command is cut, not the facts); elsewhere (a CI log),
// one line when waiting starts and a short progress line every
// kProgressEvery, so a job that waits shows it is alive; then "acquired …
// after …". -q silences all of it. The Acquirer only reports what happens
// (WaitProgress); this decides what to print.
#pragma once

#include <string>

#include "loop.h"
#include "waiter.h"

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

  Loop& loop_;
  std::string key_;
  int limit_;
  bool tty_;
  std::optional<AcquireReply> last_;
  Clock::time_point started_{}, replied_{};
  bool announced_ = false;
  Loop::TimerId timer_ = 0;
};

}  // namespace rlock
