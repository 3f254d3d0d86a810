// `rlock top [PATTERN]`: a refresh finds the matching locks with list's
// SCAN (not more than a fifth of the time), reads the status of at most kTopReadCap of them (those
// with a line first, then the ones shown lately, so that their release still shows), and takes the
// newest events each status carries for the events pane. Full screen on a terminal (cli/screen.h),
// plain snapshots with -b or off one.
#include "commands/top.h"

#include <fmt/format.h>
#include <fnmatch.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <set>
#include <unordered_set>

#include "cli/output.h"
#include "cli/screen.h"
#include "commands/commands.h"
#include "commands/timeline.h"
#include "core/text.h"
#include "proc/signals.h"

namespace rlock {

namespace {

// A lock shown this long ago is still read: its release or expiry shows in
// the events pane after it left the table.
constexpr std::chrono::seconds kRecent{60};
constexpr size_t kKeptEvents = 200;

int64_t wall_ms() {
  return std::chrono::duration_cast<Millis>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The status line's topology, from where the last SCAN looked: the server; a
// Cluster's masters; the master Sentinel names now; a quorum's masters that
// did not answer ("down") and those that refused (the man page's "top").
std::string topology(const Session& s, const ScanReport& r) {
  if (s.quorum()) {
    std::string t = fmt::format("quorum of {} masters", s.clients.size());
    for (const auto& [what, masters] :
         {std::pair{"down", &r.down}, std::pair{"refused", &r.refused}}) {
      if (masters->empty()) continue;
      std::string names;
      for (const std::string& n : *masters) names += (names.empty() ? "" : ", ") + n;
      t += fmt::format(", {} {}: {}", masters->size(), what, names);
    }
    return t;
  }
  const std::string name = s.clients.front()->name();
  // (Router::name(): a Sentinel deployment is its sentinels and master name)
  if (name.find("-sentinel://") != std::string::npos)
    return r.masters.empty() ? name : fmt::format("{}, master {}", name, r.masters.front());
  if (r.masters.size() > 1)
    return fmt::format("cluster of {} masters via {}", r.masters.size(), name);
  return name;
}

// Gathers the snapshots, keeping what one refresh hands to the next: the
// events seen, the locks shown lately.
class TopSource {
 public:
  TopSource(Session& s, const GlobalOptions& g, std::string pattern)
      : s_(s), g_(g), pattern_(std::move(pattern)) {}

  /// A new snapshot; when the refresh fails (a lost connection), the last
  /// one with `problem` saying why. `strict`: throw the failure instead.
  TopSnapshot refresh(bool strict) {
    try {
      last_ = read();
    } catch (const Error& e) {
      if (strict || e.kind() == ErrorKind::Usage) throw;
      last_.problem = fmt::format("{}; trying again", e.what());
    }
    return last_;
  }

  /// Where the refreshes read, before the first SCAN says more.
  std::string where() const { return topology(s_, ScanReport{}); }

 private:
  TopSnapshot read() {
    TopSnapshot snap;
    const auto now = Clock::now();
    // A SCAN of 100,000 locks takes about a second (docs/PERFORMANCE.md): it
    // runs at most a fifth of the time, the refreshes between read the locks
    // it found.
    if (!scanned_ || now >= next_scan_) {
      ScanReport report;
      found_ = scan_locks(s_, g_, pattern_, &report);
      report_ = std::move(report);
      scanned_ = true;
      next_scan_ = now + 5 * (Clock::now() - now);
    }
    std::vector<FoundLock> found = found_;
    ScanReport where = report_;
    snap.found = found.size();
    // What needs attention first: the locks with a line, then the held ones.
    std::stable_partition(found.begin(), found.end(), [](const FoundLock& f) { return f.queue; });
    std::vector<std::string> keys;
    std::unordered_set<std::string> taken;
    for (const FoundLock& f : found) {
      if (keys.size() >= kTopReadCap) break;
      if (taken.insert(f.key).second) keys.push_back(f.key);
    }
    snap.unread = found.size() - keys.size();
    for (auto it = recent_.begin(); it != recent_.end();) {
      if (now - it->second > kRecent) {
        it = recent_.erase(it);
        continue;
      }
      if (taken.insert(it->first).second) keys.push_back(it->first);
      ++it;
    }
    std::vector<std::unique_ptr<Lock>> locks;
    size_t gap_reads = 0;
    std::vector<std::optional<Outcome<LockStatus>>> got(keys.size());
    size_t pending = keys.size();
    for (size_t i = 0; i < keys.size(); ++i) {
      locks.push_back(s_.found_lock(keys[i], g_.prefix));
      locks.back()->status([&got, &pending, i](Outcome<LockStatus> o) {
        got[i] = std::move(o);
        --pending;
      });
    }
    s_.loop.run_until([&] { return pending == 0; });
    snap.now_ms = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      Outcome<LockStatus>& o = *got[i];
      if (o.error) {
        // A lost server fails the refresh; a foreign value fails one lock.
        if (o.error->kind() == ErrorKind::Unavailable || o.error->kind() == ErrorKind::Permission)
          throw *o.error;
        continue;
      }
      LockStatus& st = o.value;
      // Quorum mode: a majority's answer is shown, the masters that failed
      // this read (down, or refusing the script) named on the status line.
      for (const MasterStatus& m : st.masters) {
        if (!m.error) continue;
        auto& names = m.error->kind() == ErrorKind::Unavailable ? where.down : where.refused;
        if (std::find(where.down.begin(), where.down.end(), m.name) == where.down.end() &&
            std::find(where.refused.begin(), where.refused.end(), m.name) == where.refused.end())
          names.push_back(m.name);
      }
      snap.now_ms = std::max(snap.now_ms, st.now_ms);
      // A status carries the newest few events of its lock (the ids of the
      // last reading are what is kept). When none of them was seen before,
      // more may have happened since the last reading than it carries: the
      // history gives the rest (up to kGapEvents), for at most kGapReads locks
      // a refresh; the others keep their last reading and are read at the next.
      std::set<std::string>& seen = seen_[keys[i]];
      std::vector<Event> fresh(st.last.rbegin(), st.last.rend());  // (newest first)
      bool deferred = false;
      if (!seen.empty() && st.last.size() >= kStatusEvents &&
          std::none_of(st.last.begin(), st.last.end(),
                       [&](const Event& e) { return seen.count(e.id) > 0; })) {
        if (gap_reads >= kGapReads) {
          deferred = true;
        } else {
          ++gap_reads;
          // A history this user may not read, or a read that failed: the
          // status's own events, as before (the refresh goes on).
          std::vector<Event> older;
          try {
            older = newest_events(s_, keys[i], g_.prefix, kGapEvents, nullptr);
          } catch (const Error&) {
            // (nothing on stderr: it would write over the full screen)
          }
          for (auto e = older.rbegin(); e != older.rend() && !seen.count(e->id); ++e)
            if (std::none_of(fresh.begin(), fresh.end(),
                             [&](const Event& f) { return f.id == e->id; }))
              fresh.push_back(*e);
        }
      }
      if (!deferred) {
        std::set<std::string> ids;
        for (const Event& e : fresh) {
          if (e.ms <= 0) continue;
          ids.insert(e.id);
          if (seen.count(e.id)) continue;
          // (an expiry top showed already, now recorded by a script)
          if (e.ev == "expired" && shown_expired_.erase({keys[i], e.get("tok")})) continue;
          events_.push_back({keys[i], e});
        }
        seen = std::move(ids);
      }
      notice_expiries(keys[i], st);
      if (st.holders.empty() && st.waiter_count == 0) continue;
      recent_[keys[i]] = now;
      snap.rows.push_back(top_row(keys[i], std::move(st)));
    }
    // (bounded: the keys not read lately are forgotten once there are many)
    if (seen_.size() > kMaxSeenKeys)
      for (auto it = seen_.begin(); it != seen_.end();)
        it = recent_.count(it->first) ? std::next(it) : seen_.erase(it);
    if (held_.size() > kMaxSeenKeys)
      for (auto it = held_.begin(); it != held_.end();)
        it = recent_.count(it->first) ? std::next(it) : held_.erase(it);
    if (snap.now_ms == 0) snap.now_ms = wall_ms();
    snap.topology = topology(s_, where);
    std::stable_sort(events_.begin(), events_.end(),
                     [](const TopEvent& a, const TopEvent& b) { return a.e.ms < b.e.ms; });
    if (events_.size() > kKeptEvents)
      events_.erase(events_.begin(), events_.end() - static_cast<long>(kKeptEvents));
    snap.events = events_;
    sort_rows(snap.rows, TopSort::Attention);
    return snap;
  }

  Session& s_;
  const GlobalOptions& g_;
  const std::string pattern_;
  std::map<std::string, Clock::time_point> recent_;
  std::vector<FoundLock> found_;  // what the last SCAN found
  ScanReport report_;             // and where it looked
  bool scanned_ = false;
  Clock::time_point next_scan_;
  // An expiry is recorded in the history only when a script next touches the
  // key (docs/PROTOCOL.md "History"): a holder that left without an ending
  // event once its lease had run out is shown as expired at once, and the
  // event the history records later is not shown again.
  struct LastHeld {
    int64_t until_ms = 0;  // server time its lease ran out, as last read
    std::string fence, who;
  };
  void notice_expiries(const std::string& key, const LockStatus& st) {
    std::map<std::string, LastHeld>& before = held_[key];
    std::map<std::string, LastHeld> now;
    for (const Holder& h : st.holders) {
      if (h.token.empty() || h.since_ms <= 0) continue;  // (not rlock's: no history)
      std::string who =
          !h.info.label.empty() ? h.info.label : fmt::format("{} pid {}", h.info.host, h.info.pid);
      now[h.token] = {st.now_ms + h.ttl_left.count(), std::to_string(h.fence), who};
    }
    for (const auto& [tok, was] : before) {
      if (now.count(tok) || st.now_ms <= 0 || st.now_ms + 100 < was.until_ms) continue;
      bool ended = std::any_of(st.last.begin(), st.last.end(), [&](const Event& e) {
        return e.get("tok") == tok && e.ev != "acquired";
      });
      if (ended) continue;
      Event e;
      e.ms = was.until_ms;
      e.ev = "expired";
      e.fields = {{"tok", tok}, {"fence", was.fence}, {"who", was.who}};
      events_.push_back({key, e});
      if (shown_expired_.size() < kMaxSeenKeys) shown_expired_.insert({key, tok});
    }
    before = std::move(now);
  }

  static constexpr size_t kMaxSeenKeys = 10000;
  static constexpr size_t kGapReads = 20;                        // history reads a refresh, at most
  static constexpr long kGapEvents = 100;                        // events each reads, at most
  std::map<std::string, std::map<std::string, LastHeld>> held_;  // key: its holders last read
  std::set<std::pair<std::string, std::string>> shown_expired_;  // (key, token)
  std::map<std::string, std::set<std::string>> seen_;            // key: the event ids last read
  std::vector<TopEvent> events_;
  TopSnapshot last_;
};

// Stop signals end top (exit 0): the flag they set.
void on_stop(Loop& loop, bool& stop) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    if (!ignored_at_start(sig)) loop.on_signal(sig, [&stop](int) { stop = true; });
}

// Waits until `deadline` or until `wake()` is true.
void wait_until(Loop& loop, Clock::time_point deadline, const std::function<bool()>& wake) {
  Loop::TimerId timer = loop.at(deadline, [] {});
  loop.run_until([&] { return wake() || Clock::now() >= deadline; });
  loop.cancel(timer);
}

int run_batch(Session& s, TopSource& src, const TopOptions& o) {
  bool stop = false;
  on_stop(s.loop, stop);
  for (long n = 1;; ++n) {
    TopSnapshot snap = src.refresh(n == 1);
    // COLUMNS, else the terminal's, else 160 (a log's lines may be long).
    print_out(top_batch_text(snap, output_columns(160)));
    if ((o.count > 0 && n >= o.count) || stop) break;
    wait_until(s.loop, later(Clock::now(), o.interval), [&] { return stop; });
    if (stop) break;
  }
  return exitcode::kOk;
}

// A key or a stop signal that quits while a refresh waits for a server: it
// unwinds the refresh (top writes nothing) to FullScreen::run, which drops
// what the refresh left pending and gives the terminal back.
struct QuitWhileWaiting {};

// How long a refresh waits before the status line says so.
constexpr Millis kStallShown{1000};

// The full screen: the table and the events pane, redrawn at every refresh,
// resize and key; a lock's detail and timeline on Enter. A refresh that waits
// for a stalled server leaves the screen live: the status line says what it
// waits for, keys work, and q quits at once.
class FullScreen {
 public:
  FullScreen(Session& s, const GlobalOptions& g, TopSource& src, const TopOptions& o)
      : s_(s), g_(g), src_(src), o_(o), color_(terminal_wants_color()) {}

