#include "lock/single.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "core/duration.h"
#include "core/log.h"
#include "core/text.h"
#include "lock/holder_token.h"
#include "lock/replies.h"
#include "lock/script_args.h"
#include "lock/scripts.h"

namespace rlock {

namespace {

// Runs a script and hands its reply to `parse`; parse errors become the outcome.
template <class T>
void run(Client& c, const Script& s, const LockNames& n, const Args& argv,
         std::function<T(const Reply&)> parse, Done<T> done, Millis timeout = Millis(0),
         const std::vector<ScriptCall>& undo = {}, const std::string& node = {}) {
  run_parsed<T>(c, s, keys_of(n), argv, std::move(parse), std::move(done), timeout, undo, node);
}

}  // namespace

void SingleLock::do_acquire(const std::string& token, Millis ttl, bool queue,
                            const HolderInfo& info, long attempt, Done<AcquireReply> done,
                            Millis timeout) {
  acquire_in(queue ? "wait" : "try", token, ttl, info, attempt, std::move(done), timeout);
}

void SingleLock::regrant(const std::string& token, Millis ttl, const HolderInfo& info,
                         Done<AcquireReply> done, Millis timeout) {
  acquire_in("regrant", token, ttl, info, 0, std::move(done), timeout);
}

void SingleLock::acquire_in(const char* mode, const std::string& token, Millis ttl,
                            const HolderInfo& info, long attempt, Done<AcquireReply> done,
                            Millis timeout) {
  AcquireArgs a{.token = token,
                .ttl = ttl,
                .limit = limit_,
                .mode = mode,
                .channel = names_.channel,
                .host = info.host,
                .pid = info.pid,
                .user = info.user,
                .cmd = info.cmd,
                .attempt = attempt,
                .shared = shared_,
                .label = info.label,
                .priority = line_.priority,
                .supersede = line_.supersede,
                .max_waiters = line_.max_waiters,
                .history = history_arg(),
                .cancel = line_.cancel,
                .pool = pool_};
  int limit = limit_;
  bool shared = shared_;
  std::string key = names_.key;
  run<AcquireReply>(client_, acquire_script(), names_, a.to_argv(),
                    [limit, shared, key, pool = pool_](const Reply& r) {
                      return parse_acquire(r, limit, shared, key, pool);
                    },
                    std::move(done), timeout,
                    // A timed-out attempt may still run on the server: its undo goes right
                    // behind it on the same connection, and touches nothing a later attempt
                    // of this token did.
                    {ScriptCall{&undo_script(), UndoArgs{.token = token,
                                                         .attempt = attempt,
                                                         .channel = names_.channel,
                                                         .history = history_arg()}
                                                    .to_argv()}});
}

Done<ExtendReply> confirmed_renewal(Client& client, Done<ExtendReply> done) {
  Client* c = &client;
  return [c, done = std::move(done)](Outcome<ExtendReply> o) mutable {
    if (o.error || !o.value.held) return done(std::move(o));
    std::string node = o.value.node;
    c->confirm_master(node, [node, o, done = std::move(done)](Outcome<bool> ok) mutable {
      if (ok.error) {
        o.error = Error(ErrorKind::Unavailable,
                        fmt::format("renewed on {}, but no sentinel confirmed it is still the "
                                    "master: {}",
                                    escape_text(node), ok.error->what()));
      } else if (!ok.value) {
        o.error = Error(ErrorKind::Unavailable,
                        fmt::format("renewed on {}, which the sentinels no longer name as the "
                                    "master (failover): the renewal does not count",
                                    escape_text(node)));
      }
      done(std::move(o));
    });
  };
}

void SingleLock::do_extend(const std::string& token, Millis ttl, Done<ExtendReply> done,
                           Millis timeout) {
  run<ExtendReply>(
      client_, extend_script(), names_,
      ExtendArgs{.token = token, .ttl = ttl, .history = history_arg(), .supersede = line_.supersede}
          .to_argv(),
      [](const Reply& r) {
        auto& e = r.as_array("an extend reply", 1);
        ExtendReply x;
        x.held = reply_int(e[0]) == 1;
        if (x.held && e.size() >= 3) {
          x.ttl = Millis(reply_int(e[1]));
          x.fence = reply_int(e[2]);
        }
        if (x.held && e.size() >= 4) x.superseded_by = e[3].as_string("who supersedes it");
        if (x.held && e.size() >= 5) x.cancelled_by = e[4].as_string("who asks it to stop");
        if (!x.held && e.size() >= 2) {
          x.released = reply_int(e[1]) == 1;
          x.broken = reply_int(e[1]) == 2;
        }
        return x;
      },
      confirmed_renewal(client_, std::move(done)), timeout);
}

namespace {

// One release try; on a broken connection, another on a new one after a
// short pause, until `until`.
void release_until(Client& c, const LockNames& n, Args argv, Clock::time_point until, int tries,
                   Done<ReleaseReply> done) {
  Millis left = std::chrono::duration_cast<Millis>(until - Clock::now());
  run<ReleaseReply>(
      c, release_script(), n, argv, parse_release,
      [&c, n, argv, until, tries, done = std::move(done)](Outcome<ReleaseReply> o) mutable {
        Millis pause = std::min(Millis(50) * (1 << std::min(tries, 4)), Millis(500));
        bool retry =
            o.error && o.error->kind() == ErrorKind::Unavailable && Clock::now() + pause < until;
        if (!retry) return done(std::move(o));
        c.loop().after(pause, [&c, n, argv, until, tries, done = std::move(done)]() mutable {
          release_until(c, n, std::move(argv), until, tries + 1, std::move(done));
        });
      },
      std::max(left, Millis(1)));
}

}  // namespace

void confirmed_release(Client& client, std::function<void(Done<ReleaseReply>)> send,
                       Clock::time_point until, Done<ReleaseReply> done) {
  struct Both {
    std::optional<Outcome<ReleaseReply>> released;
    std::optional<Outcome<std::string>> named;
    Done<ReleaseReply> done;
    Loop::TimerId deadline = 0;
    bool past = false;      // the deadline passed: nothing more is asked or sent
    std::string sent_from;  // sent again: the master the sentinels no longer name
    // The answer, once: from the steps below or from the deadline.
    void finish(Loop& loop, Outcome<ReleaseReply> o) {
      if (!done) return;
      loop.cancel(deadline);
      Done<ReleaseReply> d = std::move(done);
      done = nullptr;
      d(std::move(o));
    }
  };
  auto both = std::make_shared<Both>();
  both->done = std::move(done);
  Client* c = &client;
  const std::string unsurveyed =
      "no sentinel confirmed the master within the release's window (--command-timeout)";
  // One deadline for the whole release, surveys and the release on a new
  // master included (the retry window: --command-timeout, docs/PROTOCOL.md
  // "Releasing"): a sentinel or a master that hangs never makes it longer.
  // Past it, the first release's answer stands, unconfirmed; without one yet,
  // that release (bounded by the same deadline) answers soon after, and
  // nothing more is asked or sent then.
  both->deadline = client.loop().at(until, [c, both, unsurveyed] {
    both->deadline = 0;
    both->past = true;
    if (!both->done || !both->released) return;
    Outcome<ReleaseReply> o = *both->released;
    // Cut while the master the sentinels name was asked: they did answer.
    if (!o.error)
      o.value.unconfirmed =
          both->sent_from.empty()
              ? unsurveyed
              : fmt::format(
                    "released on {}, which the sentinels no longer name as the master, "
                    "and the master they name did not answer within the release's "
                    "window (--command-timeout)",
                    escape_text(both->sent_from));
    both->finish(c->loop(), std::move(o));
  });
  auto decide = [c, both, send, until, unsurveyed]() {
    if (!both->released || !both->done) return;
    Outcome<ReleaseReply> o = *both->released;
    if (!both->named) {
      // Past the deadline, the survey still out: the release's answer.
      if (!both->past) return;
      if (!o.error) o.value.unconfirmed = unsurveyed;
      return both->finish(c->loop(), std::move(o));
    }
    const Outcome<std::string>& named = *both->named;
    // Not Sentinel (nobody named), a release that failed (the caller says
    // so), or one the master they name took: that is the answer.
    if (o.error || (!named.error && (named.value.empty() || named.value == o.value.node)))
      return both->finish(c->loop(), std::move(o));
    // No sentinel answered (within the command timeout): asking again would
    // double the wait, for the same answer.
    if (named.error) {
      o.value.unconfirmed = named.error->what();
      return both->finish(c->loop(), std::move(o));
    }
    // A release answered past the deadline (between its timer and the
    // release's own timeout): nothing more is asked.
    if (both->past) {
      o.value.unconfirmed = unsurveyed;
      return both->finish(c->loop(), std::move(o));
    }
    // Asked again, now that the release is in: the first answer may have
    // come from a sentinel that had not heard of the failover.
    std::string node = o.value.node;
    c->confirm_master(node, [c, both, node, send, o, until](Outcome<bool> ok) mutable {
      if (!both->done) return;
      if (ok.error) {
        o.value.unconfirmed = ok.error->what();
        return both->finish(c->loop(), std::move(o));
      }
      if (ok.value) return both->finish(c->loop(), std::move(o));
      // The master changed: whether this hold survived is the new master's
      // to say (its grant may not have reached the replica it promoted). The
      // same release again, there: the client moved to it (confirm_master).
      // Not with a sliver of the window left: a command that times out
      // closes its connection, and other commands waiting on it with it.
      if (until - Clock::now() < kLeastToReleaseAgain) {
        o.value.unconfirmed = fmt::format(
            "released on {}, which the sentinels no longer name as the master, with too little "
            "of the release's window (--command-timeout) left to ask the master they name",
            escape_text(node));
        return both->finish(c->loop(), std::move(o));
      }
      log_verbose(
          fmt::format("released on {}, which the sentinels no longer name as the master: "
                      "releasing again on the master they name",
                      escape_text(node)));
      both->sent_from = node;
      send([c, both, node, o](Outcome<ReleaseReply> again) mutable {
        if (!both->done) return;
        if (again.error) {
          o.value.unconfirmed = fmt::format(
              "released on {}, which the sentinels no longer name as the master, and "
              "the master they name could not be asked: {}",
              escape_text(node), again.error->what());
          return both->finish(c->loop(), std::move(o));
        }
        again.value.moved_from = node;
        both->finish(c->loop(), std::move(again));
      });
    });
  };
  client.named_master([both, decide](Outcome<std::string> n) {
    both->named = std::move(n);
    decide();
  });
  send([both, decide](Outcome<ReleaseReply> o) {
    both->released = std::move(o);
    decide();
  });
}

void SingleLock::do_release(const std::string& token, Millis min_hold, Done<ReleaseReply> done,
                            Millis timeout, int exit_status, Millis done_for,
                            const std::string& lost) {
  Millis window = timeout.count() > 0 ? timeout : client_.command_timeout();
  // The tombstone outlives every retry of this release, the one sent again
  // to the master the sentinels name included (two surveys and another
  // window: docs/PROTOCOL.md, Releasing).
  Millis tomb = std::min(release_tombstone(window), Millis(86'400'000));
  ReleaseArgs r{.token = token,
                .min_hold = min_hold,
                .channel = names_.channel,
                .tombstone = tomb,
                // The id tells a retry of this release from another release of the token.
                .release_id = new_token(),
                .exit_status = exit_status,
                .done_for = done_for,
                .history = history_arg(),
                .lost = truncate_text(lost, 512)};
  Client* c = &client_;
  // One window for every release this one sends (confirmed_release).
  Clock::time_point until = later(Clock::now(), window);
  confirmed_release(
      client_,
      [c, n = names_, argv = r.to_argv(), until](Done<ReleaseReply> d) {
        release_until(*c, n, argv, until, 0, std::move(d));
      },
      until, std::move(done));
}

void SingleLock::give_back(const std::string& token, Done<ReleaseReply> done, Millis timeout) {
  // No release id: release.lua then writes no tombstone.
  ReleaseArgs r{.token = token, .channel = names_.channel, .history = history_arg()};
  release_until(client_, names_, r.to_argv(), later(Clock::now(), timeout), 0, std::move(done));
}

void SingleLock::confirm_master(const std::string& token, const AcquireReply& granted,
                                Done<bool> done, Millis cleanup) {
  std::string node = granted.node;
  // Captured by value: the callback may outlive this Lock (not the Client).
  Client* c = &client_;
  LockNames n = names_;
  client_.confirm_master(
      node, [c, n, token, node, cleanup, done = std::move(done)](Outcome<bool> o) mutable {
        if (o.error || o.value) return done(std::move(o));
        // Void: released where it was made (token-checked, one try within
        // `cleanup`), whatever the release says; the lease expires there anyway.
        // No tombstone (no release id): the token's next attempt may be made
        // there again, should the sentinels name that master once more, and a
        // tombstone would have it answered GONE (docs/PROTOCOL.md, acquire).
        // (No history cap: the script's own default.)
        ReleaseArgs r{.token = token, .channel = n.channel, .history = std::nullopt};
        run<ReleaseReply>(
            *c, release_script(), n, r.to_argv(), parse_release,
            [done = std::move(done)](Outcome<ReleaseReply>) {
              done(Outcome<bool>{std::nullopt, false});
            },
            std::max(cleanup, Millis(1)), {}, node);
      });
}

void SingleLock::do_leave(const std::string& token, Done<bool> done, Millis timeout) {
  run<bool>(
      client_, leave_script(), names_,
      LeaveArgs{.token = token, .channel = names_.channel, .history = history_arg()}.to_argv(),
      [](const Reply& r) { return r.as_int("a leave reply") == 1; }, std::move(done), timeout);
}

void SingleLock::status(Done<LockStatus> done) {
  run<LockStatus>(client_, status_script(), names_,
                  StatusArgs{.max_records = kStatusRecords, .events = status_events()}.to_argv(),
                  parse_status_reply, std::move(done));
}

// How long a broken holder's token keeps its tombstone ("broken", break.lua):
// longer than any renewal of the holder still in flight when the break reached
// this master, so that quorum mode does not grant the token here again.
constexpr Millis kBreakTombstone{30'000};

void SingleLock::break_lock(const BreakRequest& req, Done<long> done) {
  // Who breaks it, for the history: the operator's user, host and pid.
  HolderInfo me = local_holder_info("rlock break", static_cast<long>(getpid()));
  std::string by = fmt::format("{}@{} pid {}", me.user, me.host, me.pid);
  run<long>(
      client_, break_script(), names_,
      BreakArgs{.channel = names_.channel,
                .history = history_arg(),
                .by = by,
                .tombstone = kBreakTombstone,
                .only = req.token,
                .reason = req.reason}
          .to_argv(),
      [](const Reply& r) { return static_cast<long>(r.as_int("a break reply")); }, std::move(done));
}

void SingleLock::forget(Done<ForgetReply> done) {
  run<ForgetReply>(
      client_, forget_script(), names_, {},
      [](const Reply& r) {
        auto& e = r.as_array("a forget reply", 1);
        ForgetReply f;
        long long n = e[0].as_int("a forget status");
        if (n == 1) {
          f.state = ForgetReply::State::Removed;
        } else if (n < 0) {
          f.state = ForgetReply::State::InUse;
          f.holders = e.size() > 1 ? static_cast<long>(reply_int(e[1])) : 0;
          f.waiters = e.size() > 2 ? static_cast<long>(reply_int(e[2])) : 0;
        }
        return f;
      },
      std::move(done));
}

void SingleLock::commit_fence(const std::string& token, int64_t fence, bool claim,
                              Done<FenceReply> done, Millis timeout) {
  run<FenceReply>(
      client_, fence_script(), names_,
      FenceArgs{.token = token, .fence = fence, .claim = claim}.to_argv(),
      [](const Reply& r) {
        auto& e = r.as_array("a fence reply", 4);
        FenceReply f;
        f.counter = static_cast<int64_t>(e[0].as_int("a fence counter"));
        f.held = e[1].as_int("a fence reply's holder flag") == 1;
        f.found = static_cast<int64_t>(e[2].as_int("a fence counter"));
        f.owns = f.held && e[3].as_int("a fence reply's owner flag") == 1;
        return f;
      },
      std::move(done), timeout);
}

void SingleLock::confirm_replicas(int replicas, Millis budget, const std::string& what,
                                  Done<bool> done) {
  // The server gives up a little before the client does, so that the answer
  // (how many confirmed) arrives instead of a timeout.
  Millis server = std::max(Millis(1), budget - std::min(budget / 4, Millis(500)));
  std::string key = names_.key;
  client_.command(
      {"WAIT", std::to_string(replicas), std::to_string(server.count())},
      [replicas, server, what, key, done = std::move(done)](Result r) {
        Outcome<bool> o;
        try {
          long long n = expect_ok(r, "WAIT").as_int("a WAIT reply");
          if (n < replicas)
            throw Error(
                ErrorKind::Unavailable,
                fmt::format("only {} of {} replicas confirmed {} of '{}' within {} "
                            "(--sync-replicas)",
                            std::max(n, 0LL), replicas, what, key, format_duration(server)));
          o.value = true;
        } catch (const Error& e) {
          o.error = e;
        }
        done(std::move(o));
      },
      // On the connection that wrote the lease: WAIT counts its writes.
      CallOptions{budget, {}, names_.lock, {}});
}

}  // namespace rlock
