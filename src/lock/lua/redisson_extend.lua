-- --layout redisson: renews the lease if the id still holds (Redisson's
-- watchdog does the same for its own id).
-- KEYS[2] (optional): the id's release tombstone (redisson_release.lua).
-- ARGV: id, ttl_ms
-- Returns {1, ttl} when renewed, {0} when the id no longer holds, {0, 1}
-- when it no longer holds because a release with the id removed it (its
-- tombstone is there: an `acquire --while-pid` keeper's owner released it).
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (LayoutExtendArgs, src/lock/script_args.h):
local key = KEYS[1]                    -- the lock's key (KEY itself)
local tombstone = KEYS[2]              -- optional: the id's release tombstone
local id = ARGV[1]                     -- the holder's id
local ttl = ARGV[2]                    -- the new lease, ms
if redis.call('TYPE', key).ok ~= 'hash' or redis.call('HEXISTS', key, id) == 0 then
  if tombstone and redis.call('EXISTS', tombstone) == 1 then return {0, 1} end
  return {0}
end
redis.call('PEXPIRE', key, ttl)
return {1, tonumber(ttl)}
