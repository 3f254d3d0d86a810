#!/usr/bin/env bats
# ctest-labels: fast
# The lock protocol at the level of its Lua scripts, run directly with redis-cli EVAL
# against a real server (no rlock process in between), so that races between attempts
# and connections can be laid out exactly:
# - a retry of an acquire that already holds renews the lease; a late copy of an older
#   attempt changes nothing, and its undo cannot release a later attempt's grant;
# - a retried release recognises its own earlier success, any other release of the token
#   does not;
# - status writes nothing and lists a bounded number of records;
# - a lease kept for --min-hold is marked as such (protocol 4);
# - these scripts (protocol 4) beside protocol 1 (rlock 0.1.0's, tests/fixtures/protocol-v1),
#   protocol 2 (0.2.0 and 0.3.0's, tests/fixtures/protocol-v2) and protocol 3 (0.4.0's,
#   tests/fixtures/protocol-v3) on one server: they exclude each other both ways and wake
#   each other's waiters.

bats_require_minimum_version 1.5.0

load helpers/redis

setup_file() {
  redis_start
  scripts_setup
  export V1=$BATS_TEST_DIRNAME/fixtures/protocol-v1
  export V2=$BATS_TEST_DIRNAME/fixtures/protocol-v2
  export V3=$BATS_TEST_DIRNAME/fixtures/protocol-v3
}

setup() { T=$BATS_TEST_TMPDIR; }

# --- running scripts ------------------------------------------------------------------------

# _eval FILE KEY ARGS...: EVAL the script in FILE with the six KEYS of lock KEY; prints
# the reply with --raw (nested arrays flattened, one element per line).
_eval() {
  local file=$1 k=$2
  shift 2
  rcli --raw eval "$(<"$file")" 6 "lock:{$k}" "lock:{$k}:fence" "lock:{$k}:holders" \
    "lock:{$k}:limit" "lock:{$k}:queue" "lock:{$k}:qseq" "$@"
}
v2() { _eval "$SCRIPTS/$1.lua" "${@:2}"; }
v1() { _eval "$V1/$1.lua" "${@:2}"; }
p2() { _eval "$V2/$1.lua" "${@:2}"; }
p3() { _eval "$V3/$1.lua" "${@:2}"; }

# acq VERSION KEY TOKEN TTL_MS [ATTEMPT=0] [MODE=try] [LIMIT=0]: the acquire script.
acq() {
  local ver=$1 k=$2 tok=$3 ttl=$4 att=${5:-0} mode=${6:-try} limit=${7:-0}
  "$ver" acquire "$k" "$tok" "$ttl" "$limit" "$mode" 6000 "lock:release:{$k}" host 42 user cmd "$att"
}

# first_line CMD...: the first line of CMD's output.
first_line() {
  local out
  out=$("$@") || return 1
  echo "${out%%$'\n'*}"
}

pttl() { rcli pttl "lock:{$1}"; }

# listen CHANNEL: subscribes in the background; the messages go to $T/CHANNEL-ish file
# (LISTEN_FILE). Returns once the subscription is active.
listen() {
  LISTEN_FILE=$T/listen.$RANDOM
  bg_start listen timeout 20 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" --raw subscribe "$1"
  LISTEN_FILE=$BATS_TEST_TMPDIR/listen.out
  wait_until "[[ \$(rcli pubsub numsub '$1' | sed -n 2p) == 1 ]]" 5
}

# messages CHANNEL: how many messages the listener got so far.
messages() { grep -c -x message "$BATS_TEST_TMPDIR/listen.out" || true; }

# --- retries and late attempts ----------------------------------------------------------------

@test "a retry of an acquire that already holds renews the lease to the full TTL" {
  run -0 first_line acq v2 retry tok 5000 1
  assert_output OK
  rcli pexpire 'lock:{retry}' 1986 >/dev/null # three seconds later, say
  run -0 acq v2 retry tok 5000 2
  assert_line --index 0 OK
  assert_line --index 2 5000
  # renewed to 5000, not left at 1986 (the bound leaves 2s for a slow machine)
  assert [ "$(pttl retry)" -gt 3000 ]
  assert [ "$(rcli pttl 'lock:{retry}:h:tok')" -gt 3000 ]
}

@test "protocol 1 did not: its retry reports 5000 while 1986 are left (the bug this fixes)" {
  run -0 first_line acq v1 retry1 tok 5000
  rcli pexpire 'lock:{retry1}' 1986 >/dev/null
  run -0 acq v1 retry1 tok 5000
  assert_line --index 2 5000
  assert [ "$(pttl retry1)" -le 1986 ]
}

@test "a semaphore holder's retry renews its place's expiry too" {
  run -0 first_line acq v2 semretry tok 5000 1 try 2
  assert_output OK
  now=$(rcli --raw time | head -1)
  rcli zadd 'lock:{semretry}:holders' XX "$((now * 1000 + 1986))" tok >/dev/null
  run -0 first_line acq v2 semretry tok 5000 2 try 2
  assert_output OK
  score=$(rcli zscore 'lock:{semretry}:holders' tok)
  assert [ "${score%.*}" -gt $((now * 1000 + 4500)) ]
}

