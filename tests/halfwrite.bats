#!/usr/bin/env bats
# ctest-labels: fast faults
# Nothing half-written: a script refused part-way (an ACL without one of its commands)
# leaves no holder, waiter or place in line without an expiry; a waiter whose record was
# never completed is dead; break and forget clear what dead waiters left; the line's keys
# (:queue, :qseq, a semaphore's :limit) expire with their last waiter's lease.
# shellcheck disable=SC2154 # $stderr and $stderr_lines come from `run --separate-stderr`
# shellcheck disable=SC2016 # wait_until conditions are expanded when evaluated

bats_require_minimum_version 1.5.0

load helpers/redis

setup_file() { redis_start; }

# strays KEY: the keys of lock KEY left without an expiry, the fence counter aside (it
# never expires, by design), one a line.
strays() {
  local k
  while IFS= read -r k; do
    [[ -z $k || $k == *':fence' ]] && continue
    [[ $(rcli pttl "$k") == -1 ]] && echo "$k"
  done < <(rcli --scan --pattern "lock:{$1}*")
  return 0
}

# user_without CMD: an ACL user with rlock's keys and channels and every command but CMD;
# prints its URL.
user_without() {
  local name="no${1,,}"
  rcli acl setuser "$name" reset on '>pw' '~lock:*' '&lock:*' '+@all' "-${1,,}" >/dev/null
  echo "redis://$name:pw@127.0.0.1:$REDIS_PORT/0"
}

# Every command the rlock layout's scripts run (redis.call or redis.pcall).
SCRIPT_COMMANDS=(DEL EXISTS GET HDEL HEXISTS HGET HGETALL HLEN HMGET HSET HSETNX INCR PERSIST PEXPIRE PTTL SET
  ZADD ZCARD ZCOUNT ZRANGE ZRANGEBYSCORE ZRANK ZREM ZREMRANGEBYSCORE ZSCORE PUBLISH LPUSH XADD)

# refused CMD: runs each script as a user without CMD (free, another's lease, taken) and
# prints what is left behind, if anything.
refused() {
  local c=$1 url k=hw-${1,,} tok bad=""
  url=$(user_without "$c")
  # Free: the run takes it (or is refused) and ends.
  run "$RLOCK" --url "$url" run "$k-free" --ttl 20s -- true
  [[ $status == 0 || $status == 77 ]] || bad+=" $c(free: exit $status)"
  [[ -z $(strays "$k-free") ]] || bad+=" $c: $(strays "$k-free" | tr '\n' ' ')"
  # Another's lease: extended, then broken (or refused).
  tok=$("$RLOCK" acquire "$k-other" --ttl 20s)
  "$RLOCK" --url "$url" extend "$k-other" --token "$tok" --ttl 30s >/dev/null 2>&1 || true
  "$RLOCK" --url "$url" break "$k-other" --yes >/dev/null 2>&1 || true
  [[ -z $(strays "$k-other") ]] || bad+=" $c: $(strays "$k-other" | tr '\n' ' ')"
  # Taken: the run waits in line (or is refused) and gives up.
  tok=$("$RLOCK" acquire "$k" --ttl 20s)
  run "$RLOCK" --url "$url" run "$k" --ttl 20s --wait 100ms -- true
  [[ $status == 75 || $status == 77 ]] || bad+=" $c(taken: exit $status)"
  [[ -z $(strays "$k") ]] || bad+=" $c: $(strays "$k" | tr '\n' ' ')"
  # Nothing holds it or waits for it but the holder it had.
  run "$RLOCK" status "$k" --json
  [[ $output == *"\"holder_count\":1,"* && $output == *"\"waiter_count\":0"* ]] ||
    bad+=" $c(status: $output)"
  "$RLOCK" release "$k" --token "$tok"
  [[ -z $(strays "$k") ]] || bad+=" $c (after the release): $(strays "$k" | tr '\n' ' ')"
  echo "$bad"
}

@test "a user refused any one command of the scripts leaves no holder, waiter or place without an expiry" {
  local c bad=""
  # (each command with keys and a user of its own: they run side by side)
  for c in "${SCRIPT_COMMANDS[@]}"; do refused "$c" >"$BATS_TEST_TMPDIR/$c" & done
  wait
  for c in "${SCRIPT_COMMANDS[@]}"; do bad+=$(<"$BATS_TEST_TMPDIR/$c"); done
  [[ -z $bad ]] || fail "left behind:$bad"
}

