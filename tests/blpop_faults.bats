#!/usr/bin/env bats
# ctest-labels: fast faults
# A waiter in a line waits on a list of its own (PREFIX{KEY}:t:TOKEN) with BLPOP on a
# second connection. What operators and hostile clients do to that list and that
# connection must cost the waiter at most its wake-ups, never its wait: CLIENT KILL,
# CLIENT UNBLOCK (with and without ERROR), a foreign value at the list's key (WRONGTYPE),
# foreign items pushed onto it (junk, one larger than rlock takes), a server at its
# maxclients, a restart that keeps the data. Each time the waiter gets the lock at the
# release, exits 0 and leaves nothing behind.

# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell
load helpers/redis

bats_require_minimum_version 1.5.0

setup_file() { redis_start; }

setup() {
  T=$BATS_TEST_TMPDIR
}

# The private servers of the tests that act on the whole server (a client list, maxclients,
# a restart): stopped even when a test fails midway.
suite_teardown() {
  local n
  for n in KILLS UNBLK UNBLKE MAXC DATA NOBLPOP; do redis_stop "$n"; done
  return 0
}

# --- local helpers ----------------------------------------------------------------------

# waiter_token KEY: the token of KEY's first waiter.
waiter_token() {
  "$RLOCK" status "$1" --json | jq -r '.waiters[0].token // empty'
}

# n_waiters_on NAME KEY: how many wait for KEY on server NAME.
n_waiters_on() {
  local v="${1}_URL" rc=0 out
  out=$("$RLOCK" --url "${!v}" status "$2" --json) || rc=$?
  ((rc <= 1)) && jq '.waiter_count' <<<"$out"
}

# blpop_id NAME: the client id of the one client of server NAME blocked in BLPOP.
blpop_id() {
  rcli_to "$1" client list | grep ' flags=b .*cmd=blpop' | sed -n 's/^id=\([0-9]*\) .*/\1/p'
}

# nothing_left_on NAME KEY: of KEY's keys on server NAME only the fence counter, its
# history and release tombstones are left.
nothing_left_on() {
  local name=$1 key=$2 k
  run -0 rcli_to "$name" --raw keys "lock:{$key}*"
  for k in "${lines[@]}"; do
    case $k in
      "lock:{$key}:fence" | "lock:{$key}:log" | "lock:{$key}:live" | "lock:{$key}:r:"*) ;;
      *) fail "left behind in Redis: $k (all: ${lines[*]})" ;;
    esac
  done
}

# still_waiting PID: the waiter PID has not exited (else: how it exited, and what it said).
still_waiting() {
  kill -0 "$1" 2>/dev/null && return 0
  bg_wait "$1"
  fail "the waiter exited $BG_STATUS: $(grep -v '^rlock: \[' "$T/waiter.err")"
}

# said_waiting_then_acquired ERRFILE KEY: the waiter said it waits, then that it got KEY: two lines,
# nothing from Redis in between.
said_waiting_then_acquired() {
  run cat "$1"
  assert_equal "${#lines[@]}" 2
  assert_line --index 0 --regexp "^rlock: waiting for '$2'"
  assert_line --index 1 --regexp "^rlock: acquired '$2' after "
}

# --- foreign values and items on the list -------------------------------------------------

@test "a string planted at the waiter's list (BLPOP answers WRONGTYPE): it waits on, woken on its channel" {
  tok=$("$RLOCK" acquire --ttl 30s wrongtype)
  bg_start waiter "$RLOCK" -v run --ttl 30s wrongtype -- true
  waiter=$BG_PID
  wait_until "[[ -n \$(waiter_token wrongtype) ]]"
  wtok=$(waiter_token wrongtype)
  wait_until "rcli client list | grep -q 'flags=b .*cmd=blpop'"
  rcli set "lock:{wrongtype}:t:$wtok" planted >/dev/null
  # A blocked BLPOP is not ended by a SET on Redis 7.0: end it (as its 30 s would), so that
  # the next one meets the string.
  for id in $(rcli client list | grep ' flags=b .*cmd=blpop' | sed -n 's/^id=\([0-9]*\) .*/\1/p'); do
    rcli client unblock "$id" >/dev/null
  done
  wait_until "grep -q WRONGTYPE '$T/waiter.err' || ! kill -0 $waiter 2>/dev/null"
  # still waiting, in its place
  wait_until "[[ \$(n_waiters wrongtype) == 1 ]] || ! kill -0 $waiter 2>/dev/null"
  still_waiting "$waiter"
  run -0 "$RLOCK" release wrongtype --token "$tok"
  bg_wait "$waiter" 20
  [[ $BG_STATUS == 0 ]] || fail "exited $BG_STATUS: $(cat "$T/waiter.err")"
  grep -q "woken on lock:release:{wrongtype}:$wtok" "$T/waiter.err" || fail "$(cat "$T/waiter.err")"
  # the grant removed the string with the waiter's place
  run -1 "$RLOCK" status wrongtype
  nothing_left_on REDIS wrongtype
}

