#include "lock/lock.h"

#include <string>

#include "core/text.h"
#include "lock/holder_token.h"
#include "proc/procinfo.h"

namespace rlock {

HolderInfo local_holder_info(std::string cmd, long pid) {
  HolderInfo i;
  i.host = host_name();
  i.user = login_name_from_env();
  // Shown to people, and sent back to every waiter: a long command line must
  // not make the lock's replies large.
  i.cmd = truncate_text(cmd, kMaxHolderField);
  i.pid = pid;
  return i;
}

std::string new_token() {
  return random_hex(16);
}

std::string Lock::fresh_token(long /*holder_pid*/) const {
  return new_token();
}

}  // namespace rlock
