-- --layout plain: renews the lease if the token still holds (the service's
-- watchdog does the same with its own token).
-- ARGV: token, ttl_ms
-- Returns {1, ttl} when renewed, {0} when the token no longer holds.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
if redis.call('TYPE', KEYS[1]).ok ~= 'string' then return {0} end
if redis.call('GETRANGE', KEYS[1], 0, 255) ~= ARGV[1] then return {0} end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, tonumber(ARGV[2])}