  // The screen is drawn at once, "connecting to" where it reads, and filled
  // when the first refresh answers; q and Ctrl-C quit meanwhile. A first
  // refresh that fails (a server that cannot be reached) gives the terminal
  // back and is one line and 69, as with -b.
  int run() {
    snap_.topology = src_.where();
    snap_.now_ms = wall_ms();
    Screen screen;
    screen_ = &screen;
    for (int sig : {SIGINT, SIGTERM, SIGHUP})
      if (!ignored_at_start(sig)) s_.loop.on_signal(sig, [this](int) { quit(); });
    s_.loop.on_signal(SIGWINCH, [this](int) {
      redraw_ = true;
      if (waiting_) draw();
    });
    s_.loop.watch(STDIN_FILENO, POLLIN, [this](short revents) { on_input(revents); });
    draw();
    try {
      waiting([this] { snap_ = src_.refresh(true); });
      have_first_ = true;
      draw();
      // --count: the first snapshot is one; quit after the N-th, as top -n does.
      for (long n = 1; !quit_ && (o_.count == 0 || n < o_.count); ++n) {
        auto deadline = later(Clock::now(), o_.interval);
        while (!quit_ && Clock::now() < deadline) {
          wait_until(s_.loop, deadline, [this] { return quit_ || redraw_; });
          if (redraw_ && !quit_) draw();
        }
        if (quit_) break;
        waiting([this] {
          snap_ = src_.refresh(false);
          if (detail_) read_detail();
        });
        draw();
      }
    } catch (const QuitWhileWaiting&) {
      // The unwound refresh left commands queued on the connections whose
      // callbacks point into its stack (its replies, its counters): the
      // clients go now, dropping them uncalled, so that nothing can run the
      // loop while they are queued. Nothing reads a server after this.
      s_.clients.clear();
    } catch (const Error&) {
      // (the first refresh failed: the terminal goes back before the error's line)
      s_.loop.cancel(stall_timer_);
      s_.loop.unwatch(STDIN_FILENO);
      screen.restore();
      throw;
    }
    s_.loop.cancel(stall_timer_);
    s_.loop.unwatch(STDIN_FILENO);
    screen.restore();
    return exitcode::kOk;
  }

