#include "scripts.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <optional>

#include "sha1.h"
#include "text.h"

namespace rlock {

namespace {

// Shared by every script. Times come from the server (TIME), never from a
// client: a client with a wrong clock cannot reorder or stall anything.
constexpr std::string_view kPrelude = R"lua(
-- rlock lock protocol 4 (docs/PROTOCOL.md)
local LOCK, FENCE, HOLDERS, LIMIT, QUEUE, QSEQ = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local BASE = LOCK .. ':'
local function hkey(t) return BASE .. 'h:' .. t end
local function wkey(t) return BASE .. 'w:' .. t end
local function rkey(t) return BASE .. 'r:' .. t end
local tm = redis.call('TIME')
local NOW = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)

-- Semaphore holders whose lease ran out leave.
local function purge_holders()
  local dead = redis.call('ZRANGEBYSCORE', HOLDERS, '-inf', NOW)
  for _, t in ipairs(dead) do redis.call('DEL', hkey(t)) end
  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', HOLDERS, '-inf', NOW) end
end

-- The first n live waiters in arrival order. A waiter is live while its
-- w: hash exists (its queue lease, a server-side expiry); dead ones met on
-- the way are dropped from the queue.
local function live_head(n)
  local out, dead, from = {}, {}, 0
  while #out < n do
    local batch = redis.call('ZRANGE', QUEUE, from, from + 31)
    if #batch == 0 then break end
    for _, t in ipairs(batch) do
      if #out >= n then break end
      if redis.call('EXISTS', wkey(t)) == 1 then out[#out + 1] = t else dead[#dead + 1] = t end
    end
    from = from + #batch
  end
  for _, t in ipairs(dead) do redis.call('ZREM', QUEUE, t) end
  if redis.call('EXISTS', QUEUE) == 0 then redis.call('DEL', QSEQ) end
  return out
end

-- Free slots right now: 0 or 1 for a plain lock, limit - holders otherwise.
local function capacity(limit)
  if limit == 0 then
    if redis.call('EXISTS', LOCK) == 1 then return 0 end
    return 1
  end
  return limit - redis.call('ZCARD', HOLDERS)
end

-- Notices go by sharded pub/sub (SPUBLISH) on a Redis 7 Cluster node, so that
-- they stay on the lock's shard instead of crossing the whole Cluster, and by
-- PUBLISH elsewhere (or where SPUBLISH is unknown or refused). Subscribers ask
-- for both kinds. A PUBLISH that is refused raises an error.
local sharded
local function publish(chan, msg)
  if sharded == nil then sharded = type(redis.pcall('CLUSTER', 'MYID')) == 'string' end
  if sharded then
    local r = redis.pcall('SPUBLISH', chan, msg)
    if type(r) ~= 'table' or not r.err then return end
    sharded = false
  end
  redis.call('PUBLISH', chan, msg)
end

-- Wakes only the waiters whose turn it is (no thundering herd).
local function notify(chan, n)
  if n <= 0 then return end
  for _, t in ipairs(live_head(n)) do publish(chan .. ':' .. t, 'turn') end
end

-- The stored --limit, forgotten once nobody holds or waits.
local function current_limit()
  local cur = redis.call('GET', LIMIT)
  if not cur then return 0 end
  if redis.call('EXISTS', HOLDERS) == 0 and #live_head(1) == 0 then
    redis.call('DEL', LIMIT)
    return 0
  end
  return tonumber(cur)
end

-- A stored field as a reply shows it: at most 1 KiB, so that no holder or
-- waiter record (written by any client) can make a reply large.
local function field(v) return string.sub(v or '', 1, 1024) end

local function holder_fields(t, pttl)
  local h = redis.call('HMGET', hkey(t), 'host', 'pid', 'user', 'cmd', 'since', 'fence', 'ttl',
                       'kept', 'exit')
  return {field(t), pttl, field(h[1]), field(h[2]), field(h[3]), field(h[4]), field(h[5]),
          field(h[6]), field(h[7]), field(h[8]), field(h[9])}
end

-- Up to `max` live holders, {token, pttl, host, pid, user, cmd, since, fence,
-- ttl, kept, exit} each, and how many there are. Reads only.
local function holders(max)
  local out, n = {}, 0
  local t = redis.call('GET', LOCK)
  if t then
    out[1] = holder_fields(t, redis.call('PTTL', LOCK))
    n = 1
  end
  local live = '(' .. NOW
  n = n + redis.call('ZCOUNT', HOLDERS, live, '+inf')
  local z = redis.call('ZRANGEBYSCORE', HOLDERS, live, '+inf', 'WITHSCORES', 'LIMIT', 0, max)
  for i = 1, #z, 2 do
    if #out >= max then break end
    out[#out + 1] = holder_fields(z[i], tonumber(z[i + 1]) - NOW)
  end
  return out, n
end

-- 'plain', 'semaphore' or nil: how `t` holds the lock, if it does.
local function held_by(t)
  if redis.call('GET', LOCK) == t then return 'plain' end
  if redis.call('ZSCORE', HOLDERS, t) then return 'semaphore' end
  return nil
end

-- The attempt number last stamped on a holder's or waiter's hash (0: none).
local function stamp_of(key)
  return tonumber(redis.call('HGET', key, 'att') or '0') or 0
end

-- The lease of `t` (held as `how`) ends `ttl` ms from now.
local function set_lease(t, how, ttl)
  if how == 'plain' then
    redis.call('PEXPIRE', LOCK, ttl)
  else
    redis.call('ZADD', HOLDERS, 'XX', NOW + ttl, t)
  end
  redis.call('PEXPIRE', hkey(t), ttl)
end

-- `t` (held as `how`) lets go: say so on the release channel, then wake
-- whoever's turn it is. A tombstone holding release id `rid` for `tomb` ms
-- (0: none) lets a retry of the same release tell "done" from "lost".
local function drop_holder(t, how, chan, tomb, rid)
  -- Publish first: a script's writes are not rolled back, so a PUBLISH the
  -- ACL refuses must fail before anything is deleted.
  publish(chan, t)
  if how == 'plain' then redis.call('DEL', LOCK) else redis.call('ZREM', HOLDERS, t) end
  redis.call('DEL', hkey(t))
  if tomb > 0 then redis.call('SET', rkey(t), rid, 'PX', tomb) end
  notify(chan, capacity(current_limit()))
end

-- `t` leaves the line; the waiters whose turn it now is are woken.
local function drop_waiter(t, chan)
  local was = redis.call('ZREM', QUEUE, t)
  redis.call('DEL', wkey(t))
  if was == 1 then notify(chan, capacity(current_limit())) end
  if redis.call('EXISTS', QUEUE) == 0 then redis.call('DEL', QSEQ) end
  return was
end
)lua";

// ARGV: token, ttl_ms, limit (0 = plain), mode ('try'|'wait'), queue_lease_ms,
//       channel, host, pid, user, cmd, attempt (optional: >= 1, grows with
//       every attempt of one token; 0 or absent = not tracked)
// Returns {'OK', fence, ttl, now} | {'TAKEN', position, free, holders, count}
//       | {'QUEUED', position, free, holders, count} | {'MIXED', stored_limit}
//       | {'STALE', newest_attempt}
constexpr std::string_view kAcquire = R"lua(
local tok, ttl, limit, mode = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local qlease, chan = tonumber(ARGV[5]), ARGV[6]
local att = tonumber(ARGV[11] or '0') or 0
-- A holder's or a waiter's record: who (ARGV[7-10]) and since when, and more.
local function describe(key, ...)
  redis.call('HSET', key, 'host', ARGV[7], 'pid', ARGV[8], 'user', ARGV[9], 'cmd', ARGV[10],
             'since', NOW, ...)
end
purge_holders()
local cur = current_limit()
if limit == 0 and cur > 0 then return {'MIXED', cur} end
if limit > 0 and redis.call('EXISTS', LOCK) == 1 then return {'MIXED', 0} end
if limit > 0 and cur > 0 and cur ~= limit then return {'MIXED', cur} end
-- The token already holds: a retry whose first reply was lost, or a late copy
-- of an earlier attempt. A retry renews the lease, so that it ends ttl after
-- this reply was asked for; an older attempt than the newest seen changes
-- nothing (its undo, right behind it, then finds it not the newest either).
local how = held_by(tok)
if how then
  local seen = stamp_of(hkey(tok))
  if att > 0 and att <= seen then return {'STALE', seen} end
  set_lease(tok, how, ttl)
  if att > 0 then redis.call('HSET', hkey(tok), 'att', att) end
  return {'OK', tonumber(redis.call('HGET', hkey(tok), 'fence') or '0'), ttl, NOW}
end
local queued = redis.call('ZSCORE', QUEUE, tok)
if queued and att > 0 and att < stamp_of(wkey(tok)) then
  return {'STALE', stamp_of(wkey(tok))}
end
local free = capacity(limit)
local heads = live_head(math.max(free, 1))
local eligible = false
if free > 0 then
  if queued then
    for i = 1, math.min(free, #heads) do if heads[i] == tok then eligible = true end end
  else
    eligible = #heads < free or (free == 1 and #heads == 0)
  end
end
if eligible then
  if limit == 0 then
    redis.call('SET', LOCK, tok, 'PX', ttl)
  else
    redis.call('ZADD', HOLDERS, NOW + ttl, tok)
    redis.call('SET', LIMIT, limit)
  end
  local fence = redis.call('INCR', FENCE)
  redis.call('DEL', hkey(tok), rkey(tok))
  describe(hkey(tok), 'fence', fence, 'ttl', ttl, 'att', att)
  redis.call('PEXPIRE', hkey(tok), ttl)
  if queued then
    redis.call('ZREM', QUEUE, tok)
    redis.call('DEL', wkey(tok))
  end
  if limit > 0 then notify(chan, free - 1) end
  return {'OK', fence, ttl, NOW}
end
if mode ~= 'wait' then
  local hs, n = holders(10)
  return {'TAKEN', -1, free, hs, n}
end
if not queued then
  redis.call('ZADD', QUEUE, redis.call('INCR', QSEQ), tok)
  describe(wkey(tok))
end
if att > 0 then redis.call('HSET', wkey(tok), 'att', att) end
redis.call('PEXPIRE', wkey(tok), qlease)
local hs, n = holders(10)
return {'QUEUED', redis.call('ZRANK', QUEUE, tok), free, hs, n}
)lua";

// ARGV: token, ttl_ms (0 = the TTL it was acquired with)
// Returns {1, ttl, fence} when renewed, {0} when the token no longer holds.
// Never re-creates a lock that has gone.
constexpr std::string_view kExtend = R"lua(
local tok = ARGV[1]
purge_holders()
local how = held_by(tok)
if not how then return {0} end
local ttl = tonumber(ARGV[2])
if ttl == 0 then ttl = tonumber(redis.call('HGET', hkey(tok), 'ttl') or '0') end
if ttl == 0 then ttl = math.max(redis.call('PTTL', LOCK), 1000) end
set_lease(tok, how, ttl)
return {1, ttl, tonumber(redis.call('HGET', hkey(tok), 'fence') or '0')}
)lua";

// ARGV: token, min_hold_ms, channel, tombstone_ms and release id (optional:
// a retry of one release sends the same id), the command's exit status
// (optional, protocol 4; '' = not known)
// Returns {1} released, {2, ms_left} kept until acquisition + min_hold,
// {3} released by an earlier try of this same release, {0} not held.
// A kept lease's holder record says so ('kept': when; 'exit': how its
// command ended), so that status does not show it as a running holder.
constexpr std::string_view kRelease = R"lua(
local tok, minhold, chan = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local tomb, rid = tonumber(ARGV[4] or '0') or 0, ARGV[5] or ''
purge_holders()
local how = held_by(tok)
if not how then
  if rid ~= '' and redis.call('GET', rkey(tok)) == rid then return {3} end
  return {0}
end
if minhold > 0 then
  local since = tonumber(redis.call('HGET', hkey(tok), 'since') or '0')
  local left = since + minhold - NOW
  if since > 0 and left > 0 then
    set_lease(tok, how, left)
    redis.call('HSET', hkey(tok), 'kept', NOW, 'exit', field(ARGV[6]))
    return {2, left}
  end
end
if rid == '' then tomb = 0 end
drop_holder(tok, how, chan, tomb, rid)
return {1}
)lua";

