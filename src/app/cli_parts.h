// The command line, in parts (src/app): flags.cc defines every flag once,
// words.cc splits run's command off and checks the order and names of option
// words, parse.cc runs CLI11 and turns the text values into options, and
// cli.cc dispatches to the commands. Internal to src/app.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/help.h"
#include "cli/options.h"
#include "commands/run.h"

namespace rlock::app {

// Everything the command line gives. Durations and numbers are kept as text
// and parsed afterwards (finish()), so that their errors name the flag; an
// empty value ("--ttl ''") is then an error, not "not given".
struct Values {
  GlobalOptions g;
  LockOptions o;
  std::vector<std::string> urls;
  std::optional<std::string> connect_timeout, command_timeout, ttl, wait, min_hold, kill_after,
      on_lost, limit, conflict_exit, superseded_exit, sync_replicas, while_pid, done_for, label,
      priority, max_waiters, history, layout, break_token, reason;
  std::optional<std::string> wait_timeout;  // -w, --timeout: flock's name for --wait
  bool exclusive = false;                   // -x, -e, --exclusive: flock's, the default
  std::string key, token, pattern = "*";
  std::optional<std::string> count;
  bool follow = false;
  bool timeline = false;                           // history --timeline
  std::optional<std::string> since;                // history --since
  std::string svg;                                 // history --svg
  bool batch = false;                              // top -b
  std::optional<std::string> interval, top_count;  // top --interval, --count
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
  CLI::App* top;
};

struct Words {
  std::vector<std::string> rlock;    // for CLI11
  std::vector<std::string> command;  // run's CMD ARGS…
  bool split = false;                // "--" given, or CMD found without it
};

// What the command line named, for the dispatch: the subcommand, the words
// CLI11 left over (run's CMD ARGS… given without "--"), and whether run's -c
// was given (even empty).
struct Parsed {
  std::string sub;
  std::vector<std::string> remaining;
  bool shell_given = false;
};

// `rlock [-u URL] [-w D] run [OPTIONS] KEY [OPTIONS] -- CMD [ARGS...]`, with
// the commonest options only: the key, the command, and those options' text
// values as CLI11 would have put them in Values.
struct PlainRun {
  std::string key;
  std::vector<std::string> command;
  std::vector<std::string> urls;                  // -u, --url (once)
  std::optional<std::string> ttl, wait, timeout;  // --ttl, --wait, -w/--timeout
  bool no_wait = false;                           // -n, --no-wait, --nonblock
};

// flags.cc
void add_connection_options(CLI::App& app, Values& v);
void add_output_options(CLI::App& app, Values& v);
void add_wait_anywhere(CLI::App& app, Values& v);
/// Subcommand `only` with its arguments, options and help, or every one when
/// `only` is empty (the others stay null).
Subcommands define_subcommands(CLI::App& app, Values& v, const std::string& only);
/// True when `word` names a subcommand.
bool is_subcommand(const std::string& word);
HelpLayout help_layout();

// words.cc
Words split_words(int argc, char** argv, CLI::App& app, CLI::App* run);
void check_option_order(const std::vector<std::string>& words, CLI::App& app);
void check_known_options(const std::vector<std::string>& words, CLI::App& app);
/// The index of the subcommand's name among `words`, or words.size().
size_t subcommand_at(const std::vector<std::string>& words, CLI::App& app);
/// The subcommand `words` name when every word before it is one of rlock's
/// own options (`app` has those, no subcommand yet) and no later word names a
/// subcommand too; empty when that cannot be told without every subcommand's
/// options.
std::string named_subcommand(const std::vector<std::string>& words, CLI::App& app);
/// argv when it is `rlock run KEY -- CMD [ARGS...]` (KEY neither empty, nor
/// starting with '-', nor a subcommand's name) with at most these options, each
/// once: -u/--url URL and -w/--timeout D before `run`; --ttl D, --wait D,
/// -w/--timeout D and -n/--no-wait/--nonblock after it, before or after KEY;
/// a value as the next word or after '=' (long names), neither empty, nor
/// starting with '-', nor a subcommand's name, and a duration that parses.
/// What CLI11 would find in it, told without building CLI11's objects; else
/// nullopt, and CLI11 parses it as ever (help, errors, every other form).
std::optional<PlainRun> plain_run(int argc, char** argv);

// parse.cc
std::optional<int> parse(CLI::App& app, std::vector<std::string> words);
void finish(Values& v);
/// A whole number in [lo, hi] in decimal digits only, or a usage Error naming `flag`.
int whole_number(const std::string& s, int lo, int hi, const char* flag, const char* want);

}  // namespace rlock::app