 private:
  void on_input(short revents) {
    if (revents & (POLLERR | POLLHUP | POLLNVAL)) return hung_up();
    char buf[256];
    ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return hung_up();
    if (n <= 0) return;
    pending_.append(buf, static_cast<size_t>(n));
    for (const Key& k : decode_keys(pending_, true)) on_key(k);
    redraw_ = true;
    if (quit_) quit();
    if (waiting_) draw();
  }

  // The terminal went away (its window closed with SIGHUP ignored): stdin
  // would wake poll() at once forever, so it is no longer watched, and top
  // quits, also during a refresh that waits for a stalled server.
  void hung_up() {
    s_.loop.unwatch(STDIN_FILENO);
    quit();
  }

  // q, Ctrl-C or a stop signal: between refreshes the loop in run() sees the
  // flag; during one, the refresh is given up.
  void quit() {
    quit_ = true;
    if (waiting_) throw QuitWhileWaiting{};
  }

  // Runs `f` (a refresh, which waits for the servers) with the status line
  // saying so once it takes kStallShown, updated every second.
  void waiting(const std::function<void()>& f) {
    if (waiting_) return f();  // (never nested: Enter during a refresh only opens the detail)
    waiting_ = true;
    waiting_since_ = Clock::now();
    stall_timer_ = s_.loop.after(kStallShown, [this] { on_stalled(); });
    struct Done {
      FullScreen& v;
      ~Done() {
        v.waiting_ = v.stalled_ = false;
        v.s_.loop.cancel(v.stall_timer_);
      }
    } done{*this};
    f();
  }

