-- --layout plain: the lock of the seeds' NestJS service (docs/PROTOCOL.md,
-- "Other tools' layouts"). KEYS[1]: PREFIX .. KEY, a string holding the
-- holder's token with a PX expiry; nothing else. Self-contained: no prelude.
-- ARGV: token, ttl_ms
-- Returns {'OK', ttl} when taken (or renewed: the token holds already),
-- {'TAKEN', value (its first 256 bytes), pttl} when another holds it, and
-- {'FOREIGN', type} when the key holds something that is not a string.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'none' and t ~= 'string' then return {'FOREIGN', t} end
local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {'OK', tonumber(ARGV[2])}
end
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'OK', tonumber(ARGV[2])}
end
return {'TAKEN', string.sub(v, 1, 256), redis.call('PTTL', KEYS[1])}