@test "an item larger than rlock takes pushed onto the waiter's list: it waits on and gets the lock" {
  tok=$("$RLOCK" acquire --ttl 30s hugeitem)
  bg_start waiter "$RLOCK" run --ttl 30s hugeitem -- true
  waiter=$BG_PID
  wait_until "[[ -n \$(waiter_token hugeitem) ]]"
  wtok=$(waiter_token hugeitem)
  head -c 9000000 /dev/zero | tr '\0' x >"$T/big"
  rcli -x lpush "lock:{hugeitem}:t:$wtok" <"$T/big" >/dev/null
  # popped (rlock refuses the reply: more than 8 MiB), and the waiter still waits
  wait_until "[[ \$(rcli exists 'lock:{hugeitem}:t:$wtok') == 0 ]] || ! kill -0 $waiter 2>/dev/null"
  wait_until "[[ \$(n_waiters hugeitem) == 1 ]] || ! kill -0 $waiter 2>/dev/null"
  still_waiting "$waiter"
  run -0 "$RLOCK" release hugeitem --token "$tok"
  bg_wait "$waiter" 20
  [[ $BG_STATUS == 0 ]] || fail "exited $BG_STATUS: $(cat "$T/waiter.err")"
  said_waiting_then_acquired "$T/waiter.err" hugeitem
  run -1 "$RLOCK" status hugeitem
  nothing_left_on REDIS hugeitem
}

@test "junk pushed onto the waiter's list, and the list deleted, cost it nothing: it keeps its place" {
  tok=$("$RLOCK" acquire --ttl 30s junk)
  bg_start waiter "$RLOCK" -v run --ttl 30s junk -- true
  waiter=$BG_PID
  wait_until "[[ -n \$(waiter_token junk) ]]"
  wtok=$(waiter_token junk)
  list="lock:{junk}:t:$wtok"
  # binary with escapes and a newline, a notice's word, another token, the empty string
  rcli lpush "$list" "$(printf 'a\001\033[31mb\nc')" break 0123456789abcdef0123456789abcdef "" \
    >/dev/null
  wait_until "[[ \$(grep -c '^rlock: .*woken (' '$T/waiter.err') -ge 4 ]]"
  rcli del "$list" >/dev/null
  # each item only made it look again (the escape shown escaped, never raw)
  run -1 grep -q $'\033' "$T/waiter.err"
  assert_equal "$(n_waiters junk)" 1
  assert_equal "$(waiter_token junk)" "$wtok"
  run -0 "$RLOCK" release junk --token "$tok"
  bg_wait "$waiter" 20
  assert_equal "$BG_STATUS" 0
  run -1 "$RLOCK" status junk
  nothing_left_on REDIS junk
}

@test "a server without BLPOP (renamed away): the waiter waits on its channel instead, not 70" {
  redis_start_named NOBLPOP --rename-command BLPOP ""
  tok=$("$RLOCK" --url "$NOBLPOP_URL" acquire --ttl 30s noblpop)
  bg_start waiter "$RLOCK" --url "$NOBLPOP_URL" run --ttl 30s noblpop -- true
  waiter=$BG_PID
  wait_until "[[ -n \$(rcli_to NOBLPOP pubsub channels 'lock:release:{noblpop}:*') ]] || ! kill -0 $waiter 2>/dev/null"
  still_waiting "$waiter"
  run -0 "$RLOCK" --url "$NOBLPOP_URL" release noblpop --token "$tok"
  bg_wait "$waiter" 20
  assert_equal "$BG_STATUS" 0
  said_waiting_then_acquired "$T/waiter.err" noblpop
  nothing_left_on NOBLPOP noblpop
  redis_stop NOBLPOP
}

# --- the waiter's BLPOP connection ----------------------------------------------------------

@test "CLIENT KILL of the waiter's BLPOP connection, released while it is down: it gets the lock" {
  redis_start_named KILLS
  tok=$("$RLOCK" --url "$KILLS_URL" acquire --ttl 30s killed)
  bg_start waiter "$RLOCK" --url "$KILLS_URL" run --ttl 30s killed -- true
  waiter=$BG_PID
  wait_until "[[ -n \$(blpop_id KILLS) ]]"
  id=$(blpop_id KILLS)
  assert_equal "$(rcli_to KILLS client kill id "$id")" 1
  # the turn is pushed while no BLPOP waits for it: the next one finds it
  run -0 "$RLOCK" --url "$KILLS_URL" release killed --token "$tok"
  bg_wait "$waiter" 20
  assert_equal "$BG_STATUS" 0
  said_waiting_then_acquired "$T/waiter.err" killed
  nothing_left_on KILLS killed
  redis_stop KILLS
}

