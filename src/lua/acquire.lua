-- ARGV: token, ttl_ms, limit (0 = plain), mode ('try'|'wait'), queue_lease_ms,
--       channel, host, pid, user, cmd, attempt (optional: >= 1, grows with
--       every attempt of one token; 0 or absent = not tracked), kind
--       (optional, protocol 4: 'shared' for a shared hold; else exclusive)
-- Returns {'OK', fence, ttl, now} | {'TAKEN', position, free, holders, count}
--       | {'QUEUED', position, free, holders, count}
--       | {'DONE', -1, 0, {holder}, 1} (protocol 4: kept by run --done-for)
--       | {'MIXED', stored_limit} (-1: a shared lock) | {'STALE', newest_attempt}
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
local tok, ttl, limit, mode = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local qlease, chan = tonumber(ARGV[5]), ARGV[6]
local att = tonumber(ARGV[11] or '0') or 0
local shared = ARGV[12] == 'shared' and limit == 0
-- A holder's or a waiter's record: who (ARGV[7-10]) and since when, and more.
local function describe(key, ...)
  redis.call('HSET', key, 'host', ARGV[7], 'pid', ARGV[8], 'user', ARGV[9], 'cmd', ARGV[10],
             'since', NOW, ...)
  if shared then redis.call('HSET', key, 'mode', 'shared') end
end
purge_holders()
local cur = current_limit()
if limit == 0 and cur > 0 then return {'MIXED', cur} end
if limit > 0 then
  local v = redis.call('GET', LOCK)
  if v == SHARED and redis.call('EXISTS', HOLDERS) == 1 then return {'MIXED', -1} end
  if v and v ~= SHARED then return {'MIXED', 0} end
  if cur > 0 and cur ~= limit then return {'MIXED', cur} end
end
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
-- Done for this period (run --done-for): nobody takes it until the lease ends,
-- and a waiter leaves the line.
local v = redis.call('GET', LOCK)
if v and v ~= SHARED and redis.call('HEXISTS', hkey(v), 'done') == 1 then
  if queued then
    redis.call('ZREM', QUEUE, tok)
    redis.call('DEL', wkey(tok))
  end
  return {'DONE', -1, 0, {holder_fields(v, redis.call('PTTL', LOCK))}, 1}
end
local free = capacity(limit)
local eligible = false
if shared and (free == 1 or redis.call('GET', LOCK) == SHARED) then
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
  if shared then
    if free == 1 then
      -- No marker: shared holders still listed lost it (deleted, or broken by
      -- an older host) and must not come back to life with the new one.
      for _, t in ipairs(redis.call('ZRANGE', HOLDERS, 0, -1)) do redis.call('DEL', hkey(t)) end
      redis.call('DEL', HOLDERS)
    end
    redis.call('ZADD', HOLDERS, NOW + ttl, tok)
    cover_shared(ttl)
  elseif limit == 0 then
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
