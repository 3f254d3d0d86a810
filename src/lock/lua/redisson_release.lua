-- --layout redisson: removes this id's field only (never another holder's
-- count); once the hash is gone (Redis deletes an empty hash), publishes
-- Redisson's unlock message '0' on redisson_lock__channel:{KEY} with PUBLISH,
-- and, on a Redis 7 Cluster node, with SPUBLISH too (Redisson subscribes with
-- SSUBSCRIBE there when its sharded subscription mode is on).
-- KEYS[2] (optional): the release's tombstone, named as Redisson names its
-- unlock latch, 'redisson_unlock_latch:{' .. KEY .. '}:' .. id (KEY has no
-- braces: the same Cluster slot). It holds the release id for tombstone_ms,
-- so that a retry of this release (its reply was lost) is told from a lock
-- that was lost, and a keeper from a release by its owner.
-- ARGV: id, channel, tombstone_ms and release id (optional, with KEYS[2])
-- Returns {1} when released, {3} when an earlier try of this same release
-- did, {0} when the id did not hold.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (RedissonReleaseArgs, src/lock/script_args.h):
local key = KEYS[1]                    -- the lock's key (KEY itself)
local tombstone = KEYS[2]              -- optional: the release's tombstone
local id = ARGV[1]                     -- the holder's id
local chan = ARGV[2]                   -- Redisson's unlock channel
local tomb_ms = ARGV[3]                -- optional: the tombstone's life, ms
local rid = ARGV[4]                    -- optional: the release id
if redis.call('TYPE', key).ok ~= 'hash' or redis.call('HDEL', key, id) == 0 then
  -- pcall: a tombstone of another type (not ours) is no tombstone
  if tombstone and rid and redis.pcall('GETRANGE', tombstone, 0, 127) == rid then
    return {3}
  end
  return {0}
end
if redis.call('EXISTS', key) == 0 then
  redis.call('PUBLISH', chan, '0')
  if type(redis.pcall('CLUSTER', 'MYID')) == 'string' then redis.pcall('SPUBLISH', chan, '0') end
end
if tombstone and rid then redis.pcall('SET', tombstone, rid, 'PX', tomb_ms) end
return {1}
