-- Shared by every script. Times come from the server (TIME), never from a
-- client: a client with a wrong clock cannot reorder or stall anything.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- rlock lock protocol 4 (docs/PROTOCOL.md)
local LOCK, FENCE, HOLDERS, LIMIT, QUEUE, QSEQ = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local BASE = LOCK .. ':'
local function hkey(t) return BASE .. 'h:' .. t end
local function wkey(t) return BASE .. 'w:' .. t end
local function rkey(t) return BASE .. 'r:' .. t end
-- A waiter's notices (turn, done, break, superseded), waited on with BLPOP.
local function tkey(t) return BASE .. 't:' .. t end
local TURN_MS = 10000
-- The waiter that asked to supersede the others (--supersede), the first
-- join of every superseding job (SUPS: token -> server ms, and under NEWEST
-- and NEWEST_BY, names no token can have, the newest one and who it is: kept
-- LOG_IDLE_MS after the last superseding join, so that an older job is
-- superseded whenever it comes back), and the mark of one it replaced: by
-- whom (kept SUPERSEDED_MS).
local SUP, SUPS = BASE .. 'sup', BASE .. 'sups'
local NEWEST, NEWEST_BY = ' newest', ' by'
local function xkey(t) return BASE .. 'x:' .. t end
local SUPERSEDED_MS = 600000
-- The most superseding jobs SUPS keeps (the oldest half goes past it).
local SUPS_MAX = 1000
-- The lock's history: a capped stream of events that the scripts changing the
-- state write in the same call (each script sets HISTORY from its ARGV: how
-- many events to keep, 0 = none), and the holders it has recorded as
-- acquired and not yet as ended (token -> "fence<TAB>who"), so that an expiry
-- without release is recorded by the next script that notices it. Both
-- expire after LOG_IDLE_MS without an event.
local LOG, LIVE = BASE .. 'log', BASE .. 'live'
local LOG_IDLE_MS = 604800000
local HISTORY = 100
local EXACT = false  -- trim the log exactly (a negative cap: quorum mode)
local tm = redis.call('TIME')
local NOW = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
-- The value of LOCK while shared holders hold it (--shared): it keeps SET NX
-- clients and older rlock hosts out, and no token equals it (tokens have no
-- spaces). The shared holders themselves are the members of HOLDERS.
local SHARED = 'shared lock'
-- The most waiters one script wakes at a time.
local WAKE_MAX = 256
-- Set while every member of the line joined through a script of protocol 4
-- or later: the :qseq value of the newest such join. A 0.4.0 join raises
-- :qseq without it, so the two then differ. It expires with the line.
local QNEW = BASE .. 'qnew'

-- Nothing half-written. A script's writes stay when a later command fails,
-- so a script that writes asks the server first (Redis 7:
-- redis.acl_check_cmd) whether the ACL lets it run each command it may run
-- on the lock's keys, and otherwise stops before its first write with the
-- error the command itself would have raised. One ask(COMMAND, ...) per
-- command, written out in the script: `...` are the arguments after the key
-- that make it a whole command (the server reads the key positions from
-- them: DEL or EXISTS given more would be asked about more keys), as
-- tests/helpers/preflight.py checks. A call each, rather than a loop over a
-- list: half the time per question (docs/PERFORMANCE.md). Nothing to ask on
-- Redis 6, which has no such call.
-- (PUBLISH is never asked: the scripts that need it publish before they
-- write anything, so that a refused channel names itself.)
local acl_check = redis.acl_check_cmd
local function ask(c, ...)
  if acl_check and not acl_check(c, LOCK, ...) then
    error({err = "NOPERM this user has no permissions to run the '" .. string.lower(c) ..
                 "' command"})
  end
end

-- Gives `key`, just written, its expiry; where the server refuses it (a
-- Redis 6 ACL, which cannot be asked first), `key` goes, `undo` (optional)
-- takes back what was written with it, then the error is raised: a record is
-- never left without an expiry.
local function expire(key, ms, undo)
  local r = redis.pcall('PEXPIRE', key, ms)
  if type(r) == 'table' and r.err then
    redis.pcall('DEL', key)
    if undo then undo() end
    error(r.err)  -- (a string: Redis 6 raises no tables)
  end
end

