// `rlock acquire KEY`: take a lease for --ttl and print its token.
#include <fmt/format.h>
#include <unistd.h>

#include "commands/commands.h"
#include "output.h"
#include "progress.h"
#include "signals.h"
#include "waiter.h"

namespace rlock {

int cmd_acquire(const GlobalOptions& g, const LockOptions& o) {
  validate(o);
  Session s(g);
  auto lock = s.lock(o.key, g.prefix, o.limit);
  WaitSpec spec{o.ttl, o.wait, o.no_wait, local_holder_info("rlock acquire", getppid()),
                o.sync_replicas};
  std::string token = new_token();
  Acquirer acquirer(*lock, token, spec);
  WaitReporter reporter(s.loop, o.key, o.limit);
  acquirer.on_progress([&](const WaitProgress& p) { reporter.report(p); });
  // A signal while waiting leaves the line at once (as `run` does) instead
  // of leaving a dead place behind until its lease runs out.
  std::optional<int> cancelled;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
    if (!ignored_at_start(sig))
      s.loop.on_signal(sig, [&](int n) { acquirer.cancel([&, n] { cancelled = 128 + n; }); });
  std::optional<Outcome<Acquired>> out;
  acquirer.start([&](Outcome<Acquired> r) { out = std::move(r); });
  s.loop.run_until([&] { return out.has_value() || cancelled.has_value(); });
  if (cancelled) return *cancelled;
  if (out->error) {
    if (out->error->kind() == ErrorKind::NotAcquired)
      throw Error(ErrorKind::NotAcquired, out->error->what(), o.conflict_exit);
    throw *out->error;
  }
  const Acquired& a = out->value;
  try {
    if (g.json)
      print_out(fmt::format("{{\"key\":{},\"token\":{},\"fence\":{},\"ttl_ms\":{}}}\n",
                            json_string(o.key), json_string(token), a.fence, a.ttl.count()));
    else
      print_out(token + "\n");
  } catch (const Error&) {
    // Nobody could ever release a lease whose token was not printed.
    wait_for<ReleaseReply>(
        s.loop, [&](Done<ReleaseReply> d) { lock->release(token, Millis(0), std::move(d)); });
    throw;
  }
  return exitcode::kOk;
}

}  // namespace rlock
