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
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' or redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then
  -- pcall: a tombstone of another type (not ours) is no tombstone
  if KEYS[2] and ARGV[4] and redis.pcall('GETRANGE', KEYS[2], 0, 127) == ARGV[4] then
    return {3}
  end
  return {0}
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('PUBLISH', ARGV[2], '0')
  if type(redis.pcall('CLUSTER', 'MYID')) == 'string' then redis.pcall('SPUBLISH', ARGV[2], '0') end
end
if KEYS[2] and ARGV[4] then redis.pcall('SET', KEYS[2], ARGV[4], 'PX', ARGV[3]) end
return {1}
