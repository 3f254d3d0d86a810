-- --layout redisson: Redisson's reentrant lock (docs/PROTOCOL.md, "Other
-- tools' layouts"). KEYS[1]: KEY itself, a hash whose field is the holder's
-- id and whose value is its hold count, PEXPIREd. rlock's id is its token
-- (UUID:PID) and it holds once: taking it again renews it. Self-contained.
-- ARGV: id, ttl_ms
-- Returns {'OK', ttl} when taken or renewed, {'TAKEN', holders, count, pttl}
-- when another id holds it (holders: the first 16 {id, holds}, ids cut to
-- 256 bytes), {'FOREIGN', type} when KEY is not a hash.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
-- The arguments, in the order rlock sends them (LayoutAcquireArgs, src/lock/script_args.h):
local key = KEYS[1]                    -- the lock's key (KEY itself)
local id = ARGV[1]                     -- the holder's id
local ttl = ARGV[2]                    -- the lease, ms
-- The first 16 holders {id (cut to 256 bytes), holds} and how many there
-- are. Names only are read (HKEYS of a hash of 16 fields at most, else
-- HRANDFIELD's 16), and a count by HGET only when HSTRLEN says it is one (20
-- bytes at most): a huge value is never copied into the script. Before Redis
-- 6.2 (no HRANDFIELD) a large hash is paged with HSCAN, values and all.
local function holders_of(k)
  local n, names = redis.call('HLEN', k), nil
  if n <= 16 then
    names = redis.call('HKEYS', k)
  else
    names = redis.pcall('HRANDFIELD', k, 16)
    if type(names) ~= 'table' or names.err then
      names = {}
      local cursor = '0'
      repeat
        local page = redis.call('HSCAN', k, cursor, 'COUNT', 16)
        cursor = page[1]
        for i = 1, #page[2], 2 do
          if #names < 16 then names[#names + 1] = page[2][i] end
        end
      until cursor == '0' or #names >= 16
    end
  end
  local holders = {}
  for i = 1, math.min(#names, 16) do
    local holds = ''
    if redis.call('HSTRLEN', k, names[i]) <= 20 then holds = redis.call('HGET', k, names[i]) end
    holders[i] = {string.sub(names[i], 1, 256), holds}
  end
  return holders, n
end
local t = redis.call('TYPE', key).ok
if t == 'none' or (t == 'hash' and redis.call('HEXISTS', key, id) == 1) then
  -- Never a hash without an expiry: a PEXPIRE the ACL refuses is asked
  -- about before the write (Redis 7), else undone after it.
  if redis.acl_check_cmd and not redis.acl_check_cmd('PEXPIRE', key, '1') then
    return redis.error_reply("NOPERM this user has no permissions to run the 'pexpire' command")
  end
  if t == 'none' then redis.call('HINCRBY', key, id, 1) end
  local r = redis.pcall('PEXPIRE', key, ttl)
  if type(r) == 'table' and r.err then
    if t == 'none' then redis.call('DEL', key) end
    return r
  end
  return {'OK', tonumber(ttl)}
end
if t ~= 'hash' then return {'FOREIGN', t} end
local holders, n = holders_of(key)
return {'TAKEN', holders, n, redis.call('PTTL', key)}
