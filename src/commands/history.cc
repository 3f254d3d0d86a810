// `rlock history KEY [-n N] [--json] [--follow]`: what happened to a lock, newest
// last (as journalctl shows a log), from its PREFIX{KEY}:log stream, read
// through the read-only `history` script (every value bounded, whatever was
// written); in quorum mode every master's log, merged.
#include "lock/history.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "cli/output.h"
#include "cli/screen.h"
#include "commands/commands.h"
#include "commands/timeline.h"
#include "core/text.h"
#include "lock/script_args.h"
#include "lock/scripts.h"
#include "proc/signals.h"

namespace rlock {

namespace {

// How long one blocking read of --follow waits for new events; how many
// events one read takes at most.
constexpr Millis kFollowBlock{5000};
constexpr int kFollowBatch = 100;

struct Source {
  Client* client;
  std::string last_id = "0-0";  // the newest event read from it
  Millis backoff{0};
};

// The events the history script answers (each {id, field, value, ...}).
std::vector<Event> script_events(const Reply& r) {
  std::vector<Event> out;
  for (auto& flat : r.as_array("a history reply"))
    if (Event e = parse_flat_event(flat); e.ms > 0) out.push_back(std::move(e));
  return out;
}

std::string render(const std::vector<Event>& events, bool json, bool lines) {
  std::string out;
  if (json && !lines) {
    for (size_t i = 0; i < events.size(); ++i) out += (i ? "," : "") + event_json(events[i]);
    return "[" + out + "]\n";
  }
  for (auto& e : events) out += (json ? event_json(e) : event_line(e)) + "\n";
  return out;
}

// The newest `count` events of every master, merged (in quorum mode), oldest
// first; each source's last_id is the newest event read from it. A master
// that fails is left out with a warning; its error is thrown when none answered.
std::vector<Event> read_newest(Session& s, const Args& keys, std::vector<Source>& sources,
                               long count) {
  std::vector<std::vector<Event>> per_master(sources.size());
  std::optional<Error> failure;
  size_t answered = 0, pending = sources.size();
  for (size_t i = 0; i < sources.size(); ++i) {
    run_script(*sources[i].client, history_script(), keys, HistoryArgs{.count = count}.to_argv(),
               [&, i](Result r) {
                 --pending;
                 try {
                   per_master[i] = script_events(expect_ok(r, "history script"));
                   std::reverse(per_master[i].begin(), per_master[i].end());
                   if (!per_master[i].empty()) sources[i].last_id = per_master[i].back().id;
                   ++answered;
                 } catch (const Error& e) {
                   if (!failure) failure = e;
                 }
               });
  }
  s.loop.run_until([&] { return pending == 0; });
  if (answered == 0 && failure) throw *failure;
  if (failure)
    log_error(fmt::format("warning: {}; showing the masters that answered", failure->what()));
  const int of = sources.size() > 1 ? static_cast<int>(sources.size()) : 0;
  std::vector<Event> events =
      of ? merge_events(per_master, of, static_cast<size_t>(count)) : per_master.front();
  if (static_cast<long>(events.size()) > count) events.erase(events.begin(), events.end() - count);
  return events;
}

// --follow: on every master, read what came after the last event read (the
// script: bounded), and when nothing did, wait for more with a blocking read
// (XREAD BLOCK: only a wake-up; its reply is not used). A master that fails
// is asked again after a pause (a restart, a failover), from the last event
// read from it. In quorum mode an event that several masters recorded is
// shown once. A stop signal ends it (exit 0); so does a reader that went
// away (a closed pipe, a full disk), with its error.
class Follow {
 public:
  /// `shown`: the events already printed.
  Follow(Session& s, const GlobalOptions& g, const LockNames& names, const Args& keys,
         std::vector<Source>& sources, const std::vector<Event>& shown)
      : s_(s), g_(g), names_(names), keys_(keys), sources_(sources), quorum_(sources.size() > 1) {
    for (auto& e : shown) shown_.insert({e.ev, e.get("tok")});
  }

  /// Until a stop signal or a reader that left; throws what ended it otherwise.
  void run() {
    for (int sig : {SIGINT, SIGTERM, SIGHUP})
      if (!ignored_at_start(sig)) s_.loop.on_signal(sig, [this](int) { stop_ = true; });
    bool pipe = watch_reader();
    for (size_t i = 0; i < sources_.size(); ++i) read_new(i);
    s_.loop.run_until([this] { return stop_; });
    if (pipe) s_.loop.unwatch(STDOUT_FILENO);
    if (fatal_) throw *fatal_;
  }

 private:
  // Reads what master `i` recorded after its last event read.
  void read_new(size_t i) {
    if (stop_) return;
    run_script(*sources_[i].client, history_script(), keys_,
               HistoryArgs{.count = kFollowBatch, .after = sources_[i].last_id}.to_argv(),
               [this, i](Result r) { on_read(i, std::move(r)); });
  }

  // Prints what came (each event once), then reads on, or waits when
  // nothing came.
  void on_read(size_t i, Result r) {
    if (stop_) return;
    Source& src = sources_[i];
    std::vector<Event> got;
    try {
      got = script_events(expect_ok(r, "history script"));
    } catch (const Error& e) {
      return failed(i, e);
    }
    src.backoff = Millis(0);
    std::string out;
    for (Event& e : got) {
      src.last_id = e.id;
      if (quorum_ && !shown_.insert({e.ev, e.get("tok")}).second) continue;
      out += (g_.json ? event_json(e) : event_line(e)) + "\n";
    }
    try {
      print_out(out);
    } catch (const Error& e) {
      return end(e);
    }
    if (got.empty())
      wait_new(i);
    else
      read_new(i);
  }

