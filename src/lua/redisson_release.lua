-- --layout redisson: removes this id's field only (never another holder's
-- count); once the hash is gone (Redis deletes an empty hash), publishes
-- Redisson's unlock message '0' on redisson_lock__channel:{KEY} with PUBLISH,
-- and, on a Redis 7 Cluster node, with SPUBLISH too (Redisson subscribes with
-- SSUBSCRIBE there when its sharded subscription mode is on).
-- ARGV: id, channel
-- Returns {1} when released, {0} when the id did not hold.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return {0} end
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return {0} end
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('PUBLISH', ARGV[2], '0')
  if type(redis.pcall('CLUSTER', 'MYID')) == 'string' then redis.pcall('SPUBLISH', ARGV[2], '0') end
end
return {1}
