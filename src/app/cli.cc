#include "app/cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

#include "commands/commands.h"
#include "core/error.h"
#include "cli/help.h"
#include "lock/layout.h"
#include "cli/output.h"
#include "commands/run.h"
#include "cli/suggest.h"
#include "core/text.h"

namespace rlock {

namespace {

constexpr const char* kExitTable = R"(Exit status:
  0        success; for run, the child exited 0
  1-125    run: the child's own exit status, passed through
  1        status: KEY is free; break: KEY was not held; forget: refused;
           doctor: a check warned or failed
  64       usage error: bad flag, duration, URL, key, token; a database the
           server does not have
  69       Redis unavailable: connect, TLS, or a command timed out or failed;
           a server at its maxclients; an endpoint that does not speak Redis
           (or TLS, for rediss://); no sentinel answered or knew the master;
           --sync-replicas not met
  70       internal or protocol error: a reply rlock did not expect, or a
           key under rlock's prefix that another program wrote (the message
           names the key and its type)
  75       lock not acquired: taken, --no-wait, or --wait ran out (-E changes
           it)
  76       lock lost or not held: lease lost during run, or a token that no
           longer holds
  77       permission: a password wanted or refused, or an ACL refusal (the
           message names what to grant)
  126/127  the command could not be executed / was not found
  128+N    the child was killed by signal N

Durations: 250ms, 30s, 5m, 2h, 1h30m, 1.5s, 7d (a bare number is seconds), at
most 366d. Text from Redis is shown with control characters escaped as \xHH.
A reader that closes standard output early (| head) ends rlock quietly, killed
by SIGPIPE as coreutils are; a failed write (a full disk) is 70.
Environment: RLOCK_URL, REDIS_URL, RLOCK_PASSWORD, REDISCLI_AUTH,
RLOCK_SENTINEL_PASSWORD, RLOCK_LABEL, RLOCK_HISTORY, RLOCK_LAYOUT. The child of
run sees RLOCK_KEY, RLOCK_TOKEN, RLOCK_FENCE, RLOCK_KEYS and RLOCK_FENCES (every
key and its fence, one per line, as --and gave them; no fences under --layout
plain or redisson), RLOCK_SLOT (with --limit) and RLOCK_HELD (every lock it is
inside: a nested run of one of them runs at once and holds it for as long as it
runs).
See rlock(1) for details.)";

// Everything the command line gives. Durations and numbers are kept as text
// and parsed afterwards (finish()), so that their errors name the flag; an
// empty value ("--ttl ''") is then an error, not "not given".
struct Values {
  GlobalOptions g;
  LockOptions o;
  std::vector<std::string> urls;
  std::optional<std::string> connect_timeout, timeout, ttl, wait, min_hold, kill_after, on_lost,
      limit, conflict_exit, sync_replicas, while_pid, done_for, label, priority, max_waiters,
      history, layout;
  std::string key, token, pattern = "*";
  std::optional<std::string> count;
  bool follow = false;
  std::vector<std::string> and_keys;
  bool yes = false, names = false, prometheus = false;
  RunCommand rc;
};

struct Subcommands {
  CLI::App* history;
  CLI::App* run;
  CLI::App* acquire;
  CLI::App* extend;
  CLI::App* release;
  CLI::App* status;
  CLI::App* list;
  CLI::App* brk;
  CLI::App* forget;
  CLI::App* doctor;
};

// --- definitions: every flag once, with the value name its help shows ---------------------

CLI::Option* duration(CLI::App* app, const char* names, std::optional<std::string>& into,
                      const std::string& what) {
  return app->add_option(names, into, what)->type_name("DURATION");
}

void add_connection_options(CLI::App& app, Values& v) {
  auto opt = [&](const char* names, std::string& into, const char* value, const char* what) {
    app.add_option(names, into, what)->type_name(value)->group("Connection");
  };
  // Several --url make a quorum lock (src/lock/quorum.h).
  app.add_option("-u,--url", v.urls,
                 "Redis URL: redis://[USER[:PASS]@]HOST[:PORT][/DB], rediss://..., "
                 "unix:///PATH[?db=N], redis-sentinel://HOST[:PORT],.../MASTER[/DB], "
                 "rediss-sentinel://...; default $RLOCK_URL (several separated by spaces), "
                 "$REDIS_URL, redis://127.0.0.1:6379/0. Repeated: one independent master "
                 "each, a quorum (Redlock) lock held on a majority of them")
      ->type_name("URL")
      // One URL per -u: "--url URL KEY" must leave KEY to the subcommand.
      ->allow_extra_args(false)
      ->group("Connection");
  opt("--user", v.g.user, "NAME", "ACL user name (overrides the URL's)");
  opt("--password-file", v.g.password_file, "FILE",
      "read the password from FILE (else $RLOCK_PASSWORD, then $REDISCLI_AUTH)");
  opt("--sentinel-user", v.g.sentinel_user, "NAME",
      "ACL user name for the sentinels of a redis-sentinel:// URL");
  opt("--sentinel-password-file", v.g.sentinel_password_file, "FILE",
      "read the sentinels' password from FILE (else $RLOCK_SENTINEL_PASSWORD)");
  opt("--tls-ca-cert", v.g.tls.ca_cert, "FILE", "CA certificate file to verify the server");
  opt("--tls-ca-dir", v.g.tls.ca_dir, "DIR", "directory of CA certificates");
  opt("--tls-cert", v.g.tls.cert, "FILE", "client certificate file");
  opt("--tls-key", v.g.tls.key, "FILE", "client private key file");
  opt("--tls-server-name", v.g.tls.server_name, "NAME",
      "name for SNI and certificate verification");
  app.add_flag("--tls-insecure", v.g.tls.insecure, "do not verify the server's certificate")
      ->group("Connection");
  duration(&app, "--connect-timeout", v.connect_timeout,
           "limit for connecting and for a DNS lookup (default 5s)")
      ->group("Connection");
  duration(&app, "--timeout", v.timeout, "limit for one Redis command (default 5s)")
      ->group("Connection");
  opt("--prefix", v.g.prefix, "PREFIX", "prefix of every Redis key (default lock:)");
  app.add_option("--layout", v.layout,
                 "whose keys: rlock (default), plain (SET PREFIXKEY NX PX, as the seeds' "
                 "NestJS service) or redisson (Redisson's hash at KEY); default $RLOCK_LAYOUT. "
                 "Two layouts for one name are two different locks")
      ->type_name("LAYOUT")
      ->group("Connection");
}

void add_output_options(CLI::App& app, Values& v) {
  app.add_flag("-v,--verbose", v.g.verbose, "log each Redis round trip with timestamps to stderr")
      ->group("Output");
  app.add_flag("-q,--quiet", v.g.quiet, "no informational messages (errors are still printed)")
      ->group("Output");
  app.add_flag("--json", v.g.json,
               "machine-readable output (acquire, extend, status, list, history, doctor)")
      ->group("Output");
  app.add_option("--history", v.history,
                 "events each lock's history keeps, written by run, acquire, extend, release "
                 "and break (default $RLOCK_HISTORY, else 100; 0 records nothing)")
      ->type_name("N")
      ->group("Output");
}

CLI::App* add_key(CLI::App* sub, Values& v) {
  sub->add_option("key", v.key, "the lock's name: 1-512 bytes of UTF-8, no '{' or '}'")->required();
  return sub;
}

// --and KEY (repeatable): more keys, taken all or nothing with one token.
void add_and(CLI::App* sub, Values& v, const char* what) {
  sub->add_option("--and", v.and_keys, what)
      ->type_name("KEY2")
      // One KEY per --and: "--and B -- CMD" must leave the rest alone.
      ->allow_extra_args(false);
}

void add_sync_replicas(CLI::App* sub, Values& v, const char* what) {
  sub->add_option("--sync-replicas", v.sync_replicas, what)->type_name("N");
}

// The locking options of run and acquire; `ttl` says how the lease is kept.
void add_lock_options(CLI::App* sub, Values& v, const std::string& ttl) {
  duration(sub, "--ttl", v.ttl, ttl);
  duration(sub, "--wait", v.wait, "wait at most this long when taken (default: forever)");
  sub->add_flag("-n,--no-wait", v.o.no_wait, "fail at once when taken");
  sub->add_option("-E,--conflict-exit-code", v.conflict_exit,
                  "exit status when the lock was not acquired (default 75)")
      ->type_name("N");
  sub->add_option("--limit", v.limit, "counting semaphore: at most N holders at once")
      ->type_name("N");
  add_and(sub, v,
          "also hold KEY2 (repeatable): every key or none, taken in one global order "
          "(no deadlock between runs that name them in other orders), one token for all");
  sub->add_option("--label", v.label,
                  "what this job is, shown to others with the lock (at most 256 bytes; default "
                  "$RLOCK_LABEL, else the CI job's URL in GitHub Actions, GitLab CI, Jenkins "
                  "and Buildkite)")
      ->type_name("LABEL");
  sub->add_option("--priority", v.priority,
                  "place in line: a higher priority is served first, equal ones first come, "
                  "first served (-1000 to 1000, default 0)")
      ->type_name("N");
  sub->add_flag("--supersede", v.o.supersede,
                "deploy only the latest: an older job that asked for it too, waiting or back "
                "later, exits not acquired (75), in every key of --and; a later one replaces "
                "this one");
  sub->add_option("--max-waiters", v.max_waiters,
                  "not acquired at once (75) when N waiters are in line already")
      ->type_name("N");
  sub->add_flag("-s,--shared", v.o.shared,
                "a shared lock, as flock -s: any number of shared holders at once, or one "
                "exclusive holder (the default); the line stays first come, first served "
                "across both kinds");
  add_sync_replicas(sub, v,
                    "count the lease as granted (and renewed) only once N replicas confirm it; "
                    "fewer is 69");
}

void add_run_options(CLI::App* run, Values& v) {
  run->add_option("-c,--command", v.rc.shell, "run STRING with /bin/sh -c instead of -- CMD")
      ->type_name("STRING");
  add_lock_options(run, v,
                   "lease length (default 30s; nested: the enclosing hold's), renewed every "
                   "TTL/3 while CMD runs");
  duration(run, "--min-hold", v.min_hold,
           "keep the lock at least this long after acquisition, even if CMD ends sooner "
           "(status shows it as kept)");
  duration(run, "--done-for", v.done_for,
           "once per period: when CMD exits 0, KEY stays taken this long from its end (status "
           "shows it as done) and every run of KEY meanwhile, waiting ones included, is not "
           "acquired (75); when CMD fails, KEY is released at once so another host may retry");
  run->add_option("--on-lost", v.on_lost,
                  "when the lease is lost: term (SIGTERM, then SIGKILL after --kill-after; "
                  "the default), kill, or warn (let CMD finish)")
      ->type_name("ACTION");
  duration(run, "--kill-after", v.kill_after,
           "SIGKILL this long after SIGTERM (--on-lost term, --kill-leftovers; default 10s)");
  run->add_flag("--kill-leftovers", v.o.kill_leftovers,
                "when CMD exits, end what it left in its process group (SIGTERM, then SIGKILL "
                "after --kill-after) instead of holding the lock until it exits (a stop signal "
                "to rlock, or CMD ending by one, always ends them)");
}

void add_token(CLI::App* sub, Values& v) {
  sub->add_option("--token", v.token, "the token printed by acquire (default $RLOCK_TOKEN)")
      ->type_name("TOKEN")
      ->envname("RLOCK_TOKEN")
      ->required();
}

Subcommands define_subcommands(CLI::App& app, Values& v) {
  Subcommands s{};
  s.run = add_key(app.add_subcommand("run",
                                     "hold KEY while CMD (and what it leaves in its process "
                                     "group) runs, renewing the lease; exit with CMD's status "
                                     "(76 if the lock was lost)"),
                  v);
  add_run_options(s.run, v);
  s.run->footer(
      "Before CMD, every word that starts with '-' is an rlock option: a CMD that\n"
      "starts with '-' goes after '--'. An option rlock does not know is a usage\n"
      "error (64) that names the closest one (--wiat: did you mean --wait?).\n"
      "Under a run that holds KEY (RLOCK_HELD, confirmed with Redis), run holds KEY\n"
      "under that holder for as long as CMD runs, in any process group: KEY is free\n"
      "only once both have ended; if the outer hold is lost or broken, --on-lost\n"
      "applies and run exits 76.");

  s.acquire = add_key(app.add_subcommand("acquire",
                                         "take KEY for --ttl and print the token; no process "
                                         "stays behind (but with --while-pid)"),
                      v);
  add_lock_options(s.acquire, v,
                   "lease length (default 30s); extend renews it (with --while-pid, the keeper "
                   "renews it every TTL/3)");
  s.acquire
      ->add_option("--while-pid", v.while_pid,
                   "hold KEY while process PID lives: a detached keeper renews the lease and "
                   "releases it within about a second after PID exits (the one acquire that "
                   "leaves a process behind)")
      ->type_name("PID");
  s.acquire
      ->add_option("--on-lost", v.on_lost,
                   "with --while-pid, when the lease is lost: term (SIGTERM to PID alone, "
                   "the default), kill (SIGKILL), or warn (nothing)")
      ->type_name("ACTION");
  s.acquire->add_flag("--export", v.o.export_env,
                      "print shell assignments (RLOCK_KEY, RLOCK_TOKEN, RLOCK_FENCE, RLOCK_KEYS, "
                      "RLOCK_FENCES, RLOCK_HELD; RLOCK_SLOT with --limit) to eval instead of the "
                      "token");
  s.acquire->footer(
      "In a script, for the script's whole life:\n"
      "  eval \"$(rlock acquire KEY --while-pid $$ --export)\" || exit\n"
      "Under a run or acquire that holds KEY (RLOCK_HELD, confirmed with Redis),\n"
      "acquire takes nothing and prints the token that holds it; with --while-pid\n"
      "only for a PID that runs under that holder (no keeper is started), else 64.\n"
      "The keeper signals PID only for a lost lease (a break, an expiry), never for\n"
      "the owner's release: rlock release KEY in the evaluated environment, or\n"
      "rlock release KEY --token T from anywhere.");

  s.extend = add_key(app.add_subcommand("extend", "renew a lease that --token still holds"), v);
  add_token(s.extend, v);
  add_and(s.extend, v, "renew KEY2 too (a token acquire --and printed; repeatable)");
  duration(s.extend, "--ttl", v.ttl,
           "new lease length (default: the TTL it was acquired with; required with --layout "
           "plain or redisson)");
  add_sync_replicas(s.extend, v, "count the renewal only once N replicas confirm it; fewer is 69");

  s.release = add_key(app.add_subcommand("release",
                                         "release KEY if --token still holds it; wake the next "
                                         "waiter"),
                      v);
  add_token(s.release, v);
  add_and(s.release, v, "release KEY2 too (a token acquire --and printed; repeatable)");

  s.status = add_key(
      app.add_subcommand("status", "show holders and waiters; exit 0 when held, 1 when free"), v);
  s.status->footer(
      "On a terminal: a table under a header, durations like 29s, each line within\n"
      "the terminal (the command is cut with '…'); piped: the same lines as always.\n"
      "A lease that run --min-hold keeps after its command ended says so: \"kept by\n"
      "--min-hold until 10:54:01Z; its command exited 0\" (--json: kept, kept_until,\n"
      "exit_status).\n"
      "A holder's or waiter's --label is shown below it (in the table: in WHO, with\n"
      "user@host:pid below), a waiter's --priority before it, and a --limit\n"
      "holder's slot after its fence (in the table: below it).\n"
      "A free KEY shows its last events from its history, oldest first: \"last\"\n"
      "lines, as rlock history prints them (--json: last_events, always there).\n"
      "Reads only: works for a read-only ACL user and on a replica.");

  s.list = app.add_subcommand("list",
                              "list held locks whose KEY matches PATTERN (a glob; default *), "
                              "one tab-separated line each: KEY HOLDER TTL_MS FENCE WAITERS CMD "
                              "LABEL");
  s.list->add_option("pattern", v.pattern, "a glob over KEY (default *)");
  s.list->add_flag("--prometheus", v.prometheus,
                   "print the Prometheus text format for node_exporter's textfile collector "
                   "(held, holders, waiters, lease left, time held, fence per lock)");
  s.list->add_flag("--names", v.names,
                   "print only the names, one per line, at most 1000, with --timeout for the "
                   "whole listing (for shell completion)");
  s.list->footer(
      "On a terminal: a table under a header (KEY HOLDER LEFT FENCE WAITERS COMMAND;\n"
      "HOLDER is the holder's --label when it has one), durations like 29s, each\n"
      "line within the terminal; piped: the bare tab-separated values above, for\n"
      "scripts (LABEL empty when there is none).");

  s.brk = add_key(
      app.add_subcommand("break", "delete a stuck lock and wake its waiters (asks first)"), v);
  s.brk->add_flag("-y,--yes", v.yes, "do not ask for confirmation");
  s.brk->footer(
      "Exits 1 when KEY is not held. With --yes, on a KEY nobody holds, it removes\n"
      "the places of dead waiters that could still block its line and says how\n"
      "many (exit 0).");

  s.forget = add_key(app.add_subcommand("forget",
                                        "remove every trace of a free KEY nobody waits on, its "
                                        "fence counter included: its fences start again at 1 "
                                        "(asks first)"),
                     v);
  s.forget->add_flag("-y,--yes", v.yes, "do not ask for confirmation");
  s.forget->footer(
      "Refused (exit 1) while KEY is held or waited for (dead holders and waiters\n"
      "do not count). A resource that checks\n"
      "RLOCK_FENCE must forget KEY too: it would refuse the new, lower fences.");

  s.history = add_key(app.add_subcommand("history",
                                         "show what happened to KEY: who held it, how long, "
                                         "how it ended (newest last, times in UTC)"),
                      v);
  s.history->add_option("-n,--lines", v.count, "show the newest N events (default 20)")
      ->type_name("N");
  s.history->add_flag("-f,--follow", v.follow,
                      "then show each new event as it happens, until interrupted");
  s.history->footer(
      "Events: acquired, released, kept (--min-hold), done (--done-for), expired\n"
      "(a lease that ran out without a release, noticed by the next command that\n"
      "touches KEY), lost (its holder said why), broken, superseded, gave-up. Each\n"
      "lock keeps its newest --history events (100 by default) for 7 days after the\n"
      "last one. --json: an array (with --follow, one object per line). In quorum\n"
      "mode every master's log, merged: an event says on how many masters it was.\n"
      "Exit 0, also for a KEY without history.");

  s.doctor = app.add_subcommand("doctor",
                                "check whether the Redis rlock is pointed at is safe for locks: "
                                "eviction, persistence, role, ACL, clock, round trip");
  s.doctor->footer(
      "One line per check: ok, warn, fail or skip (a check that could not run), then\n"
      "\"fix:\" and what to do. Exit 0 when nothing warns or fails, 1 when something\n"
      "does, 69 when the server cannot be reached, 77 when rlock cannot authenticate.\n"
      "Reads only, except the ACL check: it runs the commands a lock needs on scratch\n"
      "keys of its own under the prefix (deleted, and expiring in 10 s), never on a\n"
      "lock. Quorum mode and a Cluster: every master is checked. --json: an array of\n"
      "{server, check, status, message, fix}.");

  for (auto* sub : app.get_subcommands({})) sub->fallthrough();
  return s;
}

HelpLayout help_layout() {
  HelpLayout h;
  h.usage[""] = "rlock [OPTIONS] SUBCOMMAND ...";
  h.usage["run"] =
      "rlock run KEY [OPTIONS] -- CMD [ARGS...]\nrlock run KEY [OPTIONS] -c 'SHELL STRING'";
  h.usage["acquire"] = "rlock acquire KEY [OPTIONS]";
  h.usage["extend"] = "rlock extend KEY [--token TOKEN] [OPTIONS]";
  h.usage["release"] = "rlock release KEY [--token TOKEN] [OPTIONS]";
  h.usage["status"] = "rlock status KEY [OPTIONS]";
  h.usage["list"] = "rlock list [PATTERN] [--names | --prometheus] [OPTIONS]";
  h.usage["break"] = "rlock break KEY [--yes] [OPTIONS]";
  h.usage["forget"] = "rlock forget KEY [--yes] [OPTIONS]";
  h.usage["history"] = "rlock history KEY [-n N] [--follow] [--json] [OPTIONS]";
  h.usage["doctor"] = "rlock doctor [--json] [OPTIONS]";
  // --json only where there is something to print as JSON.
  for (const char* sub : {"run", "release", "break", "forget"}) h.hidden_output[sub] = {"--json"};
  return h;
}

// --- the words: run's command split off, option order checked --------------------------------

bool is_option_word(const std::string& w) {
  return w.size() > 1 && w[0] == '-' && w != "--";
}

// True when `arg` names an option of `sub` or its parent that takes a value
// as the next word ("--ttl 5s", "-E 3"); false for flags and "--ttl=5s".
bool takes_separate_value(CLI::App* sub, const std::string& arg) {
  if (!is_option_word(arg) || arg.find('=') != std::string::npos) return false;
  for (CLI::App* a = sub; a; a = a->get_parent()) {
    if (const CLI::Option* o = a->get_option_no_throw(arg)) return o->get_expected_max() != 0;
  }
  return false;
}

// Like takes_separate_value, for an option of rlock itself or of any
// subcommand: a subcommand's option written before the subcommand still has
// its value after it ("--wait 30m run …").
// A name that is a flag of one subcommand and takes a value in another (-n:
// run's --no-wait, history's count) takes none here: "-n acquire K" is the
// flag before the subcommand, not -n with the value "acquire".
bool takes_value_anywhere(CLI::App& app, const std::string& arg) {
  if (takes_separate_value(&app, arg)) return true;
  bool value = false;
  for (CLI::App* sub : app.get_subcommands({})) {
    if (takes_separate_value(sub, arg))
      value = true;
    else if (is_option_word(arg) && sub->get_option_no_throw(arg.substr(0, arg.find('='))))
      return false;
  }
  return value;
}

// The index of the subcommand's name among `words` (the first word that is
// neither an option nor an option's value), or words.size().
size_t subcommand_at(const std::vector<std::string>& words, CLI::App& app) {
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] == "--") break;
    if (!is_option_word(words[i])) return i;
    if (takes_value_anywhere(app, words[i])) ++i;
  }
  return words.size();
}

