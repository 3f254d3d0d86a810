// The help text of rlock and of each subcommand: CLI11's option metadata laid
// out in 80 columns, with value names (DURATION, N, URL), the usage lines of
// run (-- CMD), and the connection and output options a subcommand accepts
// listed in its own help.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rlock {

/// How the help of each subcommand begins: "rlock run KEY [OPTIONS] -- CMD…"
/// and so on, by subcommand name. `hidden_output` lists output options that a
/// subcommand does not accept (run has no --json).
struct HelpLayout {
  std::map<std::string, std::string> usage;
  std::map<std::string, std::vector<std::string>> hidden_output;
};

/// A CLI11 formatter that writes rlock's help in at most 80 columns.
std::shared_ptr<CLI::FormatterBase> make_help_formatter(HelpLayout layout);

}  // namespace rlock
