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
#include "core/duration.h"
#include "core/error.h"
#include "core/text.h"
#include "lock/layout.h"

namespace rlock::app {

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

// The commonest invocations, `rlock run KEY -- CMD [ARGS...]` with at most a
// URL, a TTL, a wait or -n, need none of CLI11's objects (building them was
// most of a run's start-up: docs/PERFORMANCE.md, "Start-up"). The unit tests
// PlainRun check, on many invocations, that whatever this takes CLI11 parses to
// the same key, command and values with nothing else given. Anything doubtful
// (a repeated option, an empty or odd value, a duration that does not parse)
// is left to CLI11, whose errors and help stay the only ones.
std::optional<PlainRun> plain_run(int argc, char** argv) {
  PlainRun p;
  int i = 1;
  // "--name=value" or "--name value" (or "-x value" for a short name): the
  // value into `into`, which must not be set yet; false to decline.
  auto value = [&](std::string_view word, std::string_view shortname, std::string_view longname,
                   bool duration, std::optional<std::string>& into) -> std::optional<bool> {
    std::string_view text;
    if (word == shortname || word == longname) {
      if (i + 1 >= argc) return false;
      text = argv[++i];
    } else if (word.size() > longname.size() && word.starts_with(longname) &&
               word[longname.size()] == '=') {
      text = word.substr(longname.size() + 1);
    } else {
      return std::nullopt;  // not this option
    }
    if (into || text.empty() || text[0] == '-' || text == "++" || is_subcommand(std::string(text)))
      return false;
    if (duration) {
      try {
        parse_duration(text, longname);
      } catch (const Error&) {
        return false;
      }
    }
    into = std::string(text);
    return true;
  };
  // rlock's own options before `run`.
  std::optional<std::string> url;
  for (; i < argc && std::string_view(argv[i]) != "run"; ++i) {
    std::string_view word = argv[i];
    std::optional<bool> took = value(word, "-u", "--url", false, url);
    if (!took) took = value(word, "-w", "--timeout", true, p.timeout);
    if (!took || !*took) return std::nullopt;
  }
  if (url) p.urls.push_back(std::move(*url));
  if (i >= argc) return std::nullopt;
  // run's: KEY once, its options around it, then "--".
  std::optional<std::string> key;
  for (++i; i < argc && std::string_view(argv[i]) != "--"; ++i) {
    std::string_view word = argv[i];
    if (word == "-n" || word == "--no-wait" || word == "--nonblock") {
      if (p.no_wait) return std::nullopt;
      p.no_wait = true;
      continue;
    }
    if (!word.empty() && word[0] == '-') {
      std::optional<bool> took = value(word, "", "--ttl", true, p.ttl);
      if (!took) took = value(word, "", "--wait", true, p.wait);
      if (!took) took = value(word, "-w", "--timeout", true, p.timeout);
      if (!took || !*took) return std::nullopt;
      continue;
    }
    // ("++" ends a subcommand for CLI11: its own path refuses it as a KEY.)
    if (key || word.empty() || word == "++" || is_subcommand(std::string(word)))
      return std::nullopt;
    key = std::string(word);
  }
  if (!key || i + 1 >= argc) return std::nullopt;  // no KEY, no "--", or no CMD
  p.key = std::move(*key);
  p.command.assign(argv + i + 1, argv + argc);
  return p;
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

// A subcommand's option written before the subcommand is refused (the man
// page's OPTIONS): it is never taken for anything else, run's command included.
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
// "--wait", "--wait=5s", "-n", "-E3", "-qv" (short flags together). A long
// name behind one dash ("-wait") is a typo of it, not -w with the value "ait".
bool known_option_word(CLI::App* sub, const std::string& w) {
  if (w.rfind("--", 0) == 0) return knows(sub, w.substr(0, w.find('=')));
  if (w.size() > 2 && knows(sub, "-" + w.substr(0, w.find('=')))) return false;
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

std::string named_subcommand(const std::vector<std::string>& words, CLI::App& app) {
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "--") break;
    if (!is_option_word(w)) {
      if (!is_subcommand(w)) break;
      for (size_t k = i + 1; k < words.size() && words[k] != "--"; ++k)
        if (is_subcommand(words[k])) return "";
      return w;
    }
    // A subcommand's option, or one nobody knows, before the subcommand: an
    // error, or a value taken from the next word, that only all of them tell.
    if (!known_option_word(&app, w)) break;
    if (takes_separate_value(&app, w)) ++i;
  }
  return "";
}

}  // namespace rlock::app
