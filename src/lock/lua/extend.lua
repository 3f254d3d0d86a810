-- ARGV: token, ttl_ms (0 = the TTL it was acquired with)
-- Returns {1, ttl, fence} when renewed, {0} when the token no longer holds,
-- {0, 1} when it no longer holds because a release with the token removed it
-- here (its tombstone is there: quorum mode never grants it again on this
-- master, and a keeper takes it for its owner's release), {0, 2} when
-- `rlock break` removed it here (its tombstone says "broken": quorum mode
-- never grants it again on this master either; a holder has lost it).
-- Never re-creates a lock that has gone.
-- ARGV[3] (protocol 4, optional): the history cap (events kept; 0 = none).
-- ARGV[4] (protocol 4, optional): '1' for a holder that asked to supersede
-- (--supersede): a renewal then says, as a fourth element, who supersedes it
-- when a newer superseding job has joined this key's line since it first
-- did (an --and holder of some keys gives them back), and as a fifth,
-- protocol 4, who asked it to stop when a newer superseding job asked for
-- --cancel-in-progress (acquire.lua marked its record; the fourth is then
-- never absent).
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (ExtendArgs, src/lock/script_args.h):
local tok = ARGV[1]                    -- the holder's token
local ttl_arg = ARGV[2]                -- the new lease, ms (0: as acquired)
-- Optional (older clients send fewer):
HISTORY = history_cap(ARGV[3])         -- events the history keeps (0: none)
local supersede = ARGV[4] == '1'       -- the holder asked to supersede
-- Every command this script may run, asked of the ACL first (ask).
ask('DEL') ask('GET') ask('HEXISTS', 'f') ask('HGET', 'f') ask('HMGET', 'f') ask('PEXPIRE', '1')
ask('PTTL') ask('SET', 'v') ask('ZADD', '1', 'm') ask('ZRANGE', '0', '0')
ask('ZRANGEBYSCORE', '0', '0') ask('ZREMRANGEBYSCORE', '0', '0') ask('ZSCORE', 'm')
notice_expired(purge_holders(), tok)
local how = held_by(tok)
if not how then
  local tomb = redis.call('GET', rkey(tok))
  if tomb == 'broken' then return {0, 2} end
  if tomb then return {0, 1} end
  return {0}
end
local ttl = tonumber(ttl_arg)
if ttl == 0 then ttl = tonumber(redis.call('HGET', hkey(tok), 'ttl') or '0') end
if ttl == 0 then ttl = math.max(redis.call('PTTL', LOCK), 1000) end
-- A lease kept after its command ended (--min-hold, --done-for) is never cut short.
if redis.call('HEXISTS', hkey(tok), 'kept') == 1 then
  local left = redis.call('PTTL', LOCK)
  if how ~= 'plain' then left = tonumber(redis.call('ZSCORE', HOLDERS, tok)) - NOW end
  ttl = math.max(ttl, left)
end
-- Nor below the nested holds under it (nest.lua).
ttl = math.max(ttl, nested_left(tok))
set_lease(tok, how, ttl)
-- A hold longer than the history's idle expiry keeps its live record, so
-- that its end is still recorded.
if HISTORY > 0 then hcall('PEXPIRE', LIVE, LOG_IDLE_MS) end
local out = {1, ttl, tonumber(redis.call('HGET', hkey(tok), 'fence') or '0')}
if supersede then
  out[4] = newer_than(tok)
  local by = redis.call('HGET', hkey(tok), 'cancel')
  if by then
    out[4] = out[4] or field(by)
    out[5] = field(by)
  end
end
return out