  void on_stalled() {
    stalled_ = true;
    draw();
    stall_timer_ = s_.loop.after(Millis(1000), [this] { on_stalled(); });
  }

  void on_key(const Key& k) {
    if (k.kind == Key::Interrupt) {
      quit_ = true;
      return;
    }
    if (editing_) {
      if (k.kind == Key::Enter) editing_ = false;
      if (k.kind == Key::Escape) {
        editing_ = false;
        filter_.clear();
      }
      if (k.kind == Key::Backspace && !filter_.empty()) filter_.pop_back();
      if (k.kind == Key::Char && filter_.size() < 200) filter_ += k.c;
      cursor_ = 0;
      return;
    }
    if (k.kind == Key::Char && k.c == 'q') {
      quit_ = true;
      return;
    }
    if (detail_) {
      if (k.kind == Key::Escape || k.kind == Key::Enter || k.kind == Key::Backspace)
        detail_ = false;
      return;
    }
    if (k.kind == Key::Char && k.c == 's') sort_ = next_sort(sort_);
    if (k.kind == Key::Char && k.c == '/') editing_ = true;
    if (k.kind == Key::Up && cursor_ > 0) --cursor_;
    if (k.kind == Key::Down) ++cursor_;
    if (k.kind == Key::PageUp) cursor_ = cursor_ > 10 ? cursor_ - 10 : 0;
    if (k.kind == Key::PageDown) cursor_ += 10;
    if (k.kind == Key::Enter) {
      auto rows = shown_rows();
      if (!rows.empty()) {
        detail_key_ = rows[std::min(cursor_, rows.size() - 1)].key;
        detail_ = true;
        // During a refresh (a stalled server) the refresh reads the detail at its end: a
        // read here would wait inside it, one more level for each Enter.
        if (!waiting_) waiting([this] { read_detail(); });
      }
    }
  }