@test "a late copy of an older attempt changes nothing: STALE, the lease untouched; the same attempt again is a retry" {
  run -0 first_line acq v2 late tok 5000 2
  assert_output OK
  rcli pexpire 'lock:{late}' 3000 >/dev/null
  run -0 first_line acq v2 late tok 5000 1
  assert_output STALE
  assert [ "$(pttl late)" -le 3000 ]
  # the same attempt twice (sent again on a new connection after the first closed once
  # the script had run): a retry, answered with the grant, the lease renewed
  run -0 first_line acq v2 late tok 5000 2
  assert_output OK
  assert [ "$(pttl late)" -gt 3000 ]
}

@test "the undo of a timed-out attempt cannot release a later attempt's grant (either order)" {
  # Attempt 1 went out on a connection that then timed out; attempt 2, on a new
  # connection, was granted first. Then attempt 1 and its undo arrive.
  run -0 first_line acq v2 undo1 tok 30000 2
  assert_output OK
  run -0 first_line acq v2 undo1 tok 30000 1
  assert_output STALE
  run -0 v2 undo undo1 tok 1 'lock:release:{undo1}'
  assert_output 0
  assert_equal "$(rcli get 'lock:{undo1}')" tok
  # Attempt 1 granted, attempt 2 renewed it (a retry), then attempt 1's undo arrives.
  run -0 first_line acq v2 undo2 tok 30000 1
  run -0 first_line acq v2 undo2 tok 30000 2
  assert_output OK
  run -0 v2 undo undo2 tok 1 'lock:release:{undo2}'
  assert_output 0
  assert_equal "$(rcli get 'lock:{undo2}')" tok
}

@test "the undo of the attempt that was granted releases it and wakes the next waiter" {
  run -0 first_line acq v2 undo3 tok 30000 1
  run -0 first_line acq v2 undo3 waiter 30000 1 wait
  assert_output QUEUED
  listen 'lock:release:{undo3}:waiter'
  run -0 v2 undo undo3 tok 1 'lock:release:{undo3}'
  assert_output 1
  assert_equal "$(rcli exists 'lock:{undo3}' 'lock:{undo3}:h:tok')" 0
  wait_until '(( $(messages) == 1 ))' 5
  run -0 first_line acq v2 undo3 waiter 30000 2 wait
  assert_output OK
}

@test "the undo of a queued attempt leaves the line only if no later attempt refreshed it" {
  run -0 first_line acq v2 undo4 holder 30000 1
  run -0 first_line acq v2 undo4 w 30000 1 wait
  assert_output QUEUED
  run -0 first_line acq v2 undo4 w 30000 2 wait
  assert_output QUEUED
  run -0 v2 undo undo4 w 1 'lock:release:{undo4}'
  assert_output 0
  assert_equal "$(rcli zcard 'lock:{undo4}:queue')" 1
  run -0 v2 undo undo4 w 2 'lock:release:{undo4}'
  assert_output 2
  assert_equal "$(rcli zcard 'lock:{undo4}:queue')" 0
}

# --- release --------------------------------------------------------------------------------

@test "a retried release recognises its own success; any other release of the token is 'not held'" {
  run -0 first_line acq v2 rel tok 30000 1
  run -0 v2 release rel tok 0 'lock:release:{rel}' 10000 rid-1
  assert_output 1
  run -0 v2 release rel tok 0 'lock:release:{rel}' 10000 rid-1
  assert_output 3
  run -0 v2 release rel tok 0 'lock:release:{rel}' 10000 rid-2
  assert_output 0
  run -0 v2 release rel tok 0 'lock:release:{rel}'
  assert_output 0
  t=$(rcli pttl 'lock:{rel}:r:tok')
  assert [ "$t" -gt 0 ]
  assert [ "$t" -le 10000 ]
}

@test "a release without a release id leaves no tombstone" {
  run -0 first_line acq v2 rel2 tok 30000 1
  run -0 v2 release rel2 tok 0 'lock:release:{rel2}'
  assert_output 1
  assert_equal "$(rcli exists 'lock:{rel2}:r:tok')" 0
}

# --- status ---------------------------------------------------------------------------------

@test "status writes nothing (EVAL_RO accepts it) and skips dead holders and waiters" {
  run -0 first_line acq v2 ro a 30000 1 try 1
  run -0 first_line acq v2 ro live-waiter 30000 1 wait 1
  assert_output QUEUED
  now=$(rcli --raw time | head -1)
  rcli zadd 'lock:{ro}:holders' "$((now * 1000 - 5000))" dead-holder >/dev/null
  rcli zadd 'lock:{ro}:queue' 0 dead-waiter >/dev/null
  run -0 rcli --raw eval_ro "$(<"$SCRIPTS/status.lua")" 6 'lock:{ro}' 'lock:{ro}:fence' \
    'lock:{ro}:holders' 'lock:{ro}:limit' 'lock:{ro}:queue' 'lock:{ro}:qseq' 1000
  refute_output --partial dead-holder
  refute_output --partial dead-waiter
  assert_output --partial live-waiter
  # nothing was purged: that is for the scripts that write
  assert_equal "$(rcli zscore 'lock:{ro}:holders' dead-holder)" "$((now * 1000 - 5000))"
  assert_equal "$(rcli zscore 'lock:{ro}:queue' dead-waiter)" 0
}

