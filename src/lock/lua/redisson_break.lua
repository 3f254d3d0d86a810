-- --layout redisson: removes the lock whoever holds it (an operator's act,
-- as Redisson's forceUnlock), and wakes waiters.
-- ARGV: channel
-- Returns 1 if a holder was removed, 0 if it was free (or not a hash).
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (RedissonBreakArgs, src/lock/script_args.h):
local key = KEYS[1]                    -- the lock's key (KEY itself)
local chan = ARGV[1]                   -- Redisson's unlock channel
if redis.call('TYPE', key).ok ~= 'hash' then return 0 end
redis.call('DEL', key)
redis.call('PUBLISH', chan, '0')
if type(redis.pcall('CLUSTER', 'MYID')) == 'string' then redis.pcall('SPUBLISH', chan, '0') end
return 1
