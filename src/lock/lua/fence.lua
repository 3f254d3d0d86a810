-- Quorum mode (several masters, docs/PROTOCOL.md "Quorum mode"): raises the
-- fence counter to at least ARGV[2]; if ARGV[1] holds the lock here, its
-- record gets that fence. Returns {the counter, 1 if ARGV[1] holds here, the
-- counter this script found, 1 if ARGV[1] owns the fence here}. A token owns
-- a fence on a master when it raised the counter to it there and nobody
-- raised it further since: this script found the counter below the fence, or
-- found it at the fence with the token's record saying the token owns it
-- (`fown`; before any commit, the fence its grant's INCR gave): the same
-- commit sent again on a new connection after its first one closed. No two
-- tokens own one value on one master ("Why fences only grow").
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (FenceArgs, src/lock/script_args.h):
local tok = ARGV[1]                    -- the holder's token
local f = tonumber(ARGV[2])            -- the fence to commit
local claim = ARGV[3] == '1'           -- '1': an acquisition's commit; else a
                                       -- regrant's, of the holder's own fence
local found = tonumber(redis.call('GET', FENCE) or '0') or 0
local cur = found
if f > cur then
  redis.call('SET', FENCE, f)
  cur = f
end
if not held_by(tok) then return {cur, 0, found, 0} end
local h = redis.call('HMGET', hkey(tok), 'fown', 'fence')
local own = 0
if claim and (f > found or (f == found and tonumber(h[1] or h[2] or '') == f)) then own = 1 end
redis.call('HSET', hkey(tok), 'fence', f, 'fown', own == 1 and f or 0)
-- Its history's live record takes the fence the holder uses, so that the
-- event that ends its tenure says it.
local live = hcall('HGET', LIVE, tok)
if type(live) == 'string' then
  hcall('HSET', LIVE, tok, f .. string.sub(live, (string.find(live, '\t', 1, true) or #live + 1)))
end
return {cur, 1, found, own}