  // The rows the filter lets through (a glob over KEY, or a part of it), sorted.
  std::vector<TopRow> shown_rows() const {
    std::vector<TopRow> rows;
    bool glob = filter_.find_first_of("*?[") != std::string::npos;
    for (const TopRow& r : snap_.rows)
      if (filter_.empty() || (glob ? fnmatch(filter_.c_str(), r.key.c_str(), 0) == 0
                                   : r.key.find(filter_) != std::string::npos))
        rows.push_back(r);
    sort_rows(rows, sort_);
    return rows;
  }

  // The detail's timeline: the key's history, read when it opens and at each refresh.
  void read_detail() {
    try {
      int64_t now = 0;
      const std::string key = detail_key_;
      auto events = newest_events(s_, key, g_.prefix, 1000, &now);
      timeline_ = make_timeline(events, now, 0);
      timeline_key_ = key;
      detail_problem_.clear();
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Usage) throw;
      detail_problem_ = e.what();
    }
  }

  std::string bold(const std::string& s) const { return color_ ? "\x1b[7m" + s + "\x1b[0m" : s; }
  std::string alert(const std::string& s) const {
    return color_ ? "\x1b[1;31m" + s + "\x1b[0m" : s;
  }

  void draw() {
    redraw_ = false;
    auto [height, width] = screen_->size();
    std::vector<std::string> lines;
    std::vector<TopRow> rows = shown_rows();
    if (cursor_ >= rows.size()) cursor_ = rows.empty() ? 0 : rows.size() - 1;
    lines.push_back(bold(truncate_columns(top_header(snap_, rows.size(), sort_), width)));
    const char* wait_word = have_first_ ? "waiting for" : "connecting to";
    std::string status =
        stalled_
            ? fmt::format(
                  "{} {} ({}s)…  q quit", wait_word, snap_.topology,
                  std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - waiting_since_)
                      .count())
        : !have_first_          ? fmt::format("{} {}…  q quit", wait_word, snap_.topology)
        : snap_.problem.empty() ? "q quit  s sort  / filter  arrows and Enter: a lock's detail"
                                : "connection: " + snap_.problem;
    lines.push_back(snap_.problem.empty() && !stalled_ ? truncate_columns(status, width)
                                                       : alert(truncate_columns(status, width)));
    if (detail_) {
      draw_detail(lines, rows, height, width);
    } else {
      size_t pane = std::clamp<size_t>(height / 3, 3, 10);
      size_t table = height > pane + 5 ? height - pane - 5 : 1;
      // Scrolled so that the cursor's row shows.
      size_t first = cursor_ >= table ? cursor_ - table + 1 : 0;
      std::vector<TopRow> window(rows.begin() + static_cast<long>(std::min(first, rows.size())),
                                 rows.end());
      auto t = top_table(window, width, table, static_cast<long>(cursor_ - first));
      lines.insert(lines.end(), t.begin(), t.end());
      // The pane's title where the pane fits below it (a tiny terminal: right away).
      const size_t pane_at = height > pane + 2 ? height - pane - 2 : 0;
      while (lines.size() < pane_at) lines.push_back("");
      lines.push_back(bold(truncate_columns("LATEST EVENTS", width)));
      for (auto& l : top_events(snap_.events, width, pane)) lines.push_back(l);
    }
    while (lines.size() + 1 < height) lines.push_back("");
    if (lines.size() >= height) lines.resize(height > 0 ? height - 1 : 0);
    lines.push_back(editing_          ? truncate_columns("/" + escape_text(filter_), width)
                    : filter_.empty() ? ""
                                      : truncate_columns("filter: " + escape_text(filter_), width));
    screen_->draw(lines);
  }

  void draw_detail(std::vector<std::string>& lines, const std::vector<TopRow>&, size_t height,
                   size_t width) {
    auto it = std::find_if(snap_.rows.begin(), snap_.rows.end(),
                           [&](const TopRow& r) { return r.key == detail_key_; });
    if (it == snap_.rows.end())
      lines.push_back(truncate_columns(escape_text(detail_key_) + ": free, nobody waits", width));
    else
      for (auto& l : top_detail(*it, width)) lines.push_back(l);
    lines.push_back("");
    if (!detail_problem_.empty()) {
      lines.push_back(alert(truncate_columns(detail_problem_, width)));
    } else if (timeline_key_ == detail_key_ && !timeline_.rows.empty()) {
      std::string pic = draw_timeline(timeline_, detail_key_, width, color_);
      for (size_t at = 0; at < pic.size();) {
        size_t nl = pic.find('\n', at);
        lines.push_back(pic.substr(at, nl - at));
        at = nl == std::string::npos ? pic.size() : nl + 1;
      }
    }
    (void)height;
    lines.push_back("");
    lines.push_back("Esc or Enter: back to the table  q: quit");
  }

  Session& s_;
  const GlobalOptions& g_;
  TopSource& src_;
  const TopOptions& o_;
  const bool color_;
  Screen* screen_ = nullptr;
  TopSnapshot snap_;
  bool quit_ = false, redraw_ = false, editing_ = false, detail_ = false;
  bool waiting_ = false, stalled_ = false;  // a refresh runs; it has taken kStallShown
  bool have_first_ = false;                 // the first refresh answered
  Clock::time_point waiting_since_;
  Loop::TimerId stall_timer_ = 0;
  std::string pending_, filter_, detail_key_, detail_problem_;
  std::string timeline_key_;  // the key timeline_ was read for
  size_t cursor_ = 0;
  TopSort sort_ = TopSort::Attention;
  Timeline timeline_;
};

}  // namespace

int cmd_top(const GlobalOptions& g, const std::string& pattern, const TopOptions& o) {
  Session s(g);
  // top stays: under Sentinel, a failover is watched for, not only noticed
  // when a command fails.
  for (auto& c : s.clients) c->stay();
  TopSource src(s, g, pattern);
  if (o.batch || !full_screen_possible()) return run_batch(s, src, o);
  FullScreen view(s, g, src, o);
  return view.run();
}

}  // namespace rlock