@test "without PEXPIRE: refused at once (77, naming it), nothing written, the line free" {
  url=$(user_without PEXPIRE)
  tok=$("$RLOCK" acquire hw-pex --ttl 30s)
  rl --url "$url" run hw-pex --wait 1m -- true
  assert_error 77
  [[ ${stderr_lines[0]} == *"may not run PEXPIRE (the acquire script needs it)"* ]] || fail "$stderr"
  assert_equal "$(rcli zcard 'lock:{hw-pex}:queue')" 0
  assert_equal "$(rcli --scan --pattern 'lock:{hw-pex}:w:*')" ""
  "$RLOCK" release hw-pex --token "$tok"
  rl run hw-pex -n -- true
  assert_success
  # Uncontended: no phantom holder after the 77.
  rl --url "$url" run hw-pex2 -- true
  assert_error 77
  run rcli exists 'lock:{hw-pex2}'
  assert_output 0
  assert_equal "$(rcli --scan --pattern 'lock:{hw-pex2}:h:*')" ""
}

@test "a waiter whose record has no expiry, or whose place has no record, is dead: the line moves on" {
  # What a script stopped between its writes leaves: a place and a record without an
  # expiry; a place whose record was never written.
  rcli zadd 'lock:{hw-dead}:queue' 1 aaaa 2 bbbb >/dev/null
  rcli incrby 'lock:{hw-dead}:qseq' 2 >/dev/null
  rcli hset 'lock:{hw-dead}:w:aaaa' host h pid 1 user u cmd c since 1 >/dev/null
  run "$RLOCK" status hw-dead --json
  assert_output --partial '"waiter_count":0'
  run "$RLOCK" list 'hw-dead' --json
  refute_output --partial '"waiter_count":1'
  rl run hw-dead -n -- true
  assert_success
  assert_equal "$(rcli exists 'lock:{hw-dead}:w:aaaa' 'lock:{hw-dead}:queue')" 0
}

@test "break removes dead waiters' places from a line nobody holds, and says so; forget then removes the key" {
  rcli zadd 'lock:{hw-brk}:queue' 1 aaaa 2 bbbb >/dev/null
  rcli set 'lock:{hw-brk}:qseq' 2 >/dev/null
  rcli hset 'lock:{hw-brk}:w:aaaa' host h pid 1 >/dev/null
  rcli incr 'lock:{hw-brk}:fence' >/dev/null
  rl break hw-brk --yes
  assert_success
  assert_equal "$stderr" "rlock: 'hw-brk' is not held; removed 2 dead waiters that blocked its line"
  assert_equal "$(rcli exists 'lock:{hw-brk}:queue' 'lock:{hw-brk}:qseq' 'lock:{hw-brk}:w:aaaa')" 0
  rl break hw-brk --yes
  assert_equal "$status" 1
  # forget, with a dead waiter and nothing else alive: every trace goes.
  rcli zadd 'lock:{hw-fgt}:queue' 1 aaaa >/dev/null
  rcli hset 'lock:{hw-fgt}:w:aaaa' host h pid 1 >/dev/null
  rcli incr 'lock:{hw-fgt}:fence' >/dev/null
  rl forget hw-fgt --yes
  assert_success
  assert_equal "$(rcli --scan --pattern 'lock:{hw-fgt}*')" ""
}

@test "a waiter killed with -9 just before the release: the line's keys expire with its lease" {
  tok=$("$RLOCK" acquire hw-q --ttl 30s)
  rlock_bg waiter run hw-q --wait 30s -- true
  wait_until '[[ $(rcli zcard "lock:{hw-q}:queue") == 1 ]]'
  kill -KILL "$BG_PID"
  "$RLOCK" release hw-q --token "$tok"
  local k left
  for k in queue qseq; do
    left=$(rcli pttl "lock:{hw-q}:$k")
    ((left > 0 && left <= 6000)) || fail ":$k expires in $left ms"
  done
  # A semaphore: its :limit too, once its holders are gone.
  t1=$("$RLOCK" acquire hw-s --limit 1 --ttl 30s)
  rlock_bg swaiter run hw-s --limit 1 --wait 30s -- true
  wait_until '[[ $(rcli zcard "lock:{hw-s}:queue") == 1 ]]'
  kill -KILL "$BG_PID"
  "$RLOCK" release hw-s --token "$t1"
  for k in queue qseq limit; do
    left=$(rcli pttl "lock:{hw-s}:$k")
    ((left > 0 && left <= 6000)) || fail ":$k of the semaphore expires in $left ms"
  done
  assert_equal "$(strays hw-q)$(strays hw-s)" ""
}