// `rlock run KEY CMD ARGS…` without "--": CMD starts at the first word after
// KEY that is not an option or an option's value. Returns that index, or the
// index of an explicit "--", or args.size() when there is none.
size_t command_start(const std::vector<std::string>& args, CLI::App& app, CLI::App* run) {
  size_t sub = subcommand_at(args, app);
  for (size_t i = 0; i < sub; ++i)
    if (args[i] == "--") return i;
  if (sub == args.size() || args[sub] != "run") return args.size();
  int positionals = 0;
  for (size_t i = sub + 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return i;
    if (is_option_word(a)) {
      if (takes_separate_value(run, a)) ++i;
      continue;
    }
    if (++positionals == 2) return i;
  }
  return args.size();
}

struct Words {
  std::vector<std::string> rlock;    // for CLI11
  std::vector<std::string> command;  // run's CMD ARGS…
  bool split = false;                // "--" given, or CMD found without it
};

// Everything after the first "--" belongs to run's command, untouched (even
// words that look like rlock flags); without "--", CMD starts at the first
// word after KEY that is not an option, and a "--" inside CMD's own
// arguments then stays CMD's.
Words split_words(int argc, char** argv, CLI::App& app, CLI::App* run) {
  Words w;
  w.rlock.assign(argv + 1, argv + argc);
  size_t at = command_start(w.rlock, app, run);
  if (at < w.rlock.size()) {
    size_t from = w.rlock[at] == "--" ? at + 1 : at;
    w.command.assign(w.rlock.begin() + static_cast<long>(from), w.rlock.end());
    w.rlock.resize(at);
    w.split = true;
  }
  return w;
}

