-- ARGV: token, ttl_ms, limit (0 = plain), mode ('try'|'wait'), queue_lease_ms,
--       channel, host, pid, user, cmd, attempt (optional: >= 1, grows with
--       every attempt of one token; 0 or absent = not tracked)
-- Returns {'OK', fence, ttl, now} | {'TAKEN', position, free, holders, count}
--       | {'QUEUED', position, free, holders, count} | {'MIXED', stored_limit}
--       | {'STALE', newest_attempt}
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
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
