-- --layout plain: removes the lock whoever holds it, and wakes waiters.
-- ARGV: channel, payload (the KEY)
-- Returns 1 if a holder was removed, 0 if it was free (or not a string).
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (PlainBreakArgs, src/lock/script_args.h):
local key = KEYS[1]                    -- the lock's key
local chan = ARGV[1]                   -- the release channel
local payload = ARGV[2]                -- what is published (the KEY)
if redis.call('TYPE', key).ok ~= 'string' then return 0 end
redis.call('DEL', key)
redis.call('PUBLISH', chan, payload)
return 1
