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
#include "core/error.h"
#include "core/text.h"
#include "lock/layout.h"

namespace rlock::app {

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
  duration(&app, "--command-timeout", v.command_timeout,
           "limit for one Redis command (default 5s; before 0.5.0: --timeout)")
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
  // flock's names for the wait and for not waiting (the man page's OPTIONS).
  duration(sub, "-w,--timeout", v.wait_timeout,
           "the same as --wait, as in flock: a bare number is seconds (-w 0.5)");
  sub->add_flag("-n,--no-wait,--nonblock", v.o.no_wait, "fail at once when taken");
  sub->add_option("-E,--conflict-exit-code", v.conflict_exit,
                  "exit status when the lock was not acquired (default 75)")
      ->type_name("N");
  sub->add_option("--limit", v.limit,
                  "counting semaphore: at most N holders at once (RLOCK_SLOT: 1..N); or a "
                  "named pool, NAME1,NAME2,...: each holder gets a free name (RLOCK_SLOT)")
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
                "later, exits as superseded (--superseded-exit-code), in every key of --and; a "
                "later one replaces this one");
  sub->add_option("--superseded-exit-code", v.superseded_exit,
                  "exit status when a newer --supersede job superseded this one (default 75; "
                  "-E does not apply to it)")
      ->type_name("N");
  sub->add_option("--max-waiters", v.max_waiters,
                  "not acquired at once (75) when N waiters are in line already")
      ->type_name("N");
  sub->add_flag("-s,--shared", v.o.shared,
                "a shared lock, as flock -s: any number of shared holders at once, or one "
                "exclusive holder (the default); the line stays first come, first served "
                "across both kinds");
  sub->add_flag("-x,-e,--exclusive", v.exclusive,
                "an exclusive lock, as flock -x: the default, accepted for flock's habit");
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
  run->add_flag("--cancel-in-progress", v.o.cancel_in_progress,
                "with --supersede: also stop the command of a holder that asked for "
                "--supersede (SIGTERM, SIGKILL after its --kill-after); it releases and exits "
                "as superseded (75), and this job takes the lock in its turn");
  run->add_flag("--kill-leftovers", v.o.kill_leftovers,
                "when CMD exits, end what it left in its process group (SIGTERM, then SIGKILL "
                "after --kill-after) instead of holding the lock until it exits (a stop signal "
                "to rlock, or CMD ending by one, always ends them)");
  run->add_flag("-o,--close", v.o.close,
                "as flock -o: release the lock when CMD exits, and let what it left in its "
                "process group run on outside the lock (a nested run under it still holds "
                "it)");
}

void add_token(CLI::App* sub, Values& v) {
  sub->add_option("--token", v.token, "the token printed by acquire (default $RLOCK_TOKEN)")
      ->type_name("TOKEN")
      ->envname("RLOCK_TOKEN")
      ->required();
}

namespace {

// Each subcommand's own arguments, options and help (define_subcommands).

void define_run(Subcommands& s, Values& v) {
  add_key(s.run, v);
  add_run_options(s.run, v);
  s.run->footer(
      "Before CMD, every word that starts with '-' is an rlock option: a CMD that\n"
      "starts with '-' goes after '--'. An option rlock does not know is a usage\n"
      "error (64) that names the closest one (--wiat: did you mean --wait?).\n"
      "Under a run that holds KEY (RLOCK_HELD, confirmed with Redis), run holds KEY\n"
      "under that holder for as long as CMD runs, in any process group: KEY is free\n"
      "only once both have ended; if the outer hold is lost or broken, --on-lost\n"
      "applies and run exits 76.\n"
      "Without CMD (no '--', no -c), run holds KEY by hand, as etcdctl lock NAME\n"
      "does: once it holds, it prints \"holding 'KEY' (fence N); Ctrl-C or kill PID\n"
      "releases it\" on standard output, renews the lease, and on SIGINT, SIGTERM,\n"
      "SIGHUP or SIGQUIT releases KEY and exits 0; a lost lease is 76 at once\n"
      "(--on-lost warn: a warning, and 0 when interrupted). --kill-after,\n"
      "--kill-leftovers and --done-for need a command (64).");
}

void define_acquire(Subcommands& s, Values& v) {
  add_key(s.acquire, v);
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
      "rlock release KEY --token T from anywhere. Under Sentinel that release exits\n"
      "76 when a failover lost the hold (the keeper passes its release's verdict on).");
}

