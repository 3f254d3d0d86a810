-- --layout redisson: renews the lease if the id still holds (Redisson's
-- watchdog does the same for its own id).
-- ARGV: id, ttl_ms
-- Returns {1, ttl} when renewed, {0} when the id no longer holds.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return {0} end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return {0} end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, tonumber(ARGV[2])}
