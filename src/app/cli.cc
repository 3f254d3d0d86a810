#include "app/cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

#include "app/cli_parts.h"
#include "cli/help.h"
#include "cli/output.h"
#include "cli/suggest.h"
#include "commands/commands.h"
#include "commands/run.h"
#include "commands/top.h"
#include "core/error.h"
#include "core/text.h"
#include "lock/key.h"
#include "lock/layout.h"
#include "lock/scripts.h"

namespace rlock {

using namespace app;

namespace {

constexpr const char* kExitTable = R"(Exit status:
  0        success; for run, the child exited 0
  1-125    run: the child's own exit status, passed through
  1        status: KEY is free; break: KEY was not held; forget: refused;
           doctor: a check warned or failed
  64       usage error: bad flag, duration, URL, key, token; a database the
           server does not have
  69       Redis unavailable: connect, TLS, or a command timed out or failed;
           a server at its maxclients or out of memory (OOM at maxmemory);
           an endpoint that does not speak Redis (or TLS, for rediss://); no
           sentinel answered or knew the master; --sync-replicas not met
  70       internal or protocol error: a reply rlock did not expect, or a
           key under rlock's prefix that another program wrote (the message
           names the key and its type)
  71       the keeper of acquire --while-pid could not be started (no pipe
           or fork, or it died before it was ready)
  75       lock not acquired: taken, --no-wait, or --wait ran out (-E changes
           it); superseded by a newer --supersede job (--superseded-exit-code
           changes it)
  76       lock lost or not held: lease lost during run, or a token that no
           longer holds; under Sentinel, a hold a failover lost, found at its
           release too
  77       permission: a password wanted or refused, or an ACL refusal (the
           message names what to grant)
  126/127  the command could not be executed / was not found
  128+N    the child was killed by signal N

Durations: 250ms, 30s, 5m, 2h, 1h30m, 1.5s, 7d (a bare number is seconds), at
most 366d. Text from Redis is shown with control characters escaped as \xHH.
A reader that closes standard output early (| head) ends rlock quietly, killed
by SIGPIPE as coreutils are; a failed write (a full disk) is 70.
Environment: RLOCK_URL, REDIS_URL, RLOCK_PASSWORD, REDISCLI_AUTH,
RLOCK_SENTINEL_PASSWORD, RLOCK_LABEL, RLOCK_HISTORY, RLOCK_LAYOUT, RLOCK_GUARD
(fork: run's guard process is a fork of rlock, never a program run from
memory), RLOCK_FUNCTIONS (on: the scripts by FCALL of rlock's Redis 7 library;
only where everyone who may load functions is trusted, see rlock(1)). The child
of run sees RLOCK_KEY, RLOCK_TOKEN, RLOCK_FENCE, RLOCK_KEYS and RLOCK_FENCES
(every key and its fence, one per line, as --and gave them; no fences under
--layout plain or redisson), RLOCK_SLOT (with --limit) and RLOCK_HELD (every
lock it is inside: a nested run of one of them runs at once and holds it for as
long as it runs).
See rlock(1) for details.)";

// --- dispatch ---------------------------------------------------------------------------------

// `run KEY` without a command holds KEY by hand (the man page's HOLDING BY
// HAND). A command that came out empty ("-- $CMD", "-c ''") is a mistake, not
// that form; the options that act on a command have nothing to act on (64).
void check_hand_hold(const Values& v, bool shell_given, const Words& w) {
  if (w.split)
    throw_usage(
        "run needs a command after '--' (rlock run KEY -- CMD [ARGS...]); without '--', "
        "rlock run KEY holds KEY until interrupted");
  if (shell_given) throw_usage("-c needs a shell string: rlock run KEY -c 'SHELL STRING'");
  const char* needs = v.kill_after         ? "--kill-after"
                      : v.o.kill_leftovers ? "--kill-leftovers"
                      : v.done_for         ? "--done-for"
                      : v.o.close          ? "-o/--close"
                                           : nullptr;
  if (needs)
    throw_usage(
        fmt::format("{} needs a command: rlock run KEY without one holds KEY until interrupted "
                    "(rlock run KEY {} ... -- CMD)",
                    needs, needs));
}

int dispatch(Values& v, const Parsed& p, const Words& w) {
  // Whether subcommand `name` was given.
  auto on = [&p](const char* name) { return p.sub == name; };
  // flock's --timeout is the wait, wherever it is written: a command that never
  // waits has none (the limit for one Redis command was --timeout before 0.5.0).
  if (v.wait_timeout && !on("run") && !on("acquire"))
    throw_usage(fmt::format(
        "--timeout (-w) is how long run and acquire wait for the lock, as in flock; {} does "
        "not wait: the limit for one Redis command is --command-timeout",
        p.sub));
  finish(v);
  const GlobalOptions& g = v.g;
  for (const char* sub : {"run", "release", "break", "forget", "top"})
    if (on(sub) && g.json)
      throw_usage(
          fmt::format("--json does not apply to {}: it is for acquire, extend, status, "
                      "list, history and doctor",
                      sub));
  if (on("run") || on("acquire") || on("extend") || on("release"))
    check_layout_options(g, &v.o);
  else
    check_layout_options(g, nullptr);
  if (on("history") && g.layout != Layout::Rlock)
    throw_usage(
        fmt::format("history does not work with --layout {}: the layout keeps no "
                    "history (its keys would fall in other Cluster slots)",
                    layout_name(g.layout)));
  if (on("forget") && g.layout != Layout::Rlock)
    throw_usage(
        fmt::format("forget does not work with --layout {}: the layout keeps nothing "
                    "beside the lock (break removes a holder)",
                    layout_name(g.layout)));
  if (g.layout != Layout::Rlock) {
    // What the layout would drop, asked for on the command line (what the
    // environment says for a whole fleet, RLOCK_LABEL or RLOCK_HISTORY, is not).
    const char* name = layout_name(g.layout);
    if (v.label && !v.label->empty())
      throw_usage(
          fmt::format("--label does not work with --layout {}: the layout keeps no "
                      "holder details (status shows a token or an id only)",
                      name));
    if (v.history && g.history > 0)
      throw_usage(
          fmt::format("--history does not work with --layout {}: the layout keeps no "
                      "history (its keys would fall in other Cluster slots)",
                      name));
    if (g.layout == Layout::Redisson && g.prefix != GlobalOptions{}.prefix)
      throw_usage(
          "--prefix does not work with --layout redisson: Redisson's lock is the hash at KEY "
          "itself (no prefix)");
    if (on("extend") && !v.ttl)
      throw_usage(
          fmt::format("extend does not work with --layout {} without --ttl: the layout "
                      "does not keep the TTL a lease was acquired with",
                      name));
  }
  if (on("run") || on("acquire")) v.o.label = resolve_label(v.label);
  if (on("run")) {
    v.rc.argv = w.split ? w.command : p.remaining;
    if (w.split && !p.remaining.empty())
      throw_usage(fmt::format("unexpected '{}' before '--'", escape_text(p.remaining.front())));
    if (!v.rc.shell.empty() && !v.rc.argv.empty())
      throw_usage("give either -c 'shell string' or -- CMD, not both");
    if (v.rc.shell.empty() && v.rc.argv.empty()) {
      check_hand_hold(v, p.shell_given, w);
      return cmd_hold(g, v.o);
    }
    return cmd_run(g, v.o, v.rc);
  }
  if (w.split || !p.remaining.empty())
    throw_usage(
        fmt::format("unexpected argument '{}'", w.split ? "--" : escape_text(p.remaining.front())));
  if (on("acquire")) {
    if (v.on_lost && !v.while_pid)
      throw_usage("--on-lost applies to run, and to acquire with --while-pid");
    if (v.o.export_env && g.json) throw_usage("give either --export or --json, not both");
    return cmd_acquire(g, v.o);
  }
  if (on("extend")) {
    std::optional<Millis> ttl;
    if (v.ttl) ttl = v.o.ttl;
    return cmd_extend(g, v.o.keys(), v.token, ttl, v.o.sync_replicas);
  }
  if (on("release")) return cmd_release(g, v.o.keys(), v.token);
  if (on("status")) return v.follow ? cmd_status_follow(g, v.key) : cmd_status(g, v.key);
  if (on("list")) {
    if (int(v.names) + int(g.json) + int(v.prometheus) > 1)
      throw_usage("--names, --json and --prometheus: give one of them");
    return v.names ? cmd_list_names(g, v.pattern) : cmd_list(g, v.pattern, v.prometheus);
  }
  if (on("break")) {
    BreakRequest req;
    if (v.break_token) {
      if (g.layout != Layout::Rlock)
        throw_usage(
            fmt::format("break --token does not work with --layout {}: the layout's "
                        "key has one holder (break it whole)",
                        layout_name(g.layout)));
      validate_token(*v.break_token);
      req.token = *v.break_token;
    }
    if (v.reason) {
      if (v.reason->size() > kMaxBreakReason || !valid_utf8_no_controls(*v.reason))
        throw_usage(
            fmt::format("invalid --reason: at most {} bytes of text without control characters",
                        kMaxBreakReason));
      req.reason = *v.reason;
    }
    return cmd_break(g, v.key, v.yes, req);
  }
  if (on("forget")) return cmd_forget(g, v.key, v.yes);
  if (on("doctor")) return cmd_doctor(g);
  if (on("top")) {
    TopOptions o;
    o.batch = v.batch;
    if (v.interval) o.interval = parse_duration(*v.interval, "--interval");
    if (o.interval < Millis(100)) throw_usage("--interval must be at least 100ms");
    if (v.top_count)
      o.count =
          whole_number(*v.top_count, 1, 1'000'000, "--count", "a whole number from 1 to 1000000");
    return cmd_top(g, v.pattern, o);
  }
  if (on("history")) {
    if (!v.timeline && (v.since || !v.svg.empty()))
      throw_usage(fmt::format("{} goes with --timeline", v.since ? "--since" : "--svg"));
    if (v.timeline && (v.follow || g.json))
      throw_usage(fmt::format("--timeline draws a picture: give it without {}",
                              v.follow ? "--follow" : "--json"));
    long n = v.count      ? whole_number(*v.count, 1, 10000, "-n", "a whole number from 1 to 10000")
             : v.timeline ? 10000
                          : 20;
    if (v.timeline)
      return cmd_timeline(g, v.key, n, v.since ? parse_duration(*v.since, "--since") : Millis(0),
                          v.svg);
    return cmd_history(g, v.key, n, v.follow);
  }
  return exitcode::kUsage;
}

int execute(Values& v, const Parsed& p, const Words& w);

// CLI11 on the words of one invocation whose options are all known to be
// right (those of `only`, the subcommand they name): true when they parsed
// and named `only` alone, with nothing printed; else run_cli starts again
// with every subcommand's options, for what they say (help, an error).
bool parses_alone(CLI::App& app, std::vector<std::string> words, const std::string& only) {
  std::reverse(words.begin(), words.end());  // CLI11 takes them reversed
  try {
    app.parse(words);
  } catch (const CLI::Error&) {
    return false;
  }
  std::vector<CLI::App*> parsed = app.get_subcommands();
  return parsed.size() == 1 && parsed.front()->get_name() == only;
}

// One invocation. With `whole`, or when argv names no subcommand after
// rlock's own options alone, every subcommand is built with its options, as
// --help and the messages for a misplaced or mistyped option need; else only
// the subcommand argv names (an invocation pays for its own options only),
// and nullopt when that is not enough: a word it does not know (an error),
// help, or words parsed otherwise than as that subcommand alone. run_cli then
// starts again whole, so what is printed is the same.
std::optional<int> invocation(int argc, char** argv, bool whole) {
  CLI::App app{"rlock: a distributed lock on Redis for shell users", "rlock"};
  app.set_help_flag("-h,--help", "print this help and exit");
  // The first line's form "rlock X.Y.Z" is what scripts read (the second word).
  app.set_version_flag("--version",
                       fmt::format("rlock {} (protocol {})", RLOCK_VERSION, kProtocolVersion),
                       "print the version of rlock and of its lock protocol, then exit");
  app.require_subcommand(1);
  app.allow_extras();
  Values v;
  add_connection_options(app, v);
  add_output_options(app, v);
  add_wait_anywhere(app, v);
  std::string only;
  if (!whole) only = named_subcommand(std::vector<std::string>(argv + 1, argv + argc), app);
  whole = only.empty();
  if (whole) {
    // Help's layout (the subcommands inherit it): an invocation built for
    // one subcommand starts again whole for help.
    app.formatter(make_help_formatter(help_layout()));
    app.footer(kExitTable);
  }
  Subcommands subs = define_subcommands(app, v, only);

  Words w = split_words(argc, argv, app, subs.run);
  try {
    check_option_order(w.rlock, app);
    check_known_options(w.rlock, app);
  } catch (const Error& e) {
    if (!whole) return std::nullopt;
    log_error(e.what());
    return e.exit_status();
  }
  if (!whole) {
    if (!parses_alone(app, w.rlock, only)) return std::nullopt;
  } else if (auto status = parse(app, w.rlock)) {
    return *status;
  }

  Parsed p{app.get_subcommands().front()->get_name(), app.remaining(),
           subs.run && subs.run->get_option("-c")->count() > 0};
  return execute(v, p, w);
}

// The subcommand, run; every error caught and said in one line.
int execute(Values& v, const Parsed& p, const Words& w) {
  set_output_mode({v.g.quiet, v.g.verbose});
  try {
    return dispatch(v, p, w);
  } catch (const Error& e) {
    // A reader that closed standard output: nothing to say (main ends by SIGPIPE).
    if (e.cause() == Cause::ReaderGone) return e.exit_status();
    // "Not acquired" is an expected outcome (cron on many hosts): -q hides it.
    if (e.kind() == ErrorKind::NotAcquired)
      log_info(e.what());
    else
      log_error(e.what());
    return e.exit_status();
  } catch (const std::exception& e) {
    log_error(fmt::format("internal error: {}", e.what()));
    return exitcode::kProtocol;
  }
}

}  // namespace

int run_cli(int argc, char** argv) {
  // `rlock run KEY -- CMD`: nothing else to parse (words.cc, plain_run).
  if (std::optional<PlainRun> plain = plain_run(argc, argv)) {
    Values v;
    v.key = plain->key;
    v.urls = std::move(plain->urls);
    v.ttl = std::move(plain->ttl);
    v.wait = std::move(plain->wait);
    v.wait_timeout = std::move(plain->timeout);
    v.o.no_wait = plain->no_wait;
    Words w{{"run", plain->key}, std::move(plain->command), true};
    return execute(v, Parsed{"run", {}, false}, w);
  }
#ifdef RLOCK_IOSTREAM_LAZY
  // The standard streams, built here rather than before main (core/iostream_lazy.h):
  // CLI11 and the commands that ask for a confirmation (std::cin) may use them.
  static const std::ios_base::Init streams;
#endif
  if (std::optional<int> status = invocation(argc, argv, false)) return *status;
  return *invocation(argc, argv, true);
}

}  // namespace rlock
