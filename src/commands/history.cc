// `rlock history KEY [-n N] [--json] [--follow]`: what happened to a lock, newest
// last (as journalctl shows a log), from its PREFIX{KEY}:log stream; in quorum
// mode every master's log, merged.
#include "history.h"

#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <map>
#include <set>

#include "commands/commands.h"
#include "output.h"
#include "signals.h"

namespace rlock {

namespace {

// How long one blocking read of --follow waits for new events.
constexpr Millis kFollowBlock{5000};

struct Source {
  Client* client;
  std::string last_id = "0-0";  // the newest event read from it
  bool in_flight = false;
  Millis backoff{0};
};

// One command on the master of `source` for the lock's log key; the reply or
// the failure comes to `done`.
void ask(Source& src, const LockNames& n, Args args, Millis timeout,
         std::function<void(Result)> done) {
  src.client->command(std::move(args), std::move(done), CallOptions{timeout, {}, n.lock, {}});
}

std::string render(const std::vector<Event>& events, bool json) {
  std::string out;
  if (json) {
    for (size_t i = 0; i < events.size(); ++i) out += (i ? "," : "") + event_json(events[i]);
    return "[" + out + "]\n";
  }
  for (auto& e : events) out += event_line(e) + "\n";
  return out;
}

}  // namespace

int cmd_history(const GlobalOptions& g, const std::string& key, long count, bool follow) {
  Session s(g);
  auto lock = s.lock(key, g.prefix);
  const LockNames names = lock->names();
  const std::string log = names.sub("log");
  std::vector<Source> sources;
  for (Client* c : lock->clients()) sources.push_back(Source{c});
  const int of = sources.size() > 1 ? static_cast<int>(sources.size()) : 0;

  // The newest `count` events of every master, each oldest first.
  std::vector<std::vector<Event>> per_master(sources.size());
  std::optional<Error> failure;
  size_t answered = 0, pending = sources.size();
  for (size_t i = 0; i < sources.size(); ++i) {
    ask(sources[i], names, {"XREVRANGE", log, "+", "-", "COUNT", std::to_string(count)}, Millis(0),
        [&, i](Result r) {
          --pending;
          try {
            per_master[i] = parse_events(expect_ok(r, "XREVRANGE"));
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
  if (!follow || !g.json)
    print_out(render(events, g.json && !follow));
  else
    for (auto& e : events) print_out(event_json(e) + "\n");
  if (events.empty() && !g.json) log_info(fmt::format("no events recorded for '{}'", key));
  if (!follow) return exitcode::kOk;

  // --follow: a blocking read on every master, again and again, until a stop
  // signal. A master that fails is asked again after a pause (a restart, a
  // failover), from the last event read from it. In quorum mode an event
  // that several masters recorded is shown once.
  bool stop = false;
  std::optional<Error> fatal;
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    if (!ignored_at_start(sig)) s.loop.on_signal(sig, [&](int) { stop = true; });
  std::set<std::pair<std::string, std::string>> shown;
  for (auto& e : events) shown.insert({e.ev, e.get("tok")});
  std::function<void(size_t)> read_more = [&](size_t i) {
    Source& src = sources[i];
    if (stop || src.in_flight) return;
    src.in_flight = true;
    ask(src, names,
        {"XREAD", "COUNT", "100", "BLOCK", std::to_string(kFollowBlock.count()), "STREAMS", log,
         src.last_id},
        kFollowBlock + s.clients.front()->command_timeout(), [&, i](Result r) {
          Source& src = sources[i];
          src.in_flight = false;
          if (stop) return;
          Millis pause{0};
          try {
            const Reply& reply = expect_ok(r, "XREAD");
            src.backoff = Millis(0);
            // {{log, {{id, {f, v, ...}}, ...}}} or nil when nothing came.
            if (reply.type == Reply::Type::Array)
              for (auto& stream : reply.elements)
                if (stream.type == Reply::Type::Array && stream.elements.size() >= 2)
                  for (Event& e : parse_events(stream.elements[1])) {
                    src.last_id = e.id;
                    if (of && !shown.insert({e.ev, e.get("tok")}).second) continue;
                    e.masters = of ? 1 : 0;
                    e.of = 0;  // as it comes: no count of masters
                    print_out(g.json ? event_json(e) + "\n" : event_line(e) + "\n");
                  }
          } catch (const Error& e) {
            if (e.kind() == ErrorKind::Permission || e.kind() == ErrorKind::Usage) {
              fatal = e;
              stop = true;
              return;
            }
            src.backoff = std::clamp(src.backoff * 2, Millis(250), Millis(2000));
            pause = src.backoff;
            log_verbose(
                fmt::format("history --follow: {}; reading again in {}", e.what(), pause.count()));
          }
          s.loop.after(pause, [&, i] { read_more(i); });
        });
  };
  for (size_t i = 0; i < sources.size(); ++i) read_more(i);
  s.loop.run_until([&] { return stop; });
  if (fatal) throw *fatal;
  return exitcode::kOk;
}

}  // namespace rlock
