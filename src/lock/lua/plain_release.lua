-- --layout plain: releases if the token holds, and says so on the release
-- channel (PREFIX .. 'release:' .. KEY) with PUBLISH, which reaches the
-- service's PSUBSCRIBE PREFIX .. 'release:*' on every node of a Cluster.
-- KEYS[2] (optional): the release's tombstone, PREFIX .. 'rlock-released:{'
-- .. KEYS[1] .. '}:' .. token (the hash tag is the lock key itself, which has
-- no braces: the same Cluster slot). It holds the release id for
-- tombstone_ms, so that a retry of this release (its reply was lost) is told
-- from a lock that was lost, and a keeper from a release by its owner.
-- ARGV: token, channel, payload (the KEY), tombstone_ms and release id
-- (optional, with KEYS[2])
-- Returns {1} when released, {3} when an earlier try of this same release
-- did, {0} when the token did not hold.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (PlainReleaseArgs, src/lock/script_args.h):
local key = KEYS[1]                    -- the lock's key
local tombstone = KEYS[2]              -- optional: the release's tombstone
local token = ARGV[1]                  -- the holder's token
local chan = ARGV[2]                   -- the release channel
local payload = ARGV[3]                -- what is published (the KEY)
local tomb_ms = ARGV[4]                -- optional: the tombstone's life, ms
local rid = ARGV[5]                    -- optional: the release id
if redis.call('TYPE', key).ok ~= 'string' or
    redis.call('GETRANGE', key, 0, 255) ~= token then
  -- pcall: a tombstone of another type (not ours) is no tombstone
  if tombstone and rid and redis.pcall('GETRANGE', tombstone, 0, 127) == rid then
    return {3}
  end
  return {0}
end
redis.call('DEL', key)
redis.call('PUBLISH', chan, payload)
if tombstone and rid then redis.pcall('SET', tombstone, rid, 'PX', tomb_ms) end
return {1}
