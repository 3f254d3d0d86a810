-- Read-only, for `rlock list`: what one line of the list needs, for many locks
-- in one call, so that a long list costs one script run (and one prelude) per
-- batch rather than per lock. KEYS: the lock keys PREFIX{KEY} of the locks (at
-- most 512; on a Redis Cluster only keys of one slot, so rlock sends a batch
-- only to a server that is no Cluster node); each lock's other keys are derived
-- from it as in every script. Returns one {limit, holder_count, waiter_count,
-- holders} per key, in KEYS order (holders: the first holder record, as status
-- gives it, or none), then the server time.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
local out = {}
for i = 1, #KEYS do
  LOCK = KEYS[i]
  BASE = LOCK .. ':'
  HOLDERS, LIMIT, QUEUE = BASE .. 'holders', BASE .. 'limit', BASE .. 'queue'
  local hs, nh = holders(1)
  local nw, from = 0, 0
  while true do
    local batch = redis.call('ZRANGE', QUEUE, from, from + 255)
    if #batch == 0 then break end
    for _, t in ipairs(batch) do
      local pttl = redis.call('PTTL', wkey(t))
      if pttl > 0 or pttl == -1 then nw = nw + 1 end
    end
    from = from + #batch
  end
  local limit = 0
  if nh > 0 or nw > 0 then limit = tonumber(redis.call('GET', LIMIT) or '0') or 0 end
  out[i] = {limit, nh, nw, hs}
end
out[#out + 1] = NOW
return out
