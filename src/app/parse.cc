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
#include "core/log.h"
#include "core/text.h"
#include "lock/layout.h"
#include "lock/records.h"
#include "lock/scripts.h"
#include "proc/guard.h"

namespace rlock::app {

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
    if (at < given.size()) {
      // "statsu": the closest subcommand, as for an unknown option.
      std::vector<std::string> names;
      for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
      std::string shown = escape_text(given[at]);
      if (auto s = closest_name(given[at], names))
        return fmt::format("unknown command '{}': did you mean {}?", shown, *s);
      return fmt::format("unknown command '{}' (see rlock --help)", shown);
    }
    // `rlock -u` (a global option without its value, nothing after it): say
    // that, not that the subcommand is missing.
    if (!dynamic_cast<const CLI::ArgumentMismatch*>(&e))
      return "a subcommand is required: run, acquire, extend, release, status, list, history, "
             "top, break, forget or doctor (see rlock --help)";
  } else if (dynamic_cast<const CLI::RequiredError*>(&e)) {
    if (auto m = missing_message(subs.front())) return *m;
  }
  std::string what = e.what();
  // An option of CLI11's nameless group (-w, the flock spellings) is not
  // named by CLI11's message: name the word given last.
  if (what.rfind(": ", 0) == 0 && !given.empty()) what = escape_text(given.back()) + what;
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

// --limit: a count (a number), or a named pool (man page, --limit): names
// separated by commas, handed out in that order. A name is printable UTF-8
// without spaces or commas, at most kMaxPoolName bytes and not a number (a
// number is a count: "1.5" or "-1" is a mistaken one, not a name); at most
// kMaxPoolNames of them, none twice.
void parse_limit(const std::string& text, LockOptions& o) {
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
    o.limit = whole_number(text, 1, 1'000'000, "--limit", "a whole number from 1 to 1000000");
    return;
  }
  auto bad = [&](const std::string& why) {
    throw_usage(
        fmt::format("invalid --limit '{}': {}", escape_text(truncate_text(text, 200)), why));
  };
  // (the scripts keep at most 1024 bytes of a value: a longer definition
  // would never compare equal to the stored one)
  if (text.size() > 1000) bad("longer than 1000 bytes in all");
  std::vector<std::string> names;
  size_t from = 0;
  while (true) {
    size_t comma = text.find(',', from);
    std::string name = text.substr(from, comma == std::string::npos ? comma : comma - from);
    if (name.empty()) bad("a name is empty (names are separated by single commas)");
    if (name.size() > kMaxPoolName)
      bad(fmt::format("a name is longer than {} bytes", kMaxPoolName));
    if (name.find(' ') != std::string::npos || !is_printable_text(name))
      bad("a name has a space or a control character");
    if (name.find_first_not_of("0123456789.+-") == std::string::npos)
      bad("a name looks like a number (a number alone is a count, a whole one from 1)");
    if (std::find(names.begin(), names.end(), name) != names.end())
      bad(fmt::format("'{}' is named twice", escape_text(name)));
    names.push_back(name);
    if (names.size() > kMaxPoolNames) bad(fmt::format("more than {} names", kMaxPoolNames));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  o.limit = static_cast<int>(names.size());
  o.pool = text;
}

// The text values become options; usage errors name the flag.
void finish(Values& v) {
  GlobalOptions& g = v.g;
  LockOptions& o = v.o;
  if (v.connect_timeout)
    g.connect_timeout = parse_duration(*v.connect_timeout, "--connect-timeout");
  if (v.command_timeout)
    g.command_timeout = parse_duration(*v.command_timeout, "--command-timeout");
  if (v.ttl) {
    o.ttl = parse_duration(*v.ttl, "--ttl");
    o.ttl_given = true;
  }
  if (v.wait) o.wait = parse_duration(*v.wait, "--wait");
  if (v.wait_timeout) {
    // flock's name for the wait (the man page's OPTIONS): one of the two.
    if (v.wait)
      throw_usage(
          "--wait and --timeout (-w) are the same wait (--timeout is flock's name); give one");
    if (o.no_wait) throw_usage("--timeout (-w) and --no-wait contradict each other; give one");
    o.wait = parse_duration(*v.wait_timeout, "--timeout");
  }
  if (v.exclusive && o.shared)
    throw_usage(
        "--exclusive and --shared contradict each other; give one (exclusive is the default)");
  if (o.close && o.kill_leftovers)
    throw_usage(
        "--close (-o) and --kill-leftovers contradict each other: -o lets what CMD left run on "
        "outside the lock, --kill-leftovers ends it; give one");
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
  if (v.limit) parse_limit(*v.limit, o);
  if (v.exclusive && o.limit > 0)
    throw_usage("--exclusive and --limit contradict each other: a pool has several holders");
  if (v.conflict_exit)
    o.conflict_exit = whole_number(*v.conflict_exit, 0, 255, "--conflict-exit-code",
                                   "an exit status from 0 to 255");
  if (v.superseded_exit)
    o.superseded_exit = whole_number(*v.superseded_exit, 0, 255, "--superseded-exit-code",
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
  if (const char* gk = std::getenv("RLOCK_GUARD"); gk && *gk) {
    std::string_view kind = gk;
    if (kind == "fork")
      prefer_forked_guard();
    else if (kind != "program")
      throw_usage(fmt::format("invalid RLOCK_GUARD '{}': use program or fork",
                              escape_text(truncate_text(std::string(kind), 64))));
  }
  // Scripts by FCALL of rlock's Functions library (docs/PROTOCOL.md, "Functions"):
  // only when asked, since a function is called by name, not pinned by its digest.
  if (const char* f = std::getenv("RLOCK_FUNCTIONS"); f && *f) {
    std::string_view on = f;
    if (on != "on" && on != "off")
      throw_usage(fmt::format("invalid RLOCK_FUNCTIONS '{}': use on or off",
                              escape_text(truncate_text(std::string(on), 64))));
    if (on == "on" && functions_library().empty())
      log_info("this build has no Functions library (RLOCK_FUNCTIONS)");
    use_functions(on == "on");
  }
  g.urls = v.urls;
  o.key = v.key;
  o.and_keys = v.and_keys;
}

}  // namespace rlock::app