  // Waits until master `i` records something after its last event read.
  void wait_new(size_t i) {
    if (stop_) return;
    Source& src = sources_[i];
    src.client->command(
        {"XREAD", "COUNT", "1", "BLOCK", std::to_string(kFollowBlock.count()), "STREAMS",
         names_.sub("log"), src.last_id},
        [this, i](Result r) {
          if (stop_) return;
          // Whatever it says (new events, nothing, an error or a reply too
          // large to take), the script reads what is there.
          if (r.failure) return failed(i, *r.failure);
          // Not a stream (a foreign value): the script reads no history; wait
          // before asking again.
          if (r.reply.is_error())
            return failed(i, Error(ErrorKind::Protocol,
                                   "XREAD: " + escape_text(truncate_text(r.reply.str, 200))));
          read_new(i);
        },
        CallOptions{kFollowBlock + s_.clients.front()->command_timeout(), {}, names_.lock, {}});
  }

  // A refusal ends the follow; anything else asks master `i` again after a
  // pause that doubles up to 2 s.
  void failed(size_t i, const Error& e) {
    if (e.kind() == ErrorKind::Permission || e.kind() == ErrorKind::Usage) return end(e);
    Source& src = sources_[i];
    src.backoff = std::clamp(src.backoff * 2, Millis(250), Millis(2000));
    log_verbose(
        fmt::format("history --follow: {}; reading again in {}ms", e.what(), src.backoff.count()));
    s_.loop.after(src.backoff, [this, i] { read_new(i); });
  }

  void end(const Error& e) {
    fatal_ = e;
    stop_ = true;
  }

  // A pipe whose reader left ends the follow at once (watch_stdout_reader).
  // Whether standard output is a pipe (then watched).
  bool watch_reader() {
    return watch_stdout_reader(s_.loop, [this](const Error& e) {
      if (!fatal_) fatal_ = e;
      stop_ = true;
    });
  }

  Session& s_;
  const GlobalOptions& g_;
  const LockNames& names_;
  const Args& keys_;
  std::vector<Source>& sources_;
  const bool quorum_;  // several masters: an event may come from each
  std::set<std::pair<std::string, std::string>> shown_;
  bool stop_ = false;
  std::optional<Error> fatal_;
};

// The server's time (Unix ms) from the master of `key`'s slot, so that a
// timeline's "now" is on the clock its events are stamped with; this host's
// clock when the server does not say.
int64_t server_ms(Session& s, Client& c, const std::string& key) {
  Result r = settle<Result>(s.loop, [&](std::function<void(Result)> done) {
    c.command({"TIME"}, std::move(done), CallOptions{Millis(0), {}, key, {}});
  });
  try {
    auto& t = expect_ok(r, "TIME").as_array("a TIME reply", 2);
    std::string sec = t[0].as_string("TIME seconds"), usec = t[1].as_string("TIME microseconds");
    if (!sec.empty() && sec.size() < 13 &&
        sec.find_first_not_of("0123456789") == std::string::npos && !usec.empty() &&
        usec.size() < 7 && usec.find_first_not_of("0123456789") == std::string::npos)
      return std::strtoll(sec.c_str(), nullptr, 10) * 1000 +
             std::strtoll(usec.c_str(), nullptr, 10) / 1000;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Permission || e.kind() == ErrorKind::Usage) throw;
    log_verbose(fmt::format("TIME: {}; using this host's clock", e.what()));
  }
  return std::chrono::duration_cast<Millis>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void write_file(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "we");
  if (!f)
    throw Error(ErrorKind::Protocol,
                fmt::format("cannot write '{}': {}", escape_text(path), std::strerror(errno)));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  int err = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok)
    throw Error(ErrorKind::Protocol,
                fmt::format("cannot write '{}': {}", escape_text(path), std::strerror(err)));
}

}  // namespace

std::vector<Event> newest_events(Session& s, const std::string& key, const std::string& prefix,
                                 long count, int64_t* now_ms) {
  auto lock = s.lock(key, prefix);
  const LockNames names = lock->names();
  const Args keys = keys_of(names);
  std::vector<Source> sources;
  for (Client* c : lock->clients()) sources.push_back(Source{c});
  std::vector<Event> events = read_newest(s, keys, sources, count);
  if (now_ms) *now_ms = server_ms(s, *sources.front().client, names.lock);
  return events;
}

int cmd_timeline(const GlobalOptions& g, const std::string& key, long count, Millis since,
                 const std::string& svg) {
  Session s(g);
  int64_t now = 0;
  std::vector<Event> events = newest_events(s, key, g.prefix, count, &now);
  Timeline t = make_timeline(events, now, since.count());
  if (!svg.empty()) write_file(svg, timeline_svg(t, key));
  if (t.rows.empty())
    log_info(
        fmt::format("no holds recorded for '{}'{}", key, since.count() > 0 ? " in that time" : ""));
  else
    // COLUMNS, else the terminal's width, else 80.
    print_out(draw_timeline(t, key, output_columns(80), stdout_is_tty() && terminal_wants_color()));
  return exitcode::kOk;
}

int cmd_history(const GlobalOptions& g, const std::string& key, long count, bool follow) {
  Session s(g);
  auto lock = s.lock(key, g.prefix);
  const LockNames names = lock->names();
  const Args keys = keys_of(names);
  std::vector<Source> sources;
  for (Client* c : lock->clients()) sources.push_back(Source{c});

  std::vector<Event> events = read_newest(s, keys, sources, count);
  print_out(render(events, g.json, follow));
  if (events.empty() && !g.json) log_info(fmt::format("no events recorded for '{}'", key));
  if (!follow) return exitcode::kOk;
  Follow follower(s, g, names, keys, sources, events);
  follower.run();
  return exitcode::kOk;
}

}  // namespace rlock