@test "status lists at most 1000 waiters but counts them all" {
  rcli eval "for i = 1, 1500 do
      redis.call('ZADD', KEYS[1], i, 'w' .. i)
      redis.call('HSET', KEYS[2] .. i, 'host', 'h', 'since', 1)
      redis.call('PEXPIRE', KEYS[2] .. i, 60000)
    end" 2 'lock:{many}:queue' 'lock:{many}:w:w' >/dev/null
  run -0 first_line acq v2 many holder 30000 1
  assert_output TAKEN # 1500 are in line before it
  run -1 "$RLOCK" status many --json
  run -0 jq -r '.waiter_count, (.waiters | length), .waiters[0].token, .waiters[999].token' \
    <<<"$output"
  assert_equal "${lines[*]}" "1500 1000 w1 w1000"
  run -1 "$RLOCK" status many
  assert_output --partial "and 500 more waiters"
}

# --- protocol 1 and protocol 2 on one server ------------------------------------------------------

@test "mixed versions: a v1 holder excludes v2 and a v2 holder excludes v1" {
  run -0 first_line acq v1 mix1 old 30000
  assert_output OK
  run -0 first_line acq v2 mix1 new 30000 1
  assert_output TAKEN
  run -0 first_line acq v2 mix2 new 30000 1
  assert_output OK
  run -0 first_line acq v1 mix2 old 30000
  assert_output TAKEN
}

@test "mixed versions: semaphore holders of both count against one --limit" {
  run -0 first_line acq v1 mixsem a 30000 0 try 2
  assert_output OK
  run -0 first_line acq v2 mixsem b 30000 1 try 2
  assert_output OK
  run -0 first_line acq v1 mixsem c 30000 0 try 2
  assert_output TAKEN
  run -0 first_line acq v2 mixsem d 30000 1 try 2
  assert_output TAKEN
  run -0 first_line acq v2 mixsem e 30000 1 try 3
  assert_output MIXED
}

@test "mixed versions: a v2 release wakes a v1 waiter, which then acquires" {
  run -0 first_line acq v2 mixw h 30000 1
  run -0 first_line acq v1 mixw oldw 30000 0 wait
  assert_output QUEUED
  listen 'lock:release:{mixw}:oldw'
  run -0 v2 release mixw h 0 'lock:release:{mixw}' 10000 rid
  assert_output 1
  wait_until '(( $(messages) == 1 ))' 5
  run -0 first_line acq v1 mixw oldw 30000 0 wait
  assert_output OK
}

@test "mixed versions: a v1 release wakes a v2 waiter, which then acquires" {
  run -0 first_line acq v1 mixw2 h 30000
  run -0 first_line acq v2 mixw2 neww 30000 1 wait
  assert_output QUEUED
  listen 'lock:release:{mixw2}:neww'
  run -0 v1 release mixw2 h 0 'lock:release:{mixw2}'
  assert_output 1
  wait_until '(( $(messages) == 1 ))' 5
  run -0 first_line acq v2 mixw2 neww 30000 2 wait
  assert_output OK
}

@test "mixed versions: a v2 retry renews a lease granted by v1 (no attempt stamp)" {
  run -0 first_line acq v1 mixr tok 5000
  rcli pexpire 'lock:{mixr}' 1500 >/dev/null
  run -0 first_line acq v2 mixr tok 5000 1
  assert_output OK
  assert [ "$(pttl mixr)" -gt 3000 ] # renewed to 5000, not left at 1500
}

@test "mixed versions: extend, release and status of one version work on the other's lock" {
  run -0 first_line acq v1 mixx a 30000
  run -0 first_line v2 extend mixx a 8000
  assert_output 1
  run -0 v2 status mixx
  assert_line a
  run -0 first_line acq v2 mixy b 30000 1
  run -0 first_line v1 extend mixy b 9000
  assert_output 1
  assert [ "$(pttl mixy)" -gt 6000 ]
  run -0 v1 status mixy
  assert_line b
  run -0 v1 release mixy b 0 'lock:release:{mixy}'
  assert_output 1
  run -0 v2 release mixx a 0 'lock:release:{mixx}' 10000 rid
  assert_output 1
  run -0 v1 status mixx # a tombstone left by v2 does not trouble v1
  assert_line --index 0 0
}

@test "mixed versions: rlock's own commands see a v1 holder with its details" {
  run -0 first_line acq v1 mixcli oldtok 30000
  run -0 "$RLOCK" status mixcli --json
  run -0 jq -r '.holders[0].token, .holders[0].host, .holders[0].fence' <<<"$output"
  assert_equal "${lines[*]}" "oldtok host 1"
  run -75 "$RLOCK" acquire mixcli -n
  run -0 "$RLOCK" release mixcli --token oldtok
}

# --- protocol 2 (rlock 0.3.0) and these scripts on one server ---------------------------------------
# (v2 below is these scripts, protocol 4; p2 is protocol 2's.)

