#include "cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>

#include "commands/commands.h"
#include "error.h"
#include "output.h"
#include "run.h"

namespace rlock {

namespace {

constexpr const char* kExitTable = R"(Exit status:
  0        success; for run, the child exited 0
  1-125    run: the child's own exit status, passed through
  1        status: KEY is free; break: KEY was not held
  64       usage error: bad flag, duration, URL, key, token
  69       Redis unavailable: connect, TLS, or a command timed out or failed;
           no sentinel answered or knew the master; --sync-replicas not met
  70       internal or protocol error: a reply rlock did not expect
  75       lock not acquired: taken, --no-wait, or --wait ran out (-E changes it)
  76       lock lost or not held: lease lost during run, or a token that no longer holds
  77       permission: authentication or ACL refused
  126/127  the command could not be executed / was not found
  128+N    the child was killed by signal N

Durations: 250ms, 30s, 5m, 2h, 1h30m, 1.5s, 7d (a bare number is seconds), at most 366d.
Text from Redis is shown with control characters escaped as \xHH.
Environment: RLOCK_URL, REDIS_URL, RLOCK_PASSWORD, REDISCLI_AUTH, RLOCK_SENTINEL_PASSWORD.
The child of run sees RLOCK_KEY, RLOCK_TOKEN and RLOCK_FENCE.
See rlock(1) for details.)";

// Duration flags are read as text and parsed by parse_duration, so their
// errors name the flag.
struct RawDurations {
  // Optional, so an empty value ("--ttl ''") is an error, not "not given".
  std::optional<std::string> connect_timeout, timeout, ttl, wait, min_hold, kill_after, on_lost,
      limit, conflict_exit, sync_replicas;
  std::vector<std::string> urls;
};

void add_global_options(CLI::App& app, GlobalOptions& g, RawDurations& d) {
  app.add_option(
         "-u,--url", d.urls,
         "Redis URL: redis://[user[:pass]@]host[:port][/db], rediss://…, unix:///path[?db=N], "
         "redis-sentinel://[user[:pass]@]host[:port],…/MASTER[/db], rediss-sentinel://…; "
         "default $RLOCK_URL, $REDIS_URL, redis://127.0.0.1:6379/0")
      ->group("Connection");
  app.add_option("--user", g.user, "ACL user name (overrides the URL's)")->group("Connection");
  app.add_option("--password-file", g.password_file,
                 "read the password from FILE (else $RLOCK_PASSWORD, then $REDISCLI_AUTH)")
      ->group("Connection");
  app.add_option("--sentinel-user", g.sentinel_user,
                 "ACL user name for the sentinels of a redis-sentinel:// URL")
      ->group("Connection");
  app.add_option("--sentinel-password-file", g.sentinel_password_file,
                 "read the sentinels' password from FILE (else $RLOCK_SENTINEL_PASSWORD)")
      ->group("Connection");
  app.add_option("--tls-ca-cert", g.tls.ca_cert, "CA certificate file to verify the server")
      ->group("Connection");
  app.add_option("--tls-ca-dir", g.tls.ca_dir, "directory of CA certificates")->group("Connection");
  app.add_option("--tls-cert", g.tls.cert, "client certificate file")->group("Connection");
  app.add_option("--tls-key", g.tls.key, "client private key file")->group("Connection");
  app.add_option("--tls-server-name", g.tls.server_name,
                 "name for SNI and certificate verification")
      ->group("Connection");
  app.add_flag("--tls-insecure", g.tls.insecure, "do not verify the server's certificate")
      ->group("Connection");
  app.add_option("--connect-timeout", d.connect_timeout, "connect and handshake limit (default 5s)")
      ->group("Connection");
  app.add_option("--timeout", d.timeout, "limit for one Redis command (default 5s)")
      ->group("Connection");
  app.add_option("--prefix", g.prefix, "prefix of every Redis key (default lock:)")
      ->group("Connection");
  app.add_flag("-v,--verbose", g.verbose, "log each Redis round trip with timestamps to stderr")
      ->group("Output");
  app.add_flag("-q,--quiet", g.quiet, "no informational messages (errors are still printed)")
      ->group("Output");
  app.add_flag("--json", g.json, "machine-readable output (acquire, extend, status, list)")
      ->group("Output");
}

void add_sync_replicas(CLI::App* sub, RawDurations& d) {
  sub->add_option("--sync-replicas", d.sync_replicas,
                  "count a lease as granted or renewed only once N replicas confirm it (WAIT); "
                  "fewer is 69");
}

void add_lock_options(CLI::App* sub, LockOptions& o, RawDurations& d, bool run) {
  sub->add_option("--ttl", d.ttl, "lease length (default 30s); run renews every TTL/3");
  sub->add_option("--wait", d.wait, "wait at most this long when taken (default: forever)");
  sub->add_flag("-n,--no-wait", o.no_wait, "fail at once when taken");
  sub->add_option("-E,--conflict-exit-code", d.conflict_exit,
                  "exit status when the lock was not acquired (default 75)");
  sub->add_option("--limit", d.limit, "counting semaphore: at most N holders at once");
  add_sync_replicas(sub, d);
  if (!run) return;
  sub->add_option("--min-hold", d.min_hold,
                  "keep the lock at least this long after acquisition, even if CMD ends sooner");
  sub->add_option("--on-lost", d.on_lost,
                  "when the lease is lost: term (SIGTERM, SIGKILL after --kill-after; the "
                  "default), kill, or warn (let CMD finish)");
  sub->add_option("--kill-after", d.kill_after,
                  "after SIGTERM (--on-lost term, --kill-leftovers), SIGKILL this long later "
                  "(default 10s)");
  sub->add_flag("--kill-leftovers", o.kill_leftovers,
                "when CMD exits, end the processes it left in its process group (SIGTERM, then "
                "SIGKILL after --kill-after) instead of holding the lock until they exit");
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

void apply_durations(const RawDurations& d, GlobalOptions& g, LockOptions& o) {
  if (d.connect_timeout)
    g.connect_timeout = parse_duration(*d.connect_timeout, "--connect-timeout");
  if (d.timeout) g.timeout = parse_duration(*d.timeout, "--timeout");
  if (d.ttl) o.ttl = parse_duration(*d.ttl, "--ttl");
  if (d.wait) o.wait = parse_duration(*d.wait, "--wait");
  if (d.min_hold) o.min_hold = parse_duration(*d.min_hold, "--min-hold");
  if (d.kill_after) o.kill_after = parse_duration(*d.kill_after, "--kill-after");
  std::string on_lost = d.on_lost.value_or("term");
  if (on_lost == "term")
    o.on_lost = OnLost::Term;
  else if (on_lost == "kill")
    o.on_lost = OnLost::Kill;
  else if (on_lost == "warn")
    o.on_lost = OnLost::Warn;
  else
    throw_usage(
        fmt::format("invalid --on-lost '{}': use term, kill or warn", escape_text(on_lost)));
  if (d.limit)
    o.limit = whole_number(*d.limit, 1, 1'000'000, "--limit", "a whole number from 1 to 1000000");
  if (d.conflict_exit)
    o.conflict_exit = whole_number(*d.conflict_exit, 0, 255, "--conflict-exit-code",
                                   "an exit status from 0 to 255");
  if (d.sync_replicas)
    o.sync_replicas =
        whole_number(*d.sync_replicas, 1, 1000, "--sync-replicas", "a whole number from 1 to 1000");
  if (d.urls.size() > 1)
    throw_usage("several --url (Redlock quorum mode) are not supported yet: give one");
  if (!d.urls.empty()) g.url = d.urls.front();
}

// True when `arg` names an option of `sub` or its parent that takes a value
// as the next word ("--ttl 5s", "-E 3"); false for flags and "--ttl=5s".
bool takes_separate_value(CLI::App* sub, const std::string& arg) {
  if (arg.size() < 2 || arg[0] != '-' || arg.find('=') != std::string::npos) return false;
  for (CLI::App* a = sub; a; a = a->get_parent()) {
    if (const CLI::Option* o = a->get_option_no_throw(arg)) return o->get_expected_max() != 0;
  }
  return false;
}

// `rlock run KEY CMD ARGS…` without "--": CMD starts at the first word after
// KEY that is not an option or an option's value. Returns that index, or
// args.size() when there is none.
size_t implicit_command_start(const std::vector<std::string>& args, CLI::App& app, CLI::App* run) {
  size_t i = 0;
  CLI::App* scope = &app;
  int positionals = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return i;  // an explicit separator comes first
    if (a.size() > 1 && a[0] == '-') {
      if (takes_separate_value(scope, a)) ++i;
      continue;
    }
    if (scope == &app) {
      if (a != "run") return args.size();
      scope = run;
      continue;
    }
    if (++positionals == 2) return i;
  }
  return args.size();
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"rlock: a distributed lock on Redis for shell users", "rlock"};
  app.footer(std::string("Connection and output options may also follow the subcommand.\n\n") +
             kExitTable);
  app.set_version_flag("--version", std::string("rlock ") + RLOCK_VERSION);
  app.require_subcommand(1);
  GlobalOptions g;
  LockOptions o;
  RawDurations d;
  add_global_options(app, g, d);

