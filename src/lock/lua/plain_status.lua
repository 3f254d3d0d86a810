-- --layout plain: who holds it (read-only).
-- Returns {type, value (its first 256 bytes, or false), pttl}.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
local key = KEYS[1]                    -- the lock's key (no arguments)
local t = redis.call('TYPE', key).ok
if t ~= 'string' then return {t, false, -2} end
return {t, redis.call('GETRANGE', key, 0, 255), redis.call('PTTL', key)}
