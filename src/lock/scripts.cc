#include "lock/scripts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "core/log.h"
#include "core/sha1.h"
#include "core/text.h"
#include "functions_library.h"
#include "lua_scripts.h"

namespace rlock {

namespace {

// The scripts' text is src/lock/lua/*.lua (each file documents its script's ARGV and replies),
// embedded at build time as rlock::lua::kName, each after the part of the prelude it uses,
// rlock::lua::kNamePrelude (cmake/embed_lua.cmake). Digests come from the compiler
// (sha1.h): no hashing at run time.
// Its function in the library is FUNCTION_HASH (FUNCTION the script's name unless given;
// cmake/functions_library.py registers the same names).
template <const std::string_view& Prelude, const std::string_view& Body>
Script make(const char* name, bool read_only = false, const char* function = nullptr) {
  static constexpr std::array<char, 40> kSha = sha1_hex(Prelude, Body);
  std::string fn;
  if (!lua::kFunctionsSuffix.empty())
    fn = fmt::format("{}_{}", function ? function : name, lua::kFunctionsSuffix);
  return Script{name, Body, std::string(kSha.data(), kSha.size()), read_only, Prelude, fn};
}

// use_functions(): RLOCK_FUNCTIONS=on, read once by the face.
bool g_functions = false;

}  // namespace

std::string Script::source() const {
  std::string text;
  text.reserve(prelude.size() + body.size());
  text.append(prelude).append(body);
  return text;
}

const std::string& script_prelude() {
  static const std::string p(lua::kPrelude);
  return p;
}

const Script& acquire_script() {
  static const Script s = make<lua::kAcquirePrelude, lua::kAcquire>("acquire");
  return s;
}
const Script& extend_script() {
  static const Script s = make<lua::kExtendPrelude, lua::kExtend>("extend");
  return s;
}
const Script& release_script() {
  static const Script s = make<lua::kReleasePrelude, lua::kRelease>("release");
  return s;
}
const Script& leave_script() {
  static const Script s = make<lua::kLeavePrelude, lua::kLeave>("leave");
  return s;
}
const Script& undo_script() {
  static const Script s = make<lua::kUndoPrelude, lua::kUndo>("undo");
  return s;
}
const Script& status_script() {
  static const Script s = make<lua::kStatusPrelude, lua::kStatus>("status", true);
  return s;
}
const Script& break_script() {
  static const Script s = make<lua::kBreakPrelude, lua::kBreak>("break");
  return s;
}
const Script& forget_script() {
  static const Script s = make<lua::kForgetPrelude, lua::kForget>("forget");
  return s;
}
const Script& fence_script() {
  static const Script s = make<lua::kFencePrelude, lua::kFence>("fence");
  return s;
}
const Script& history_script() {
  static const Script s = make<lua::kHistoryPrelude, lua::kHistory>("history", true);
  return s;
}

const Script& nest_script() {
  static const Script s = make<lua::kNestPrelude, lua::kNest>("nest");
  return s;
}
// Its 'list', which reads only: allowed to read-only users and on replicas.
const Script& nest_list_script() {
  static const Script s = make<lua::kNestPrelude, lua::kNest>("nest", true, "nest_ro");
  return s;
}

const Script& list_script() {
  static const Script s = make<lua::kListPrelude, lua::kList>("list", true);
  return s;
}

std::string_view functions_library() {
  return lua::kFunctionsLibrary;
}

void use_functions(bool on) {
  g_functions = on;
}

bool functions_used() {
  return g_functions && !lua::kFunctionsLibrary.empty();
}

Args keys_of(const LockNames& n) {
  return {n.lock, n.sub("fence"), n.sub("holders"), n.sub("limit"), n.sub("queue"), n.sub("qseq")};
}

namespace {

// A server without EVAL_RO/EVALSHA_RO (Redis < 7), or an ACL that allows only
// the plain commands: read-only scripts then go by EVALSHA/EVAL (they write
// nothing either way).
bool no_read_only_variant(const Result& r) {
  if (r.failure || !r.reply.is_error()) return false;
  const std::string& m = r.reply.str;
  bool ro = m.find("_ro") != std::string::npos || m.find("_RO") != std::string::npos;
  return m.starts_with("ERR unknown command") || (m.starts_with("NOPERM") && ro);
}

// FCALL cannot be used on this server at all: Redis 6 (unknown command), or an ACL
// without fcall or fcall_ro (the call itself refused, not a command inside it).
bool no_fcall(const Result& r) {
  if (r.failure || !r.reply.is_error()) return false;
  const std::string& m = r.reply.str;
  return m.starts_with("ERR unknown command") ||
         (m.starts_with("NOPERM") &&
          (m.find("'fcall'") != std::string::npos || m.find("'fcall_ro'") != std::string::npos));
}

bool function_not_found(const Result& r) {
  return !r.failure && r.reply.is_error() && r.reply.str.starts_with("ERR Function not found");
}

// The commands that line `line` (1 = the first) of `source` runs with
// redis.call, each once, in upper case and in order ({"TYPE", "HDEL"} for
// "if redis.call('TYPE', k).ok ~= 'hash' or redis.call('HDEL', k, id) == 0");
// empty when none. A refused redis.pcall raises nothing: it is never the one.
std::vector<std::string> commands_on_line(std::string_view source, long line) {
  size_t at = 0;
  for (long n = 1; n < line && at != std::string::npos; ++n) {
    at = source.find('\n', at);
    if (at != std::string::npos) ++at;
  }
  if (line < 1 || at == std::string::npos) return {};
  std::string text(source.substr(at, source.find('\n', at) - at));
  std::vector<std::string> out;
  const std::string call = "redis.call('";
  for (auto c = text.find(call); c != std::string::npos; c = text.find(call, c)) {
    c += call.size();
    std::string name = text.substr(c, text.find('\'', c) - c);
    for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

// The ACL user named in a client's URL ("redis://app@host:port/0"), else "default".
std::string acl_user(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return "default";
  auto at = url.find('@', scheme + 3);
  auto slash = url.find('/', scheme + 3);
  if (at == std::string::npos || (slash != std::string::npos && slash < at)) return "default";
  return url.substr(scheme + 3, at - scheme - 3);
}

// A refusal by the server's ACL, of the script or of a command inside it, as
// one line naming what the user lacks, where, and the ACL SETUSER that grants
// it; nullopt for any other reply.
std::optional<Error> acl_refusal(const Client& c, const Script& s, const Args& keys,
                                 const std::string& m) {
  const bool in_script = m.find("user executing the script") != std::string::npos;
  if (!m.starts_with("NOPERM") && !in_script) return std::nullopt;
  const std::string url = c.name(), user = acl_user(url);
  std::string prefix = keys.empty() ? "" : keys.front().substr(0, keys.front().find('{'));
  std::string pattern = escape_text(prefix) + "*";
  auto says = [&](const char* t) { return m.find(t) != std::string::npos; };
  if (says("keys")) {
    return Error(ErrorKind::Permission,
                 fmt::format("the ACL user '{}' at {} may not access rlock's keys ({}): grant "
                             "the key pattern with ACL SETUSER {} ~{}",
                             user, url, pattern, user, pattern));
  }
  if (says("channel")) {
    return Error(ErrorKind::Permission,
                 fmt::format("the ACL user '{}' at {} may not publish on rlock's channels ({}): "
                             "grant the channel pattern with ACL SETUSER {} &{}",
                             user, url, pattern, user, pattern));
  }
  std::vector<std::string> commands;
  if (auto q = m.find("run the '"); q != std::string::npos) {
    std::string command = truncate_text(m.substr(q + 9, m.find('\'', q + 9) - q - 9), 64);
    for (char& ch : command) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    commands.push_back(command);
  } else if (auto l = m.find("@user_script:"); l != std::string::npos) {
    // Redis 7.0 names no command, only the script's line; a line that runs
    // several (a read, then the write it guards) names them all, since the
    // one the user has must not be taken for the one it lacks.
    commands = commands_on_line(s.source(), std::strtol(m.c_str() + l + 13, nullptr, 10));
  } else if (auto f = m.find("@user_function:"); f != std::string::npos) {
    // The same from a function: a line of the whole library's text (its "#!lua"
    // line is line 1), which rlock embeds as it loads it.
    commands = commands_on_line(functions_library(), std::strtol(m.c_str() + f + 15, nullptr, 10));
  }
  if (commands.empty() || commands.front().empty()) return std::nullopt;  // still 77
  std::string names, grant;
  for (size_t i = 0; i < commands.size(); ++i) {
    names += (i == 0 ? "" : i + 1 == commands.size() ? " or " : ", ") + escape_text(commands[i]);
    std::string g = "+" + escape_text(commands[i]);
    for (char& ch : g) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (commands[i].starts_with("EVAL")) g = "+evalsha +eval";
    if (commands[i].starts_with("FCALL")) g = "+fcall +fcall_ro";
    grant += (i == 0 ? "" : " ") + g;
  }
  bool one = commands.size() == 1;
  return Error(
      ErrorKind::Permission,
      fmt::format("the ACL user '{}' at {} may not run {} (the {} script needs {}): "
                  "grant {} with ACL SETUSER {} {}",
                  user, url, names, s.name, one ? "it" : "them", one ? "it" : "them", user, grant));
}

// The type rlock keeps at a key of a lock, by its name (LockNames: PREFIX{KEY} and
// PREFIX{KEY}:fence ...); nullptr for a name it does not know.
const char* kept_type(const std::string& key, bool first) {
  auto ends = [&](const char* s) {
    std::string t(s);
    return key.size() > t.size() && key.compare(key.size() - t.size(), t.size(), t) == 0;
  };
  if (ends(":fence") || ends(":limit") || ends(":qseq")) return "string";
  if (ends(":holders") || ends(":queue")) return "zset";
  if (ends(":log")) return "stream";
  if (ends(":live")) return "hash";
  if (first && !key.empty() && key.back() == '}') return "string";
  return nullptr;
}

// A script refused with WRONGTYPE: a key of the lock holds a value of another type than
// rlock keeps there, another program's key under rlock's prefix. The keys' TYPEs, asked
// once, name the key; when none of them is the one (a holder's or waiter's hash beside
// them), or they cannot be read, the message names the lock's keys. `r` then carries the
// one line (70) to `cb`, never Redis's raw text.
void explain_wrong_type(Client& c, const Script& s, const Args& keys, const std::string& node,
                        Millis timeout, Result r, ReplyCallback cb) {
  struct State {
    Result r;
    ReplyCallback cb;
    std::vector<std::string> types;
    size_t left = 0;
  };
  auto st = std::make_shared<State>();
  st->r = std::move(r);
  st->cb = std::move(cb);
  std::string lock = keys.empty() ? "" : keys.front();
  std::string script = s.name;
  const bool lock_keys = keys.size() >= 2 && kept_type(keys[1], false) != nullptr;
  auto finish = [st, keys, lock, script, lock_keys] {
    std::string text;
    Cause cause = Cause::Foreign;
    for (size_t i = 0; i < st->types.size() && text.empty(); ++i) {
      const char* want = kept_type(keys[i], i == 0);
      const std::string& got = st->types[i];
      if (!want || got.empty() || got == "none" || got == want) continue;
      if (i == 0 && keys[i].back() == '}') cause = Cause::ForeignLock;
      text = fmt::format(
          "the Redis key '{}' holds a {} where rlock keeps a {}: another program uses that "
          "name (rlock owns every key under its prefix; --prefix picks another)",
          escape_text(truncate_text(keys[i], 300)), escape_text(truncate_text(got, 32)), want);
    }
    if (text.empty() && !lock_keys)
      text = fmt::format(
          "a key of one of the {} locks from '{}' on holds another type of value than rlock "
          "keeps there (WRONGTYPE in the {} script)",
          keys.size(), escape_text(truncate_text(lock, 300)), script);
    if (text.empty())
      text = fmt::format(
          "a Redis key of the lock '{}' (or one named '{}:...') holds another type of value "
          "than rlock keeps there: another program uses that name (WRONGTYPE in the {} "
          "script; rlock owns every key under its prefix; --prefix picks another)",
          escape_text(truncate_text(lock, 300)), escape_text(truncate_text(lock, 300)), script);
    st->r.failure = Error(ErrorKind::Protocol, text, -1, cause);
    st->cb(std::move(st->r));
  };
  // A lock's scripts name its keys (keys_of: PREFIX{KEY}, PREFIX{KEY}:fence ...);
  // `list`'s name a batch of lock keys (read with MGET, which no type fails):
  // not asked.
  if (!lock_keys) return finish();
  st->types.assign(keys.size(), "");
  st->left = keys.size();
  for (size_t i = 0; i < keys.size(); ++i)
    c.command(
        {"TYPE", keys[i]},
        [st, i, finish](Result t) {
          if (!t.failure && t.reply.type == Reply::Type::Status) st->types[i] = t.reply.str;
          if (--st->left == 0) finish();
        },
        CallOptions{timeout, {}, keys[i], node});
}

// VERB BODY numkeys KEYS... ARGV...: an EVAL or EVALSHA of a script.
Args script_command(const char* verb, const std::string& body, const Args& keys, const Args& argv) {
  Args a{verb, body, std::to_string(keys.size())};
  a.insert(a.end(), keys.begin(), keys.end());
  a.insert(a.end(), argv.begin(), argv.end());
  return a;
}

// By EVALSHA (EVALSHA_RO), then EVAL (EVAL_RO) on NOSCRIPT. `cb` maps the reply already.
void send_evalsha(Client& client, const Script& script, const Args& keys, const Args& argv,
                  ReplyCallback cb, Millis timeout, const Undo& undo_cmds,
                  const std::string& node) {
  bool ro = script.read_only && !client.server().no_eval_ro;
  Client* c = &client;
  const Script* sc = &script;
  Args keys_copy = keys, argv_copy = argv;
  client.command(
      script_command(ro ? "EVALSHA_RO" : "EVALSHA", script.sha1, keys, argv),
      [c, sc, ro, keys_copy, argv_copy, cb = std::move(cb), timeout, undo_cmds,
       node](Result r) mutable {
        if (ro && no_read_only_variant(r)) {
          c->server().no_eval_ro = true;
          send_evalsha(*c, *sc, keys_copy, argv_copy, std::move(cb), timeout, undo_cmds, node);
          return;
        }
        if (!r.failure && r.reply.is_error() && r.reply.str.starts_with("NOSCRIPT")) {
          std::string key = keys_copy.empty() ? "" : keys_copy.front();
          c->command(script_command(ro ? "EVAL_RO" : "EVAL", sc->source(), keys_copy, argv_copy),
                     std::move(cb), CallOptions{timeout, std::move(undo_cmds), key, node});
          // The server lost its scripts (SCRIPT FLUSH, a restart, a failover):
          // the release script, which every holder runs next, is loaded again
          // in the same round trip, so that a run after a flush pays one round
          // trip more, not two (docs/PERFORMANCE.md). Its reply is not needed:
          // a release that still finds it missing falls back to EVAL as ever.
          if (sc != &release_script())
            c->command(
                {"SCRIPT", "LOAD", release_script().source()}, [](Result) {},
                CallOptions{timeout, {}, std::move(key), node});
          return;
        }
        cb(std::move(r));
      },
      // Every key of a lock shares one slot: the first names it.
      CallOptions{timeout, undo_cmds, keys.empty() ? "" : keys.front(), node});
}

// This server runs the scripts by EVALSHA from now on (ServerTraits::no_functions),
// and this call is sent again that way.
void fall_back(Client& c, const Script& s, const Args& keys, const Args& argv, ReplyCallback cb,
               Millis timeout, const Undo& undo_cmds, const std::string& node,
               const std::string& why) {
  if (!c.server().no_functions)
    log_verbose(fmt::format("{}: no Functions ({}): the scripts go by EVALSHA", c.name(),
                            escape_text(truncate_text(why, 120))));
  c.server().no_functions = true;
  send_evalsha(c, s, keys, argv, std::move(cb), timeout, undo_cmds, node);
}

// By FCALL (FCALL_RO) of the script's function (docs/PROTOCOL.md, "Functions"). On
// "Function not found", the library is loaded (FUNCTION LOAD, never REPLACE: a library
// of that name is this text, its name carrying the text's hash) in front of the same
// FCALL, one round trip; still not found (the load refused: no function|load, OOM, a
// replica, or another library's functions of these names), or FCALL unknown or refused
// itself: EVALSHA, for this call and the rest of the process on this server.
void send_fcall(Client& client, const Script& script, const Args& keys, const Args& argv,
                ReplyCallback cb, Millis timeout, const Undo& undo_cmds, const std::string& node,
                bool loaded = false) {
  bool ro = script.read_only && !client.server().no_fcall_ro;
  Client* c = &client;
  const Script* sc = &script;
  std::string key = keys.empty() ? "" : keys.front();
  if (loaded)
    c->command(
        {"FUNCTION", "LOAD", std::string(functions_library())},
        [c](Result r) {
          if (!r.failure && r.reply.is_error() &&
              r.reply.str.find("already exists") == std::string::npos)
            log_verbose(fmt::format("{}: FUNCTION LOAD: {}", c->name(),
                                    escape_text(truncate_text(r.reply.str, 120))));
        },
        CallOptions{timeout, {}, key, node});
  client.command(
      script_command(ro ? "FCALL_RO" : "FCALL", script.function, keys, argv),
      [c, sc, ro, keys, argv, cb = std::move(cb), timeout, undo_cmds, node,
       loaded](Result r) mutable {
        if (no_fcall(r)) {
          // FCALL_RO alone refused (an ACL with fcall only): FCALL, as EVALSHA_RO.
          if (ro && !r.reply.str.starts_with("ERR unknown command")) {
            c->server().no_fcall_ro = true;
            send_fcall(*c, *sc, keys, argv, std::move(cb), timeout, undo_cmds, node, loaded);
            return;
          }
          return fall_back(*c, *sc, keys, argv, std::move(cb), timeout, undo_cmds, node,
                           r.reply.str);
        }
        if (function_not_found(r)) {
          if (!loaded)
            return send_fcall(*c, *sc, keys, argv, std::move(cb), timeout, undo_cmds, node, true);
          return fall_back(*c, *sc, keys, argv, std::move(cb), timeout, undo_cmds, node,
                           "the library could not be loaded");
        }
        cb(std::move(r));
      },
      CallOptions{timeout, undo_cmds, key, node});
}

}  // namespace

void run_script(Client& client, const Script& script, const Args& keys, const Args& argv,
                ReplyCallback given_cb, Millis timeout, const std::vector<ScriptCall>& undo,
                const std::string& node) {
  // An ACL refusal becomes one line that says what to grant.
  // A key of another type (WRONGTYPE) becomes one line naming it.
  ReplyCallback cb = [c = &client, sc = &script, keys, node, timeout,
                      given_cb = std::move(given_cb)](Result r) {
    if (!r.failure && r.reply.is_error()) {
      if (auto e = acl_refusal(*c, *sc, keys, r.reply.str))
        r.failure = *e;
      else if (is_out_of_memory(r.reply.str))
        // The server is unable, not rlock wrong: an outage (69) that a
        // waiter and a renewal ride out. Redis refuses only a script's first
        // write, so a refused script wrote nothing (docs/PROTOCOL.md).
        r.failure = out_of_memory(fmt::format("{} ({} script)", c->name(), sc->name));
      else if (r.reply.str.starts_with("WRONGTYPE"))
        return explain_wrong_type(*c, *sc, keys, node, timeout, std::move(r), given_cb);
    }
    given_cb(std::move(r));
  };
  // The EVALs (of the undo scripts, and of this one after NOSCRIPT) are built
  // only when they are sent: each carries a whole script, prelude included
  // (8 to 35 KB), and copying them for every call cost about 30 us of client
  // time per script call, three times over in quorum mode. The undo scripts
  // stay EVAL with RLOCK_FUNCTIONS=on: they are sent on a connection that timed
  // out, where nothing else may be asked first.
  Undo undo_cmds;
  if (!undo.empty())
    undo_cmds = [calls = std::make_shared<const std::vector<ScriptCall>>(undo),
                 ks = std::make_shared<const Args>(keys)] {
      std::vector<Args> out;
      for (auto& u : *calls) out.push_back(script_command("EVAL", u.script->source(), *ks, u.argv));
      return out;
    };
  if (functions_used() && !script.function.empty() && !client.server().no_functions)
    send_fcall(client, script, keys, argv, std::move(cb), timeout, undo_cmds, node);
  else
    send_evalsha(client, script, keys, argv, std::move(cb), timeout, undo_cmds, node);
}

}  // namespace rlock
