-- Read-only, for `rlock list`: many locks in one call, so that a long list costs
-- one script run (and one prelude) per batch rather than per lock. KEYS: the lock
-- keys PREFIX{KEY} of the locks (at most 512; on a Redis Cluster only keys of one
-- slot, so rlock sends a batch only to a server that is no Cluster node); each
-- lock's other keys are derived from it as in every script. ARGV: 'line' or
-- 'full', then one digit per key saying which of its side keys the client's SCAN
-- saw (1: :queue, 2: :limit, 3: both; a missing digit reads both).
-- 'line' (a line of `list`) returns a flat array, 15 values per key in KEYS
-- order: limit, holder_count, waiter_count, then the first holder's pttl, host,
-- pid, cmd, since, fence, kept, mode, done, label, user, and how many live
-- nested holds it has (a free lock: holder_count 0 and nothing after it but
-- nils), then the server time.
-- 'full' (`list --json`) returns per key, in KEYS order, one status reply
-- (status.lua, without last events), {} for a free lock, or for a lock that a
-- plain holder holds alone (no line, no limit) 19 values: the tag 1, the fence
-- counter and the holder's record (17 values, as in a status reply); then the
-- server time. It stops after the lock that brings its holder and waiter
-- records past 1000 (what one status may list), so a reply stays about as
-- small as two status replies: the client asks again for the keys left.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (ListArgs, src/lock/script_args.h):
local full = ARGV[1] == 'full'         -- 'full' (list --json) or 'line'
local seen = ARGV[2] or ''             -- one digit a key: the side keys SCAN saw
local locks = KEYS                     -- the lock keys PREFIX{KEY}
local out, n, budget = {}, 0, 1000
local live = '(' .. NOW
-- Appends the first holder of a line, 12 values: what a line shows of it.
local function put_holder(t, pttl)
  local h = redis.call('HMGET', hkey(t), 'host', 'pid', 'cmd', 'since', 'fence', 'kept', 'mode',
                       'done', 'label', 'user')
  out[n + 1] = pttl
  for j = 1, 10 do
    local v = h[j]
    if v and #v <= 1024 then out[n + 1 + j] = v else out[n + 1 + j] = field(v) end
  end
  local nested = redis.pcall('ZCOUNT', BASE .. 'n:' .. t, live, '+inf')
  out[n + 12] = type(nested) == 'number' and nested or 0  -- (a foreign value: none)
  n = n + 12
end
-- How many waiters in the line are live (their w: hash has an expiry).
local function live_waiters()
  local nw, from = 0, 0
  while true do
    local batch = redis.call('ZRANGE', QUEUE, from, from + 255)
    if #batch == 0 then break end
    for _, t in ipairs(batch) do
      if redis.call('PTTL', wkey(t)) > 0 then nw = nw + 1 end
    end
    from = from + #batch
  end
  return nw
end
-- Every lock key's value in one command rather than one GET each, and in
-- 'full' every fence counter's.
local values, fences = {}, {}
if #locks > 0 then
  values = redis.call('MGET', unpack(locks))
  if full then
    local fk = {}
    for i = 1, #locks do fk[i] = locks[i] .. ':fence' end
    fences = redis.call('MGET', unpack(fk))
  end
end
for i = 1, #locks do
  LOCK = locks[i]
  BASE = LOCK .. ':'
  -- A side key that SCAN did not see is read only where the lock's state needs
  -- it: the line and the limit are read when SCAN saw them; a lock held through
  -- HOLDERS (no plain holder's token at LOCK) always has its limit read.
  local s = (string.byte(seen, i) or 51) - 48
  if s < 0 or s > 3 then s = 3 end
  local queue, limit_seen = s % 2 == 1, s >= 2
  if full then
    if budget <= 0 then break end
    local t = values[i]
    if t and t ~= SHARED and not queue and not limit_seen then
      -- A plain holder's token at LOCK, no line and no limit (most locks): what
      -- status_of says of it (limit 0, this one holder, no waiter), flat, in
      -- a sixth less time: the tag 1, the fence counter and the holder's 17
      -- values (holder_fields).
      local h = holder_fields(t, redis.call('PTTL', LOCK))
      out[n + 1], out[n + 2] = 1, whole(fences[i])
      for j = 1, 17 do out[n + 2 + j] = h[j] end
      n = n + 19
      budget = budget - 1
    else
      FENCE, HOLDERS, LIMIT, QUEUE = BASE .. 'fence', BASE .. 'holders', BASE .. 'limit',
                                     BASE .. 'queue'
      LOG = BASE .. 'log'
      local st = status_of(1000, queue, true, limit_seen, t, fences[i], false)
      budget = budget - #st[4] - #st[5]
      if st[6] == 0 then st = {} end
      n = n + 1
      out[n] = st
    end
  else
    -- A plain holder's token at LOCK excludes holders in HOLDERS (an acquire
    -- with --limit or --shared is refused while it holds), so HOLDERS is read
    -- only when LOCK is free or the shared marker. Each key's name is made only
    -- where it is read: a Lua string each, 512 times a call.
    local t = values[i]
    local plain = t and t ~= SHARED
    local nh, first, pttl = 0, nil, 0
    if plain then
      nh, first, pttl = 1, t, redis.call('PTTL', LOCK)
    else
      HOLDERS = BASE .. 'holders'
      nh = redis.call('ZCOUNT', HOLDERS, live, '+inf')
      if nh > 0 then
        local z = redis.call('ZRANGEBYSCORE', HOLDERS, live, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
        first, pttl = z[1], tonumber(z[2]) - NOW
      end
    end
    if nh == 0 then
      out[n + 1], out[n + 2], out[n + 3] = 0, 0, 0
      for j = 4, 15 do out[n + j] = false end
      n = n + 15
    else
      local nw = 0
      if queue then
        QUEUE = BASE .. 'queue'
        nw = live_waiters()
      end
      local limit = 0
      if limit_seen or not plain then
        limit = whole(redis.call('GET', BASE .. 'limit'))
      end
      out[n + 1], out[n + 2], out[n + 3] = limit, nh, nw
      n = n + 3
      put_holder(first, pttl)
    end
  end
end
n = n + 1
out[n] = NOW
return out
