// An invocation builds only the subcommand its words name, found with rlock's
// own options alone (src/app/cli.cc); these check that it finds the word that
// every subcommand's options would have found.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
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
// nothing printed and no error, the same key, command, URL, --ttl, --wait,
// --timeout and -n, and nothing else: no other option given (none reads the
// environment), each of those given once at most, no word left over, -c not
// given.
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
  const std::vector<std::string> plain_options = {"--url", "--ttl", "--wait", "--timeout",
                                                  "--no-wait"};
  for (CLI::App* level : {&app, subs.front()})
    for (const CLI::Option* o : level->get_options()) {
      EXPECT_TRUE(o->get_envname().empty()) << o->get_name();
      bool known = std::any_of(plain_options.begin(), plain_options.end(),
                               [o](const std::string& n) { return o->check_name(n); });
      if (o->get_name() == "key")
        EXPECT_EQ(o->count(), 1u);
      else if (known)
        EXPECT_LE(o->count(), 1u) << o->get_name();
      else
        EXPECT_EQ(o->count(), 0u) << o->get_name();
    }
  EXPECT_EQ(v.key, plain.key);
  EXPECT_EQ(v.urls, plain.urls);
  EXPECT_EQ(v.ttl, plain.ttl);
  EXPECT_EQ(v.wait, plain.wait);
  EXPECT_EQ(v.wait_timeout, plain.timeout);
  EXPECT_EQ(v.o.no_wait, plain.no_wait);
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
  for (const W& words :
       {W{}, W{"run"}, W{"run", "k"}, W{"run", "k", "--"}, W{"run", "k", "true"},
        W{"run", "k", "true", "--", "x"}, W{"run", "-k", "--", "true"}, W{"run", "-", "--", "true"},
        W{"run", "--", "--", "true"}, W{"run", "", "--", "true"}, W{"run", "status", "--", "true"},
        W{"run", "run", "--", "true"}, W{"-q", "run", "k", "--", "true"},
        W{"run", "k", "-q", "--", "true"}, W{"run", "k", "-c", "true", "--"},
        W{"run", "--help", "--", "true"}, W{"status", "k", "--", "true"},
        W{"RUN", "k", "--", "true"}, W{"run", "++", "--", "true"},
        // what CLI11 refuses or reads differently goes to it
        W{"run", "--ttl", "", "k", "--", "true"}, W{"run", "--ttl=", "k", "--", "true"},
        W{"run", "--ttl", "5x", "k", "--", "true"}, W{"run", "--ttl", "-5s", "k", "--", "true"},
        W{"run", "--ttl", "5s", "--ttl", "6s", "k", "--", "true"},
        W{"run", "k", "--wait=1s", "--wait", "1s", "--", "true"},
        W{"run", "-n", "k", "-n", "--", "true"}, W{"run", "-n", "--nonblock", "k", "--", "true"},
        W{"-w", "1", "run", "-w", "1", "k", "--", "true"}, W{"run", "k", "--ttl", "--", "true"},
        W{"run", "k", "--ttl", "status", "--", "true"}, W{"-u", "run", "k", "--", "true"},
        W{"-u", "", "run", "k", "--", "true"}, W{"-u", "a", "-u", "b", "run", "k", "--", "true"},
        W{"-u", "-q", "run", "k", "--", "true"}, W{"-ua", "run", "k", "--", "true"},
        W{"run", "-u", "a", "k", "--", "true"}, W{"run", "-nq", "k", "--", "true"},
        W{"-n", "run", "k", "--", "true"}, W{"--ttl", "5s", "run", "k", "--", "true"},
        W{"run", "k", "j", "--", "true"}, W{"run", "--ttl", "5s", "--", "true"}})
    EXPECT_FALSE(plain(words)) << testing::PrintToString(words);
}

