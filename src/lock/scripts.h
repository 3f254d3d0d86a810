// The Lua scripts of the lock protocol (src/lock/lua/*.lua, embedded at build time)
// and how they are run: EVALSHA first, EVAL on NOSCRIPT (after SCRIPT FLUSH or
// a failover); or, with RLOCK_FUNCTIONS=on, FCALL of the same scripts as one Redis 7
// Functions library (cmake/functions_library.py). Nothing else in rlock knows Lua.
// docs/PROTOCOL.md describes the same scripts in prose.
#pragma once

#include <string>
#include <string_view>

#include "lock/key.h"
#include "net/redis.h"

namespace rlock {

/// The version of the lock protocol these scripts speak (docs/PROTOCOL.md, "Versions";
/// prelude.lua names it in its first line). `rlock --version` prints it.
inline constexpr int kProtocolVersion = 4;

struct Script {
  const char* name;
  /// The script's own text (src/lock/lua/NAME.lua), without the prelude;
  /// static text only (a view: the embedded constant, never a temporary).
  std::string_view body;
  std::string sha1;  // hex
  /// Writes nothing: sent as EVALSHA_RO/EVAL_RO where the server has them,
  /// so it runs for read-only users and on replicas.
  bool read_only = false;
  /// What the body follows when sent: the part of rlock's prelude
  /// (prelude.lua) that the script uses, in order (cut at build time,
  /// cmake/cut_prelude.cmake); empty for the layouts' scripts, which are
  /// self-contained.
  std::string_view prelude = {};
  /// Its function in the Functions library (functions_library()): acquire_HASH ...;
  /// empty in a build without the library.
  std::string function = {};
  /// The text EVAL and SCRIPT LOAD send: the prelude, then the body (8 to
  /// 35 KB for rlock's own). Built when asked for: EVALSHA needs only sha1,
  /// and copying every script a run names cost ~12% of its client-side
  /// instructions (docs/PERFORMANCE.md, "Start-up").
  std::string source() const;
};

/// The scripts; each takes the six keys of keys_of() and its own ARGV.
const Script& acquire_script();
const Script& extend_script();
const Script& release_script();
const Script& leave_script();
const Script& undo_script();
const Script& status_script();
const Script& break_script();
const Script& forget_script();
const Script& fence_script();
/// Reads the lock's history, bounded (read-only; protocol 4).
const Script& history_script();
/// Nested holds under an enclosing holder's token (protocol 4): joins,
/// renews, ends or lists them.
const Script& nest_script();
/// nest_script sent for its 'list', which reads only (EVALSHA_RO where there is one).
const Script& nest_list_script();
/// What `list` shows of many locks at once (read-only): KEYS are their lock
/// keys PREFIX{KEY}, all of one slot on a Cluster node.
const Script& list_script();

/// The whole prelude (prelude.lua's shared helpers), as docs/PROTOCOL.md quotes
/// it; each script is sent with the part of it that it uses (Script::prelude).
/// Exposed so tests can check docs/PROTOCOL.md.
const std::string& script_prelude();

/// The Functions library of the scripts above (cmake/functions_library.py), as
/// FUNCTION LOAD sends it; empty in a build without it (no Python at build time).
std::string_view functions_library();
/// Whether run_script calls the library's functions by FCALL (RLOCK_FUNCTIONS=on,
/// read by the face; docs/PROTOCOL.md "Functions"); off: EVALSHA.
void use_functions(bool on);
bool functions_used();

/// KEYS of every script, in order: lock, fence, holders, limit, queue, qseq.
Args keys_of(const LockNames& names);

/// Runs `script` with EVALSHA, falling back to EVAL when the server answers
/// NOSCRIPT (a read-only script: EVALSHA_RO and EVAL_RO, or the plain ones on
/// a server without them). With use_functions(true), by FCALL (FCALL_RO) of its
/// function, the library loaded on "Function not found" in the same round trip; a
/// server that cannot run it (Redis 6, no fcall in the ACL, a load refused) gets
/// EVALSHA for the rest of the process (ServerTraits::no_functions). `cb` gets the
/// final result.
/// `undo` scripts (with their ARGV) are sent as EVAL on the same connection
/// if this one times out (see Connection::command). A non-empty `node` pins
/// the call to that server (CallOptions::node).
struct ScriptCall {
  const Script* script;
  Args argv;
};
void run_script(Client& client, const Script& script, const Args& keys, const Args& argv,
                ReplyCallback cb, Millis timeout = Millis(0),
                const std::vector<ScriptCall>& undo = {}, const std::string& node = {});

/// run_script, its reply handed to `parse`: what `done` gets is the parsed
/// value (with the node that answered, where T has one), or the Error of a
/// failed call or of a reply `parse` refused ("NAME script: …").
template <class T>
void run_parsed(Client& c, const Script& s, const Args& keys, const Args& argv,
                std::function<T(const Reply&)> parse, Done<T> done, Millis timeout,
                const std::vector<ScriptCall>& undo, const std::string& node) {
  run_script(
      c, s, keys, argv,
      [parse = std::move(parse), done = std::move(done), name = s.name](Result r) {
        Outcome<T> o;
        try {
          o.value = parse(expect_ok(r, std::string(name) + " script"));
          if constexpr (requires(T & t) { t.node = r.node; }) o.value.node = r.node;
        } catch (const Error& e) {
          o.error = e;
        }
        done(std::move(o));
      },
      timeout, undo, node);
}

}  // namespace rlock
