-- Read-only (protocol 4): the lock's history, bounded whatever was written to
-- it. ARGV: how many events (1-10000), and where to start: '' for the newest
-- ones, else an entry id (only those after it, oldest first). Returns events
-- as {id, field, value, ...}: each value cut to 1 KiB, at most 32 fields an
-- event, and no more events once the reply passes 4 MiB. A value at :log
-- that is not a stream reads as no history.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (HistoryArgs, src/lock/script_args.h):
local n = math.max(1, math.min(10000, tonumber(ARGV[1]) or 20))  -- how many events
local after = ARGV[2] or ''            -- '' the newest, else after this entry id
local entries
if after == '' then
  entries = hcall('XREVRANGE', LOG, '+', '-', 'COUNT', n)
else
  entries = hcall('XRANGE', LOG, after, '+', 'COUNT', n + 1)
end
if type(entries) ~= 'table' then return {} end
local out, bytes = {}, 0
for _, e in ipairs(entries) do
  if e[1] ~= after then
    local ev = {field(e[1])}
    for i = 1, math.min(#e[2], 64) do
      ev[#ev + 1] = field(e[2][i])
      bytes = bytes + #ev[#ev]
    end
    out[#out + 1] = ev
    if #out >= n or bytes > 4194304 then break end
  end
end
return out
