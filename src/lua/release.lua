-- ARGV: token, min_hold_ms, channel, tombstone_ms and release id (optional:
-- a retry of one release sends the same id), the command's exit status
-- (optional, protocol 4; '' = not known)
-- Returns {1} released, {2, ms_left} kept until acquisition + min_hold,
-- {3} released by an earlier try of this same release, {0} not held.
-- A kept lease's holder record says so ('kept': when; 'exit': how its
-- command ended), so that status does not show it as a running holder.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
local tok, minhold, chan = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local tomb, rid = tonumber(ARGV[4] or '0') or 0, ARGV[5] or ''
purge_holders()
local how = held_by(tok)
if not how then
  if rid ~= '' and redis.call('GET', rkey(tok)) == rid then return {3} end
  return {0}
end
if minhold > 0 then
  local since = tonumber(redis.call('HGET', hkey(tok), 'since') or '0')
  local left = since + minhold - NOW
  if since > 0 and left > 0 then
    set_lease(tok, how, left)
    redis.call('HSET', hkey(tok), 'kept', NOW, 'exit', field(ARGV[6]))
    return {2, left}
  end
end
if rid == '' then tomb = 0 end
drop_holder(tok, how, chan, tomb, rid)
return {1}
