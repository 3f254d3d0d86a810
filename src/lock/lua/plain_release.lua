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
if redis.call('TYPE', KEYS[1]).ok ~= 'string' or
    redis.call('GETRANGE', KEYS[1], 0, 255) ~= ARGV[1] then
  -- pcall: a tombstone of another type (not ours) is no tombstone
  if KEYS[2] and ARGV[5] and redis.pcall('GETRANGE', KEYS[2], 0, 127) == ARGV[5] then
    return {3}
  end
  return {0}
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
if KEYS[2] and ARGV[5] then redis.pcall('SET', KEYS[2], ARGV[5], 'PX', ARGV[4]) end
return {1}