void define_extend(Subcommands& s, Values& v) {
  add_key(s.extend, v);
  add_token(s.extend, v);
  add_and(s.extend, v, "renew KEY2 too (a token acquire --and printed; repeatable)");
  duration(s.extend, "--ttl", v.ttl,
           "new lease length (default: the TTL it was acquired with; required with --layout "
           "plain or redisson)");
  add_sync_replicas(s.extend, v, "count the renewal only once N replicas confirm it; fewer is 69");
}

void define_release(Subcommands& s, Values& v) {
  add_key(s.release, v);
  add_token(s.release, v);
  add_and(s.release, v, "release KEY2 too (a token acquire --and printed; repeatable)");
}

void define_status(Subcommands& s, Values& v) {
  add_key(s.status, v);
  s.status->add_flag("-f,--follow", v.follow,
                     "then print one line each time the holder of KEY changes (who holds "
                     "it, or free), until interrupted");
  s.status->footer(
      "On a terminal: a table under a header, durations like 29s, each line within\n"
      "the terminal (the command is cut with '…'); piped: the same lines as always.\n"
      "A lease that run --min-hold keeps after its command ended says so: \"kept by\n"
      "--min-hold until 10:54:01Z; its command exited 0\" (--json: kept, kept_until,\n"
      "exit_status).\n"
      "A holder's or waiter's --label is shown below it (in the table: in WHO, with\n"
      "user@host:pid below), a waiter's --priority before it, and a --limit\n"
      "holder's slot after its fence (in the table: below it). Every holder's mode,\n"
      "exclusive or shared, comes before its token (--json: mode).\n"
      "A free KEY shows its last events from its history, oldest first: \"last\"\n"
      "lines, as rlock history prints them (--json: last_events, always there).\n"
      "Reads only: works for a read-only ACL user and on a replica.\n"
      "KEY is one name, never a pattern: a free KEY with '*', '?' or '[' (or that\n"
      "starts with the prefix, which rlock adds itself) gets a hint on stderr that\n"
      "names the rlock list (or status) meant; the exit status is as always.\n"
      "--follow: the first line is the state now, then one line per change of\n"
      "holder, each with the server's UTC time: \"2024-05-01 10:53:01Z  deploy:\n"
      "held by ci-4 pid 4242, fence 12\" or \"... deploy: free (last fence 12)\"; heard\n"
      "at once on a release, within about a second otherwise (an acquisition, an\n"
      "expiry). --json: one object per line. A lost connection is retried; SIGINT,\n"
      "SIGTERM or SIGHUP ends it (exit 0).");
}

void define_list(Subcommands& s, Values& v) {
  s.list->add_option("pattern", v.pattern, "a glob over KEY (default *)");
  s.list->add_flag("--prometheus", v.prometheus,
                   "print the Prometheus text format for node_exporter's textfile collector "
                   "(held, holders, waiters, lease left, time held, fence per lock)");
  s.list->add_flag("--names", v.names,
                   "print only the names of held locks and of locks with a history, one per "
                   "line, at most 1000, with --command-timeout for the whole listing (for shell "
                   "completion)");
  s.list->footer(
      "On a terminal: a table under a header (KEY HOLDER LEFT FENCE WAITERS COMMAND;\n"
      "HOLDER is the holder's --label when it has one), durations like 29s, each\n"
      "line within the terminal: the command gives way first; a key or label too\n"
      "long is cut in its middle (deploy:prod:eu…service-p1), keeping its end.\n"
      "Piped: one line per lock, the bare values separated by tabs, for scripts\n"
      "(cut -f): KEY HOLDER TTL_MS FENCE WAITERS CMD LABEL (LABEL empty when none).\n"
      "--json: an array of status objects (the man page, JSON OUTPUT). PATTERN is\n"
      "over KEY: rlock adds the prefix itself (a PATTERN that starts with it and\n"
      "matches nothing gets a hint on stderr).");
}

void define_break(Subcommands& s, Values& v) {
  add_key(s.brk, v);
  s.brk->add_flag("-y,--yes", v.yes, "do not ask for confirmation");
  s.brk
      ->add_option("--token", v.break_token,
                   "evict only the holder with this token (one holder of a --limit pool or a "
                   "shared lock, or the holder of the lock) and wake the next waiter, as its "
                   "release would")
      ->type_name("TOKEN");
  s.brk
      ->add_option("--reason", v.reason,
                   "why, recorded in the history's broken event beside who broke it (at most "
                   "256 bytes of text without control characters)")
      ->type_name("WHY");
  s.brk->footer(
      "Exits 1 when KEY is not held (with --token: when TOKEN does not hold it).\n"
      "With --yes, on a KEY nobody holds, it removes the places of dead waiters\n"
      "that could still block its line and says how many (exit 0). The history\n"
      "records each holder removed as broken, by USER@HOST pid PID, with --reason.\n"
      "An evicted holder finds out at once (or at its next renewal): its run\n"
      "applies --on-lost and exits 76.");
}