// A waiter gives up its place. ARGV: token, channel. Returns 1 if it had one.
constexpr std::string_view kLeave = R"lua(
purge_holders()
return drop_waiter(ARGV[1], ARGV[2])
)lua";

// Undoes one acquire attempt that timed out, and only that one: sent right
// behind it on the same connection. ARGV: token, attempt, channel.
// Returns 1 (released what it granted), 2 (left the place it took) or 0
// (a newer attempt of the token, or nothing, is there: left alone).
constexpr std::string_view kUndo = R"lua(
local tok, att, chan = ARGV[1], tonumber(ARGV[2]), ARGV[3]
purge_holders()
local how = held_by(tok)
if how then
  if stamp_of(hkey(tok)) ~= att then return 0 end
  drop_holder(tok, how, chan, 0, '')
  return 1
end
if redis.call('ZSCORE', QUEUE, tok) and stamp_of(wkey(tok)) == att then
  drop_waiter(tok, chan)
  return 2
end
return 0
)lua";

// Read-only, so that it runs for read-only users and on replicas: dead
// holders and waiters are skipped, never removed. ARGV: max records (default
// 1000). Returns {limit, fence_counter, now, holders, waiters, holder_count,
// waiter_count}; each waiter is {token, pttl, host, pid, user, cmd, since}.
constexpr std::string_view kStatus = R"lua(
local max = tonumber(ARGV[1] or '1000') or 1000
local hs, nh = holders(max)
local waiters, nw, from = {}, 0, 0
while true do
  local batch = redis.call('ZRANGE', QUEUE, from, from + 255)
  if #batch == 0 then break end
  for _, t in ipairs(batch) do
    local pttl = redis.call('PTTL', wkey(t))
    if pttl > 0 or pttl == -1 then
      nw = nw + 1
      if #waiters < max then
        local h = redis.call('HMGET', wkey(t), 'host', 'pid', 'user', 'cmd', 'since')
        waiters[#waiters + 1] = {field(t), pttl, field(h[1]), field(h[2]), field(h[3]), field(h[4]),
                                 field(h[5])}
      end
    end
  end
  from = from + #batch
