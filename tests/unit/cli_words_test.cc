// An invocation builds only the subcommand its words name, found with rlock's
// own options alone (src/app/cli.cc); these check that it finds the word that
// every subcommand's options would have found.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
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

}  // namespace
}  // namespace rlock::app
