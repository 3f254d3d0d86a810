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
-- The arguments, in the order rlock sends them (LayoutAcquireArgs, src/lock/script_args.h):
local key = KEYS[1]                    -- the lock's key
local token = ARGV[1]                  -- the holder's token
local ttl = ARGV[2]                    -- the lease, ms
local t = redis.call('TYPE', key).ok
if t ~= 'none' and t ~= 'string' then return {'FOREIGN', t} end
if t == 'none' then
  redis.call('SET', key, token, 'PX', ttl)
  return {'OK', tonumber(ttl)}
end
local v = redis.call('GETRANGE', key, 0, 255)
if v == token then
  redis.call('PEXPIRE', key, ttl)
  return {'OK', tonumber(ttl)}
end
return {'TAKEN', v, redis.call('PTTL', key)}
