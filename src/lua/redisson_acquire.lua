-- --layout redisson: Redisson's reentrant lock (docs/PROTOCOL.md, "Other
-- tools' layouts"). KEYS[1]: KEY itself, a hash whose field is the holder's
-- id and whose value is its hold count, PEXPIREd. rlock's id is its token
-- (UUID:PID) and it holds once: taking it again renews it. Self-contained.
-- ARGV: id, ttl_ms
-- Returns {'OK', ttl} when taken or renewed, {'TAKEN', holders, count, pttl}
-- when another id holds it (holders: the first 16 {id, holds}, ids cut to
-- 256 bytes), {'FOREIGN', type} when KEY is not a hash.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'none' or (t == 'hash' and redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1) then
  if t == 'none' then redis.call('HINCRBY', KEYS[1], ARGV[1], 1) end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'OK', tonumber(ARGV[2])}
end
if t ~= 'hash' then return {'FOREIGN', t} end
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
return {'TAKEN', holders, n, redis.call('PTTL', KEYS[1])}
