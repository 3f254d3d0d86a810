// `rlock history KEY [-n N] [--json] [--follow]`: what happened to a lock, newest
// last (as journalctl shows a log), from its PREFIX{KEY}:log stream, read
// through the read-only `history` script (every value bounded, whatever was
// written); in quorum mode every master's log, merged.
#include "lock/history.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "commands/commands.h"
#include "cli/output.h"
#include "lock/scripts.h"
#include "proc/signals.h"
#include "core/text.h"

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

}  // namespace

int cmd_history(const GlobalOptions& g, const std::string& key, long count, bool follow) {
  Session s(g);
  auto lock = s.lock(key, g.prefix);
  const LockNames names = lock->names();
  const Args keys = keys_of(names);
  std::vector<Source> sources;
  for (Client* c : lock->clients()) sources.push_back(Source{c});
  const int of = sources.size() > 1 ? static_cast<int>(sources.size()) : 0;

  // The newest `count` events of every master, each oldest first.
  std::vector<std::vector<Event>> per_master(sources.size());
  std::optional<Error> failure;
  size_t answered = 0, pending = sources.size();
  for (size_t i = 0; i < sources.size(); ++i) {
    run_script(*sources[i].client, history_script(), keys, {std::to_string(count), ""},
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
  std::vector<Event> events = of ? merge_events(per_master, of) : per_master.front();
  if (static_cast<long>(events.size()) > count) events.erase(events.begin(), events.end() - count);
  print_out(render(events, g.json, follow));
  if (events.empty() && !g.json) log_info(fmt::format("no events recorded for '{}'", key));
  if (!follow) return exitcode::kOk;

  // --follow: on every master, read what came after the last event read
  // (the script: bounded), and when nothing did, wait for more with a
  // blocking read (XREAD BLOCK: only a wake-up; its reply is not used). A
  // master that fails is asked again after a pause (a restart, a failover),
  // from the last event read from it. In quorum mode an event that several
  // masters recorded is shown once. A stop signal ends it (exit 0); so does
  // a reader that went away (a closed pipe, a full disk), with its error.
  bool stop = false;
  std::optional<Error> fatal;
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    if (!ignored_at_start(sig)) s.loop.on_signal(sig, [&](int) { stop = true; });
  std::set<std::pair<std::string, std::string>> shown;
  for (auto& e : events) shown.insert({e.ev, e.get("tok")});
  std::function<void(size_t)> read_new, wait_new;
  auto failed = [&](size_t i, const Error& e) {
    if (e.kind() == ErrorKind::Permission || e.kind() == ErrorKind::Usage) {
      fatal = e;
      stop = true;
      return;
    }
    Source& src = sources[i];
    src.backoff = std::clamp(src.backoff * 2, Millis(250), Millis(2000));
    log_verbose(
        fmt::format("history --follow: {}; reading again in {}ms", e.what(), src.backoff.count()));
    s.loop.after(src.backoff, [&, i] { read_new(i); });
  };
  read_new = [&](size_t i) {
    if (stop) return;
    Source& src = sources[i];
    run_script(*src.client, history_script(), keys, {std::to_string(kFollowBatch), src.last_id},
               [&, i](Result r) {
                 if (stop) return;
                 Source& src = sources[i];
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
                   if (of && !shown.insert({e.ev, e.get("tok")}).second) continue;
                   out += (g.json ? event_json(e) : event_line(e)) + "\n";
                 }
                 try {
                   print_out(out);
                 } catch (const Error& e) {
                   fatal = e;
                   stop = true;
                   return;
                 }
                 if (got.empty())
                   wait_new(i);
                 else
                   read_new(i);
               });
  };
  wait_new = [&](size_t i) {
    if (stop) return;
    Source& src = sources[i];
    src.client->command(
        {"XREAD", "COUNT", "1", "BLOCK", std::to_string(kFollowBlock.count()), "STREAMS",
         names.sub("log"), src.last_id},
        [&, i](Result r) {
          if (stop) return;
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
        CallOptions{kFollowBlock + s.clients.front()->command_timeout(), {}, names.lock, {}});
  };
  // A pipe whose reader left (`| head -2` has its lines) ends the follow at
  // once, as tail -f does, not at the next event, which may be days away.
  struct stat out {};
  bool pipe = fstat(STDOUT_FILENO, &out) == 0 && S_ISFIFO(out.st_mode);
  if (pipe)
    s.loop.watch(STDOUT_FILENO, 0, [&](short revents) {
      if (!(revents & POLLERR)) return;
      s.loop.unwatch(STDOUT_FILENO);
      if (!fatal) fatal = stdout_reader_left();
      stop = true;
    });
  for (size_t i = 0; i < sources.size(); ++i) read_new(i);
  s.loop.run_until([&] { return stop; });
  if (pipe) s.loop.unwatch(STDOUT_FILENO);
  if (fatal) throw *fatal;
  return exitcode::kOk;
}

}  // namespace rlock