@test "a line a 0.4.0 waiter joined keeps no expiry" {
  # 0.4.0 refreshes its waiter's hash alone: its join (a :qseq this version did not
  # raise) takes the line's expiry away, so the line never goes under it.
  tok=$("$RLOCK" acquire hw-mix --ttl 30s)
  rlock_bg w1 run hw-mix --wait 30s -- true
  wait_until '[[ $(rcli zcard "lock:{hw-mix}:queue") == 1 ]]'
  (($(rcli pttl 'lock:{hw-mix}:queue') > 0)) || fail "the line of new waiters has no expiry"
  # A 0.4.0 join, as its script writes it.
  seq=$(rcli incr 'lock:{hw-mix}:qseq')
  rcli zadd 'lock:{hw-mix}:queue' "$seq" oldtoken >/dev/null
  rcli hset 'lock:{hw-mix}:w:oldtoken' host old pid 1 >/dev/null
  rcli pexpire 'lock:{hw-mix}:w:oldtoken' 60000 >/dev/null
  # The new waiter's next refresh (every 2 s) sees it.
  wait_until '[[ $(rcli pttl "lock:{hw-mix}:queue") == -1 ]]'
  assert_equal "$(rcli pttl 'lock:{hw-mix}:qseq')" -1
  bg_cleanup
  "$RLOCK" release hw-mix --token "$tok"
}

@test "--layout redisson without PEXPIRE: 77, and no hash left without an expiry" {
  rcli acl setuser rnopex reset on '>pw' '~*' '&*' '+@all' -pexpire >/dev/null
  rl --url "redis://rnopex:pw@127.0.0.1:$REDIS_PORT/0" --layout redisson run hw-red -- true
  assert_error 77
  [[ $stderr == *"may not run PEXPIRE"* ]] || fail "$stderr"
  run rcli exists hw-red
  assert_output 0
}

@test "a waiter refused at its place's refresh leaves the line at once: no dead place holds up the others" {
  # The ACL takes HSET from the waiter while it waits: its refresh is refused (77), and
  # it leaves (leave.lua needs no HSET) instead of blocking its line for its place's lease.
  rcli acl setuser hw-refresh reset on '>pw' '~lock:*' '&lock:*' '+@all' >/dev/null
  url="redis://hw-refresh:pw@127.0.0.1:$REDIS_PORT/0"
  tok=$("$RLOCK" acquire hw-refresh --ttl 30s)
  rlock_bg waiter --url "$url" run hw-refresh --wait 30s -- true
  waiter=$BG_PID
  wait_until '[[ $(rcli zcard "lock:{hw-refresh}:queue") == 1 ]]'
  rcli acl setuser hw-refresh -hset >/dev/null
  bg_wait "$waiter" "$(slack 10)"
  rcli acl setuser hw-refresh +hset >/dev/null
  assert_equal "$BG_STATUS" 77
  # Its place went with it: the next newcomer is first in line, no one waiting ahead.
  assert_equal "$(rcli zcard 'lock:{hw-refresh}:queue')" 0
  run "$RLOCK" status hw-refresh --json
  assert_output --partial '"waiter_count":0'
  "$RLOCK" release hw-refresh --token "$tok"
}

# Out of memory: maxmemory below what the server uses, policy noeviction (Redis's
# default): every write that needs memory is refused with OOM. Put back after each test.
oom_on() { rcli config set maxmemory-policy noeviction >/dev/null && rcli config set maxmemory 1 >/dev/null; }
suite_teardown() { rcli config set maxmemory 0 >/dev/null; }