@test "mixed versions: a protocol 2 holder excludes these scripts and the reverse" {
  run -0 first_line acq p2 mix23 old 30000 1
  assert_output OK
  run -0 first_line acq v2 mix23 new 30000 1
  assert_output TAKEN
  run -0 first_line acq v2 mix32 new 30000 1
  assert_output OK
  run -0 first_line acq p2 mix32 old 30000 1
  assert_output TAKEN
}

@test "mixed versions: these scripts' release wakes a protocol 2 waiter (PUBLISH on one server)" {
  run -0 first_line acq v2 mixw3 h 30000 1
  run -0 first_line acq p2 mixw3 oldw 30000 1 wait
  assert_output QUEUED
  listen 'lock:release:{mixw3}:oldw'
  run -0 v2 release mixw3 h 0 'lock:release:{mixw3}' 10000 rid
  assert_output 1
  wait_until '(( $(messages) == 1 ))' 5
  run -0 first_line acq p2 mixw3 oldw 30000 2 wait
  assert_output OK
}

@test "mixed versions: a protocol 2 release wakes a waiter of these scripts" {
  run -0 first_line acq p2 mixw4 h 30000 1
  run -0 first_line acq v2 mixw4 neww 30000 1 wait
  assert_output QUEUED
  listen 'lock:release:{mixw4}:neww'
  run -0 p2 release mixw4 h 0 'lock:release:{mixw4}' 10000 rid
  assert_output 1
  wait_until '(( $(messages) == 1 ))' 5
  run -0 first_line acq v2 mixw4 neww 30000 2 wait
  assert_output OK
}

# --- a lease kept for --min-hold (protocol 4) -----------------------------------------------------

# holder_record VERSION KEY [FIELDS=11]: the first FIELDS fields of the first holder record
# of VERSION's status, one a line (protocol 3's records have 9).
holder_record() {
  "$1" status "$2" | sed -n "4,$((3 + ${3:-11}))p"
}

@test "a release that keeps the lease for --min-hold marks the holder's record: when, and the exit status" {
  run -0 first_line acq v2 kept1 tok 30000 1
  run -0 v2 release kept1 tok 20000 'lock:release:{kept1}' 10000 rid 3
  assert_line --index 0 2
  now=$(rcli --raw time | head -1)
  kept=$(rcli hget 'lock:{kept1}:h:tok' kept)
  assert [ "$kept" -gt $(((now - 10) * 1000)) ]
  assert_equal "$(rcli hget 'lock:{kept1}:h:tok' exit)" 3
  # the record keeps the lease's expiry (the mark does not make it live for ever)
  assert [ "$(rcli pttl 'lock:{kept1}:h:tok')" -gt 0 ]
  run -0 holder_record v2 kept1
  assert_equal "${#lines[@]}" 11
  assert_equal "${lines[9]}" "$kept"
  assert_equal "${lines[10]}" 3
}

@test "a release that frees at once, or one without an exit status, leaves no exit in the record" {
  run -0 first_line acq v2 kept2 tok 30000 1
  run -0 v2 release kept2 tok 20000 'lock:release:{kept2}' 10000 rid
  assert_line --index 0 2
  assert [ "$(rcli hget 'lock:{kept2}:h:tok' kept)" -gt 0 ]
  assert_equal "$(rcli hget 'lock:{kept2}:h:tok' exit)" ""
  run -0 first_line acq v2 kept3 tok 30000 1
  # a running holder: both fields there, empty (bats's $lines drops empty lines)
  assert_equal "$(holder_record v2 kept3 | wc -l)" 11
  assert_equal "$(holder_record v2 kept3 | sed -n 10,11p | tr -d '\n')" ""
}

# --- protocol 3 (rlock 0.4.0) and protocol 4 on one server ----------------------------------------
# (p3 is protocol 3's scripts, v2 these.)

@test "mixed versions: a protocol 3 holder excludes protocol 4 and the reverse" {
  run -0 first_line acq p3 mix34 old 30000 1
  assert_output OK
  run -0 first_line acq v2 mix34 new 30000 1
  assert_output TAKEN
  run -0 first_line acq v2 mix43 new 30000 1
  assert_output OK
  run -0 first_line acq p3 mix43 old 30000 1
  assert_output TAKEN
}

@test "mixed versions: a protocol 4 release wakes a protocol 3 waiter" {
  run -0 first_line acq v2 mixw5 h 30000 1
  run -0 first_line acq p3 mixw5 oldw 30000 1 wait
  assert_output QUEUED
  listen 'lock:release:{mixw5}:oldw'
  run -0 v2 release mixw5 h 0 'lock:release:{mixw5}' 10000 rid 0
  assert_output 1
  wait_until '(( $(messages) == 1 ))' 5
  run -0 first_line acq p3 mixw5 oldw 30000 2 wait
  assert_output OK
}

@test "mixed versions: a protocol 3 release wakes a protocol 4 waiter" {
  run -0 first_line acq p3 mixw6 h 30000 1
  run -0 first_line acq v2 mixw6 neww 30000 1 wait
  assert_output QUEUED
  listen 'lock:release:{mixw6}:neww'
  run -0 p3 release mixw6 h 0 'lock:release:{mixw6}' 10000 rid
  assert_output 1
  wait_until '(( $(messages) == 1 ))' 5
  run -0 first_line acq v2 mixw6 neww 30000 2 wait
  assert_output OK
}