// The commonest options, before or after KEY, spaced or with '=': taken, with
// the values CLI11 finds.
TEST(PlainRun, TakesTheCommonOptions) {
  using W = std::vector<std::string>;
  struct Case {
    W words;
    std::vector<std::string> urls;
    std::optional<std::string> ttl, wait, timeout;
    bool no_wait;
  };
  const std::vector<Case> cases = {
      {{"-u", "redis://h:1/0", "run", "k", "--", "true"}, {"redis://h:1/0"}, {}, {}, {}, false},
      {{"--url=redis://h", "run", "k", "--", "true"}, {"redis://h"}, {}, {}, {}, false},
      {{"--url", "unix:///s", "run", "k", "--", "true"}, {"unix:///s"}, {}, {}, {}, false},
      {{"run", "--ttl", "5s", "k", "--", "true"}, {}, "5s", {}, {}, false},
      {{"run", "k", "--ttl=1m", "--", "true"}, {}, "1m", {}, {}, false},
      {{"run", "--wait", "30s", "k", "--", "true"}, {}, {}, "30s", {}, false},
      {{"run", "k", "--wait=0", "--", "true"}, {}, {}, "0", {}, false},
      {{"-w", "0.5", "run", "k", "--", "true"}, {}, {}, {}, "0.5", false},
      {{"run", "k", "-w", "3", "--", "true"}, {}, {}, {}, "3", false},
      {{"run", "--timeout=2s", "k", "--", "true"}, {}, {}, {}, "2s", false},
      {{"run", "-n", "k", "--", "true"}, {}, {}, {}, {}, true},
      {{"run", "k", "--nonblock", "--", "true"}, {}, {}, {}, {}, true},
      {{"run", "k", "--no-wait", "--", "true"}, {}, {}, {}, {}, true},
      {{"-u", "redis://h", "-w", "1", "run", "--ttl", "9s", "k", "-n", "--", "sh", "-c", "x"},
       {"redis://h"},
       "9s",
       {},
       "1",
       true},
  };
  for (const Case& c : cases) {
    std::optional<PlainRun> p = plain(c.words);
    ASSERT_TRUE(p) << testing::PrintToString(c.words);
    EXPECT_EQ(p->key, "k");
    EXPECT_EQ(p->urls, c.urls);
    EXPECT_EQ(p->ttl, c.ttl);
    EXPECT_EQ(p->wait, c.wait);
    EXPECT_EQ(p->timeout, c.timeout);
    EXPECT_EQ(p->no_wait, c.no_wait);
    expect_cli11_agrees(c.words, *p, "");
    expect_cli11_agrees(c.words, *p, "run");
  }
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
                                         "--kill-leftovers",
                                         "--ttl=",
                                         "--ttl=1m",
                                         "5x",
                                         "--wait=30s",
                                         "--wait=",
                                         "--timeout",
                                         "--timeout=2",
                                         "--nonblock",
                                         "--no-wait",
                                         "--url",
                                         "-5s",
                                         "0",
                                         "unix:///s"};
  std::mt19937 random(41);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random); };
  // Options plain_run takes (with their values) and words it must not take
  // there, for the places options go: before `run`, either side of KEY.
  using W = std::vector<std::string>;
  const std::vector<W> options = {{"-u", "redis://h"},
                                  {"--url=redis://h"},
                                  {"--url", "unix:///s"},
                                  {"-w", "0.5"},
                                  {"--timeout=2s"},
                                  {"--timeout", "3"},
                                  {"--ttl", "5s"},
                                  {"--ttl=1m"},
                                  {"--wait", "0"},
                                  {"--wait=30s"},
                                  {"-n"},
                                  {"--nonblock"},
                                  {"--no-wait"},
                                  {""},
                                  {"-q"},
                                  {"run"},
                                  {"--"},
                                  {"5x"},
                                  {"k"},
                                  {"-5s"},
                                  {"--ttl="},
                                  {"--ttl"},
                                  {"-u"},
                                  {"--wait", "-1"},
                                  {"-w", "status"},
                                  {"--url", ""}};
  auto some = [&](std::vector<std::string>& words) {
    if (pick(3) != 0) return;
    for (size_t n = 1 + pick(2); n > 0; --n) {
      const W& o = options[pick(options.size())];
      words.insert(words.end(), o.begin(), o.end());
    }
  };
  int taken = 0, declined = 0, with_options = 0;
  for (int i = 0; i < 8000; ++i) {
    std::vector<std::string> words;
    some(words);
    if (pick(4) != 0) words.push_back("run");
    some(words);
    if (pick(2) != 0) words.push_back(pick(2) ? pool[pick(pool.size())] : "k");  // a key, or not
    some(words);
    if (pick(4) != 0) words.push_back("--");
    for (size_t n = pick(4); n > 0; --n) words.push_back(pool[pick(pool.size())]);
    if (pick(8) == 0) words.insert(words.begin() + pick(words.size() + 1), pool[pick(pool.size())]);
    std::optional<PlainRun> p = plain(words);
    if (!p) {
      ++declined;
      continue;
    }
    ++taken;
    if (!p->urls.empty() || p->ttl || p->wait || p->timeout || p->no_wait) ++with_options;
    expect_cli11_agrees(words, *p, "");
    expect_cli11_agrees(words, *p, "run");
  }
  EXPECT_GT(taken, 400);
  EXPECT_GT(with_options, 100);
  EXPECT_GT(declined, 500);
  std::printf("plain_run took %d (%d with options), declined %d\n", taken, with_options, declined);
}

}  // namespace
}  // namespace rlock::app
