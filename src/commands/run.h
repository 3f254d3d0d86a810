// `rlock run KEY -- CMD…`: acquire (waiting if need be), run the child with
// the lease renewed by a watchdog, forward signals, release when it ends.
#pragma once

#include <string>
#include <vector>

#include "cli/options.h"

namespace rlock {

struct RunCommand {
  std::vector<std::string> argv;  // CMD ARGS…, or
  std::string shell;              // -c 'shell string' (run by /bin/sh -c)
};

/// Returns the child's exit status (or 128+N, 126/127, 76 when the lease was
/// lost with --on-lost term|kill, 75/-E when not acquired). Throws Errors for
/// usage and Redis failures before the child starts.
int cmd_run(const GlobalOptions& g, const LockOptions& o, const RunCommand& cmd);

}  // namespace rlock
