-- --layout plain: releases if the token holds, and says so on the release
-- channel (PREFIX .. 'release:' .. KEY) with PUBLISH, which reaches the
-- service's PSUBSCRIBE PREFIX .. 'release:*' on every node of a Cluster.
-- ARGV: token, channel, payload (the KEY)
-- Returns {1} when released, {0} when the token did not hold.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
if redis.call('TYPE', KEYS[1]).ok ~= 'string' then return {0} end
if redis.call('GETRANGE', KEYS[1], 0, 255) ~= ARGV[1] then return {0} end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return {1}