// The subcommands that have option `name`, for people: "run, acquire and extend".
std::string owners_of(CLI::App& app, const std::string& name, std::vector<std::string>* names) {
  std::vector<std::string> owners;
  for (CLI::App* s : app.get_subcommands({}))
    if (s->get_option_no_throw(name)) owners.push_back(s->get_name());
  std::string list;
  for (size_t k = 0; k < owners.size(); ++k)
    list += (k == 0 ? "" : k + 1 == owners.size() ? " and " : ", ") + owners[k];
  if (names) *names = std::move(owners);
  return list;
}

// A subcommand's option written before the subcommand is refused (SPEC,
// "Options"): it is never taken for anything else, run's command included.
void check_option_order(const std::vector<std::string>& words, CLI::App& app) {
  size_t sub = subcommand_at(words, app);
  std::string sub_name = sub < words.size() ? words[sub] : "";
  for (size_t i = 0; i < sub; ++i) {
    const std::string& w = words[i];
    if (!is_option_word(w)) continue;
    std::string name = w.substr(0, w.find('='));
    if (app.get_option_no_throw(name)) {
      if (takes_separate_value(&app, w)) ++i;
      continue;
    }
    std::vector<std::string> owners;
    std::string list = owners_of(app, name, &owners);
    if (owners.empty()) continue;  // unknown everywhere: check_known_options says so
    if (std::find(owners.begin(), owners.end(), sub_name) != owners.end())
      throw_usage(fmt::format("put {} after '{}': it is an option of '{}', not of rlock itself",
                              name, sub_name, sub_name));
    throw_usage(fmt::format("{} is an option of {}: it goes after the subcommand", name, list));
  }
}

