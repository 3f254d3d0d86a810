-- A waiter gives up its place. ARGV: token, channel. Returns 1 if it had one.
-- ARGV[3] (protocol 4, optional): the history cap (events kept; 0 = none).
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (LeaveArgs, src/lock/script_args.h):
local tok = ARGV[1]                    -- the waiter's token
local chan = ARGV[2]                   -- the release channel
-- Optional (older clients send fewer):
HISTORY = history_cap(ARGV[3])         -- events the history keeps (0: none)
-- Every command this script may run, asked of the ACL first (ask).
ask('DEL') ask('EXISTS') ask('GET') ask('HGET', 'f') ask('PEXPIRE', '1') ask('PTTL') ask('ZCARD')
ask('ZRANGE', '0', '0') ask('ZRANGEBYSCORE', '0', '0') ask('ZREM', 'm')
ask('ZREMRANGEBYSCORE', '0', '0') ask('ZSCORE', 'm')
-- The waiter's notice list goes first (drop_waiter deletes it too): a DEL
-- needs no memory, so that on a full server the event below is written as
-- well (Redis refuses only a script's first write that needs memory).
redis.call('DEL', tkey(tok))
notice_expired(purge_holders())
if HISTORY > 0 and redis.call('ZSCORE', QUEUE, tok) and redis.call('EXISTS', wkey(tok)) == 1 then
  local since = tonumber(redis.call('HGET', wkey(tok), 'since') or '') or NOW
  record('gave-up', tok, 'who', who_of(wkey(tok)), 'waited', NOW - since)
end
return drop_waiter(tok, chan)