  std::string key, token, pattern = "*";
  bool yes = false;
  RunCommand rc;

  auto* run =
      app.add_subcommand("run",
                         "hold KEY while CMD (and what it leaves in its process group) runs,\n"
                         "  renewing the lease; exit with CMD's status (76 if the lock was lost).\n"
                         "  rlock run KEY [OPTIONS] -- CMD [ARGS...]    or    rlock run KEY "
                         "[OPTIONS] -c 'shell string'");
  run->add_option("key", o.key, "lock name")->required();
  run->add_option("-c,--command", rc.shell, "run this shell string with /bin/sh -c");
  add_lock_options(run, o, d, true);

  auto* acq = app.add_subcommand("acquire",
                                 "take KEY for --ttl and print the token; no process stays behind");
  acq->add_option("key", o.key, "lock name")->required();
  add_lock_options(acq, o, d, false);

  auto* ext = app.add_subcommand("extend", "renew a lease that --token still holds");
  ext->add_option("key", key, "lock name")->required();
  ext->add_option("--token", token, "the token printed by acquire (default $RLOCK_TOKEN)")
      ->envname("RLOCK_TOKEN")
      ->required();
  ext->add_option("--ttl", d.ttl, "new lease length (default: the TTL it was acquired with)");
  add_sync_replicas(ext, d);