// True when `sub` or rlock itself has the option `name` ("--wait", "-n").
bool knows(CLI::App* sub, const std::string& name) {
  for (CLI::App* a = sub; a; a = a->get_parent())
    if (a->get_option_no_throw(name)) return true;
  return false;
}

// Whether option word `w` means only options that `sub` (or rlock) knows:
// "--wait", "--wait=5s", "-n", "-E3", "-qv" (short flags together).
bool known_option_word(CLI::App* sub, const std::string& w) {
  if (w.rfind("--", 0) == 0) return knows(sub, w.substr(0, w.find('=')));
  for (size_t k = 1; k < w.size(); ++k) {
    std::string letter = std::string("-") + w[k];
    if (!knows(sub, letter)) return false;
    if (takes_separate_value(sub, letter)) return true;  // the rest is its value
  }
  return true;
}

// The long names ("--wait") `sub` and rlock itself accept, `sub`'s first.
std::vector<std::string> long_names(CLI::App* sub) {
  std::vector<std::string> names;
  for (CLI::App* a = sub; a; a = a->get_parent())
    for (const CLI::Option* o : a->get_options())
      for (const std::string& n : o->get_lnames()) names.push_back(n);
  return names;
}

// One line for an option word that neither `sub` nor rlock knows: the closest
// known name when one is close, or where the option belongs, or the help.
std::string unknown_option_message(CLI::App& app, CLI::App* sub, const std::string& w) {
  std::string shown = escape_text(truncate_text(w, 64));
  std::string where = sub == &app ? "" : " for " + sub->get_name();
  std::string help = sub == &app ? "rlock --help" : "rlock " + sub->get_name() + " --help";
  std::string name = w.substr(0, w.find('='));
  // "-wait" for "--wait"; otherwise the name without its dashes.
  std::string typed = name.substr(name.find_first_not_of('-'));
  std::string owners = name.rfind("--", 0) == 0 ? owners_of(app, name, nullptr) : "";
  if (!owners.empty())
    return fmt::format("{} is not an option of {}: it is one of {} (see {})", shown,
                       sub->get_name(), owners, help);
  if (typed.size() > 1) {
    if (auto s = closest_name(typed, long_names(sub)))
      return fmt::format("unknown option '{}'{}: did you mean --{}?", shown, where, *s);
  }
  if (sub->get_name() == "run")
    return fmt::format(
        "unknown option '{}' for run: a command that starts with '-' goes after '--' "
        "(rlock run KEY -- CMD), or see {}",
        shown, help);
  return fmt::format("unknown option '{}'{} (see {})", shown, where, help);
}