@test "mixed versions: protocol 3 reads a lease that protocol 4 kept for --min-hold as a holder" {
  run -0 first_line acq v2 mixk4 tok 30000 1
  run -0 v2 release mixk4 tok 20000 'lock:release:{mixk4}' 10000 rid 0
  assert_line --index 0 2
  # 0.4.0's status: the record it knows, the mark ignored
  run -0 holder_record p3 mixk4 9
  assert_equal "${#lines[@]}" 9
  assert_equal "$(p3 status mixk4 | wc -l)" 15 # 3 + 9 fields + no waiters + 2 counts
  assert_equal "${lines[0]}" tok
  assert_equal "${lines[2]}" host
  run -0 first_line acq p3 mixk4 other 30000 1
  assert_output TAKEN
  run -0 first_line p3 extend mixk4 tok 25000
  assert_output 1
  # 0.4.0's release of the kept token frees it, mark and all
  run -0 p3 release mixk4 tok 0 'lock:release:{mixk4}' 10000 rid2
  assert_output 1
  assert_equal "$(rcli exists 'lock:{mixk4}' 'lock:{mixk4}:h:tok')" 0
}

@test "mixed versions: a lease that protocol 3 kept for --min-hold has no mark; protocol 4 shows a holder, as before" {
  run -0 first_line acq p3 mixk3 tok 30000 1
  run -0 p3 release mixk3 tok 20000 'lock:release:{mixk3}' 10000 rid
  assert_line --index 0 2
  assert_equal "$(holder_record v2 mixk3 | wc -l)" 11
  assert_equal "$(holder_record v2 mixk3 | head -1)" tok
  assert_equal "$(holder_record v2 mixk3 | sed -n 10,11p | tr -d '\n')" ""
  run -0 "$RLOCK" status mixk3 --json
  run -0 jq -r '.holders[0] | "\(.token) \(.kept) \(.kept_until) \(.exit_status)"' <<<"$output"
  assert_output "tok false null null"
  run -0 "$RLOCK" status mixk3
  assert_line --index 1 "  holder  host pid 42 user user: cmd"
  refute_output --partial "kept by"
  # and protocol 4 releases what protocol 3 kept
  run -0 v2 release mixk3 tok 0 'lock:release:{mixk3}' 10000 rid2 0
  assert_output 1
}

@test "rlock's status says that a lease protocol 4 kept belongs to a command that has ended" {
  run -0 first_line acq v2 mixk5 tok 30000 1
  run -0 v2 release mixk5 tok 20000 'lock:release:{mixk5}' 10000 rid 0
  run -0 "$RLOCK" status mixk5
  assert_line --index 1 --regexp '^  holder  kept by --min-hold until [0-9]{2}:[0-9]{2}:[0-9]{2}Z; its command exited 0$'
  assert_line --index 2 "          ran as host pid 42 user user: cmd"
  run -0 "$RLOCK" status mixk5 --json
  run -0 jq -r '.holders[0] | "\(.kept) \(.exit_status) \(.kept_until | test("Z$"))"' <<<"$output"
  assert_output "true 0 true"
}

# --- shared locks and done leases beside protocol 3 ---------------------------------------------

# sacq VERSION KEY TOKEN [MODE=try] [ATTEMPT=1]: a shared acquire (ARGV[12]).
sacq() {
  local ver=$1 k=$2 tok=$3 mode=${4:-try} att=${5:-1}
  "$ver" acquire "$k" "$tok" 30000 0 "$mode" 6000 "lock:release:{$k}" host 42 user cmd "$att" shared
}

@test "shared holders put a marker no token can equal in PREFIX{KEY}; it goes with the last of them" {
  run -0 first_line sacq v2 shm a
  assert_output OK
  run -0 first_line sacq v2 shm b
  assert_output OK
  assert_equal "$(rcli get 'lock:{shm}')" "shared lock"
  assert_equal "$(rcli zcard 'lock:{shm}:holders')" 2
  assert_equal "$(rcli hget 'lock:{shm}:h:a' mode)" shared
  run -0 v2 release shm a 0 'lock:release:{shm}' 10000 rid 0
  assert_output 1
  assert_equal "$(rcli get 'lock:{shm}')" "shared lock"
  run -0 v2 release shm b 0 'lock:release:{shm}' 10000 rid 0
  assert_equal "$(rcli exists 'lock:{shm}')" 0
}

@test "mixed versions: protocol 3 never takes a lock that protocol 4 shared holders hold" {
  run -0 first_line sacq v2 sh3 s1
  # a plain try, a wait, and a --limit try of 0.4.0's scripts
  run -0 first_line acq p3 sh3 old 30000 1
  assert_output TAKEN
  run -0 first_line acq p3 sh3 oldw 30000 1 wait
  assert_output QUEUED
  run -0 first_line acq p3 sh3 olds 30000 1 try 3
  assert_output MIXED
  # the shared holder leaves: the 0.4.0 waiter is woken (the line is shared) and gets in
  listen 'lock:release:{sh3}:oldw'
  run -0 v2 release sh3 s1 0 'lock:release:{sh3}' 10000 rid 0
  wait_until '(( $(messages) == 1 ))' 5
  run -0 first_line acq p3 sh3 oldw 30000 2 wait
  assert_output OK
  # and while 0.4.0 holds it, nobody shares it
  run -0 first_line sacq v2 sh3 s2
  assert_output TAKEN
}