@test "CLIENT UNBLOCK of the waiter's BLPOP (as a timeout): it blocks again and is woken" {
  redis_start_named UNBLK
  tok=$("$RLOCK" --url "$UNBLK_URL" acquire --ttl 30s unblocked)
  bg_start waiter "$RLOCK" --url "$UNBLK_URL" -v run --ttl 30s unblocked -- true
  waiter=$BG_PID
  wait_until "[[ -n \$(blpop_id UNBLK) ]]"
  id=$(blpop_id UNBLK)
  assert_equal "$(rcli_to UNBLK client unblock "$id")" 1
  wait_until "[[ \$(blpop_id UNBLK) == $id ]]" # the same connection, blocked again
  run -0 "$RLOCK" --url "$UNBLK_URL" release unblocked --token "$tok"
  bg_wait "$waiter" 20
  assert_equal "$BG_STATUS" 0
  grep -q "woken (turn)" "$T/waiter.err" || fail "$(cat "$T/waiter.err")"
  nothing_left_on UNBLK unblocked
  redis_stop UNBLK
}

@test "CLIENT UNBLOCK ERROR of the waiter's BLPOP: no outage, no server text, it gets the lock" {
  redis_start_named UNBLKE
  tok=$("$RLOCK" --url "$UNBLKE_URL" acquire --ttl 30s unblockederr)
  bg_start waiter "$RLOCK" --url "$UNBLKE_URL" run --ttl 30s unblockederr -- true
  waiter=$BG_PID
  wait_until "[[ -n \$(blpop_id UNBLKE) ]]"
  id=$(blpop_id UNBLKE)
  assert_equal "$(rcli_to UNBLKE client unblock "$id" error)" 1
  wait_until "[[ -n \$(blpop_id UNBLKE) && \$(blpop_id UNBLKE) != $id ]]" # a new connection
  run -0 "$RLOCK" --url "$UNBLKE_URL" release unblockederr --token "$tok"
  bg_wait "$waiter" 20
  assert_equal "$BG_STATUS" 0
  said_waiting_then_acquired "$T/waiter.err" unblockederr
  nothing_left_on UNBLKE unblockederr
  redis_stop UNBLKE
}

@test "a server at its maxclients refuses the waiter's second connection: it waits on (not 70) and gets the lock" {
  redis_start_named MAXC
  tok=$("$RLOCK" --url "$MAXC_URL" acquire --ttl 30s maxc)
  # Two connections that last 4 s, and a limit of three: the waiter's first connection
  # gets in, its BLPOP connection is refused until they are gone.
  rcli_to MAXC config set maxclients 3 >/dev/null
  bg_start f1 redis-cli -s "$MAXC_SOCK" blpop filler1 4
  f1=$BG_PID
  bg_start f2 redis-cli -s "$MAXC_SOCK" blpop filler2 4
  f2=$BG_PID
  wait_until "[[ \$(rcli_to MAXC client list | grep -c 'cmd=blpop') == 2 ]]"
  bg_start waiter "$RLOCK" --url "$MAXC_URL" -v run --ttl 30s maxc -- true
  waiter=$BG_PID
  wait_until "grep -q 'max number of clients' '$T/waiter.err'"
  bg_wait "$f1" 15 # the fillers end on their own
  bg_wait "$f2" 15
  still_waiting "$waiter"
  # It backed off meanwhile (0.25, 0.5, 1, 2 s: five tries in 4 s at most), where each
  # refusal was tried again after 250 ms (about 15).
  tries=$(grep -c 'wake-up list: .*max number of clients' "$T/waiter.err")
  ((tries <= 8)) || fail "$tries tries in 4 s: $(cat "$T/waiter.err")"
  wait_until "[[ -n \$(blpop_id MAXC) ]]"
  run -0 "$RLOCK" --url "$MAXC_URL" release maxc --token "$tok"
  bg_wait "$waiter" 20
  assert_equal "$BG_STATUS" 0
  rcli_to MAXC config set maxclients 10000 >/dev/null
  nothing_left_on MAXC maxc
  redis_stop MAXC
}

# --- the server -----------------------------------------------------------------------------

@test "a restart that keeps the data (AOF) under a holder and a waiter: the waiter blocks again and is woken at the release" {
  redis_start_named DATA --appendonly yes --appendfsync always
  bg_start holder "$RLOCK" --url "$DATA_URL" run --ttl 10s kept -- \
    sh -c 'touch "$1/held"; while [ ! -e "$1/go" ]; do sleep 0.05; done' x "$T"
  holder=$BG_PID
  wait_for_file "$T/held"
  bg_start waiter "$RLOCK" --url "$DATA_URL" -v run --ttl 30s kept -- true
  waiter=$BG_PID
  wait_until "[[ -n \$(blpop_id DATA) ]]"
  redis_restart DATA
  # the line survived, and the waiter waits on its list on the new server
  wait_until "[[ -n \$(blpop_id DATA) ]]" 15
  assert_equal "$(n_waiters_on DATA kept)" 1
  touch "$T/go"
  bg_wait "$holder" 20
  assert_equal "$BG_STATUS" 0
  bg_wait "$waiter" 20
  assert_equal "$BG_STATUS" 0
  grep -q "woken (turn)" "$T/waiter.err" || fail "$(cat "$T/waiter.err")"
  nothing_left_on DATA kept
  redis_stop DATA
}