// Every option word before run's command (or among any other subcommand's
// words) must be one that rlock knows: a typo is refused (64), never run as
// the command or taken for an argument.
void check_known_options(const std::vector<std::string>& words, CLI::App& app) {
  size_t at = subcommand_at(words, app);
  CLI::App* sub = nullptr;
  for (CLI::App* s : app.get_subcommands({}))
    if (at < words.size() && s->get_name() == words[at]) sub = s;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "--") break;
    if (i == at && !sub) break;  // an unknown subcommand: parse() says so
    CLI::App* ctx = i < at ? &app : sub;
    if (i == at || !is_option_word(w)) continue;
    if (!known_option_word(ctx, w)) throw_usage(unknown_option_message(app, ctx, w));
    if (takes_separate_value(ctx, w)) ++i;
  }
}

// --- parsing ----------------------------------------------------------------------------------

// What was missing, and how to give it: a newcomer's first mistakes.
std::optional<std::string> missing_message(CLI::App* sub) {
  const std::string& name = sub->get_name();
  if (const CLI::Option* key = sub->get_option_no_throw("key"); key && key->count() == 0) {
    if (name == "status")
      return std::string(
          "status needs a KEY: rlock status KEY (to see every held lock, use rlock list)");
    return fmt::format("{} needs a KEY: see rlock {} --help", name, name);
  }
  if (const CLI::Option* token = sub->get_option_no_throw("--token"); token && token->count() == 0)
    return fmt::format(
        "{} needs the token that acquire printed: give --token TOKEN or set $RLOCK_TOKEN", name);
  return std::nullopt;
}

