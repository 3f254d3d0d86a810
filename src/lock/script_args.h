// The ARGV of each script, by name. Every script reads its arguments into
// named locals at its top (src/lock/lua/NAME.lua; docs/PROTOCOL.md tables
// them under "Scripts"); the struct here holds them, each field commented
// with the script's name for it, and its to_argv() is the one place in C++
// that writes down their order. Fields are in that order. The arguments a
// script takes as optional (older clients send fewer) are always sent,
// except where a field says otherwise. A new argument goes last, in the
// script, its struct, docs/PROTOCOL.md and tests/unit/script_args_test.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/duration.h"
#include "lock/records.h"
#include "net/redis.h"

namespace rlock {

/// acquire.lua: one attempt to take the lock or join its line.
struct AcquireArgs {
  std::string token;                // tok
  Millis ttl{0};                    // ttl: the lease
  int limit = 0;                    // limit: --limit (0: a lock)
  std::string mode;                 // mode: "try", "wait" or "regrant"
  Millis queue_lease{kQueueLease};  // qlease: a waiter's place lease
  std::string channel;              // chan: the release channel
  std::string host;                 // host, pid, user, cmd: who asks
  long pid = 0;
  std::string user;
  std::string cmd;
  long attempt = 0;               // att: numbers one token's attempts (0: not tracked)
  bool shared = false;            // shared: --shared
  std::string label;              // label: --label
  int priority = 0;               // prio: --priority
  bool supersede = false;         // supersede: --supersede
  int max_waiters = 0;            // cap: --max-waiters (0: no cap)
  int history = kDefaultHistory;  // HISTORY: events kept (0: none)
  bool cancel = false;            // cancel: --cancel-in-progress
  std::string pool;               // pool: a named pool's names, comma-separated ("": a count)
  Args to_argv() const;
};

/// undo.lua: undoes one timed-out acquire attempt (sent right behind it).
struct UndoArgs {
  std::string token;              // tok
  long attempt = 0;               // att
  std::string channel;            // chan
  int history = kDefaultHistory;  // HISTORY
  Args to_argv() const;
};

/// extend.lua: renews a holder's lease.
struct ExtendArgs {
  std::string token;              // tok
  Millis ttl{0};                  // ttl_arg: the new lease (0: as acquired)
  int history = kDefaultHistory;  // HISTORY
  bool supersede = false;         // supersede: ask who supersedes the holder
  Args to_argv() const;
};

/// release.lua: releases, or keeps the lease for --min-hold or --done-for.
struct ReleaseArgs {
  std::string token;       // tok
  Millis min_hold{0};      // minhold
  std::string channel;     // chan
  Millis tombstone{0};     // tomb: how long the release id is kept
  std::string release_id;  // rid: the same for every retry of one release ("": no tombstone)
  int exit_status = -1;    // exit_status: 0-255, else not known ("")
  Millis done_for{0};      // donefor
  /// HISTORY. Unset: neither it nor the arguments from exit_status on are
  /// sent (the script's defaults: not known, 0, 100 events, not lost).
  std::optional<int> history = kDefaultHistory;
  std::string lost;  // lost: why the holder knows it lost the lease ("": it did not)
  Args to_argv() const;
};

/// leave.lua: a waiter gives up its place.
struct LeaveArgs {
  std::string token;              // tok
  std::string channel;            // chan
  int history = kDefaultHistory;  // HISTORY
  Args to_argv() const;
};

/// status.lua (read-only).
struct StatusArgs {
  long max_records = kStatusRecords;  // max
  bool events = true;                 // events: false sends '0' (no last events)
  Args to_argv() const;
};

/// break.lua: the operator's override.
struct BreakArgs {
  std::string channel;            // chan
  int history = kDefaultHistory;  // HISTORY
  std::string by;                 // by: who breaks it
  Millis tombstone{0};            // tomb: the broken tokens' tombstone
  std::string only;               // only: the one holder to remove ('': every one)
  std::string reason;             // reason: why ('': not said)
  Args to_argv() const;
};

/// fence.lua (quorum mode): raises the fence counter, records a holder's fence.
struct FenceArgs {
  std::string token;   // tok
  int64_t fence = 0;   // f
  bool claim = false;  // claim: an acquisition's commit (a regrant otherwise)
  Args to_argv() const;
};

/// history.lua (read-only).
struct HistoryArgs {
  long count = 0;     // n: how many events
  std::string after;  // after: "" the newest, else only those after this id
  Args to_argv() const;
};

/// nest.lua: nested holds under an enclosing holder's token.
struct NestArgs {
  std::string op;                 // op: "hold", "end" or "list"
  std::string outer;              // outer: the enclosing holder's token
  std::string member;             // member ("hold", "end"): "ID PID HOST"
  Millis ttl{0};                  // ttl_arg ("hold")
  std::string channel;            // chan ("end")
  int history = kDefaultHistory;  // history ("end")
  Args to_argv() const;
};

/// list.lua (read-only): KEYS are the lock keys.
struct ListArgs {
  bool full = false;  // full: "full" (list --json), else "line"
  std::string seen;   // seen: a digit a key, the side keys SCAN saw
  Args to_argv() const;
};

/// plain_acquire.lua and redisson_acquire.lua (--layout).
struct LayoutAcquireArgs {
  std::string token;  // token (plain), id (Redisson)
  Millis ttl{0};      // ttl
  Args to_argv() const;
};

/// plain_extend.lua and redisson_extend.lua (--layout).
struct LayoutExtendArgs {
  std::string token;  // token (plain), id (Redisson)
  Millis ttl{0};      // ttl
  Args to_argv() const;
};

/// plain_release.lua (--layout plain).
struct PlainReleaseArgs {
  std::string token;       // token
  std::string channel;     // chan
  std::string payload;     // payload: the KEY
  Millis tombstone{0};     // tomb_ms
  std::string release_id;  // rid
  Args to_argv() const;
};

/// redisson_release.lua (--layout redisson).
struct RedissonReleaseArgs {
  std::string id;          // id
  std::string channel;     // chan
  Millis tombstone{0};     // tomb_ms
  std::string release_id;  // rid
  Args to_argv() const;
};

/// plain_break.lua (--layout plain).
struct PlainBreakArgs {
  std::string channel;  // chan
  std::string payload;  // payload: the KEY
  Args to_argv() const;
};

/// redisson_break.lua (--layout redisson).
struct RedissonBreakArgs {
  std::string channel;  // chan
  Args to_argv() const;
};

}  // namespace rlock
