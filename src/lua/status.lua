-- Read-only, so that it runs for read-only users and on replicas: dead
-- holders and waiters are skipped, never removed. ARGV: max records (default
-- 1000). Returns {limit, fence_counter, now, holders, waiters, holder_count,
-- waiter_count, last_events (protocol 4)}; each waiter is {token, pttl, host, pid, user, cmd, since,
-- mode, label, priority} (the last three since protocol 4; mode is 'shared'
-- or empty for an exclusive one, priority empty for 0).
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
local max = tonumber(ARGV[1] or '1000') or 1000
local hs, nh = holders(max)
local waiters, nw, from = {}, 0, 0
while true do
  local batch = redis.call('ZRANGE', QUEUE, from, from + 255)
  if #batch == 0 then break end
  for _, t in ipairs(batch) do
    local pttl = redis.call('PTTL', wkey(t))
    if pttl > 0 or pttl == -1 then
      nw = nw + 1
      if #waiters < max then
        local h = redis.call('HMGET', wkey(t), 'host', 'pid', 'user', 'cmd', 'since', 'mode',
                             'label', 'prio')
        waiters[#waiters + 1] = {field(t), pttl, field(h[1]), field(h[2]), field(h[3]), field(h[4]),
                                 field(h[5]), field(h[6]), field(h[7]), field(h[8])}
      end
    end
  end
  from = from + #batch
end
local limit = 0
if nh > 0 or nw > 0 then limit = tonumber(redis.call('GET', LIMIT) or '0') or 0 end
-- The newest events of its history (protocol 4), newest first, each {id,
-- field, value, ...}: what a free lock's status tells of its last holder.
local last = {}
local newest = hcall('XREVRANGE', LOG, '+', '-', 'COUNT', 3)
if type(newest) ~= 'table' then newest = {} end
for _, e in ipairs(newest) do
  local ev = {field(e[1])}
  for i = 1, math.min(#e[2], 32) do ev[#ev + 1] = field(e[2][i]) end
  last[#last + 1] = ev
end
return {limit, tonumber(redis.call('GET', FENCE) or '0'), NOW, hs, waiters, nh, nw, last}