@test "mixed versions: a protocol 3 break removes the shared holders; they do not come back with a new marker" {
  run -0 first_line sacq v2 shb s1
  run -0 p3 break shb 'lock:release:{shb}'
  assert_output 2 # 0.4.0 counts the marker as a holder too
  assert_equal "$(rcli exists 'lock:{shb}' 'lock:{shb}:holders')" 0
  run -0 first_line v2 extend shb s1 0
  assert_output 0
  # a new shared holder does not revive one whose marker went behind its back
  run -0 first_line sacq v2 shb s2
  rcli del 'lock:{shb}' >/dev/null # the marker deleted behind s2's back
  run -0 first_line v2 extend shb s2 0
  assert_output 0
  run -0 first_line sacq v2 shb s3
  assert_output OK
  run -0 first_line v2 extend shb s2 0
  assert_output 0
  assert_equal "$(rcli zcard 'lock:{shb}:holders')" 1
}

@test "a protocol 3 release of a shared token leaves the marker; the next protocol 4 script clears it" {
  run -0 first_line sacq v2 shr s1
  run -0 p3 release shr s1 0 'lock:release:{shr}' 10000 rid
  assert_output 1
  assert_equal "$(rcli get 'lock:{shr}')" "shared lock" # 0.4.0 knows nothing of it
  run -0 first_line acq v2 shr x 30000 1
  assert_output OK
  assert_equal "$(rcli get 'lock:{shr}')" x
}

@test "the line across kinds: a shared newcomer waits behind an exclusive waiter, shared waiters behind it" {
  run -0 first_line sacq v2 shl s1
  run -0 first_line acq v2 shl x 30000 1 wait
  assert_output QUEUED
  run -0 first_line sacq v2 shl s2 wait
  assert_output QUEUED
  run -0 first_line sacq v2 shl s3 wait
  assert_output QUEUED
  # s1 leaves: x alone is woken (shared ones wait behind it)
  listen 'lock:release:{shl}:x'
  run -0 v2 release shl s1 0 'lock:release:{shl}' 10000 rid 0
  wait_until '(( $(messages) == 1 ))' 5
  run -0 first_line acq v2 shl x 30000 2 wait
  assert_output OK
  run -0 first_line sacq v2 shl s2 wait 2
  assert_output QUEUED
  # x leaves: both shared waiters may go
  run -0 v2 release shl x 0 'lock:release:{shl}' 10000 rid 0
  run -0 first_line sacq v2 shl s3 wait 2
  assert_output OK
  run -0 first_line sacq v2 shl s2 wait 3
  assert_output OK
}

@test "mixed versions: a done lease is a held lock to protocol 3; protocol 4 answers DONE with its holder" {
  run -0 first_line acq v2 dn tok 30000 1
  run -0 v2 release dn tok 0 'lock:release:{dn}' 10000 rid 0 60000
  assert_line --index 0 4
  assert [ "$(rcli pttl 'lock:{dn}')" -gt 50000 ]
  assert [ -n "$(rcli hget 'lock:{dn}:h:tok' done)" ]
  run -0 first_line acq p3 dn old 30000 1
  assert_output TAKEN
  run -0 acq v2 dn new 30000 1 wait
  assert_line --index 0 DONE
  assert_line --index 3 tok
  # not in the line: a waiter that meets DONE leaves it
  assert_equal "$(rcli zcard 'lock:{dn}:queue')" 0
  # a failure is no success: released at once
  run -0 first_line acq v2 dn2 tok 30000 1
  run -0 v2 release dn2 tok 0 'lock:release:{dn2}' 10000 rid 3 60000
  assert_output 1
}

@test "break of a marker left without shared holders: nothing to break (1), nothing published, the marker gone" {
  run -0 first_line sacq v2 shq s1
  run -0 p3 release shq s1 0 'lock:release:{shq}' 10000 rid
  listen 'lock:release:{shq}'
  run -1 "$RLOCK" break --yes shq
  assert_equal "$(rcli exists 'lock:{shq}')" 0
  assert_equal "$(messages)" 0
}

# --- quorum mode's fence commit ----------------------------------------------------------------

# fence KEY TOKEN FENCE [CLAIM=1]: fence.lua, quorum mode's commit round (CLAIM 1: an
# acquisition's, 0: a regrant's); prints the reply on one line: the counter afterwards,
# held, the counter found, owns.
fence() {
  local out
  out=$(v2 fence "$1" "$2" "$3" "${4:-1}") || return 1
  echo "${out//$'\n'/ }"
}

