-- --layout plain: removes the lock whoever holds it, and wakes waiters.
-- ARGV: channel, payload (the KEY)
-- Returns 1 if a holder was removed, 0 if it was free (or not a string).
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
if redis.call('TYPE', KEYS[1]).ok ~= 'string' then return 0 end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1
