-- ARGV: token, min_hold_ms, channel, tombstone_ms and release id (optional:
-- a retry of one release sends the same id), the command's exit status
-- (optional, protocol 4; '' = not known), done_for_ms (optional, protocol 4:
-- run --done-for; 0 = not), the history cap (protocol 4: events kept; 0 =
-- none) and why the lease was lost (protocol 4: '' = it was not, as far as
-- the holder knows)
-- Returns {1} released, {2, ms_left} kept until acquisition + min_hold,
-- {3} released by an earlier try of this same release, {0} not held,
-- {4, ms_left} kept as done (protocol 4), {5, ms_left, n} kept for the n
-- nested holds under the token (protocol 4, nest.lua): the last of them releases.
-- A kept lease's holder record says so ('kept': when; 'exit': how its
-- command ended), so that status does not show it as a running holder. A
-- lease kept as done says when ('done'): until it ends, every acquire is
-- answered DONE, and the waiters are told at once.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (ReleaseArgs, src/lock/script_args.h):
local tok = ARGV[1]                    -- the holder's token
local minhold = tonumber(ARGV[2])      -- --min-hold, ms (0: none)
local chan = ARGV[3]                   -- the release channel
-- Optional (older clients send fewer):
local tomb = tonumber(ARGV[4] or '0') or 0  -- the tombstone's life, ms (0: none)
local rid = ARGV[5] or ''              -- the release id ('' : no tombstone)
local exit_status = ARGV[6]            -- the command's exit status ('' : not known)
local donefor = tonumber(ARGV[7] or '0') or 0  -- --done-for, ms (0: not)
HISTORY = history_cap(ARGV[8])         -- events the history keeps (0: none)
local lost = ARGV[9] or ''             -- why the lease was lost ('' : it was not)
-- Every command this script may run, asked of the ACL first (ask).
ask('DEL') ask('EXISTS') ask('GET') ask('HGET', 'f') ask('HMGET', 'f') ask('HSET', 'f', 'v')
ask('PEXPIRE', '1') ask('PTTL') ask('SET', 'v') ask('ZADD', '1', 'm') ask('ZCARD')
ask('ZCOUNT', '0', '0') ask('ZRANGE', '0', '0') ask('ZRANGEBYSCORE', '0', '0') ask('ZREM', 'm')
ask('ZREMRANGEBYSCORE', '0', '0') ask('ZSCORE', 'm')
local dead = purge_holders()
local lv = read_lock()  -- (read once, with LIMIT's: held_by and notice_expired take it)
local how = held_by(tok, lv)
if not how then
  if rid ~= '' and redis.call('GET', rkey(tok)) == rid then return {3} end
  -- Its own release found it gone: lost, with the reason its holder knows.
  if hcall('HEXISTS', LIVE, tok) == 1 then
    local why = lost
    if why == '' then why = 'its release found it no longer held' end
    record_end('lost', tok, ending(tok), 'why', field(why))
  end
  notice_expired(dead, tok, lv)
  return {0}
end
notice_expired(dead, nil, lv, tok)  -- (:live read with tok's field: ending)
local h = redis.call('HMGET', hkey(tok), 'since', 'krid')
local since = tonumber(h[1] or '0') or 0
local held = since > 0 and NOW - since or ''
local left = 0
if minhold > 0 and since > 0 then left = since + minhold - NOW end
-- Nested holds under this token (nest.lua) still running: the lock stays
-- theirs, marked as ended here, and the last of them releases it.
local nested = nested_left(tok)
if nested > 0 and left <= 0 and not (donefor > 0 and how == 'plain' and exit_status == '0') then
  redis.call('HSET', hkey(tok), 'ended', NOW, 'erid', rid)
  return {5, nested, redis.call('ZCOUNT', nkey(tok), '(' .. NOW, '+inf')}
end
left = math.max(left, nested)
-- A retry of this release (its reply was lost) keeps the lease again but
-- records it once.
local again = rid ~= '' and h[2] == rid
if donefor > 0 and how == 'plain' and exit_status == '0' then
  -- Publish first: a script's writes are not rolled back, so a PUBLISH the
  -- ACL refuses must fail before anything is written. (ending first: it
  -- tells publish what the history knows of the server.)
  local info = ending(tok)
  publish(chan, 'done')
  local keep = math.max(donefor, left)
  set_lease(tok, how, keep)
  redis.call('HSET', hkey(tok), 'kept', NOW, 'exit', '0', 'done', NOW, 'krid', rid)
  if not again then record_end('done', tok, info, 'held', held, 'exit', '0', 'until', NOW + keep) end
  -- Every waiter tries again, hears DONE and leaves the line.
  local n = 0
  walk_line(function(t)
    tell(chan, t, 'done')
    n = n + 1
    return n >= WAKE_MAX
  end)
  return {4, keep}
end
if left > 0 then
  set_lease(tok, how, left)
  redis.call('HSET', hkey(tok), 'kept', NOW, 'exit', field(exit_status), 'krid', rid)
  if not again then
    record_end('kept', tok, ending(tok), 'held', held, 'exit', field(exit_status), 'until', NOW + left)
  end
  return {2, left}
end
if rid == '' then tomb = 0 end
local info = ending(tok)
drop_holder(tok, how, chan, tomb, rid)  -- publishes first: a refusal records nothing
record_end('released', tok, info, 'held', held, 'exit', field(exit_status))
return {1}
