-- Undoes one acquire attempt that timed out, and only that one: sent right
-- behind it on the same connection. ARGV: token, attempt, channel.
-- Returns 1 (released what it granted), 2 (left the place it took) or 0
-- (a newer attempt of the token, or nothing, is there: left alone).
-- ARGV[4] (protocol 4, optional): the history cap (events kept; 0 = none).
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (UndoArgs, src/lock/script_args.h):
local tok = ARGV[1]                    -- the token whose attempt timed out
local att = tonumber(ARGV[2])          -- that attempt's number
local chan = ARGV[3]                   -- the release channel
-- Optional (older clients send fewer):
HISTORY = history_cap(ARGV[4])         -- events the history keeps (0: none)
-- Every command this script may run, asked of the ACL first (ask).
ask('DEL') ask('EXISTS') ask('GET') ask('HGET', 'f') ask('PEXPIRE', '1') ask('PTTL') ask('SET', 'v')
ask('ZCARD') ask('ZRANGE', '0', '0') ask('ZRANGEBYSCORE', '0', '0') ask('ZREM', 'm')
ask('ZREMRANGEBYSCORE', '0', '0') ask('ZSCORE', 'm')
notice_expired(purge_holders())
local how = held_by(tok)
if how then
  if stamp_of(hkey(tok)) ~= att then return 0 end
  local info = ending(tok)
  drop_holder(tok, how, chan, 0, '')  -- publishes first: a refusal records nothing
  record_end('released', tok, info, 'why', 'its attempt timed out and was undone')
  return 1
end
if redis.call('ZSCORE', QUEUE, tok) and stamp_of(wkey(tok)) == att then
  drop_waiter(tok, chan)
  return 2
end
return 0