// One line, in lower case like every other, for what CLI11 refused.
std::string parse_error_message(CLI::App& app, const std::vector<std::string>& given,
                                const CLI::ParseError& e) {
  std::vector<CLI::App*> subs = app.get_subcommands();
  if (subs.empty()) {
    size_t at = subcommand_at(given, app);
    if (at < given.size())
      return fmt::format("unknown command '{}' (see rlock --help)", escape_text(given[at]));
    return "a subcommand is required: run, acquire, extend, release, status, list, history, "
           "break or forget (see rlock --help)";
  }
  if (dynamic_cast<const CLI::RequiredError*>(&e))
    if (auto m = missing_message(subs.front())) return *m;
  std::string what = e.what();
  if (what.size() > 1 && std::isupper(static_cast<unsigned char>(what[0])) &&
      std::islower(static_cast<unsigned char>(what[1])))
    what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
  return fmt::format("{} (see rlock --help)", what);
}

// CLI11 on the words; nullopt when they parsed, else the exit status: 0 for
// --help and --version, 64 with one line for anything CLI11 refused.
std::optional<int> parse(CLI::App& app, std::vector<std::string> words) {
  const std::vector<std::string> given = words;
  std::reverse(words.begin(), words.end());  // CLI11 takes them reversed
  // Help and the version go out as every output does (print_out): a failed
  // write is 70, a reader that closed the pipe ends rlock quietly.
  auto print = [&app](const CLI::Error& e) {
    std::ostringstream out, err;
    app.exit(e, out, err);
    try {
      print_out(out.str());
    } catch (const Error& failed) {
      if (failed.cause() != Cause::ReaderGone) log_error(failed.what());
      return failed.exit_status();
    }
    return exitcode::kOk;
  };
  try {
    app.parse(words);
  } catch (const CLI::CallForHelp& e) {
    return print(e);
  } catch (const CLI::CallForAllHelp& e) {
    return print(e);
  } catch (const CLI::CallForVersion& e) {
    return print(e);
  } catch (const CLI::ParseError& e) {
    log_error(parse_error_message(app, given, e));
    return exitcode::kUsage;
  }
  return std::nullopt;
}

