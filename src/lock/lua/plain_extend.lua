-- --layout plain: renews the lease if the token still holds (the service's
-- watchdog does the same with its own token).
-- KEYS[2] (optional): the token's release tombstone (plain_release.lua).
-- ARGV: token, ttl_ms
-- Returns {1, ttl} when renewed, {0} when the token no longer holds, {0, 1}
-- when it no longer holds because a release with the token removed it (its
-- tombstone is there: an `acquire --while-pid` keeper's owner released it).
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
if redis.call('TYPE', KEYS[1]).ok ~= 'string' or
    redis.call('GETRANGE', KEYS[1], 0, 255) ~= ARGV[1] then
  if KEYS[2] and redis.call('EXISTS', KEYS[2]) == 1 then return {0, 1} end
  return {0}
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, tonumber(ARGV[2])}