-- A waiter is live while its w: hash has an expiry (its queue lease). A hash
-- without one was never completed (its script failed between the two
-- writes): it counts as dead.
local function waiter_live(t) return redis.call('PTTL', wkey(t)) > 0 end

-- True when the line and its keys are gone (:queue, :qseq and :qnew: one
-- EXISTS instead of reading the line and deleting what it left), read once
-- per call; false while it may have waiters; nil: not known (read again).
-- What adds to the line sets it false; what removes from it, nil.
local line_gone
local function no_line()
  if line_gone == nil then line_gone = redis.call('EXISTS', QUEUE, QSEQ, QNEW) == 0 end
  return line_gone
end

-- Semaphore and shared holders whose lease ran out leave; returns them.
local function purge_holders()
  local dead = redis.call('ZRANGEBYSCORE', HOLDERS, '-inf', NOW)
  for _, t in ipairs(dead) do redis.call('DEL', hkey(t)) end
  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', HOLDERS, '-inf', NOW) end
  return dead
end

-- Calls visit(t) for the live waiters in arrival order until it returns true.
-- A waiter is live while its w: hash has an expiry (waiter_live); dead ones
-- met on the way are dropped from the queue, with what is left of their record.
local function walk_line(visit)
  if no_line() then return end
  local dead, from, stop = {}, 0, false
  while not stop do
    local batch = redis.call('ZRANGE', QUEUE, from, from + 31)
    if #batch == 0 then break end
    for _, t in ipairs(batch) do
      if not waiter_live(t) then
        dead[#dead + 1] = t
      elseif visit(t) then
        stop = true
        break
      end
    end
    from = from + #batch
  end
  for _, t in ipairs(dead) do
    redis.call('ZREM', QUEUE, t)
    redis.call('DEL', wkey(t))
  end
  -- (from == 0: the first ZRANGE found the queue empty)
  if from == 0 or redis.call('EXISTS', QUEUE) == 0 then
    redis.call('DEL', QSEQ, QNEW)
    line_gone = true
  end
end

-- The first n live waiters in arrival order.
local function live_head(n)
  local out = {}
  if n > 0 then walk_line(function(t) out[#out + 1] = t return #out >= n end) end
  return out
end

-- Whether waiter `t` waits for a shared hold.
local function waits_shared(t) return redis.call('HGET', wkey(t), 'mode') == 'shared' end

-- Free slots right now: 0 or 1 for a lock (0 while shared holders hold it),
-- limit - holders for a semaphore. A marker left without shared holders (a
-- release by an older host) goes. `v`: LOCK's value when the caller knows it
-- (read, or written, since the last write to LOCK; false: none), nil: read here.
-- For a lock, LOCK's value after it comes second.
local function capacity(limit, v)
  if limit == 0 then
    if v == nil then v = redis.call('GET', LOCK) end
    if v == SHARED and redis.call('EXISTS', HOLDERS) == 0 then
      redis.call('DEL', LOCK)
      v = false
    end
    if v then return 0, v end
    return 1, v
  end
  return limit - redis.call('ZCARD', HOLDERS)
end

-- LOCK's value, read with LIMIT's in one MGET (release: a holder's value is
-- found there); LIMIT's stays known (limit_read: a string, false for none,
-- nil when not read) until the script writes it. MGET answers nil for a key
-- of another type where GET raises an error: LOCK found empty is read again
-- with GET, which names a foreign value (a free lock is no release's common
-- case), and a foreign LIMIT counts as none. An ACL without MGET costs the
-- one read.
local limit_read
local function read_lock()
  -- (asked first: a refused command, even caught, is written to the ACL LOG)
  local r = (not acl_check or acl_check('MGET', LOCK, LIMIT)) and redis.pcall('MGET', LOCK, LIMIT)
  if type(r) == 'table' and not r.err then
    limit_read = r[2]
    if r[1] then return r[1] end
  end
  return redis.call('GET', LOCK)
end

-- Notices go by sharded pub/sub (SPUBLISH) on a Redis 7 Cluster node, so that
-- they stay on the lock's shard instead of crossing the whole Cluster, and by
-- PUBLISH elsewhere (or where SPUBLISH is unknown or refused). Subscribers listen
-- for both kinds. A PUBLISH that is refused raises an error.
-- A Cluster node answers CLUSTER MYID, asked once per call; where the lock's
-- history remembers that the server is no Cluster node (the :live field TOPO,
-- read by ending), nothing is asked. Only that is remembered, never "Cluster":
-- a marker copied with the keys to another kind of server (a failover cannot
-- change the kind: replicas are of their master's) must cost no notice. A
-- wrong 'no Cluster' on a Cluster node publishes with PUBLISH, which reaches
-- every node and rlock's subscribers there (they subscribe with both); a wrong
-- 'Cluster' on a plain Redis 7 would SPUBLISH to nobody who subscribed with
-- SUBSCRIBE alone, as a waiter told that the server is no Cluster node does.
local sharded
-- This call's CLUSTER MYID had Redis's own answer "cluster support disabled":
-- no Cluster node (record_end remembers it). Any other refusal (an ACL
-- without CLUSTER, as the documented locker user has) proves nothing.
local no_cluster = false
local function publish(chan, msg)
  if sharded == nil then
    local r = redis.pcall('CLUSTER', 'MYID')
    sharded = type(r) == 'string'
    no_cluster = type(r) == 'table' and type(r.err) == 'string' and
      string.find(r.err, 'cluster support disabled', 1, true) ~= nil
  end
  if sharded then
    local r = redis.pcall('SPUBLISH', chan, msg)
    if type(r) ~= 'table' or not r.err then return end
    sharded = false
  end
  redis.call('PUBLISH', chan, msg)
end

-- Tells waiter `t` `msg` (turn, done, break, superseded): on its channel
-- (chan:t, for waiters of 0.4.0, which subscribe) and on its list (tkey),
-- which a waiter of this release waits on with BLPOP: a notice pushed before
-- it blocks is still there when it does. The list lasts TURN_MS and goes when
-- the waiter is granted or leaves the line. The push is best effort (pcall):
-- an ACL without LPUSH costs its waiters their wake-ups (they re-check), never
-- the script.
local function tell(chan, t, msg)
  publish(chan .. ':' .. t, msg)
  local r = redis.pcall('LPUSH', tkey(t), msg)
  if type(r) == 'number' and type(redis.pcall('PEXPIRE', tkey(t), TURN_MS)) ~= 'number' then
    redis.pcall('DEL', tkey(t))  -- never a list without an expiry
  end
end

-- Wakes the first n live waiters.
local function notify(chan, n)
  if n <= 0 then return end
  for _, t in ipairs(live_head(n)) do tell(chan, t, 'turn') end
end

-- The stored --limit, forgotten once nobody holds or waits; while only
-- waiters are left, it lasts as long as their line (keep_line).
local function current_limit()
  local cur = limit_read
  if cur == nil then cur = redis.call('GET', LIMIT) end
  if not cur then return 0 end
  if redis.call('EXISTS', HOLDERS) == 0 then
    if #live_head(1) == 0 then
      redis.call('DEL', LIMIT)
      limit_read = false
      return 0
    end
    local left = redis.call('PTTL', QUEUE)
    if left > 0 and redis.call('PTTL', LIMIT) == -1 then redis.call('PEXPIRE', LIMIT, left) end
  end
  return tonumber(cur)
end

-- Wakes only the waiters whose turn it is (no thundering herd): as many as a
-- semaphore has free places; for a lock, its first waiter when nobody holds
-- it, and the shared waiters in a row at the head of the line when nobody or
-- only shared holders hold it (they may all hold it together). `v`: LOCK's
-- value when the caller knows it (capacity).
local function wake(chan, v)
  local limit = current_limit()
  if limit > 0 then return notify(chan, capacity(limit)) end
  local slots, value = capacity(0, v)
  local free = slots == 1
  if not free and value ~= SHARED then return end
  local n = 0
  walk_line(function(t)
    local shared = waits_shared(t)
    if not shared and (not free or n > 0) then return true end
    tell(chan, t, 'turn')
    n = n + 1
    return not shared or n >= WAKE_MAX
  end)
end

-- `s` cut to at most `n` bytes, never inside a UTF-8 sequence.
local function cut(s, n)
  s = s or ''
  if #s <= n then return s end
  s = string.sub(s, 1, n)
  for i = #s, math.max(1, #s - 3), -1 do
    local b = string.byte(s, i)
    if b < 0x80 then break end
    if b >= 0xC0 then
      local need = (b >= 0xF0 and 4) or (b >= 0xE0 and 3) or 2
      if #s - i + 1 < need then s = string.sub(s, 1, i - 1) end
      break
    end
  end
  return s
end

-- A stored field as a reply shows it: at most 1 KiB, so that no holder or
-- waiter record (written by any client) can make a reply large.
local function field(v) return cut(v, 1024) end

-- Who supersedes superseding job `t`: the newest superseding job's who, when
-- `t` joined before it (nil: nobody), at most 1 KiB. Best effort: a value of
-- another type at SUPS (another program's) supersedes nobody, and costs a
-- superseding holder's renewal nothing.
local function newer_than(t)
  local h = redis.pcall('HMGET', SUPS, t, NEWEST, NEWEST_BY)
  if type(h) ~= 'table' or h.err then return nil end
  if h[1] and h[2] and h[2] ~= t then return field(h[3] or '') end
  return nil
end

-- A stored counter (the fence, a limit) as a reply shows it: a whole number,
-- else 0. Lua reads "nan", "inf" and "1e30" as numbers, which a reply would
-- turn into -2^63; a value that is no number at all would cut the reply short.
local function whole(v)
  local f = tonumber(v or '0')
  if not f or f ~= f or f % 1 ~= 0 or f >= 2 ^ 63 or f < -2 ^ 63 then return 0 end
  return f
end

local function holder_fields(t, pttl)
  local h = redis.call('HMGET', hkey(t), 'host', 'pid', 'user', 'cmd', 'since', 'fence', 'ttl',
                       'kept', 'exit', 'mode', 'done', 'label', 'slot', 'ended')
  -- The live nested holds under `t` (nest.lua; the set nkey below names).
  -- (pcall: another program's value of another type there counts as none)
  local nested = redis.pcall('ZCOUNT', BASE .. 'n:' .. t, '(' .. NOW, '+inf')
  if type(nested) ~= 'number' then nested = 0 end
  -- Made whole by one constructor, then cut where needed: `list --json` makes
  -- one a lock.
  local r = {field(t), pttl, h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8], h[9], h[10], h[11],
             h[12], h[13], h[14], nested}
  for j = 3, 16 do
    local v = r[j]
    if not v then r[j] = '' elseif #v > 1024 then r[j] = field(v) end
  end
  return r
end

-- Up to `max` live holders, {token, pttl, host, pid, user, cmd, since, fence,
-- ttl, kept, exit, mode, done, label, slot, ended, nested} each (ended: when
-- its own release came while nested holds ran, '' if not; nested: how many
-- live nested holds it has), how many there are, and
-- whether a plain holder's token is at LOCK. Reads only. `plain_alone`: such a
-- token ends the search (`list`): acquire refuses --limit and --shared while
-- a plain holder holds, so HOLDERS has none then. `t`: LOCK's value when the
-- caller read it already (`list`: one MGET a batch), else nil.
local function holders(max, plain_alone, t)
  local out, n = {}, 0
  if t == nil then t = redis.call('GET', LOCK) end
  local plain = t and t ~= SHARED
  if plain then
    out[1] = holder_fields(t, redis.call('PTTL', LOCK))
    n = 1
    if plain_alone then return out, n, true end
  end
  local live = '(' .. NOW
  n = n + redis.call('ZCOUNT', HOLDERS, live, '+inf')
  local z = redis.call('ZRANGEBYSCORE', HOLDERS, live, '+inf', 'WITHSCORES', 'LIMIT', 0, max)
  for i = 1, #z, 2 do
    if #out >= max then break end
    out[#out + 1] = holder_fields(z[i], tonumber(z[i + 1]) - NOW)
  end
  return out, n, plain
end

-- 'plain', 'semaphore', 'shared' or nil: how `t` holds the lock, if it does.
-- A shared holder whose marker has gone (deleted, broken by an older host)
-- holds nothing: others may have taken the lock since. `v`: LOCK's value when
-- the caller knows it (capacity).
local function held_by(t, v)
  if v == nil then v = redis.call('GET', LOCK) end
  if v == t then return 'plain' end
  if redis.call('ZSCORE', HOLDERS, t) then
    if redis.call('HGET', hkey(t), 'mode') ~= 'shared' then return 'semaphore' end
    if v == SHARED then return 'shared' end
  end
  return nil
end

-- Nested holds under holder `t` (nest.lua): a sorted set of them, scored by
-- their lease's end (protocol 4).
local function nkey(t) return BASE .. 'n:' .. t end

-- How many ms the longest live nested hold under `t` has left (0: none).
local function nested_left(t)
  local top = redis.call('ZRANGE', nkey(t), -1, -1, 'WITHSCORES')
  if #top < 2 then return 0 end
  local left = (tonumber(top[2]) or 0) - NOW
  if not (left > 0) then return 0 end
  -- A whole number of ms that PEXPIRE takes, whatever score another program
  -- wrote there (1e300, inf, a fraction).
  return math.max(1, math.floor(math.min(left, 2 ^ 52)))
end

-- History ----------------------------------------------------------------
-- Best effort: a foreign value at :log or :live, or an ACL without the
-- stream commands, costs the history, never the lock. Every history command
-- goes through hcall (redis.pcall), whose errors are ignored.

local function hcall(...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then return nil end
  return r
end

-- The :live field that names the plain holder recorded as live.
local PLAIN = '=plain'
-- The :live field that remembers the server's kind for publish: 'p', no
-- Cluster node (a name no token can have: tokens have no spaces). It lasts
-- as :live does, past the last tenure. `unmarked`: an ending() of this call
-- read :live without it (record_end writes it once publish has asked).
local TOPO, TOPO_PLAIN = ' topo', 'p'
local unmarked = false
-- The :live field TOUCH: the server ms when :log and :live were last given
-- their idle expiry by a script that reads it. Within TOUCH_MS of it, an
-- event leaves both expiries as they are (two PEXPIREs fewer per event):
-- the history goes 6 to 7 days after its last event (a negative TOUCH: the
-- server had no NOMKSTREAM then, see record). `touched`: the value this
-- call read (false: none, or not a number; nil: not read).
local TOUCH, TOUCH_MS = ' touch', 86400000
local touched

-- :live's fields PLAIN, TOPO, TOUCH and `t` (a token, or nil), read in one
-- HMGET and kept until this call writes to :live (live_seen = nil).
local live_seen, live_seen_t
local function live_read(t)
  if live_seen and live_seen_t == t then return live_seen end
  local h = hcall('HMGET', LIVE, PLAIN, TOPO, TOUCH, t or PLAIN)
  if type(h) ~= 'table' then return nil end
  if touched == nil then touched = tonumber(h[3]) or false end
  live_seen, live_seen_t = h, t
  return h
end

-- The number of events to keep, from a script's ARGV (absent: 100). A
-- negative cap (quorum mode) keeps as many, trimmed exactly (record), so that
-- every master keeps the same newest events.
local function history_cap(arg)
  local n = tonumber(arg or '100') or 100
  if n < 0 then EXACT, n = true, -n end
  return math.max(0, math.min(10000, math.floor(n)))
end

-- "LABEL" or "HOST pid PID": who a holder or waiter is, in an event.
local function who_of(key)
  local h = hcall('HMGET', key, 'label', 'host', 'pid')
  if type(h) ~= 'table' then return '' end
  if h[1] and h[1] ~= '' then return field(h[1]) end
  if not h[2] then return '' end
  return field(h[2]) .. ' pid ' .. field(h[3])
end

-- Appends an event: its name, the token it is about, then field/value pairs.
-- True when it was appended (the log's and :live's idle expiry then start
-- again). The trim is approximate (MAXLEN ~): Redis drops old events a whole
-- stream node at a time, so the log keeps the newest HISTORY events and less
-- than one node more (docs/PROTOCOL.md, the :log key); an exact trim walks
-- the first node's deleted entries on every append (4.5 us a call against 1).
-- A server whose nodes have no bound (stream-node-max-entries and -bytes
-- both 0) has no whole node to drop: there the appends made in one
-- millisecond of eight trim exactly, which bounds the log as well. In quorum
-- mode (EXACT) every append does: the masters' logs, merged by history,
-- must hold the same newest events, whatever their nodes and clocks.
-- Where :live was touched (TOUCH) less than TOUCH_MS ago, the log is
-- appended to only if it is there (NOMKSTREAM, Redis 6.2): a log that went
-- (deleted, evicted) is made again below, with its expiry. A server that
-- answers NOMKSTREAM with an error (before 6.2) gets the old way, and TOUCH
-- becomes minus the time: for TOUCH_MS nothing is tried there, and it is
-- written no more often than once a day either.
local function record(ev, t, ...)
  if HISTORY <= 0 then return false end
  local how = (EXACT or NOW % 8 == 0) and '=' or '~'
  local at = touched and math.abs(touched)
  local recent = at and at > 0 and at <= NOW and NOW - at < TOUCH_MS
  local mark  -- what TOUCH becomes (nil: as it is)
  if recent and touched > 0 then
    local r = redis.pcall('XADD', LOG, 'NOMKSTREAM', 'MAXLEN', how, HISTORY, '*', 'ev', ev, 'tok',
                          field(t), ...)
    if type(r) == 'string' then return true end
    if type(r) == 'table' and r.err then mark = -NOW end
  elseif touched ~= nil and not recent then
    mark = NOW
  end
  if hcall('XADD', LOG, 'MAXLEN', how, HISTORY, '*', 'ev', ev, 'tok', field(t), ...) then
    -- (TOUCH first: :live is made by it if it went, and then gets its expiry)
    if mark and hcall('HSET', LIVE, TOUCH, mark) then touched, live_seen = mark, nil end
    -- Refused (a script that asks nothing first: break): a log that this
    -- XADD made goes, with the event (never a history without an expiry);
    -- the :live fields that no tenure needs go, and a :live that they made
    -- (HSET) goes with them.
    if not hcall('PEXPIRE', LOG, LOG_IDLE_MS) and redis.pcall('PTTL', LOG) == -1 then
      redis.pcall('DEL', LOG)
    end
    if not hcall('PEXPIRE', LIVE, LOG_IDLE_MS) then
      hcall('HDEL', LIVE, TOUCH, TOPO)
      live_seen = nil
    end
    return true
  end
  return false
end

-- `t` has been granted (fence) to `who` (as who_of its hash says it):
-- recorded as acquired, and as live (`plain`: as the plain holder).
local function record_acquired(t, fence, plain, who, ...)
  if HISTORY <= 0 then return end
  live_seen = nil
  if plain then
    hcall('HSET', LIVE, t, fence .. '\t' .. who, PLAIN, t)
  else
    hcall('HSET', LIVE, t, fence .. '\t' .. who)
  end
  if not record('acquired', t, 'fence', fence, 'who', who, ...) then
    hcall('PEXPIRE', LIVE, LOG_IDLE_MS)
  end
end

-- What an ending event says of `t`, read before its hash goes: {fence, who,
-- live, plain}, from its live record, else from its hash (a lease kept on
-- purpose is no longer live); plain: :live names `t` as the plain holder
-- (read with its record: no script records another between ending(t) and
-- record_end for `t`). nil when nothing is recorded (HISTORY 0). Reads TOPO
-- with them: a server known to be no Cluster node is not asked (publish).
local function ending(t)
  if HISTORY <= 0 then return nil end
  local h = live_read(t)
  if not h then
    h = {}
  elseif h[2] == TOPO_PLAIN then
    if sharded == nil then sharded = false end
  else
    unmarked = true
  end
  local live = h[4]
  if type(live) ~= 'string' then live = nil end
  local fence, who = string.match(live or '', '^([^\t]*)\t(.*)$')
  if not live then
    fence, who = hcall('HGET', hkey(t), 'fence'), who_of(hkey(t))
    if type(fence) ~= 'string' then fence = '' end
  end
  return {field(fence), who or '', live ~= nil, h[1] == t}
end

-- `t`'s tenure ended with event `ev` (released, kept, done, expired, lost,
-- broken), `info` (ending(t)) saying who it was.
-- Where :live was read without TOPO and this call found no Cluster node, TOPO
-- is written (first: :live keeps its expiry) and :live gets its expiry from
-- the event, else here (never a :live without one).
local function record_end(ev, t, info, ...)
  if not info then return end
  live_seen = nil
  local marked = unmarked and no_cluster and hcall('HSET', LIVE, TOPO, TOPO_PLAIN)
  if marked then unmarked = false end
  if info[3] then
    if info[4] then hcall('HDEL', LIVE, t, PLAIN) else hcall('HDEL', LIVE, t) end
  end
  if not record(ev, t, 'fence', info[1], 'who', info[2], ...) and marked and
      not hcall('PEXPIRE', LIVE, LOG_IDLE_MS) then
    hcall('HDEL', LIVE, TOPO)
  end
end

-- Holders recorded as live whose lease is gone, expired without a release,
-- each noticed by the first script that looks: the ones purge_holders found
-- dead (`dead`), and the plain holder when the lock is no longer its. The
-- work does not grow with the number of holders. `except` (a caller's own
-- token) is left to its own release, which knows why it lost it. `v`: LOCK's
-- value when the caller knows it (capacity). `mine` (optional): the token
-- whose :live field is read with PLAIN's (live_read), for the caller's ending.
local function notice_expired(dead, except, v, mine)
  if HISTORY <= 0 then return end
  for _, t in ipairs(dead) do
    if t ~= except and hcall('HEXISTS', LIVE, t) == 1 then record_end('expired', t, ending(t)) end
  end
  local h = live_read(mine)
  local p = h and h[1]
  if type(p) == 'string' and p ~= except then
    if v == nil then v = redis.call('GET', LOCK) end
    if v ~= p then record_end('expired', p, ending(p)) end
  end
end

-- The attempt number last stamped on a holder's or waiter's hash (0: none).
local function stamp_of(key)
  return tonumber(redis.call('HGET', key, 'att') or '0') or 0
end

-- The marker lasts exactly as long as the longest shared lease (a lease cut
-- short cuts it too), and goes with the last shared holder. So does the set
-- of shared holders: holders whose leases all ran out unreleased leave
-- nothing behind (only protocol 4 hosts hold shared). Best effort (pcall): a
-- refused PEXPIRE (a Redis 6 ACL) leaves the set as it was, without expiry.
-- A score another program wrote (1e300, inf, a fraction) gives a whole lease
-- of at most 2^52 ms, one that SET PX takes.
local function fit_marker()
  local top = redis.call('ZRANGE', HOLDERS, -1, -1, 'WITHSCORES')
  local left = #top == 2 and tonumber(top[2]) - NOW or 0
  if left > 0 then
    left = math.floor(math.min(left, 2 ^ 52))
    if left < 1 then left = 1 end
    redis.call('SET', LOCK, SHARED, 'PX', left)
    redis.pcall('PEXPIRE', HOLDERS, left)
  else
    redis.call('DEL', LOCK)
  end
end

-- The lease of `t` (held as `how`) ends `ttl` ms from now.
-- The record's PEXPIRE comes first: a full server (maxmemory, noeviction)
-- refuses a script's ZADD or SET only while the script has written nothing,
-- so a semaphore's or a shared holder renews under OOM as a plain one does.
local function set_lease(t, how, ttl)
  redis.call('PEXPIRE', hkey(t), ttl)
  if how == 'plain' then
    redis.call('PEXPIRE', LOCK, ttl)
  else
    redis.call('ZADD', HOLDERS, 'XX', NOW + ttl, t)
    if how == 'shared' then fit_marker() end
  end
end

-- `t` (held as `how`) lets go: say so on the release channel, then wake
-- whoever's turn it is. A tombstone holding release id `rid` for `tomb` ms
-- (0: none) lets a retry of the same release tell "done" from "lost".
local function drop_holder(t, how, chan, tomb, rid)
  -- A foreign value at :queue fails here, before anything is deleted (wake
  -- reads the line after the deletes).
  if not no_line() then redis.call('ZCARD', QUEUE) end
  -- Publish first: a script's writes are not rolled back, so a PUBLISH the
  -- ACL refuses must fail before anything is deleted.
  publish(chan, t)
  local v  -- LOCK's value after this, when known (capacity)
  if how == 'plain' then
    redis.call('DEL', LOCK, hkey(t))
    v = false
  else
    redis.call('ZREM', HOLDERS, t)
    if how == 'shared' then fit_marker() end
    redis.call('DEL', hkey(t))
  end
  if tomb > 0 then redis.call('SET', rkey(t), rid, 'PX', tomb) end
  wake(chan, v)
end

-- `t` leaves the line; the waiters whose turn it now is are woken.
local function drop_waiter(t, chan)
  local was = redis.call('ZREM', QUEUE, t)
  line_gone = nil
  redis.call('DEL', wkey(t), tkey(t))
  if redis.call('GET', SUP) == t then redis.call('DEL', SUP) end
  if was == 1 then wake(chan) end
  if redis.call('EXISTS', QUEUE) == 0 then redis.call('DEL', QSEQ, QNEW) end
  return was
end

-- The line's keys (:queue, :qseq, :qnew, and a semaphore's :limit while
-- nobody holds it) last at least `ms` more, so that they go by themselves
-- once the last waiter's lease has run out, never before. Only while every
-- member joined through a script of protocol 4 or later (:qnew = :qseq):
-- 0.4.0 refreshes a waiter's hash alone, so a line with one of its waiters
-- keeps no expiry (as in 0.4.0) until it empties. `joined`: the caller has
-- just added the member with this :qseq number (nil: a refresh).
local function keep_line(ms, joined)
  if joined then line_gone = false end
  local seq = redis.call('GET', QSEQ)
  local ttl = redis.call('PTTL', QUEUE)
  local known = ttl > 0 and redis.call('GET', QNEW) == tostring(joined and joined - 1 or seq)
  if joined and redis.call('ZCARD', QUEUE) == 1 then known = true end
  local keys = {QUEUE, QSEQ, QNEW}
  if redis.call('EXISTS', HOLDERS) == 0 and redis.call('EXISTS', LOCK) == 0 then
    keys[4] = LIMIT
  end
  if not known then
    -- A 0.4.0 waiter is in line (or none of its members came through this
    -- version): no expiry, as 0.4.0 keeps it.
    if ttl > 0 then redis.call('PERSIST', QUEUE) redis.call('PERSIST', QSEQ) redis.call('PERSIST', LIMIT) end
    redis.call('DEL', QNEW)
    return
  end
  if joined then redis.call('SET', QNEW, joined, 'PX', ms) end
  for _, k in ipairs(keys) do
    local left = redis.call('PTTL', k)
    if left == -1 or (left >= 0 and left < ms) then redis.call('PEXPIRE', k, ms) end
  end
end

-- Status ----------------------------------------------------------------------
-- What `status` says of the lock, reading only: up to `max` holder and waiter
-- records (dead ones skipped, never removed), the counts, the limit, the fence
-- and the newest events of its history (status.lua describes the reply).
-- `list --json` passes what its SCAN saw: `queue` false for a lock without a
-- :queue key (the line is not read), `limit_seen` false for one without a :limit
-- key (read all the same unless a plain holder holds: a semaphore's limit is
-- always read), `plain_alone` and `t` (see holders), the fence counter's value
-- (`fence`, read with the batch's MGET) and `events` false: its objects carry
-- no last events (`status` and `history` show them), which would be a third of
-- its work.
local function status_of(max, queue, plain_alone, limit_seen, t, fence, events)
  local hs, nh, plain = holders(max, plain_alone, t)
  local waiters, nw, from = {}, 0, 0
  while queue do
    local batch = redis.call('ZRANGE', QUEUE, from, from + 255)
    if #batch == 0 then break end
    for _, t in ipairs(batch) do
      local pttl = redis.call('PTTL', wkey(t))
      if pttl > 0 then
        nw = nw + 1
        if #waiters < max then
          local h = redis.call('HMGET', wkey(t), 'host', 'pid', 'user', 'cmd', 'since', 'mode',
                               'label', 'prio')
          waiters[#waiters + 1] = {field(t), pttl, field(h[1]), field(h[2]), field(h[3]),
                                   field(h[4]), field(h[5]), field(h[6]), field(h[7]), field(h[8])}
        end
      end
    end
    from = from + #batch
  end
  local limit = 0
  if (nh > 0 or nw > 0) and (limit_seen or not plain) then
    limit = whole(redis.call('GET', LIMIT))
  end
  -- The newest events of its history (protocol 4), newest first, each {id,
  -- field, value, ...}: what a free lock's status tells of its last holder.
  local last = {}
  local newest = events ~= false and hcall('XREVRANGE', LOG, '+', '-', 'COUNT', 3)
  if type(newest) ~= 'table' then newest = {} end
  for _, e in ipairs(newest) do
    local ev = {field(e[1])}
    for i = 1, math.min(#e[2], 32) do ev[#ev + 1] = field(e[2][i]) end
    last[#last + 1] = ev
  end
  if fence == nil then fence = redis.call('GET', FENCE) end
  return {limit, whole(fence), NOW, hs, waiters, nh, nw, last}
end
