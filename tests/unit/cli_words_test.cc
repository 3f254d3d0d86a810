// An invocation builds only the subcommand its words name, found with rlock's
// own options alone (src/app/cli.cc); these check that it finds the word that
// every subcommand's options would have found.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <random>
#include <string>
#include <vector>

#include "app/cli_parts.h"

namespace rlock::app {
namespace {

// rlock's own options, as run_cli defines them; `only` as define_subcommands
// takes it ("" for every subcommand, "-" for none).
void build(CLI::App& app, Values& v, const std::string& only) {
  app.set_help_flag("-h,--help", "help");
  app.set_version_flag("--version", "rlock");
  app.require_subcommand(1);
  app.allow_extras();
  add_connection_options(app, v);
  add_output_options(app, v);
  add_wait_anywhere(app, v);
  if (only != "-") define_subcommands(app, v, only);
}

const std::vector<std::string> kSubcommandNames = {"run",     "acquire", "extend", "release",
                                                   "status",  "list",    "break",  "forget",
                                                   "history", "doctor",  "top"};

// Every way of writing each of rlock's own options (and each subcommand's,
// which must not be taken for rlock's) before each subcommand: alone, with a
// value word, with "=", and with the subcommand's name where a value goes.
std::vector<std::vector<std::string>> word_lists(CLI::App& whole) {
  std::vector<std::string> names = {"-qv", "-vw", "-w5", "-qw", "-E3", "-wait", "--bogus"};
  for (CLI::App* a :
       std::vector<CLI::App*>{&whole, whole.get_subcommand("run"), whole.get_subcommand("history"),
                              whole.get_subcommand("break")})
    for (const CLI::Option* o : a->get_options()) {
      for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
      for (const std::string& s : o->get_snames()) names.push_back("-" + s);
    }
  std::vector<std::vector<std::string>> lists;
  for (const std::string& sub : kSubcommandNames)
    for (const std::string& n : names) {
      lists.push_back({n, sub, "k"});
      lists.push_back({n, "5s", sub, "k"});
      lists.push_back({n + "=x", sub, "k"});
      lists.push_back({"-q", n, "value", sub, "k", "--", "true"});
      lists.push_back({n, "x", "-u", "redis://h", sub, "k", "list"});
    }
  return lists;
}

TEST(NamedSubcommand, IsTheWordEverySubcommandsOptionsFind) {
  CLI::App whole, own;
  Values vw, vo;
  build(whole, vw, "");
  build(own, vo, "-");
  int named = 0;
  for (const std::vector<std::string>& words : word_lists(whole)) {
    std::string name = named_subcommand(words, own);
    if (name.empty()) continue;  // built whole: nothing to agree on
    ++named;
    size_t at = subcommand_at(words, whole);
    ASSERT_LT(at, words.size()) << testing::PrintToString(words);
    EXPECT_EQ(words[at], name) << testing::PrintToString(words);
  }
  EXPECT_GT(named, 100);  // the fast path is taken for rlock's own options
}

TEST(NamedSubcommand, LeavesToTheWholeBuildWhatOnlyItTells) {
  CLI::App own;
  Values v;
  build(own, v, "-");
  using W = std::vector<std::string>;
  EXPECT_EQ(named_subcommand(W{"run", "k", "--", "true"}, own), "run");
  EXPECT_EQ(named_subcommand(W{"-u", "redis://h", "--json", "status", "k"}, own), "status");
  EXPECT_EQ(named_subcommand(W{"-w", "5", "acquire", "k"}, own), "acquire");
  EXPECT_EQ(named_subcommand(W{"--version"}, own), "");                // no subcommand
  EXPECT_EQ(named_subcommand(W{"--wait", "5", "run", "k"}, own), "");  // run's, misplaced
  EXPECT_EQ(named_subcommand(W{"-n", "acquire", "k"}, own), "");
  EXPECT_EQ(named_subcommand(W{"statsu", "k"}, own), "");  // a typo: the suggestion
  EXPECT_EQ(named_subcommand(W{"--", "run", "k"}, own), "");
  EXPECT_EQ(named_subcommand(W{"status", "list"}, own), "");  // two names
  EXPECT_EQ(named_subcommand(W{"run", "k", "make", "top"}, own), "");
}

TEST(DefineSubcommands, BuildsOnlyTheOneNamed) {
  CLI::App app;
  Values v;
  Subcommands s = define_subcommands(app, v, "status");
  ASSERT_NE(s.status, nullptr);
  EXPECT_EQ(s.run, nullptr);
  EXPECT_EQ(app.get_subcommands({}).size(), 1u);
  EXPECT_NE(s.status->get_option_no_throw("--follow"), nullptr);

  CLI::App all;
  Values va;
  define_subcommands(all, va, "");
  std::vector<std::string> names;
  for (const CLI::App* sub : all.get_subcommands({})) names.push_back(sub->get_name());
  EXPECT_EQ(names, kSubcommandNames);  // --help's order
  for (const std::string& n : names) EXPECT_TRUE(is_subcommand(n));
  EXPECT_FALSE(is_subcommand("help"));
}

// --- plain_run: `rlock run KEY -- CMD` told without CLI11 -------------------------------------

// argv for `words` (rlock's name first, as main gets it).
struct Argv {
  explicit Argv(const std::vector<std::string>& words) : strings{"rlock"} {
    strings.insert(strings.end(), words.begin(), words.end());
    for (std::string& w : strings) pointers.push_back(w.data());
    pointers.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(strings.size()); }
  char** argv() { return pointers.data(); }
  std::vector<std::string> strings;
  std::vector<char*> pointers;
};

// CLI11, built as run_cli builds it (`only`: "" for every subcommand, "run"
// for run alone), finds in `words` what plain_run found: run, parsed with
// nothing printed and no error, the same key and command, and nothing else:
// no other option given (no callback wrote into Values; none reads the
// environment), no word left over, -c not given.
void expect_cli11_agrees(const std::vector<std::string>& words, const PlainRun& plain,
                         const std::string& only) {
  SCOPED_TRACE(testing::PrintToString(words) + " built with " + (only.empty() ? "all" : only));
  CLI::App app;
  Values v;
  build(app, v, only);
  Argv a(words);
  Words w = split_words(a.argc(), a.argv(), app, app.get_subcommand("run"));
  EXPECT_TRUE(w.split);
  EXPECT_EQ(w.command, plain.command);
  EXPECT_NO_THROW(check_option_order(w.rlock, app));
  EXPECT_NO_THROW(check_known_options(w.rlock, app));
  std::vector<std::string> reversed(w.rlock.rbegin(), w.rlock.rend());
  ASSERT_NO_THROW(app.parse(reversed));
  std::vector<CLI::App*> subs = app.get_subcommands();
  ASSERT_EQ(subs.size(), 1u);
  EXPECT_EQ(subs.front()->get_name(), "run");
  EXPECT_TRUE(app.remaining().empty());
  for (CLI::App* level : {&app, subs.front()})
    for (const CLI::Option* o : level->get_options()) {
      EXPECT_TRUE(o->get_envname().empty()) << o->get_name();
      EXPECT_EQ(o->count(), o->get_name() == "key" ? 1u : 0u) << o->get_name();
    }
  EXPECT_EQ(v.key, plain.key);
  EXPECT_EQ(v.rc.shell, "");
}

std::optional<PlainRun> plain(const std::vector<std::string>& words) {
  Argv a(words);
  return plain_run(a.argc(), a.argv());
}

TEST(PlainRun, TakesOnlyRunKeyDashDashCommand) {
  using W = std::vector<std::string>;
  for (const W& words :
       {W{"run", "k", "--", "true"}, W{"run", "a b", "--", "sh", "-c", "x", "--", "-q"},
        W{"run", "deploy:{prod}", "--", "--help"}, W{"run", "k", "--", "run", "k", "--", "true"},
        W{"run", "\xff=", "--", ""}}) {
    std::optional<PlainRun> p = plain(words);
    ASSERT_TRUE(p) << testing::PrintToString(words);
    EXPECT_EQ(p->key, words[1]);
    EXPECT_EQ(p->command, W(words.begin() + 3, words.end()));
    expect_cli11_agrees(words, *p, "");
    expect_cli11_agrees(words, *p, "run");
  }
  for (const W& words : {W{},
                         W{"run"},
                         W{"run", "k"},
                         W{"run", "k", "--"},
                         W{"run", "k", "true"},
                         W{"run", "k", "true", "--", "x"},
                         W{"run", "-k", "--", "true"},
                         W{"run", "-", "--", "true"},
                         W{"run", "--", "--", "true"},
                         W{"run", "", "--", "true"},
                         W{"run", "status", "--", "true"},
                         W{"run", "run", "--", "true"},
                         W{"-q", "run", "k", "--", "true"},
                         W{"run", "k", "-q", "--", "true"},
                         W{"run", "--ttl=5s", "k", "--", "true"},
                         W{"run", "k", "-c", "true", "--"},
                         W{"run", "--help", "--", "true"},
                         W{"status", "k", "--", "true"},
                         W{"RUN", "k", "--", "true"},
                         W{"run", "++", "--", "true"}})
    EXPECT_FALSE(plain(words)) << testing::PrintToString(words);
}

// Generated invocations: every one plain_run takes, CLI11 parses the same.
TEST(PlainRun, AgreesWithCli11OnGeneratedInvocations) {
  const std::vector<std::string> pool = {"run",
                                         "k",
                                         "key",
                                         "a b",
                                         "{x}",
                                         "",
                                         "-",
                                         "--",
                                         "++",
                                         "---",
                                         "-k",
                                         "--ttl",
                                         "--ttl=5s",
                                         "5s",
                                         "-n",
                                         "-nq",
                                         "-q",
                                         "-v",
                                         "--json",
                                         "-c",
                                         "true",
                                         "echo",
                                         "status",
                                         "list",
                                         "--help",
                                         "-h",
                                         "--version",
                                         "--and",
                                         "b",
                                         "-u",
                                         "redis://h",
                                         "--url=redis://h",
                                         "-w",
                                         "0.5",
                                         "-x",
                                         "=",
                                         "--wait",
                                         "-E",
                                         "3",
                                         "@f",
                                         "--priority",
                                         "-5",
                                         "-c=x",
                                         "--and=b",
                                         "-o",
                                         "k=v",
                                         "--kill-leftovers"};
  std::mt19937 random(41);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random); };
  int taken = 0, declined = 0;
  for (int i = 0; i < 8000; ++i) {
    std::vector<std::string> words;
    if (pick(4) != 0) words.push_back("run");
    if (pick(2) != 0) words.push_back(pool[pick(pool.size())]);  // a key, or not
    if (pick(4) != 0) words.push_back("--");
    for (size_t n = pick(4); n > 0; --n) words.push_back(pool[pick(pool.size())]);
    if (pick(8) == 0) words.insert(words.begin() + pick(words.size() + 1), pool[pick(pool.size())]);
    std::optional<PlainRun> p = plain(words);
    if (!p) {
      ++declined;
      continue;
    }
    ++taken;
    expect_cli11_agrees(words, *p, "");
    expect_cli11_agrees(words, *p, "run");
  }
  EXPECT_GT(taken, 400);
  EXPECT_GT(declined, 500);
}

}  // namespace
}  // namespace rlock::app
