-- A waiter gives up its place. ARGV: token, channel. Returns 1 if it had one.
-- >8 -- rlock sends the rest of this file, from the newline ending this line on
purge_holders()
return drop_waiter(ARGV[1], ARGV[2])
