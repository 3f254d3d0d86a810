-- ARGV: token, ttl_ms, limit (0 = plain), mode ('try'|'wait'|'regrant'), queue_lease_ms,
--       channel, host, pid, user, cmd, attempt (optional: >= 1, grows with
--       every attempt of one token; 0 or absent = not tracked); protocol 4,
--       each optional: kind ('shared' for a shared hold; else exclusive),
--       label, priority (an integer from -1000 to 1000; higher goes first),
--       supersede ('1': replace the waiter that asked for it before; an
--       older superseding job is answered SUPERSEDED),
--       max_waiters (a line of that many refuses newcomers; 0 = no cap),
--       history cap (events kept; 0 = none); protocol 4, each optional:
--       cancel ('1', with supersede: the holders that asked to supersede are
--       asked to stop, --cancel-in-progress), pool (a named pool's names,
--       separated by commas, in order; limit is their count)
-- Returns {'OK', fence, ttl, now, slot} (slot: a semaphore's number or a named
--         pool's name, else 0)
--       | {'TAKEN', position, free, holders, count, cluster} (cluster: 1 on a
--         Cluster node, where notices go by SPUBLISH, else 0: the waiter then
--         subscribes with SUBSCRIBE alone)
--       | {'QUEUED', position, free, holders, count}
--       | {'DONE', -1, 0, {holder}, 1} (kept by run --done-for)
--       | {'FULL', -1, free, holders, count} (max_waiters reached)
--       | {'SUPERSEDED', by} (a newer superseding waiter replaced this one)
--       | {'MIXED', stored_limit, pool} (-1: a shared lock; pool: the names of
--         the other holders' pool, '' for a count) | {'STALE', newest_attempt}
--       | {'GONE', 1|2} (mode 'regrant': the token's tombstone is here)
-- Mode 'regrant' (quorum mode: a holder grants its lease again on a master that
-- answered its renewal "not held") is 'try', except where a release with the
-- token (1) or a break (2) removed it: that answer may be older than they are.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (AcquireArgs, src/lock/script_args.h):
local tok = ARGV[1]                    -- the holder's or waiter's token
local ttl = tonumber(ARGV[2])          -- the lease, ms
local limit = tonumber(ARGV[3])        -- --limit (0: a lock, not a semaphore)
local mode = ARGV[4]                   -- 'try', 'wait' or 'regrant'
local qlease = tonumber(ARGV[5])       -- a waiter's place lease, ms
local chan = ARGV[6]                   -- the release channel
local host, pid = ARGV[7], ARGV[8]     -- who: its host and pid,
local user, cmd = ARGV[9], ARGV[10]    -- its user and command
-- Optional (older clients send fewer):
local att = tonumber(ARGV[11] or '0') or 0  -- the attempt (0: not tracked)
local shared = ARGV[12] == 'shared' and limit == 0  -- kind: 'shared' or exclusive
local label = ARGV[13] or ''           -- the holder's label ('' none)
-- the priority, -1000 to 1000 (higher goes first)
local prio = math.max(-1000, math.min(1000, math.floor(tonumber(ARGV[14] or '0') or 0)))
local supersede = ARGV[15] == '1'      -- replaces the superseding waiter before it
local cap = tonumber(ARGV[16] or '0') or 0  -- max waiters (0: no cap)
HISTORY = history_cap(ARGV[17])        -- events the history keeps (0: none)
local cancel = supersede and ARGV[18] == '1'  -- also stops superseding holders
local pool = limit > 0 and ARGV[19] or ''  -- a named pool's names ('' : a count)
-- (PUBLISH is not asked: a user without rlock's channels may still take a free lock)
-- Every command this script may run, asked of the ACL first (ask).
ask('DEL') ask('EXISTS') ask('GET') ask('HDEL', 'f') ask('HEXISTS', 'f') ask('HGET', 'f')
ask('HGETALL') ask('HLEN') ask('HMGET', 'f') ask('HSET', 'f', 'v') ask('HSETNX', 'f', 'v')
ask('INCR') ask('PERSIST') ask('PEXPIRE', '1') ask('PTTL') ask('SET', 'v') ask('ZADD', '1', 'm')
ask('ZCARD') ask('ZCOUNT', '0', '0') ask('ZRANGE', '0', '0') ask('ZRANGEBYSCORE', '0', '0')
ask('ZRANK', 'm') ask('ZREM', 'm') ask('ZREMRANGEBYSCORE', '0', '0') ask('ZSCORE', 'm')
if mode == 'regrant' then
  local tomb = redis.call('GET', rkey(tok))
  if tomb then return {'GONE', tomb == 'broken' and 2 or 1} end
  mode = 'try'
end
-- A holder's or a waiter's record: who (host, pid, user, cmd) and since when, and more.
local function describe(key, ...)
  redis.call('HSET', key, 'host', host, 'pid', pid, 'user', user, 'cmd', cmd,
             'since', NOW, ...)
  if shared then redis.call('HSET', key, 'mode', 'shared') end
  if label ~= '' then redis.call('HSET', key, 'label', field(label)) end
end
-- The lowest semaphore slot (1, 2 ...) no live holder has; in a named pool,
-- the first of its names no live holder has.
local function free_slot()
  local used = {}
  for _, t in ipairs(redis.call('ZRANGE', HOLDERS, 0, -1)) do
    local s = redis.call('HGET', hkey(t), 'slot')
    -- (a named pool's names are compared as strings: 'inf', '0x1' and 'nan'
    -- are names there, never numbers)
    if s and pool ~= '' then used[s] = true
    elseif s then
      local n = tonumber(s)
      if n and n == n then used[n] = true end
    end
  end
  if pool ~= '' then
    for name in string.gmatch(pool, '[^,]+') do
      if not used[name] then return name end
    end
    return 0  -- (a holder of 0.4.0 counts as a place: never reached)
  end
  local n = 1
  while used[n] do n = n + 1 end
  return n
end
-- The pool the live holders gave: a named pool's names, '' for a count, nil
-- when no holder says (none, or only 0.4.0 holders, which carry no slot).
local function holders_pool()
  for _, t in ipairs(redis.call('ZRANGE', HOLDERS, 0, -1)) do
    local h = redis.call('HMGET', hkey(t), 'pool', 'slot')
    if h[1] then return field(h[1]) end
    if h[2] then return '' end
  end
  return nil
end
-- The line has `cap` live waiters or more, `except` (a token, or nil) not counted.
local function full(except)
  if redis.call('ZCARD', QUEUE) - (except and 1 or 0) < cap then return false end
  local n = 0
  walk_line(function(t)
    if t ~= except then n = n + 1 end
    return n >= cap
  end)
  return n >= cap
end
local dead = purge_holders()
-- LOCK's value, read once: kept up to date by this script's writes to it
-- until the superseding steps below, which read it again.
local lv = redis.call('GET', LOCK)
notice_expired(dead, nil, lv)

-- A shared holder still listed after its marker went (deleted, evicted, or
-- broken by an older host) has lost the lock, and nothing will list it again:
-- its history says so now (read before its hash goes), not never.
local function drop_markerless(t)
  if HISTORY > 0 and hcall('HEXISTS', LIVE, t) == 1 then
    record_end('lost', t, ending(t), 'why', 'its shared marker was gone')
  end
  redis.call('DEL', hkey(t))
end
local cur = current_limit()
if limit == 0 and cur > 0 then return {'MIXED', cur} end
if limit > 0 then
  if lv == SHARED then
    if redis.call('EXISTS', HOLDERS) == 1 then return {'MIXED', -1} end
    redis.call('DEL', LOCK)  -- a marker left without shared holders
    lv = false
  elseif lv then
    return {'MIXED', 0}
  else
    -- No marker: shared holders still listed lost it (deleted, or evicted)
    -- and are no places of this semaphore (as a shared grant drops them).
    for _, t in ipairs(redis.call('ZRANGE', HOLDERS, 0, -1)) do
      if redis.call('HGET', hkey(t), 'mode') == 'shared' then
        redis.call('ZREM', HOLDERS, t)
        drop_markerless(t)
      end
    end
  end
  -- A pool is one definition: the same count, and the same names or none.
  local other = holders_pool()
  if cur > 0 and cur ~= limit then return {'MIXED', cur, other or ''} end
  if other and other ~= pool then return {'MIXED', cur > 0 and cur or limit, other} end
end
-- The token already holds: a retry whose first reply was lost, or a late copy
-- of an earlier attempt. A retry renews the lease, so that it ends ttl after
-- this reply was asked for; so does the same attempt sent again (a Cluster
-- client sends a script again on a new connection when the first one closed
-- after the script ran). An older attempt than the newest seen changes
-- nothing (its undo, right behind it, then finds it not the newest either).
local how = held_by(tok, lv)
if how then
  local seen = stamp_of(hkey(tok))
  if att > 0 and att < seen then return {'STALE', seen} end
  set_lease(tok, how, ttl)
  if att > 0 then redis.call('HSET', hkey(tok), 'att', att) end
  local h = redis.call('HMGET', hkey(tok), 'fence', 'slot')
  local slot = h[2] or 0
  if pool == '' then slot = tonumber(h[2] or '0') or 0 end
  return {'OK', tonumber(h[1] or '0') or 0, ttl, NOW, slot}
end
local queued = not no_line() and redis.call('ZSCORE', QUEUE, tok) or nil
if queued and att > 0 and att < stamp_of(wkey(tok)) then
  return {'STALE', stamp_of(wkey(tok))}
end
-- Replaced by a newer superseding waiter: it never joins again. (Only a
-- superseding job's token is ever marked.)
if not queued and mode == 'wait' and supersede then
  local by = redis.call('GET', xkey(tok))
  if by then return {'SUPERSEDED', by} end
end
-- Done for this period (run --done-for): nobody takes it until the lease ends,
-- and a waiter leaves the line.
if lv and lv ~= SHARED and redis.call('HEXISTS', hkey(lv), 'done') == 1 then
  if queued then
    redis.call('ZREM', QUEUE, tok)
    redis.call('DEL', wkey(tok), tkey(tok))
  end
  return {'DONE', -1, 0, {holder_fields(lv, redis.call('PTTL', LOCK))}, 1}
end
-- Latest wins: a superseding job that first joined before the newest one
-- (SUPS) is superseded whenever it comes back, in the line or not (its place
-- lost while it was stopped or cut off, the newer one granted or finished).
if supersede and mode == 'wait' then
  local by = newer_than(tok)
  if by then
    if queued then drop_waiter(tok, chan) end
    redis.call('SET', xkey(tok), by, 'PX', SUPERSEDED_MS)
    record('superseded', tok, 'by', by)
    return {'SUPERSEDED', by}
  end
end
-- A superseding job joining the line (the newest, from here on): replaces
-- the superseding waiter before it, first, so that it may take the lock that
-- one leaves free.
if supersede and mode == 'wait' and not queued then
  local old = redis.call('GET', SUP)
  if old == tok or (old and not redis.call('ZSCORE', QUEUE, old)) then old = nil end
  -- The cap counts the line as it will be once `old` has left; a newcomer
  -- refused by it replaces nobody.
  if cap > 0 and full(old) then
    local hs, n = holders(10)
    return {'FULL', -1, capacity(limit), hs, n}
  end
  local by = label
  if by == '' then by = host .. ' pid ' .. pid end
  by = field(by)
  -- --cancel-in-progress: the live holders that joined as superseding jobs
  -- (the older ones, SUPS knows them) are asked to stop; each hears it on
  -- the release channel, and its next renewal finds the mark.
  local stop = {}
  if cancel then
    local v = redis.call('GET', LOCK)
    local hs = redis.call('ZRANGEBYSCORE', HOLDERS, '(' .. NOW, '+inf', 'LIMIT', 0, 1000)
    if v and v ~= SHARED then hs[#hs + 1] = v end
    for _, t in ipairs(hs) do
      -- (a record without its lease's expiry is never written to)
      if t ~= tok and redis.pcall('HEXISTS', SUPS, t) == 1 and redis.call('PTTL', hkey(t)) > 0 and
         redis.call('HEXISTS', hkey(t), 'cancel') == 0 then
        stop[#stop + 1] = t
      end
    end
  end
  -- Told first: a PUBLISH that is refused must fail before anything is
  -- written (the one before would else be superseded by a job that failed).
  if old then tell(chan, old, 'superseded') end
  if #stop > 0 then publish(chan, 'cancel') end
  -- This job's first join, and it is the newest (it was, or it is new). The
  -- expiry is set at once: whatever fails next leaves nothing for ever.
  local first = redis.call('HSETNX', SUPS, tok, NOW) == 1
  redis.call('PEXPIRE', SUPS, LOG_IDLE_MS)
  if first and redis.call('HLEN', SUPS) > SUPS_MAX then
    -- The oldest half goes: a job that old is taken for a new one.
    local all, jobs = redis.call('HGETALL', SUPS), {}
    for i = 1, #all, 2 do
      if string.sub(all[i], 1, 1) ~= ' ' then
        jobs[#jobs + 1] = {tonumber(all[i + 1]) or 0, all[i]}
      end
    end
    table.sort(jobs, function(a, b) return a[1] < b[1] end)
    for i = 1, math.floor(#jobs / 2) do redis.call('HDEL', SUPS, jobs[i][2]) end
  end
  redis.call('HSET', SUPS, NEWEST, tok, NEWEST_BY, by)
  for _, t in ipairs(stop) do
    redis.call('HSET', hkey(t), 'cancel', by)  -- (the record keeps its lease's expiry)
    record('cancelled', t, 'who', who_of(hkey(t)), 'by', by)
  end
  if old and redis.call('ZREM', QUEUE, old) == 1 then
    -- "Only the latest": the one before leaves the line, is told so (above),
    -- and is marked so that it never joins again.
    redis.call('DEL', wkey(old), SUP)
    redis.call('SET', xkey(old), by, 'PX', SUPERSEDED_MS)
    record('superseded', old, 'by', by)
    wake(chan)  -- it may have been the one whose turn it was
  end
end
if supersede and mode == 'wait' then lv = nil end  -- (read again)
local free, value = capacity(limit, lv)  -- (value: a lock's, after it)
local eligible = false
if shared and (free == 1 or value == SHARED) then
  -- Beside other shared holders, unless an exclusive waiter came first: the
  -- line is first come, first served across both kinds.
  eligible = true
  walk_line(function(t)
    if t == tok then return true end
    if not waits_shared(t) then eligible = false return true end
    return false
  end)
else
  local heads = live_head(math.max(free, 1))
  if free > 0 and not shared then
    if queued then
      for i = 1, math.min(free, #heads) do if heads[i] == tok then eligible = true end end
    else
      eligible = #heads < free
    end
  end
end
if eligible then
  -- What is left of the token's earlier record and release goes first: a
  -- DEL needs no memory, and Redis refuses a script's write that does (OOM)
  -- only while it has written nothing, so that a grant runs whole on a full
  -- server, as the function (allow-oom) does (docs/PROTOCOL.md).
  redis.call('DEL', hkey(tok), rkey(tok))
  -- The fence next, before the holder: a foreign value at :fence fails the
  -- grant with nothing granted (a fence skipped is no harm: fences only grow).
  local fence = redis.call('INCR', FENCE)
  if shared then
    if free == 1 then
      -- No marker: shared holders still listed lost it (deleted, or broken by
      -- an older host) and must not come back to life with the new one.
      for _, t in ipairs(redis.call('ZRANGE', HOLDERS, 0, -1)) do drop_markerless(t) end
      redis.call('DEL', HOLDERS)
    end
    redis.call('ZADD', HOLDERS, NOW + ttl, tok)
    fit_marker()
  elseif limit == 0 then
    redis.call('SET', LOCK, tok, 'PX', ttl)
  else
    redis.call('ZADD', HOLDERS, NOW + ttl, tok)
    -- A semaphore's :holders has no expiry: one left on it by shared holders
    -- must not end this lease early.
    redis.call('PERSIST', HOLDERS)
    redis.call('SET', LIMIT, limit)
    limit_read = nil
  end
  local slot = 0
  if limit > 0 then slot = free_slot() end
  describe(hkey(tok), 'fence', fence, 'ttl', ttl, 'att', att)
  if pool ~= '' then
    redis.call('HSET', hkey(tok), 'slot', slot, 'pool', pool)
  elseif slot > 0 then
    redis.call('HSET', hkey(tok), 'slot', slot)
  end
  expire(hkey(tok), ttl, function()  -- no holder without its record
    if limit == 0 and not shared then redis.pcall('DEL', LOCK) return end
    redis.pcall('ZREM', HOLDERS, tok)
    if shared then fit_marker() end
    if limit > 0 and cur == 0 then  -- this grant set it
      redis.pcall('DEL', LIMIT)
      limit_read = nil
    end
  end)
  local waited = 0
  if queued then waited = NOW - (tonumber(redis.call('HGET', wkey(tok), 'since') or '') or NOW) end
  -- who_of(hkey(tok)), from what describe just wrote
  local who = label ~= '' and field(label) or field(host) .. ' pid ' .. field(pid)
  record_acquired(tok, fence, not shared and limit == 0, who, 'mode', shared and 'shared' or 'exclusive',
                  'waited', waited, 'slot', slot, 'cmd', cut(cmd, 200))
  if queued then
    redis.call('ZREM', QUEUE, tok)
    redis.call('DEL', wkey(tok), tkey(tok))
    if redis.call('GET', SUP) == tok then redis.call('DEL', SUP) end
  end
  if limit > 0 then notify(chan, free - 1) end
  return {'OK', fence, ttl, NOW, slot}
end
if mode ~= 'wait' then
  local hs, n = holders(10)
  -- A server that the key's history marks as no Cluster node is not asked
  -- (publish, in the prelude, says why only that is remembered).
  local cluster = 0
  local h = live_read(nil)  -- (as notice_expired read it)
  if not (h and h[2] == TOPO_PLAIN) and type(redis.pcall('CLUSTER', 'MYID')) == 'string' then
    cluster = 1
  end
  return {'TAKEN', -1, free, hs, n, cluster}
end
if not queued then
  -- (a superseding newcomer's cap was counted above, before it replaced anyone)
  if cap > 0 and not supersede and full(nil) then
    local hs, n = holders(10)
    return {'FULL', -1, free, hs, n}
  end
  -- A notice list left from an earlier place (it would wake it for nothing)
  -- goes first: a write without memory, as a grant's first (above).
  redis.call('DEL', tkey(tok))
  -- The record first, with its expiry, then the place: a failure in between
  -- leaves a record that goes by itself, never a place without one.
  describe(wkey(tok))
  if prio ~= 0 then redis.call('HSET', wkey(tok), 'prio', prio) end
  expire(wkey(tok), qlease)
  -- Higher priorities sort first; equal ones by arrival (0 keeps the score
  -- every version gives: the arrival number).
  local seq = redis.call('INCR', QSEQ)
  redis.call('ZADD', QUEUE, seq - prio * 1e12, tok)
  keep_line(qlease, seq)
  if supersede then redis.call('SET', SUP, tok, 'PX', qlease) end
else
  keep_line(qlease)
end
-- The superseding waiter's index lives as long as its place in line.
if supersede and queued and redis.call('GET', SUP) == tok then redis.call('PEXPIRE', SUP, qlease) end
if att > 0 then redis.call('HSET', wkey(tok), 'att', att) end
expire(wkey(tok), qlease)
local hs, n = holders(10)
return {'QUEUED', redis.call('ZRANK', QUEUE, tok), free, hs, n}