end
local limit = 0
if nh > 0 or nw > 0 then limit = tonumber(redis.call('GET', LIMIT) or '0') or 0 end
return {limit, tonumber(redis.call('GET', FENCE) or '0'), NOW, hs, waiters, nh, nw}
)lua";

// Operator override. ARGV: channel. Removes every holder and the queue, wakes
// every waiter; the fence counter stays. Returns the number of holders removed.
constexpr std::string_view kBreak = R"lua(
local chan = ARGV[1]
purge_holders()
if redis.call('EXISTS', LOCK) == 0 and redis.call('EXISTS', HOLDERS) == 0 then return 0 end
publish(chan, 'break')  -- first, for the same reason as in release
local n = 0
local t = redis.call('GET', LOCK)
if t then
  redis.call('DEL', LOCK, hkey(t))
  n = n + 1
end
for _, h in ipairs(redis.call('ZRANGE', HOLDERS, 0, -1)) do
  redis.call('DEL', hkey(h))
  n = n + 1
end
if n == 0 then return 0 end
redis.call('DEL', HOLDERS, LIMIT)
for _, w in ipairs(redis.call('ZRANGE', QUEUE, 0, -1)) do
  redis.call('DEL', wkey(w))
  publish(chan .. ':' .. w, 'break')
end
redis.call('DEL', QUEUE, QSEQ)
return n
)lua";

