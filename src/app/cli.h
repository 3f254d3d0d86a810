// The command line: every flag defined once (CLI11), the help text with the
// exit table, and the dispatch to one function per subcommand.
#pragma once

namespace rlock {

/// Parses argv, runs the subcommand and returns the exit status. Every error
/// is caught here and printed as one line; CLI11's own codes never escape.
int run_cli(int argc, char** argv);

}  // namespace rlock