@test "a server out of memory (OOM, noeviction): 69 with one line, nothing written" {
  oom_on
  # Scripts whose first write needs memory: a superseding job's and the plain layout's.
  rl run hw-oom --supersede -- true
  assert_error 69
  [[ ${stderr_lines[0]} == "rlock: the server is out of memory (maxmemory): "* ]] || fail "$stderr"
  rl run hw-oom-plain --layout plain -- true
  assert_error 69
  [[ ${stderr_lines[0]} == "rlock: the server is out of memory (maxmemory): "* ]] || fail "$stderr"
  # Redis refuses only a script's first write: nothing at all was written.
  assert_equal "$(rcli --scan --pattern 'lock:{hw-oom}*')" ""
  assert_equal "$(rcli --scan --pattern 'hw-oom-plain*')" ""
}

@test "a waiter in line when the server runs out of memory is granted all the same: its grant writes first what needs none" {
  tok=$("$RLOCK" acquire hw-oomw --ttl 30s)
  bg_start waiter "$RLOCK" -v run hw-oomw --supersede --wait 60s -- true
  local pid=$BG_PID
  wait_until "status_json hw-oomw | grep -q '\"waiter_count\":1'"
  oom_on
  "$RLOCK" release hw-oomw --token "$tok"
  # The grant's first write is a DEL (of what is left of the token's earlier record),
  # which needs no memory, and Redis refuses only a script's first write: the grant,
  # its release and their history run whole while the server is full.
  bg_wait "$pid"
  local full
  full=$(rcli config get maxmemory | tail -1)
  rcli config set maxmemory 0 >/dev/null
  assert_equal "$full" 1
  assert_equal "$BG_STATUS" 0
  run ! grep -q 'out of memory' "$BATS_TEST_TMPDIR/waiter.err"
  assert_equal "$("$RLOCK" history hw-oomw --json | jq -r '[.[].event] | join(" ")')" \
    "acquired released acquired released"
}

# A renewal's first write is the holder record's PEXPIRE, which a full server allows; a
# script that has written may then write what needs memory (the ZADD of a semaphore's or a
# shared lock's holders). So every kind of holder renews while memory is short; before, a
# semaphore's renewal began with that ZADD, was refused, and its holder lost the lease.
# lease_end KEY: when the first holder's lease of KEY's holders ends (server ms), 0 if none
lease_end() {
  local v
  v=$(rcli zrange "lock:{$1}:holders" 0 0 withscores | tail -1)
  echo "${v:-0}"
}

@test "out of memory: a semaphore's and a shared lock's holders renew as a plain holder does" {
  local T=$BATS_TEST_TMPDIR k s0 s1 pid_s pid_l
  write_gate "$T/gate"
  bg_start sem "$RLOCK" run --limit 2 --ttl 2s hw-oom-sem -- sh "$T/gate" "$T" sem
  pid_s=$BG_PID
  bg_start shr "$RLOCK" run -s --ttl 2s hw-oom-shr -- sh "$T/gate" "$T" shr
  pid_l=$BG_PID
  wait_for_file "$T/sem.started"
  wait_for_file "$T/shr.started"
  oom_on
  # each lease is renewed (its score moves on) twice while the server refuses what needs memory
  for k in hw-oom-sem hw-oom-shr; do
    s0=$(lease_end "$k")
    wait_until "(( \$(lease_end $k) > $s0 ))"
    s1=$(lease_end "$k")
    wait_until "(( \$(lease_end $k) > $s1 ))"
  done
  rcli config set maxmemory 0 >/dev/null
  touch "$T/sem.go" "$T/shr.go"
  bg_wait "$pid_s"
  assert_equal "$BG_STATUS" 0
  bg_wait "$pid_l"
  assert_equal "$BG_STATUS" 0
}

@test "a waiter that gives up while the server is out of memory leaves the line with its gave-up event" {
  local tok pid
  tok=$("$RLOCK" acquire hw-oomg --ttl 30s)
  bg_start waiter "$RLOCK" run hw-oomg --wait 30s -- true
  pid=$BG_PID
  wait_until '[[ $(rcli zcard "lock:{hw-oomg}:queue") == 1 ]]'
  oom_on
  kill -TERM "$pid"
  bg_wait "$pid"
  rcli config set maxmemory 0 >/dev/null
  # leave's first write is a DEL (needs no memory): the event after it is not refused
  assert_equal "$(rcli zcard 'lock:{hw-oomg}:queue')" 0
  assert_equal "$("$RLOCK" history hw-oomg --json | jq -r '[.[].event] | join(" ")')" "acquired gave-up"
  "$RLOCK" release hw-oomg --token "$tok"
  assert_equal "$(strays hw-oomg)" ""
}
