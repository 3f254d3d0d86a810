// `rlock acquire KEY`: take a lease for --ttl and print its token.
#include <fmt/format.h>
#include <unistd.h>

#include "commands/commands.h"
#include "output.h"
#include "waiter.h"

namespace rlock {

int cmd_acquire(const GlobalOptions& g, const LockOptions& o) {
  validate(o);
  Session s(g);
  Lock lock = s.lock(o.key, g.prefix, o.limit);
  WaitSpec spec{o.ttl, o.wait, o.no_wait, local_holder_info("rlock acquire", getppid())};
  std::string token = new_token();
  Acquirer acquirer(lock, token, spec);
  Acquired a;
  try {
    a = wait_for<Acquired>(s.loop, [&](Done<Acquired> d) { acquirer.start(std::move(d)); });
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::NotAcquired)
      throw Error(ErrorKind::NotAcquired, e.what(), o.conflict_exit);
    throw;
  }
  if (g.json)
    fmt::print("{{\"key\":{},\"token\":{},\"fence\":{},\"ttl_ms\":{}}}\n", json_string(o.key),
               json_string(token), a.fence, a.ttl.count());
  else
    fmt::print("{}\n", token);
  return exitcode::kOk;
}

}  // namespace rlock
