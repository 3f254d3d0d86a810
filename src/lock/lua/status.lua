-- Read-only, so that it runs for read-only users and on replicas: dead
-- holders and waiters are skipped, never removed. ARGV: max records (default
-- 1000), then '0' to leave the last events out (`list --json` in a Cluster or
-- quorum mode, which does not show them). Returns {limit, fence_counter, now,
-- holders, waiters, holder_count, waiter_count, last_events (protocol 4)};
-- each waiter is {token, pttl, host, pid, user, cmd, since, mode, label,
-- priority} (the last three since protocol 4; mode is 'shared' or empty for an
-- exclusive one, priority empty for 0).
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (StatusArgs, src/lock/script_args.h), each
-- optional:
local max = tonumber(ARGV[1] or '1000') or 1000  -- the most holder and waiter records
local events = ARGV[2] ~= '0'          -- '0': without the last events
return status_of(max, true, false, true, nil, nil, events)