// Housekeeping: removes every key of a lock that is free and that nobody
// waits on, the fence counter included (its fences start again). ARGV: none.
// Returns {1} removed, {0} nothing was there, {-1, holders, waiters} refused.
// Per-token records of past holders and waiters expire by themselves.
constexpr std::string_view kForget = R"lua(
purge_holders()
local _, nh = holders(1)
local nw = #live_head(1)
if nh > 0 or nw > 0 then return {-1, nh, nw} end
local n = redis.call('DEL', LOCK, FENCE, HOLDERS, LIMIT, QUEUE, QSEQ)
if n > 0 then return {1} end
return {0}
)lua";

// Quorum mode (several masters, docs/PROTOCOL.md "Quorum mode"): raises the
// fence counter to at least ARGV[2]; if ARGV[1] holds the lock here, its
// record gets that fence. Returns {the counter, 1 if ARGV[1] holds here}.
constexpr std::string_view kFence = R"lua(
local tok, f = ARGV[1], tonumber(ARGV[2])
local cur = tonumber(redis.call('GET', FENCE) or '0') or 0
if f > cur then
  redis.call('SET', FENCE, f)
  cur = f
end
if not held_by(tok) then return {cur, 0} end
redis.call('HSET', hkey(tok), 'fence', f)
return {cur, 1}
)lua";