// A whole number in [lo, hi] written in decimal digits only ("", "+3", "3x" and
// " 3" are errors), or a usage Error naming the flag.
int whole_number(const std::string& s, int lo, int hi, const char* flag, const char* want) {
  int n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || s[0] == '-' || ec != std::errc() || p != s.data() + s.size() || n < lo || n > hi)
    throw_usage(fmt::format("invalid {} '{}': use {}", flag, escape_text(s), want));
  return n;
}

// The text values become options; usage errors name the flag.
void finish(Values& v) {
  GlobalOptions& g = v.g;
  LockOptions& o = v.o;
  if (v.connect_timeout)
    g.connect_timeout = parse_duration(*v.connect_timeout, "--connect-timeout");
  if (v.timeout) g.timeout = parse_duration(*v.timeout, "--timeout");
  if (v.ttl) {
    o.ttl = parse_duration(*v.ttl, "--ttl");
    o.ttl_given = true;
  }
  if (v.wait) o.wait = parse_duration(*v.wait, "--wait");
  if (v.min_hold) o.min_hold = parse_duration(*v.min_hold, "--min-hold");
  if (v.kill_after) o.kill_after = parse_duration(*v.kill_after, "--kill-after");
  if (v.done_for) {
    o.done_for = parse_duration(*v.done_for, "--done-for");
    if (o.done_for < Millis(1000))
      throw_usage("--done-for must be at least 1s: it is how long a success counts");
  }
  if (v.while_pid)
    o.while_pid = whole_number(*v.while_pid, 1, 2147483647, "--while-pid", "a process id");
  std::string on_lost = v.on_lost.value_or("term");
  if (on_lost == "term")
    o.on_lost = OnLost::Term;
  else if (on_lost == "kill")
    o.on_lost = OnLost::Kill;
  else if (on_lost == "warn")
    o.on_lost = OnLost::Warn;
  else
    throw_usage(
        fmt::format("invalid --on-lost '{}': use term, kill or warn", escape_text(on_lost)));
  if (v.limit)
    o.limit = whole_number(*v.limit, 1, 1'000'000, "--limit", "a whole number from 1 to 1000000");
  if (v.conflict_exit)
    o.conflict_exit = whole_number(*v.conflict_exit, 0, 255, "--conflict-exit-code",
                                   "an exit status from 0 to 255");
  if (v.sync_replicas)
    o.sync_replicas =
        whole_number(*v.sync_replicas, 1, 1000, "--sync-replicas", "a whole number from 1 to 1000");
  if (v.priority) {
    const std::string& p = *v.priority;
    bool negative = !p.empty() && p[0] == '-';
    int n = whole_number(negative ? p.substr(1) : p, 0, 1000, "--priority",
                         "a whole number from -1000 to 1000");
    o.priority = negative ? -n : n;
  }
  if (v.max_waiters)
    o.max_waiters = whole_number(*v.max_waiters, 1, 1'000'000, "--max-waiters",
                                 "a whole number from 1 to 1000000");
  if (!v.history)
    if (const char* h = std::getenv("RLOCK_HISTORY"); h && *h)
      g.history =
          whole_number(h, 0, kMaxHistory, "RLOCK_HISTORY", "a whole number from 0 to 10000");
  if (v.history)
    g.history =
        whole_number(*v.history, 0, kMaxHistory, "--history", "a whole number from 0 to 10000");
  if (v.layout)
    g.layout = parse_layout(*v.layout, "--layout");
  else if (const char* l = std::getenv("RLOCK_LAYOUT"); l && *l)
    g.layout = parse_layout(l, "RLOCK_LAYOUT");
  g.urls = v.urls;
  o.key = v.key;
  o.and_keys = v.and_keys;
}

