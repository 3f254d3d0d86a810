-- --layout redisson: renews the lease if the id still holds (Redisson's
-- watchdog does the same for its own id).
-- KEYS[2] (optional): the id's release tombstone (redisson_release.lua).
-- ARGV: id, ttl_ms
-- Returns {1, ttl} when renewed, {0} when the id no longer holds, {0, 1}
-- when it no longer holds because a release with the id removed it (its
-- tombstone is there: an `acquire --while-pid` keeper's owner released it).
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' or redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  if KEYS[2] and redis.call('EXISTS', KEYS[2]) == 1 then return {0, 1} end
  return {0}
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, tonumber(ARGV[2])}
