-- --layout redisson: removes the lock whoever holds it (an operator's act,
-- as Redisson's forceUnlock), and wakes waiters.
-- ARGV: channel
-- Returns 1 if a holder was removed, 0 if it was free (or not a hash).
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return 0 end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[1], '0')
if type(redis.pcall('CLUSTER', 'MYID')) == 'string' then redis.pcall('SPUBLISH', ARGV[1], '0') end
return 1