// --- dispatch ---------------------------------------------------------------------------------

int dispatch(Values& v, const Subcommands& s, CLI::App& app, const Words& w) {
  finish(v);
  const GlobalOptions& g = v.g;
  for (CLI::App* sub : {s.run, s.release, s.brk, s.forget})
    if (sub->parsed() && g.json)
      throw_usage(
          fmt::format("--json does not apply to {}: it is for acquire, extend, status, "
                      "list, history and doctor",
                      sub->get_name()));
  if (s.run->parsed() || s.acquire->parsed() || s.extend->parsed() || s.release->parsed())
    check_layout_options(g, &v.o);
  else
    check_layout_options(g, nullptr);
  if (s.history->parsed() && g.layout != Layout::Rlock)
    throw_usage(
        fmt::format("history does not work with --layout {}: the layout keeps no "
                    "history (its keys would fall in other Cluster slots)",
                    layout_name(g.layout)));
  if (s.forget->parsed() && g.layout != Layout::Rlock)
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
    if (s.extend->parsed() && !v.ttl)
      throw_usage(
          fmt::format("extend does not work with --layout {} without --ttl: the layout "
                      "does not keep the TTL a lease was acquired with",
                      name));
  }
  if (s.run->parsed() || s.acquire->parsed()) v.o.label = resolve_label(v.label);
  if (s.run->parsed()) {
    v.rc.argv = w.split ? w.command : app.remaining();
    if (w.split && !app.remaining().empty())
      throw_usage(fmt::format("unexpected '{}' before '--'", escape_text(app.remaining().front())));
    if (v.rc.shell.empty() == v.rc.argv.empty())
      throw_usage(v.rc.shell.empty() ? "run needs a command: rlock run KEY -- CMD [ARGS...]"
                                     : "give either -c 'shell string' or -- CMD, not both");
    return cmd_run(g, v.o, v.rc);
  }
  if (w.split || !app.remaining().empty())
    throw_usage(fmt::format("unexpected argument '{}'",
                            w.split ? "--" : escape_text(app.remaining().front())));
  if (s.acquire->parsed()) {
    if (v.on_lost && !v.while_pid)
      throw_usage("--on-lost applies to run, and to acquire with --while-pid");
    if (v.o.export_env && g.json) throw_usage("give either --export or --json, not both");
    return cmd_acquire(g, v.o);
  }
  if (s.extend->parsed()) {
    std::optional<Millis> ttl;
    if (v.ttl) ttl = v.o.ttl;
    return cmd_extend(g, v.o.keys(), v.token, ttl, v.o.sync_replicas);
  }
  if (s.release->parsed()) return cmd_release(g, v.o.keys(), v.token);
  if (s.status->parsed()) return cmd_status(g, v.key);
  if (s.list->parsed()) {
    if (int(v.names) + int(g.json) + int(v.prometheus) > 1)
      throw_usage("--names, --json and --prometheus: give one of them");
    return v.names ? cmd_list_names(g, v.pattern) : cmd_list(g, v.pattern, v.prometheus);
  }
  if (s.brk->parsed()) return cmd_break(g, v.key, v.yes);
  if (s.forget->parsed()) return cmd_forget(g, v.key, v.yes);
  if (s.doctor->parsed()) return cmd_doctor(g);
  if (s.history->parsed()) {
    long n =
        v.count ? whole_number(*v.count, 1, 10000, "-n", "a whole number from 1 to 10000") : 20;
    return cmd_history(g, v.key, n, v.follow);
  }
  return exitcode::kUsage;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"rlock: a distributed lock on Redis for shell users", "rlock"};
  app.formatter(make_help_formatter(help_layout()));
  app.footer(kExitTable);
  app.set_help_flag("-h,--help", "print this help and exit");
  app.set_version_flag("--version", std::string("rlock ") + RLOCK_VERSION,
                       "print the version and exit");
  app.require_subcommand(1);
  app.allow_extras();
  Values v;
  add_connection_options(app, v);
  add_output_options(app, v);
  Subcommands subs = define_subcommands(app, v);

  Words w = split_words(argc, argv, app, subs.run);
  try {
    check_option_order(w.rlock, app);
    check_known_options(w.rlock, app);
  } catch (const Error& e) {
    log_error(e.what());
    return e.exit_status();
  }
  if (auto status = parse(app, w.rlock)) return *status;

  set_output_mode({v.g.quiet, v.g.verbose});
  try {
    return dispatch(v, subs, app, w);
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

}  // namespace rlock
