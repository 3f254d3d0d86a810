-- Nested holds (protocol 4): a `run` let in through RLOCK_HELD holds the lock
-- under the enclosing holder's token OUTER for as long as it runs. Each nested
-- hold is a member of the sorted set PREFIX{KEY}:n:OUTER, scored by the end of
-- its lease (server ms); its member is "ID PID HOST" (ID: its own token; PID
-- and HOST: the nested rlock's). The set expires with its longest lease.
-- ARGV: op, OUTER, then
--   'hold', MEMBER, ttl_ms: joins or renews MEMBER's hold, only while OUTER
--     holds; the enclosing lease is raised to last at least ttl_ms (never
--     shortened). Returns {1, ttl_ms, fence} or {0} when OUTER no longer holds.
--   'end', MEMBER, channel, history cap: MEMBER's hold ends. When OUTER's own
--     release has come (its hash has 'ended') and no live nested hold
--     remains, the lock is released as OUTER's release would have. Returns
--     {1} ended, {2} ended and released the lock, {0} OUTER no longer holds.
--   'list': the live nested holds, {member, ms_left, ...}, reading only.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (NestArgs, src/lock/script_args.h):
local op = ARGV[1]                     -- 'hold', 'end' or 'list'
local outer = ARGV[2]                  -- the enclosing holder's token
local member = ARGV[3]                 -- 'hold', 'end': the nested hold's member
local ttl_arg = ARGV[4]                -- 'hold': its lease, ms
local chan = ARGV[4]                   -- 'end': the release channel
local history = ARGV[5]                -- 'end': events the history keeps (0: none)
local NEST = nkey(outer)
-- Nothing half-written (PROTOCOL.md): 'hold' and 'end' write, so they ask the
-- ACL first.
if op ~= 'list' then
  ask('DEL') ask('EXISTS') ask('GET') ask('HGET', 'f') ask('HMGET', 'f') ask('HSET', 'f', 'v')
  ask('PEXPIRE', '1') ask('PTTL') ask('SET', 'v') ask('ZADD', '1', 'm') ask('ZCARD')
  ask('ZCOUNT', '0', '0') ask('ZRANGE', '0', '0') ask('ZRANGEBYSCORE', '0', '0') ask('ZREM', 'm')
  ask('ZREMRANGEBYSCORE', '0', '0') ask('ZSCORE', 'm')
end
if op == 'list' then
  -- Reads only (status runs it for read-only users and on replicas): the
  -- holds whose lease has ended are skipped, not removed.
  local out = {}
  local z = redis.call('ZRANGEBYSCORE', NEST, '(' .. NOW, '+inf', 'WITHSCORES', 'LIMIT', 0, 128)
  for i = 1, #z, 2 do
    out[#out + 1] = field(z[i])
    out[#out + 1] = tonumber(z[i + 1]) - NOW
  end
  return out
end
redis.call('ZREMRANGEBYSCORE', NEST, '-inf', NOW)
local how = held_by(outer)
if op == 'hold' then
  if not how then return {0} end
  local ttl = math.max(1, math.floor(tonumber(ttl_arg) or 0))
  redis.call('ZADD', NEST, NOW + ttl, cut(member, 1200))
  redis.call('PEXPIRE', NEST, nested_left(outer))
  -- The enclosing lease lasts at least as long as this hold (raised, never cut).
  if how == 'plain' then
    if redis.call('PTTL', LOCK) < ttl then redis.call('PEXPIRE', LOCK, ttl) end
  elseif tonumber(redis.call('ZSCORE', HOLDERS, outer)) < NOW + ttl then
    redis.call('ZADD', HOLDERS, 'XX', NOW + ttl, outer)
    if how == 'shared' then fit_marker() end
  end
  if redis.call('PTTL', hkey(outer)) < ttl then redis.call('PEXPIRE', hkey(outer), ttl) end
  return {1, ttl, whole(redis.call('HGET', hkey(outer), 'fence'))}
end
-- 'end'
redis.call('ZREM', NEST, member)
if not how then return {0} end
if redis.call('EXISTS', NEST) == 1 then return {1} end
local ended = redis.call('HMGET', hkey(outer), 'ended', 'erid')
if not ended[1] then return {1} end
HISTORY = history_cap(history)
local info = ending(outer)
local rid = ended[2] or ''
drop_holder(outer, how, chan, rid ~= '' and 10000 or 0, rid)
record_end('released', outer, info, 'nested', '1')
return {2}