@test "fence.lua: of two holders committing one fence the second does not own it; the same commit sent again does" {
  run -0 first_line sacq v2 fsh a
  run -0 first_line sacq v2 fsh b
  c=$(rcli get 'lock:{fsh}:fence')
  # the fence b's own grant counted out (the counter is still there) is b's
  run -0 fence fsh b "$c"
  assert_output "$c 1 $c 1"
  # a's commit raises the counter: the fence is a's
  f=$((c + 5))
  run -0 fence fsh a "$f"
  assert_output "$f 1 $c 1"
  assert_equal "$(rcli hmget 'lock:{fsh}:h:a' fence fown | xargs)" "$f $f"
  # the same commit sent again (a script whose connection closed after it ran) is still a's
  run -0 fence fsh a "$f"
  assert_output "$f 1 $f 1"
  # b, granted beside a from the same counters, commits the same fence: not b's (its record
  # says it uses it, as before, and owns nothing here)
  run -0 fence fsh b "$f"
  assert_output "$f 1 $f 0"
  assert_equal "$(rcli hmget 'lock:{fsh}:h:b' fence fown | xargs)" "$f 0"
  # and b's commit sent again is still not b's
  run -0 fence fsh b "$f"
  assert_output "$f 1 $f 0"
  # nor is b's own grant's fence b's once another commit raised the counter past it
  run -0 fence fsh b "$c"
  assert_output "$f 1 $f 0"
  # a token that does not hold here raises the counter and owns nothing
  run -0 fence fsh nobody $((f + 1))
  assert_output "$((f + 1)) 0 $f 0"
  # a regrant (CLAIM 0) writes the holder's fence, below the counter too, and owns nothing
  run -0 fence fsh b 3 0
  assert_output "$((f + 1)) 1 $((f + 1)) 0"
  assert_equal "$(rcli hget 'lock:{fsh}:h:b' fence)" 3
}

# --- CI policies beside protocol 3 ---------------------------------------------------------------

# pacq KEY TOKEN PRIORITY [SUPERSEDE] [CAP] [ATTEMPT=1]: a waiting acquire of these scripts
# with a line policy (ARGV[13-16]).
pacq() {
  v2 acquire "$1" "$2" 30000 0 wait 6000 "lock:release:{$1}" host 42 user cmd "${6:-1}" '' \
    "label-$2" "$3" "${4:-}" "${5:-0}"
}

@test "mixed versions: protocol 3 waiters stand in line as priority 0, first come, first served" {
  run -0 first_line acq v2 mp h 30000 1
  run -0 first_line acq p3 mp old1 30000 1 wait
  run -0 first_line pacq mp new0 0
  run -0 first_line acq p3 mp old2 30000 1 wait
  run -0 first_line pacq mp hi 1
  assert_equal "$(rcli zrange 'lock:{mp}:queue' 0 -1 | tr '\n' ' ')" "hi old1 new0 old2 "
  # a protocol 3 release wakes the head, whoever put it there
  listen 'lock:release:{mp}:hi'
  run -0 p3 release mp h 0 'lock:release:{mp}' 10000 rid
  wait_until '(( $(messages) == 1 ))' 5
}

@test "supersede is one script: the older superseding waiter is gone from the line and marked, in the same call" {
  run -0 first_line acq v2 ss h 30000 1
  run -0 first_line pacq ss s1 0 1
  assert_output QUEUED
  assert_equal "$(rcli get 'lock:{ss}:sup')" s1
  run -0 first_line pacq ss s2 0 1
  assert_output QUEUED
  assert_equal "$(rcli zrange 'lock:{ss}:queue' 0 -1 | tr '\n' ' ')" "s2 "
  assert_equal "$(rcli get 'lock:{ss}:x:s1')" label-s2
  assert [ "$(rcli pttl 'lock:{ss}:x:s1')" -gt 500000 ]
  # s1's next attempt, as a retry or after missing the message
  run -0 pacq ss s1 0 1 0 2
  assert_line --index 0 SUPERSEDED
  assert_line --index 1 label-s2
  assert_equal "$(rcli zcard 'lock:{ss}:queue')" 1
  # granted: the index forgets it
  run -0 v2 release ss h 0 'lock:release:{ss}' 10000 rid 0
  run -0 first_line pacq ss s2 0 1 0 2
  assert_output OK
  assert_equal "$(rcli exists 'lock:{ss}:sup')" 0
}

@test "the line cap counts live waiters only" {
  run -0 first_line acq v2 mc h 30000 1
  run -0 first_line pacq mc w1 0 '' 2
  run -0 first_line pacq mc w2 0 '' 2
  run -0 first_line pacq mc w3 0 '' 2
  assert_output FULL
  rcli del 'lock:{mc}:w:w1' >/dev/null # w1 died: its place lease ran out
  run -0 first_line pacq mc w3 0 '' 2 2
  assert_output QUEUED
}

@test "a retried semaphore grant answers its slot again" {
  run -0 v2 acquire rs tok 30000 2 try 6000 'lock:release:{rs}' host 42 user cmd 1
  assert_line --index 0 OK
  assert_line --index 4 1
  run -0 v2 acquire rs tok 30000 2 try 6000 'lock:release:{rs}' host 42 user cmd 2
  assert_line --index 0 OK
  assert_line --index 4 1
}

