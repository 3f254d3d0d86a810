-- --layout plain: renews the lease if the token still holds (the service's
-- watchdog does the same with its own token).
-- KEYS[2] (optional): the token's release tombstone (plain_release.lua).
-- ARGV: token, ttl_ms
-- Returns {1, ttl} when renewed, {0} when the token no longer holds, {0, 1}
-- when it no longer holds because a release with the token removed it (its
-- tombstone is there: an `acquire --while-pid` keeper's owner released it).
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (LayoutExtendArgs, src/lock/script_args.h):
local key = KEYS[1]                    -- the lock's key
local tombstone = KEYS[2]              -- optional: the token's release tombstone
local token = ARGV[1]                  -- the holder's token
local ttl = ARGV[2]                    -- the new lease, ms
if redis.call('TYPE', key).ok ~= 'string' or
    redis.call('GETRANGE', key, 0, 255) ~= token then
  if tombstone and redis.call('EXISTS', tombstone) == 1 then return {0, 1} end
  return {0}
end
redis.call('PEXPIRE', key, ttl)
return {1, tonumber(ttl)}