  auto* rel =
      app.add_subcommand("release", "release KEY if --token still holds it; wake the next waiter");
  rel->add_option("key", key, "lock name")->required();
  rel->add_option("--token", token, "the token printed by acquire (default $RLOCK_TOKEN)")
      ->envname("RLOCK_TOKEN")
      ->required();

  auto* st =
      app.add_subcommand("status", "show holders and waiters; exit 0 when held, 1 when free");
  st->add_option("key", key, "lock name")->required();

  auto* ls =
      app.add_subcommand("list", "list held locks whose KEY matches PATTERN (a glob; default *)");
  ls->add_option("pattern", pattern, "glob over KEY");
  st->footer("Reads only: works for a read-only ACL user and on a replica.");

  auto* brk = app.add_subcommand("break", "delete a stuck lock and wake its waiters (asks first)");
  brk->add_option("key", key, "lock name")->required();
  brk->add_flag("-y,--yes", yes, "do not ask for confirmation");

  for (auto* sub : app.get_subcommands({})) sub->fallthrough();

  // Everything after the first "--" belongs to run's command, untouched (even
  // words that look like rlock flags): split it off before CLI11 sees it.
  // Without "--", CMD starts at the first word after KEY that is not an
  // option; a "--" inside CMD's own arguments then stays CMD's.
  std::vector<std::string> args(argv + 1, argv + argc), command;
  bool dashdash = false;
  size_t at = implicit_command_start(args, app, run);
  if (at < args.size()) {
    size_t from = args[at] == "--" ? at + 1 : at;
    command.assign(args.begin() + static_cast<long>(from), args.end());
    args.resize(at);
    dashdash = true;
  }
  const std::vector<std::string> words = args;  // parse() consumes args
  std::reverse(args.begin(), args.end());       // CLI11 takes them reversed
  app.allow_extras();
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    app.exit(e);
    return exitcode::kOk;
  } catch (const CLI::CallForAllHelp& e) {
    app.exit(e);
    return exitcode::kOk;
  } catch (const CLI::CallForVersion& e) {
    app.exit(e);
    return exitcode::kOk;
  } catch (const CLI::ParseError& e) {
    bool no_sub = app.get_subcommands().empty();
    if (no_sub) {
      // The first word that is neither an option nor an option's value names
      // the unknown command.
      for (size_t i = 0; i < words.size(); ++i) {
        if (takes_separate_value(&app, words[i])) {
          ++i;
        } else if (!words[i].empty() && words[i][0] != '-') {
          log_error(fmt::format("unknown command '{}' (see rlock --help)", words[i]));
          return exitcode::kUsage;
        }
      }
    }
    log_error(fmt::format("{} (see rlock --help)", e.what()));
    return exitcode::kUsage;
  }

  set_output_mode({g.quiet, g.verbose});
  try {
    apply_durations(d, g, o);
    if (run->parsed()) {
      rc.argv = dashdash ? command : app.remaining();
      if (dashdash && !app.remaining().empty())
        throw_usage(fmt::format("unexpected '{}' before '--'", app.remaining().front()));
      if (rc.shell.empty() == rc.argv.empty())
        throw_usage(rc.shell.empty() ? "run needs a command: rlock run KEY -- CMD [ARGS...]"
                                     : "give either -c 'shell string' or -- CMD, not both");
      return cmd_run(g, o, rc);
    }
    if (dashdash || !app.remaining().empty())
      throw_usage(
          fmt::format("unexpected argument '{}'", dashdash ? "--" : app.remaining().front()));
    if (acq->parsed()) return cmd_acquire(g, o);
    if (ext->parsed()) {
      std::optional<Millis> ttl;
      if (d.ttl) ttl = o.ttl;
      return cmd_extend(g, key, token, ttl, o.sync_replicas);
    }
    if (rel->parsed()) return cmd_release(g, key, token);
    if (st->parsed()) return cmd_status(g, key);
    if (ls->parsed()) return cmd_list(g, pattern);
    if (brk->parsed()) return cmd_break(g, key, yes);
  } catch (const Error& e) {
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
  return exitcode::kUsage;
}

}  // namespace rlock