// Digests come from the compiler (sha1.h): no hashing at run time.
template <const std::string_view& Body>
Script make(const char* name, bool read_only = false) {
  static constexpr std::array<char, 40> kSha = sha1_hex(kPrelude, Body);
  return Script{name, std::string(kPrelude) + std::string(Body),
                std::string(kSha.data(), kSha.size()), read_only};
}

}  // namespace

const std::string& script_prelude() {
  static const std::string p(kPrelude);
  return p;
}

const Script& acquire_script() {
  static const Script s = make<kAcquire>("acquire");
  return s;
}
const Script& extend_script() {
  static const Script s = make<kExtend>("extend");
  return s;
}
const Script& release_script() {
  static const Script s = make<kRelease>("release");
  return s;
}
const Script& leave_script() {
  static const Script s = make<kLeave>("leave");
  return s;
}
const Script& undo_script() {
  static const Script s = make<kUndo>("undo");
  return s;
}
const Script& status_script() {
  static const Script s = make<kStatus>("status", true);
  return s;
}
const Script& break_script() {
  static const Script s = make<kBreak>("break");
  return s;
}
const Script& forget_script() {
  static const Script s = make<kForget>("forget");
  return s;
}
const Script& fence_script() {
  static const Script s = make<kFence>("fence");
  return s;
}

Args keys_of(const LockNames& n) {
  return {n.lock, n.sub("fence"), n.sub("holders"), n.sub("limit"), n.sub("queue"), n.sub("qseq")};
}

