#!/usr/bin/env bats
# ctest-labels: fast
# Counting semaphores (`--limit N`, docs/GUIDE.md "Pools"): at most N holders at once, each with its own
# token, fence and lease; a crashed holder frees its slot after its TTL; the limit is
# stored with the key and a different one (or a plain lock) is refused with 64; waiters
# are served first come, first served as places free up, one release waking exactly one
# waiter; the watchdog renews every holder.
#
# Ordering events are awaited, never slept for: a child marks itself with a file
# (wait_for_file), a waiter's arrival is the waiter count in `rlock status --json`.

# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell
load helpers/redis

bats_require_minimum_version 1.5.0

setup_file() { redis_start; }

setup() {
  T=$BATS_TEST_TMPDIR
  write_gate "$T/gate.sh"
}

# The default teardown of helpers/redis (bg_cleanup, redis_recover_all) ends every
# bg_start process a failed test leaves behind.

# --- local helpers ----------------------------------------------------------------------

# holders_json KEY: the holders array of status --json (it comes before "waiters").
holders_json() {
  local j
  j=$(status_json "$1") || return 1
  j=${j#*\"holders\":}
  echo "${j%%,\"waiters\":*}"
}

# waiters_json KEY: the waiters array of status --json (it comes before "holder_count";
# the last events after it have pids too).
waiters_json() {
  local j
  j=$(status_json "$1") || return 1
  j=${j#*\"waiters\":}
  echo "${j%%,\"holder_count\":*}"
}

# field_values JSON FIELD: every value of "FIELD" in JSON, one per line (numbers, or
# strings without their quotes).
field_values() {
  grep -o "\"$2\":\(\"[^\"]*\"\|-\?[0-9]*\)" <<<"$1" | cut -d: -f2 | tr -d '"' || true
}

# n_holders KEY / n_waiters KEY: how many hold / wait.
n_holders() { field_values "$(holders_json "$1")" token | grep -c . || true; }
n_waiters() { field_values "$(waiters_json "$1")" token | grep -c . || true; }

# line_is KEY PID...: the line of waiters is exactly these pids in this order.
line_is() {
  local got want
  got=$(field_values "$(waiters_json "$1")" pid | tr '\n' ' ')
  shift
  want="${*:+$* }"
  assert_equal "$got" "$want"
}

# order_is WORD...: the lines of $T/order are exactly these words.
order_is() {
  local got
  got=$(tr '\n' ' ' <"$T/order")
  assert_equal "$got" "$* "
}

# calls_of NAME: calls of cmdstat_NAME in INFO commandstats since the last resetstat.
calls_of() {
  local n
  n=$(rcli info commandstats | tr -d '\r' | sed -n "s/^cmdstat_$1:calls=\([0-9]*\),.*/\1/p")
  echo "${n:-0}"
}

# sem_line KEY LIMIT WAITERS: LIMIT holders of KEY --limit LIMIT (gates h1…), then
# WAITERS waiters (gates w1…, each appending its number to $T/order when it gets in),
# each started once the one before is in line. Sets HOLDER_PIDS and WAITER_PIDS.
sem_line() {
  local key=$1 limit=$2 n=$3 i
  HOLDER_PIDS=() WAITER_PIDS=()
  for ((i = 1; i <= limit; i++)); do
    bg_start "h$i" "$RLOCK" run --limit "$limit" "$key" -- sh "$T/gate.sh" "$T" "h$i"
    HOLDER_PIDS+=("$BG_PID")
    wait_for_file "$T/h$i.started" 20
  done
  for ((i = 1; i <= n; i++)); do
    bg_start "w$i" "$RLOCK" run --limit "$limit" --wait 300s "$key" -- \
      sh "$T/gate.sh" "$T" "w$i" "$i"
    WAITER_PIDS+=("$BG_PID")
    wait_until "[ \$(n_waiters $key) -eq $i ]" 30
  done
}

# sem_finish: lets every gate go and checks that every holder and waiter exits 0.
sem_finish() {
  local pid f
  for f in "$T"/*.started; do touch "${f%.started}.go"; done
  for ((i = 1; i <= ${#WAITER_PIDS[@]}; i++)); do touch "$T/w$i.go"; done
  for pid in "${HOLDER_PIDS[@]}" "${WAITER_PIDS[@]}"; do
    bg_wait "$pid" 60
    assert_equal "$BG_STATUS" 0
  done
}

# --- at most N, and N reached ------------------------------------------------------------------

@test "--limit 3 with 9 contenders never has more than 3 inside, and does reach 3" {
  # inside.sh DIR: the critical section. Counts who is inside right after entering (its
  # own file included), holds on until the test says go (bounded: 60s), then a moment
  # more so later holders overlap too, and leaves before rlock releases its place.
  mkdir "$T/in"
  cat >"$T/inside.sh" <<'EOF'
d=$1
touch "$d/in/$$"
ls "$d/in" | wc -l >>"$d/counts"
i=0
while [ ! -e "$d/go" ] && [ "$i" -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
sleep 0.2
rm -f "$d/in/$$"
EOF
  pids=()
  for c in 1 2 3 4 5 6 7 8 9; do
    bg_start "c$c" "$RLOCK" run --limit 3 --wait 300s sem -- sh "$T/inside.sh" "$T"
    pids+=("$BG_PID")
  done
  # three are in and six wait in line
  wait_until "[ \$(n_waiters sem) -eq 6 ]" 30
  wait_until "[ \$(grep -c . \"$T/counts\" 2>/dev/null) -eq 3 ]" 30
  assert_equal "$(n_holders sem)" 3
  assert_equal "$(find "$T/in" -type f | grep -c .)" 3
  touch "$T/go"
  for pid in "${pids[@]}"; do
    bg_wait "$pid" 60
    assert_equal "$BG_STATUS" 0
  done
  assert_equal "$(grep -c . "$T/counts")" 9
  assert_equal "$(sort -n "$T/counts" | tail -n 1)" 3
}

# --- each holder its own token, fence and lease -------------------------------------------------

@test "each semaphore holder has its own token and fence; status shows the stored limit" {
  for i in 1 2 3; do
    tok[i]=$("$RLOCK" acquire --limit 3 --ttl 60s tf)
  done
  run -75 "$RLOCK" acquire --limit 3 -n tf # full

  holders=$(holders_json tf)
  run -0 "$RLOCK" status tf --json
  assert_output --partial '"limit":3'
  assert_output --partial '"held":true'
  # the three tokens acquire printed, and nothing else
  assert_equal "$(field_values "$holders" token | sort | tr '\n' ' ')" \
    "$(printf '%s\n' "${tok[@]}" | sort | tr '\n' ' ')"
  assert_equal "$(field_values "$holders" token | sort -u | grep -c .)" 3
  assert_equal "$(field_values "$holders" fence | sort -u | grep -c .)" 3
  # each with its own lease
  while read -r ms; do
    assert [ "$ms" -gt 0 ]
    assert [ "$ms" -le 60000 ]
  done < <(field_values "$holders" ttl_left_ms)
  run -0 "$RLOCK" status tf
  assert_output --partial "3 of 3"

  # each token releases its own place only
  run -0 "$RLOCK" release tf --token "${tok[2]}"
  assert_equal "$(n_holders tf)" 2
  run -76 "$RLOCK" release tf --token "${tok[2]}"
  run -0 "$RLOCK" release tf --token "${tok[1]}"
  run -0 "$RLOCK" release tf --token "${tok[3]}"
  run -1 "$RLOCK" status tf
}

@test "a crashed semaphore holder frees its slot after its TTL" {
  # `acquire` leaves no process behind: nothing will ever release these two
  run -0 "$RLOCK" acquire --limit 2 --ttl 1s cr
  run -0 "$RLOCK" acquire --limit 2 --ttl 1s cr
  run -75 "$RLOCK" acquire --limit 2 -n cr
  start=$(now_ms)
  run -0 "$RLOCK" acquire --limit 2 --wait 5s cr
  elapsed=$(($(now_ms) - start))
  echo "# a slot was free after ${elapsed}ms" >&3
  assert [ "$elapsed" -lt 5000 ]
  # the other crashed holder's 1s lease runs out too, leaving only the new one
  wait_until '[ "$(n_holders cr)" -eq 1 ]' 5
}

# --- the limit is stored with the key ------------------------------------------------------

@test "a different --limit, or a plain lock, on a key in use is refused with 64; once free any limit goes" {
  t1=$("$RLOCK" acquire --limit 2 mix)
  run -64 "$RLOCK" acquire --limit 3 mix
  assert_output --partial "limit 2"
  run -64 "$RLOCK" acquire mix # plain on a semaphore
  assert_output --partial "limit 2"
  run -64 "$RLOCK" run --limit 3 --wait 5s mix -- touch "$T/ran"
  assert [ ! -e "$T/ran" ]
  run -0 "$RLOCK" status mix --json
  assert_output --partial '"limit":2'

  tp=$("$RLOCK" acquire plainmix)
  run -64 "$RLOCK" acquire --limit 2 plainmix # a semaphore on a plain lock
  assert_output --partial "plain lock"
  run -0 "$RLOCK" status plainmix --json
  assert_output --partial '"limit":0'

  # nothing was granted on the side
  assert_equal "$(n_holders mix)" 1
  assert_equal "$(n_holders plainmix)" 1

  run -0 "$RLOCK" release mix --token "$t1"
  run -0 "$RLOCK" release plainmix --token "$tp"
  run -0 "$RLOCK" acquire --limit 3 mix
  run -0 "$RLOCK" acquire --limit 2 plainmix
  run -0 "$RLOCK" status mix --json
  assert_output --partial '"limit":3'
}

@test "--limit takes a positive whole number or names; anything else is a usage error (64)" {
  for bad in 0 -1 1.5 '' 'a b' 'a,,b' 'a,' 'a,a' 'a,2' $'a\tb' "$(printf 'x%.0s' {1..65})" \
    "$(seq -s, -f 'n%g' 101)" "$(seq -s, -f 'runner-name-%03g' 1 70)"; do
    run -64 "$RLOCK" acquire --limit "$bad" badlimit
    assert_output --partial "limit"
  done
  run -64 "$RLOCK" run --limit 0 badlimit -- touch "$T/ran"
  assert [ ! -e "$T/ran" ]
  run -1 "$RLOCK" status badlimit
}

# --- fairness and wake-ups -------------------------------------------------------------------

@test "waiters on a semaphore are served first come, first served as places free up" {
  sem_line fifo 2 4
  line_is fifo "${WAITER_PIDS[@]}"
  touch "$T/h1.go" # one place free: the first waiter
  wait_for_file "$T/w1.started" 20
  touch "$T/h2.go"
  wait_for_file "$T/w2.started" 20
  touch "$T/w1.go"
  wait_for_file "$T/w3.started" 20
  touch "$T/w2.go"
  wait_for_file "$T/w4.started" 20
  sem_finish
  order_is 1 2 3 4
}

@test "the release of one semaphore holder wakes exactly the next waiter; the others keep waiting" {
  sem_line nx 2 3
  tokens=$(field_values "$(waiters_json nx)" token)
  first=$(head -n 1 <<<"$tokens")
  # every 'turn' sent to a waiter of nx, as it is published
  bg_start sub redis-cli -h 127.0.0.1 -p "$REDIS_PORT" psubscribe 'lock:release:{nx}:*'
  wait_until "grep -q psubscribe \"$T/sub.out\"" 10
  rcli config resetstat >/dev/null

  touch "$T/h1.go"
  wait_for_file "$T/w1.started" 20
  # right after: the second and third are still in line, in order, and not woken
  line_is nx "${WAITER_PIDS[1]}" "${WAITER_PIDS[2]}"
  assert_equal "$(n_holders nx)" 2
  assert [ ! -e "$T/w2.started" ]
  assert [ ! -e "$T/w3.started" ]
  # one 'turn', on the first waiter's own channel; with the release's own publish on the
  # lock's channel that is all that was published
  wait_until "grep -qx turn \"$T/sub.out\"" 10
  assert_equal "$(grep -cx turn "$T/sub.out")" 1
  run -0 grep -x "lock:release:{nx}:[0-9a-f]*" "$T/sub.out"
  assert_output "lock:release:{nx}:$first"
  assert_equal "$(calls_of publish)" 2

  # sem_finish frees both remaining places at once: waiters 2 and 3 are then both
  # entitled to one and may start in either order (one place at a time is strict FIFO:
  # see the test above).
  sem_finish
  assert_equal "$(head -n 1 "$T/order")" 1
  assert_equal "$(sort "$T/order" | tr '\n' ' ')" "1 2 3 "
}

# --- the watchdog --------------------------------------------------------------------------

@test "the watchdog renews semaphore holders: a 1s lease outlives a 3s command" {
  # (both times the slack: a renewal every 333 ms is what a loaded sanitizer run misses)
  bg_start holder "$RLOCK" run --limit 2 --ttl "$(slack 1)s" wd -- \
    sh -c 'touch "$1/started"; sleep "$2"; touch "$1/done"' sh "$T" "$(slack 3)"
  holder=$BG_PID
  wait_for_file "$T/started" 20
  start=$(now_ms)
  first=$(field_values "$(holders_json wd)" token)
  assert [ -n "$first" ]
  samples=0 last_ok=0
  # every 200ms, until the command is done: still exactly one holder, the same one
  while [ ! -e "$T/done" ]; do
    now=$(field_values "$(holders_json wd)" token)
    if [ "$now" = "$first" ]; then
      last_ok=$(($(now_ms) - start))
    elif [ ! -e "$T/done" ]; then
      fail "$(printf 'sample %s: holders [%s], expected [%s]:\n%s' "$samples" "$now" "$first" \
        "$(status_json wd)")"
    fi
    samples=$((samples + 1))
    sleep 0.2
  done
  echo "# $samples samples, the last one still held ${last_ok}ms after the start" >&3
  # well past the 1s lease: it was renewed
  assert [ "$last_ok" -ge "$(slack 1500)" ]
  bg_wait "$holder" 20
  assert_equal "$BG_STATUS" 0
  run -1 "$RLOCK" status wd
}

# --- named pools ------------------------------------------------------------------------------

@test "named pool: each holder gets a free name of --limit db-a,db-b,db-c as RLOCK_SLOT; status, --json and history show it" {
  for i in 1 2 3; do
    bg_start "p$i" "$RLOCK" run --limit db-a,db-b,db-c np -- \
      sh -c 'echo "$RLOCK_SLOT" >"$0.slot"; exec sh "$1" "$2" "$3"' "$T/p$i" "$T/gate.sh" "$T" "p$i"
    pids[i]=$BG_PID
    wait_for_file "$T/p$i.started" 20
  done
  # handed out in the pool's order, each to one holder
  assert_equal "$(cat "$T/p1.slot" "$T/p2.slot" "$T/p3.slot" | tr '\n' ' ')" "db-a db-b db-c "
  run -75 "$RLOCK" run -n --limit db-a,db-b,db-c np -- touch "$T/ran"
  assert [ ! -e "$T/ran" ]
  run -0 "$RLOCK" status np --json
  assert_equal "$(jq -c '[.holders[].slot_name] | sort' <<<"$output")" '["db-a","db-b","db-c"]'
  assert_equal "$(jq '.limit' <<<"$output")" 3
  run -0 "$RLOCK" status np
  assert_output --partial "slot db-b"
  run -0 "$RLOCK" history np
  assert_output --partial "slot db-c"
  # a name freed by a release is the next one handed out
  touch "$T/p2.go"
  bg_wait "${pids[2]}" 20
  assert_equal "$BG_STATUS" 0
  run -0 "$RLOCK" run --limit db-a,db-b,db-c np -- sh -c 'echo "$RLOCK_SLOT"'
  assert_output db-b
  run -0 "$RLOCK" acquire --json --limit db-a,db-b,db-c np
  assert_equal "$(jq -r '.slot_name' <<<"$output")" db-b
  for i in 1 3; do touch "$T/p$i.go"; done
  # one word that is not a number is a pool of one
  run -0 "$RLOCK" run --limit the-db np1 -- sh -c 'echo "$RLOCK_SLOT"'
  assert_output the-db
}

@test "named pool: a holder killed with -9 keeps its name while its lease lives, then the name comes back" {
  bg_start k "$RLOCK" run --limit db-a,db-b --ttl 2s npk -- sh -c 'echo "$RLOCK_SLOT" >"$0"; exec sleep 60' "$T/k.slot"
  k=$BG_PID
  wait_for_content "$T/k.slot" 20
  assert_equal "$(cat "$T/k.slot")" db-a
  kill -9 "$k"
  # the dead holder's lease lives: the next holder never gets db-a, and the pool is full with it
  bg_start h "$RLOCK" run --limit db-a,db-b npk -- sh -c 'echo "$RLOCK_SLOT" >"$0.slot"; exec sh "$1" "$2" h' \
    "$T/h" "$T/gate.sh" "$T"
  h=$BG_PID
  wait_for_file "$T/h.started" 20
  assert_equal "$(cat "$T/h.slot")" db-b
  assert_equal "$(status_json npk | jq -c '[.holders[].slot_name] | sort')" '["db-a","db-b"]'
  # once the lease has run out, db-a is free again (and db-b still taken)
  wait_until '[ "$("$RLOCK" run --limit db-a,db-b -n npk -- sh -c "echo \$RLOCK_SLOT")" = db-a ]' "$(slack 10)"
  touch "$T/h.go"
  bg_wait "$h" 20
  assert_equal "$BG_STATUS" 0
}

@test "named pool: names Lua would read as numbers (inf, 0x1, nan) are names: never handed out twice, never an error" {
  a=$("$RLOCK" acquire --ttl 60s --json --limit inf,0x1,nan lua-names | jq -r .slot_name)
  b=$("$RLOCK" acquire --ttl 60s --json --limit inf,0x1,nan lua-names | jq -r .slot_name)
  c=$("$RLOCK" acquire --ttl 60s --json --limit inf,0x1,nan lua-names | jq -r .slot_name)
  assert_equal "$a $b $c" "inf 0x1 nan"
  run -75 "$RLOCK" acquire -n --limit inf,0x1,nan lua-names
}

@test "named pool: holders giving another definition of the pool are refused with 64 naming it" {
  t=$("$RLOCK" acquire --ttl 60s --limit db-a,db-b npm)
  run -64 "$RLOCK" acquire --limit 2 npm # the same count, but numbers
  assert_output --partial "--limit db-a,db-b"
  run -64 "$RLOCK" acquire --limit db-x,db-y npm
  assert_output --partial "--limit db-a,db-b, not db-x,db-y"
  run -64 "$RLOCK" acquire --limit db-a,db-b,db-c npm # another count
  assert_output --partial "--limit db-a,db-b, not db-a,db-b,db-c"
  run -64 "$RLOCK" run --limit db-b,db-a npm -- touch "$T/ran" # another order is another pool
  assert [ ! -e "$T/ran" ]
  assert_equal "$(n_holders npm)" 1
  # and the other way round: a count's holder refuses a pool of names
  t2=$("$RLOCK" acquire --ttl 60s --limit 2 npc)
  run -64 "$RLOCK" acquire --limit db-a,db-b npc
  assert_output --partial "--limit 2, not db-a,db-b"
  "$RLOCK" release npm --token "$t"
  "$RLOCK" release npc --token "$t2"
  # once free, any definition goes
  run -0 "$RLOCK" run --limit db-x,db-y npm -- sh -c 'echo "$RLOCK_SLOT"'
  assert_output db-x
}
