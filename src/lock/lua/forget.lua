-- Housekeeping: removes every key of a lock that is free and that nobody
-- waits on, the fence counter included (its fences start again). ARGV: none.
-- Returns {1} removed, {0} nothing was there, {-1, holders, waiters} refused.
-- Per-token records of past holders and waiters expire by themselves.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
purge_holders()
local _, nh = holders(1)
local nw = #live_head(1)
if nh > 0 or nw > 0 then return {-1, nh, nw} end
local n = redis.call('DEL', LOCK, FENCE, HOLDERS, LIMIT, QUEUE, QSEQ, QNEW, SUP, SUPS, LOG,
                        LIVE)
if n > 0 then return {1} end
return {0}
