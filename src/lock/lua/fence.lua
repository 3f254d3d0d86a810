-- Quorum mode (several masters, docs/PROTOCOL.md "Quorum mode"): raises the
-- fence counter to at least ARGV[2]; if ARGV[1] holds the lock here, its
-- record gets that fence. Returns {the counter, 1 if ARGV[1] holds here}.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (FenceArgs, src/lock/script_args.h):
local tok = ARGV[1]                    -- the holder's token
local f = tonumber(ARGV[2])            -- the fence it was given
local cur = tonumber(redis.call('GET', FENCE) or '0') or 0
if f > cur then
  redis.call('SET', FENCE, f)
  cur = f
end
if not held_by(tok) then return {cur, 0} end
redis.call('HSET', hkey(tok), 'fence', f)
-- Its history's live record takes the fence the holder uses, so that the
-- event that ends its tenure says it.
local live = hcall('HGET', LIVE, tok)
if type(live) == 'string' then
  hcall('HSET', LIVE, tok, f .. string.sub(live, (string.find(live, '\t', 1, true) or #live + 1)))
end
return {cur, 1}
