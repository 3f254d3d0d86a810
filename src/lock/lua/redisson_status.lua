-- --layout redisson: who holds it (read-only).
-- Returns {type, holders (the first 16 {id, holds}), count, pttl}.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
local key = KEYS[1]                    -- the lock's key (KEY itself; no arguments)
-- The first 16 holders {id (cut to 256 bytes), holds} and how many there
-- are. Names only are read (HKEYS of a hash of 16 fields at most, else
-- HRANDFIELD's 16), and a count by HGET only when HSTRLEN says it is one (20
-- bytes at most): a huge value is never copied into the script. Before Redis
-- 6.2 (no HRANDFIELD) a large hash is paged with HSCAN, values and all.
local function holders_of(k)
  local n, names = redis.call('HLEN', k), nil
  if n <= 16 then
    names = redis.call('HKEYS', k)
  else
    names = redis.pcall('HRANDFIELD', k, 16)
    if type(names) ~= 'table' or names.err then
      names = {}
      local cursor = '0'
      repeat
        local page = redis.call('HSCAN', k, cursor, 'COUNT', 16)
        cursor = page[1]
        for i = 1, #page[2], 2 do
          if #names < 16 then names[#names + 1] = page[2][i] end
        end
      until cursor == '0' or #names >= 16
    end
  end
  local holders = {}
  for i = 1, math.min(#names, 16) do
    local holds = ''
    if redis.call('HSTRLEN', k, names[i]) <= 20 then holds = redis.call('HGET', k, names[i]) end
    holders[i] = {string.sub(names[i], 1, 256), holds}
  end
  return holders, n
end
local t = redis.call('TYPE', key).ok
if t ~= 'hash' then return {t, {}, 0, -2} end
local holders, n = holders_of(key)
return {t, holders, n, redis.call('PTTL', key)}