void define_forget(Subcommands& s, Values& v) {
  add_key(s.forget, v);
  s.forget->add_flag("-y,--yes", v.yes, "do not ask for confirmation");
  s.forget->footer(
      "Refused (exit 1) while KEY is held or waited for (dead holders and waiters\n"
      "do not count). A resource that checks\n"
      "RLOCK_FENCE must forget KEY too: it would refuse the new, lower fences.");
}

void define_history(Subcommands& s, Values& v) {
  add_key(s.history, v);
  s.history->add_option("-n,--lines", v.count, "show the newest N events (default 20)")
      ->type_name("N");
  s.history->add_flag("-f,--follow", v.follow,
                      "then show each new event as it happens, until interrupted");
  s.history->add_flag("--timeline", v.timeline,
                      "draw the events as a timeline in the terminal's width: one row per "
                      "holder host, each hold a bar, waits shaded, failures, expiries and "
                      "breaks marked, under a time axis (reads every event kept unless -n)");
  duration(s.history, "--since", v.since,
           "with --timeline: show only the last DURATION (default: all the events)");
  s.history->add_option("--svg", v.svg, "with --timeline: also write the picture to FILE as SVG")
      ->type_name("FILE");
  s.history->footer(
      "Events: acquired, released, kept (--min-hold), done (--done-for), expired\n"
      "(a lease that ran out without a release, noticed by the next command that\n"
      "touches KEY), lost (its holder said why), broken, superseded, gave-up. Each\n"
      "lock keeps its newest --history events (100 by default; Redis trims whole\n"
      "stream nodes, so a few dozen more may stay) for 7 days after the last one.\n"
      "--json: an array (with --follow, one object per line). In quorum mode every\n"
      "master's log, merged: an event says on how many masters it was.\n"
      "Exit 0, also for a KEY without history.");
}

void define_doctor(Subcommands& s, Values&) {
  s.doctor->footer(
      "One line per check: ok, warn, fail or skip (a check that could not run), then\n"
      "\"fix:\" and what to do. Exit 0 when nothing warns or fails, 1 when something\n"
      "does, 69 when the server cannot be reached, 77 when rlock cannot authenticate.\n"
      "Reads only, except the ACL check: it runs the commands a lock needs on scratch\n"
      "keys of its own under the prefix (deleted, and expiring in 10 s), never on a\n"
      "lock. Quorum mode and a Cluster: every master is checked. --json: an array of\n"
      "{server, check, status, message, fix}; the footprint's also has footprint:\n"
      "{keys, locks, histories, fences, idle_fences, complete, sampled, bytes}.\n"
      "The footprint counts rlock's keys under the prefix (SCAN, at most 100000)\n"
      "and their memory (MEMORY USAGE of 32 sampled keys, extrapolated); it warns\n"
      "when over 10000 fence counters (kept without expiry) belong to keys with no\n"
      "lock, line or history left.");
}

void define_top(Subcommands& s, Values& v) {
  s.top->add_option("pattern", v.pattern, "a glob over KEY (default *)");
  s.top->add_flag("-b,--batch", v.batch,
                  "plain snapshots, one every --interval, as top -b (also when standard "
                  "output is not a terminal, or TERM is dumb)");
  duration(s.top, "--interval", v.interval, "time between refreshes (default 1s)");
  s.top->add_option("--count", v.top_count, "exit after N snapshots, full screen too (as top -n)")
      ->type_name("N");
  s.top->footer(
      "One row per lock that is held or waited for: KEY, SHAPE (exclusive, shared N,\n"
      "pool N/M, done, kept, free but waited), HOLDER (its --label, else host and\n"
      "pid; cut at the front, so its end shows), HELD, LEFT (lease), WAITING and\n"
      "OLDEST (the longest wait), FENCE; the longest oldest wait first, then the\n"
      "longest held. Below, the latest events of those locks (rlock history).\n"
      "A refresh reads at most 1000 locks (those with waiters first); the header\n"
      "says how many are shown and hidden. A batch snapshot shows 50 rows.\n"
      "Keys: q or Ctrl-C quit, s cycles the sort, / filters (a glob or a part of\n"
      "KEY; Enter applies, Esc clears), arrows move, Enter shows a lock's holders,\n"
      "waiters and timeline (Esc goes back). The screen shows at once\n"
      "(\"connecting to\" until the first refresh answers). A lost connection is\n"
      "shown and retried; a refresh waiting for a stalled server says so, and q\n"
      "still quits at once. NO_COLOR: no colours. Exit 0; 69 when the first\n"
      "refresh fails.");
}

