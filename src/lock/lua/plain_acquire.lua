-- --layout plain: the lock of the seeds' NestJS service (docs/PROTOCOL.md,
-- "Other tools' layouts"). KEYS[1]: PREFIX .. KEY, a string holding the
-- holder's token with a PX expiry; nothing else. Self-contained: no prelude.
-- ARGV: token, ttl_ms
-- Returns {'OK', ttl} when taken (or renewed: the token holds already),
-- {'TAKEN', value (its first 256 bytes), pttl} when another holds it, and
-- {'FOREIGN', type} when the key holds something that is not a string.
-- A value is read with GETRANGE, 256 bytes at most (a token has 128 at most, so
-- they are equal only when the whole value is the token): a huge value at the
-- key is never copied into the script.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'none' and t ~= 'string' then return {'FOREIGN', t} end
if t == 'none' then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {'OK', tonumber(ARGV[2])}
end
local v = redis.call('GETRANGE', KEYS[1], 0, 255)
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'OK', tonumber(ARGV[2])}
end
return {'TAKEN', v, redis.call('PTTL', KEYS[1])}