namespace {

bool starts_with(const std::string& s, const char* p) {
  return s.rfind(p, 0) == 0;
}

// A server without EVAL_RO/EVALSHA_RO (Redis < 7), or an ACL that allows only
// the plain commands: read-only scripts then go by EVALSHA/EVAL (they write
// nothing either way).
bool no_read_only_variant(const Result& r) {
  if (r.failure || !r.reply.is_error()) return false;
  const std::string& m = r.reply.str;
  bool ro = m.find("_ro") != std::string::npos || m.find("_RO") != std::string::npos;
  return starts_with(m, "ERR unknown command") || (starts_with(m, "NOPERM") && ro);
}

// The command that line `line` (1 = the first) of `source` runs first, in
// upper case ("PUBLISH" for "redis.call('PUBLISH', chan, msg)"), or "".
std::string command_on_line(const std::string& source, long line) {
  size_t at = 0;
  for (long n = 1; n < line && at != std::string::npos; ++n) {
    at = source.find('\n', at);
    if (at != std::string::npos) ++at;
  }
  if (line < 1 || at == std::string::npos) return "";
  std::string text = source.substr(at, source.find('\n', at) - at);
  auto call = text.find("call('");
  if (call == std::string::npos) return "";
  call += 6;
  std::string name = text.substr(call, text.find('\'', call) - call);
  for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return name;
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
  if (!starts_with(m, "NOPERM") && !in_script) return std::nullopt;
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
  std::string command;
  if (auto q = m.find("run the '"); q != std::string::npos) {
    command = truncate_text(m.substr(q + 9, m.find('\'', q + 9) - q - 9), 64);
    for (char& ch : command) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  } else if (auto l = m.find("@user_script:"); l != std::string::npos) {
    command = command_on_line(s.source, std::strtol(m.c_str() + l + 13, nullptr, 10));
  }
  if (command.empty()) return std::nullopt;  // server_error still says 77
  std::string grant = "+" + escape_text(command);
  for (char& ch : grant) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (starts_with(command, "EVAL")) grant = "+evalsha +eval";
  return Error(ErrorKind::Permission,
               fmt::format("the ACL user '{}' at {} may not run {} (the {} script needs it): "
                           "grant it with ACL SETUSER {} {}",
                           user, url, escape_text(command), s.name, user, grant));
}

}  // namespace

void run_script(Client& client, const Script& script, const Args& keys, const Args& argv,
                ReplyCallback given_cb, Millis timeout, const std::vector<ScriptCall>& undo,
                const std::string& node) {
  // An ACL refusal becomes one line that says what to grant.
  ReplyCallback cb = [c = &client, sc = &script, keys, given_cb = std::move(given_cb)](Result r) {
    if (!r.failure && r.reply.is_error())
      if (auto e = acl_refusal(*c, *sc, keys, r.reply.str)) r.failure = *e;
    given_cb(std::move(r));
  };
  auto build = [&](const char* verb, const std::string& body, const Args& av) {
    Args a{verb, body, std::to_string(keys.size())};
    a.insert(a.end(), keys.begin(), keys.end());
    a.insert(a.end(), av.begin(), av.end());
    return a;
  };
  std::vector<Args> undo_cmds;
  for (auto& u : undo) undo_cmds.push_back(build("EVAL", u.script->source, u.argv));
  bool ro = script.read_only && !client.server().no_eval_ro;
  Args evalsha = build(ro ? "EVALSHA_RO" : "EVALSHA", script.sha1, argv);
  Args eval = build(ro ? "EVAL_RO" : "EVAL", script.source, argv);
  Client* c = &client;
  const Script* sc = &script;
  Args keys_copy = keys, argv_copy = argv;
  client.command(
      std::move(evalsha),
      [c, sc, ro, keys_copy, argv_copy, eval = std::move(eval), cb = std::move(cb), timeout,
       undo_cmds, undo, node](Result r) mutable {
        if (ro && no_read_only_variant(r)) {
          c->server().no_eval_ro = true;
          run_script(*c, *sc, keys_copy, argv_copy, std::move(cb), timeout, undo, node);
          return;
        }
        if (!r.failure && r.reply.is_error() && starts_with(r.reply.str, "NOSCRIPT")) {
          std::string key = keys_copy.empty() ? "" : keys_copy.front();
          c->command(std::move(eval), std::move(cb),
                     CallOptions{timeout, std::move(undo_cmds), std::move(key), node});
          return;
        }
        cb(std::move(r));
      },
      // Every key of a lock shares one slot: the first names it.
      CallOptions{timeout, undo_cmds, keys.empty() ? "" : keys.front(), node});
}

}  // namespace rlock