// Every subcommand in the order --help lists them, with its one line there.
struct SubcommandEntry {
  const char* name;
  const char* description;
  CLI::App* Subcommands::*member;
  void (*define)(Subcommands&, Values&);
};

constexpr SubcommandEntry kSubcommands[] = {
    {"run",
     "hold KEY while CMD (and what it leaves in its process group) runs, renewing the lease; "
     "exit with CMD's status (76 if the lock was lost); without CMD, hold KEY until "
     "interrupted",
     &Subcommands::run, define_run},
    {"acquire",
     "take KEY for --ttl and print the token; no process stays behind (but with --while-pid)",
     &Subcommands::acquire, define_acquire},
    {"extend", "renew a lease that --token still holds", &Subcommands::extend, define_extend},
    {"release", "release KEY if --token still holds it; wake the next waiter",
     &Subcommands::release, define_release},
    {"status", "show holders and waiters; exit 0 when held, 1 when free", &Subcommands::status,
     define_status},
    {"list",
     "list held locks whose KEY matches PATTERN (a glob; default *): a table on a terminal, "
     "tab-separated lines when piped",
     &Subcommands::list, define_list},
    {"break", "delete a stuck lock and wake its waiters (asks first)", &Subcommands::brk,
     define_break},
    {"forget",
     "remove every trace of a free KEY nobody waits on, its fence counter included: its "
     "fences start again at 1 (asks first)",
     &Subcommands::forget, define_forget},
    {"history",
     "show what happened to KEY: who held it, how long, how it ended (newest last, times in "
     "UTC)",
     &Subcommands::history, define_history},
    {"doctor",
     "check whether the Redis rlock is pointed at is safe for locks: eviction, persistence, "
     "role, ACL, clock, round trip, rlock's footprint",
     &Subcommands::doctor, define_doctor},
    {"top",
     "a live view of the locks whose KEY matches PATTERN (a glob; default *): what needs "
     "attention first, and what just happened",
     &Subcommands::top, define_top},
};

}  // namespace

// -w, --timeout is the wait wherever it is written, as in flock: before the
// subcommand too (hidden here: run's and acquire's help show it), and refused
// for a command that never waits (dispatch).
void add_wait_anywhere(CLI::App& app, Values& v) {
  duration(&app, "-w,--timeout", v.wait_timeout, "the wait of run and acquire")->group("");
}

bool is_subcommand(const std::string& word) {
  for (const SubcommandEntry& e : kSubcommands)
    if (word == e.name) return true;
  return false;
}

Subcommands define_subcommands(CLI::App& app, Values& v, const std::string& only) {
  Subcommands s{};
  for (const SubcommandEntry& e : kSubcommands)
    if (only.empty() || only == e.name) {
      CLI::App* sub = app.add_subcommand(e.name, e.description);
      s.*e.member = sub;
      e.define(s, v);
      sub->fallthrough();
    }
  return s;
}

HelpLayout help_layout() {
  HelpLayout h;
  h.usage[""] = "rlock [OPTIONS] SUBCOMMAND ...";
  h.usage["run"] =
      "rlock run KEY [OPTIONS] -- CMD [ARGS...]\nrlock run KEY [OPTIONS] -c 'SHELL STRING'\n"
      "rlock run KEY [OPTIONS]    (no command: hold KEY until interrupted)";
  h.usage["acquire"] = "rlock acquire KEY [OPTIONS]";
  h.usage["extend"] = "rlock extend KEY [--token TOKEN] [OPTIONS]";
  h.usage["release"] = "rlock release KEY [--token TOKEN] [OPTIONS]";
  h.usage["status"] = "rlock status KEY [--follow] [OPTIONS]";
  h.usage["list"] = "rlock list [PATTERN] [--names | --prometheus] [OPTIONS]";
  h.usage["break"] = "rlock break KEY [--token TOKEN] [--reason WHY] [--yes] [OPTIONS]";
  h.usage["forget"] = "rlock forget KEY [--yes] [OPTIONS]";
  h.usage["history"] =
      "rlock history KEY [-n N] [--follow] [--json] [OPTIONS]\n"
      "rlock history KEY --timeline [--since DURATION] [--svg FILE] [OPTIONS]";
  h.usage["doctor"] = "rlock doctor [--json] [OPTIONS]";
  h.usage["top"] = "rlock top [PATTERN] [-b] [--interval DURATION] [--count N] [OPTIONS]";
  // --json only where there is something to print as JSON.
  for (const char* sub : {"run", "release", "break", "forget", "top"})
    h.hidden_output[sub] = {"--json"};
  return h;
}

}  // namespace rlock::app
