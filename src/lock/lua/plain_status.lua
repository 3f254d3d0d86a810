-- --layout plain: who holds it (read-only).
-- Returns {type, value (its first 256 bytes, or false), pttl}.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'string' then return {t, false, -2} end
return {t, redis.call('GETRANGE', KEYS[1], 0, 255), redis.call('PTTL', KEYS[1])}
