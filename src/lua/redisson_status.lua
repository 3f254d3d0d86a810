-- --layout redisson: who holds it (read-only).
-- Returns {type, holders (the first 16 {id, holds}), count, pttl}.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'hash' then return {t, {}, 0, -2} end
local holders, n, cursor = {}, 0, '0'
repeat
  local page = redis.call('HSCAN', KEYS[1], cursor, 'COUNT', 16)
  cursor = page[1]
  for i = 1, #page[2], 2 do
    n = n + 1
    if #holders < 16 then
      holders[#holders + 1] = {string.sub(page[2][i], 1, 256), string.sub(page[2][i + 1], 1, 20)}
    end
  end
until cursor == '0' or #holders >= 16
if cursor ~= '0' then n = redis.call('HLEN', KEYS[1]) end
return {t, holders, n, redis.call('PTTL', KEYS[1])}