@test "a superseding newcomer that the cap refuses replaces nobody" {
  run -0 first_line acq v2 sc h 30000 1
  run -0 first_line pacq sc a 0 '' 0
  run -0 first_line pacq sc b 0 '' 0
  run -0 first_line pacq sc s1 0 1 0
  # a, b and s1 wait; a cap of 2 counts a and b once s1 would have left: full
  run -0 first_line pacq sc s2 0 1 2
  assert_output FULL
  assert_equal "$(rcli zrange 'lock:{sc}:queue' 0 -1 | tr '\n' ' ')" "a b s1 "
  assert_equal "$(rcli exists 'lock:{sc}:x:s1')" 0
  # a cap of 3 leaves room once s1 has left
  run -0 first_line pacq sc s3 0 1 3
  assert_output QUEUED
  assert_equal "$(rcli zrange 'lock:{sc}:queue' 0 -1 | tr '\n' ' ')" "a b s3 "
}

@test "the index of the superseding waiter lives as long as its place, renewed by its attempts" {
  run -0 first_line acq v2 sx h 30000 1
  run -0 first_line pacq sx s1 0 1
  p=$(rcli pttl 'lock:{sx}:sup')
  assert [ "$p" -gt 0 ]
  assert [ "$p" -le 6000 ]
  rcli pexpire 'lock:{sx}:sup' 1000 >/dev/null
  run -0 first_line pacq sx s1 0 1 0 2
  assert [ "$(rcli pttl 'lock:{sx}:sup')" -gt 5000 ]
}

@test "mixed versions: the line's keys expire only while every waiter joined through protocol 4" {
  run -0 first_line acq v2 qx h 30000 1
  run -0 first_line acq v2 qx a 30000 0 wait
  assert_output QUEUED
  for k in queue qseq qnew; do
    p=$(rcli pttl "lock:{qx}:$k")
    assert [ "$p" -gt 0 ]
    assert [ "$p" -le 6000 ]
  done
  # A protocol 3 waiter joins (it raises :qseq, not :qnew); a's next refresh sees it.
  run -0 first_line acq p3 qx b 30000 0 wait
  assert_output QUEUED
  run -0 first_line acq v2 qx a 30000 0 wait
  assert_equal "$(rcli pttl 'lock:{qx}:queue') $(rcli pttl 'lock:{qx}:qseq')" "-1 -1"
  assert_equal "$(rcli exists 'lock:{qx}:qnew')" 0
  # and it stays so: a new protocol 4 waiter joining a line without an expiry sets none
  run -0 first_line acq v2 qx c 30000 0 wait
  run -0 first_line acq v2 qx a 30000 0 wait
  assert_equal "$(rcli pttl 'lock:{qx}:queue')" -1
  # A line a protocol 3 waiter started has none either.
  run -0 first_line acq v2 qy h 30000 1
  run -0 first_line acq p3 qy b 30000 0 wait
  run -0 first_line acq v2 qy a 30000 0 wait
  assert_equal "$(rcli pttl 'lock:{qy}:queue')" -1
}

@test "a line whose last waiter died goes by itself within its place lease" {
  run -0 first_line acq v2 qd h 30000 1
  # a waiter with a 300 ms place lease, never refreshed (killed)
  run -0 first_line v2 acquire qd w 30000 0 wait 300 "lock:release:{qd}" host 42 user cmd 0
  assert_output QUEUED
  wait_until '[[ $(rcli exists "lock:{qd}:queue" "lock:{qd}:qseq" "lock:{qd}:qnew" "lock:{qd}:w:w") == 0 ]]' 3
}

@test "where the server cannot be asked (Redis 6: no redis.acl_check_cmd), a refused PEXPIRE leaves no record and no place" {
  rcli acl setuser s6nopex reset on '>pw' '~lock:*' '&lock:*' '+@all' -pexpire >/dev/null
  # The script as Redis 6 runs it: redis.acl_check_cmd is not there.
  { echo 'local redis = setmetatable({acl_check_cmd = false}, {__index = redis})'
    cat "$SCRIPTS/acquire.lua"; } >"$T/acquire6.lua"
  as6() {
    local k=$1
    shift
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" --user s6nopex --pass pw --no-auth-warning --raw \
      eval "$(<"$T/acquire6.lua")" 6 "lock:{$k}" "lock:{$k}:fence" "lock:{$k}:holders" \
      "lock:{$k}:limit" "lock:{$k}:queue" "lock:{$k}:qseq" "$@"
  }
  run -0 first_line acq v2 r6 h 30000 1
  run as6 r6 w 30000 0 wait 6000 'lock:release:{r6}' host 42 user cmd 0
  assert_output --partial "can't run this command"
  assert_equal "$(rcli exists 'lock:{r6}:w:w' 'lock:{r6}:queue' 'lock:{r6}:qseq')" 0
  # Free: neither the holder's record nor the holder (no phantom holder after the error).
  run as6 r6f t 30000 0 try 6000 'lock:release:{r6f}' host 42 user cmd 0
  assert_output --partial "can't run this command"
  assert_equal "$(rcli exists 'lock:{r6f}:h:t' 'lock:{r6f}')" 0
  # nor a semaphore's
  run as6 r6s t 30000 2 try 6000 'lock:release:{r6s}' host 42 user cmd 0
  assert_output --partial "can't run this command"
  assert_equal "$(rcli exists 'lock:{r6s}:h:t' 'lock:{r6s}:holders' 'lock:{r6s}:limit')" 0
}
