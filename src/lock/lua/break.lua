-- Operator override. ARGV: channel; protocol 4, optional: the history cap
-- (events kept; 0 = none), who breaks it, and for how many ms each removed
-- holder's token keeps a tombstone saying "broken" (0 or none: no tombstone;
-- in quorum mode a renewal that finds it never grants the token here again,
-- so a holder renewing while the break is on its way to the other masters
-- does not undo it). Removes every holder and the queue, wakes every waiter;
-- the fence counter stays. Returns the number of holders removed; when
-- nobody held it (protocol 4), minus the number of dead waiters' places it
-- removed (a record left without an expiry, or a place without a record:
-- what could block the line), 0 when there were none.
-- Protocol 4, optional: ARGV[5], a token: only that holder is removed (a
-- holder of a pool, a shared holder or the plain one), as its release would
-- remove it, and the waiters whose turn it then is are woken; the reply is 1,
-- or 0 when the token holds nothing (nothing changes). ARGV[6]: why
-- (recorded as `reason` when not empty).
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (BreakArgs, src/lock/script_args.h):
local chan = ARGV[1]                   -- the release channel
-- Optional (older clients send fewer):
HISTORY = history_cap(ARGV[2])         -- events the history keeps (0: none)
local by = field(ARGV[3])              -- who breaks it
local tomb = tonumber(ARGV[4] or '0') or 0  -- the broken tokens' tombstone, ms (0: none)
local only = ARGV[5] or ''             -- the one holder to remove ('': every holder)
local reason = field(ARGV[6])          -- why ('': not said)
local why = {'by', by}
if reason ~= '' then why = {'by', by, 'reason', reason} end
notice_expired(purge_holders())
-- A foreign value at :queue fails here, before anything is deleted.
if not no_line() then redis.call('ZCARD', QUEUE) end
if only ~= '' then
  local how = held_by(only)
  if not how then return 0 end
  -- Publish first, as in release. Not the token (a holder that hears its
  -- own token takes it for a release by its owner): 'break' makes every
  -- holder check its lease at once, and only this one finds it gone.
  publish(chan, 'break')
  local info = ending(only)
  if how == 'plain' then
    redis.call('DEL', LOCK)
  else
    redis.call('ZREM', HOLDERS, only)
    if how == 'shared' then fit_marker() end
  end
  redis.call('DEL', hkey(only), nkey(only))
  if tomb > 0 then redis.call('SET', rkey(only), 'broken', 'PX', tomb) end
  record_end('broken', only, info, unpack(why))
  wake(chan)
  return 1
end
-- A shared marker left without holders (by an older host) is no holder: it goes quietly.
if redis.call('EXISTS', HOLDERS) == 0 and redis.call('GET', LOCK) == SHARED then
  redis.call('DEL', LOCK)
end
if redis.call('EXISTS', LOCK) == 0 and redis.call('EXISTS', HOLDERS) == 0 then
  local before = redis.call('ZCARD', QUEUE)
  walk_line(function() return false end)
  current_limit()  -- a semaphore's limit goes with its last waiter
  return redis.call('ZCARD', QUEUE) - before
end
publish(chan, 'break')  -- first, for the same reason as in release
local n = 0
local t = redis.call('GET', LOCK)
if t then
  local info = ending(t)
  redis.call('DEL', LOCK, hkey(t), nkey(t))
  if t ~= SHARED then
    n = n + 1
    record_end('broken', t, info, unpack(why))
    if tomb > 0 then redis.call('SET', rkey(t), 'broken', 'PX', tomb) end
  end
end
for _, h in ipairs(redis.call('ZRANGE', HOLDERS, 0, -1)) do
  local info = ending(h)
  redis.call('DEL', hkey(h), nkey(h))
  n = n + 1
  record_end('broken', h, info, unpack(why))
  if tomb > 0 then redis.call('SET', rkey(h), 'broken', 'PX', tomb) end
end
if n == 0 then return 0 end
redis.call('DEL', HOLDERS, LIMIT)
for _, w in ipairs(redis.call('ZRANGE', QUEUE, 0, -1)) do
  redis.call('DEL', wkey(w))
  tell(chan, w, 'break')
end
-- :sups stays: an older superseding job that comes back is still superseded
-- (latest wins, whoever broke the lock).
redis.call('DEL', QUEUE, QSEQ, QNEW, SUP)
return n
