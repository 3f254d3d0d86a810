#!/usr/bin/env bats
# ctest-labels: slow
# Fair waiting (docs/PROTOCOL.md "Fairness: what is guaranteed"): waiters are served first come, first served; a release wakes
# only the waiter whose turn it is; a dead, impatient or cancelled waiter never blocks the
# line for longer than its own place lease; a waiter that has waited longer than that
# lease keeps its place; a client with a wrong clock cannot reorder or stall the line; a
# foreign release (plain DEL, no publish) is noticed by the head within about a second;
# and mutual exclusion stays clean under all of it.
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
  # statgate.sh DIR NAME: gate.sh for measuring a handoff. Saves the server's command
  # statistics in DIR/NAME.stats as soon as it runs, and resets them as its last act.
  cat >"$T/statgate.sh" <<'EOF'
d=$1 n=$2
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" info commandstats >"$d/$n.stats"
touch "$d/$n.started"
i=0
while [ ! -e "$d/$n.go" ] && [ "$i" -lt 2400 ]; do sleep 0.05; i=$((i + 1)); done
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" config resetstat >/dev/null
EOF
}

# The default teardown of helpers/redis (bg_cleanup, redis_recover_all) ends every
# bg_start process a failed test leaves behind.

# --- local helpers ----------------------------------------------------------------------

# waiters_json KEY: the waiters array of status --json (holders come before it, the counts
# and the last events, which have pids too, after it).
waiters_json() {
  local j
  j=$(status_json "$1") || return 1
  j=${j#*\"waiters\":}
  echo "${j%%,\"holder_count\":*}"
}

# waiter_pids KEY: the pids of KEY's waiters in line order, one per line. For `run` the
# pid is rlock's own, which is the pid bg_start reports.
waiter_pids() {
  local j
  j=$(waiters_json "$1") || return 1
  grep -o '"pid":[0-9]*' <<<"$j" | cut -d: -f2
}

# n_waiters KEY: how many waiters are in line.
n_waiters() {
  local p
  p=$(waiter_pids "$1") || return 1
  grep -c . <<<"$p" || true
}

# in_line KEY PID: PID is one of KEY's waiters.
in_line() { waiter_pids "$1" | grep -qx "$2"; }

# line_is KEY PID...: the line is exactly these waiters in this order.
line_is() {
  local got want
  got=$(waiter_pids "$1" | tr '\n' ' ')
  shift
  want="${*:+$* }"
  assert_equal "$got" "$want"
}

# first_waited_ms KEY: waited_ms of the head of the line (empty when nobody waits).
first_waited_ms() {
  local j
  j=$(waiters_json "$1") || return 1
  grep -o '"waited_ms":-\?[0-9]*' <<<"$j" | head -n 1 | cut -d: -f2
}

# order_is WORD...: the lines of $T/order are exactly these words.
order_is() {
  local got
  got=$(tr '\n' ' ' <"$T/order")
  assert_equal "$got" "$* "
}

# queue_gates KEY N [SCRIPT=gate.sh]: a holder of KEY (gate KEY-0) and N waiters (gates
# KEY-1…KEY-N), each started once the one before is in line, so KEY-1 is the head. Sets
# GATE_PIDS (index 0 = the holder).
queue_gates() {
  local key=$1 n=$2 script=${3:-gate.sh} i
  GATE_PIDS=()
  bg_start "$key-0" "$RLOCK" run "$key" -- sh "$T/$script" "$T" "$key-0"
  GATE_PIDS+=("$BG_PID")
  wait_for_file "$T/$key-0.started" 20
  for ((i = 1; i <= n; i++)); do
    bg_start "$key-$i" "$RLOCK" run --wait 300s "$key" -- sh "$T/$script" "$T" "$key-$i"
    GATE_PIDS+=("$BG_PID")
    wait_until "[ \$(n_waiters $key) -eq $i ]" 30
  done
}

# finish_gates KEY: lets every gate of KEY go and checks that all of them exit 0.
finish_gates() {
  local key=$1 i
  for ((i = 0; i < ${#GATE_PIDS[@]}; i++)); do touch "$T/$key-$i.go"; done
  for ((i = 0; i < ${#GATE_PIDS[@]}; i++)); do
    bg_wait "${GATE_PIDS[i]}" 60
    assert_equal "$BG_STATUS" 0
  done
}

# calls_of FILE NAME: the calls= count of cmdstat_NAME in the INFO commandstats output
# saved in FILE (0 when the command was not run).
calls_of() {
  local n
  n=$(tr -d '\r' <"$1" | sed -n "s/^cmdstat_$2:calls=\([0-9]*\),.*/\1/p")
  echo "${n:-0}"
}

# herd_cost KEY N H: N waiters in line behind a holder, then H handoffs in a row
# (holder → 1 → 2 …), each measured by the gates themselves (statgate.sh): the one that
# ends resets the server's statistics as its last act, the next one saves them as its
# first, so the window is the handoff and little else. Then everyone finishes. Sets
# MIN_SCRIPTS (the fewest EVALSHA + EVAL calls of one handoff) and MAX_PUBLISHES (the
# most PUBLISH calls of one handoff; Redis counts the commands a script runs too).
herd_cost() {
  local key=$1 n=$2 handoffs=$3 h scripts publishes stats
  queue_gates "$key" "$n" statgate.sh
  # waiters wait on their own lists (BLPOP), one each, and subscribe to nothing: on the
  # lock's shared release channel only the holder (which hears a `break` there), no
  # pattern subscriptions, no waiter channels
  # (the holder subscribes 200 ms after its command starts: awaited, not assumed)
  wait_until "[[ \$(rcli pubsub numsub 'lock:release:{$key}' | tail -n 1) == 1 ]]" 5
  wait_until "[[ \$(blocked_in_blpop) == $n ]]" 5
  assert_equal "$(rcli pubsub numpat)" 0
  assert_equal "$(rcli pubsub channels "lock:release:{$key}:*" | grep -c .)" 0
  MIN_SCRIPTS=999999 MAX_PUBLISHES=0
  for ((h = 0; h < handoffs; h++)); do
    touch "$T/$key-$h.go"
    wait_for_file "$T/$key-$((h + 1)).started" 20
    stats="$T/$key-$((h + 1)).stats"
    scripts=$(($(calls_of "$stats" evalsha) + $(calls_of "$stats" eval)))
    publishes=$(calls_of "$stats" publish)
    echo "# $n waiters, handoff $h→$((h + 1)): $scripts script calls, $publishes publishes" >&3
    if ((scripts < MIN_SCRIPTS)); then MIN_SCRIPTS=$scripts; fi
    if ((publishes > MAX_PUBLISHES)); then MAX_PUBLISHES=$publishes; fi
  done
  finish_gates "$key"
}

# --- first come, first served ---------------------------------------------------------------

@test "waiters are served in arrival order: 8 waiters started 150ms apart run in that order" {
  bg_start holder "$RLOCK" run q -- sh "$T/gate.sh" "$T" holder
  holder=$BG_PID
  wait_for_file "$T/holder.started" 20
  pids=()
  for i in 1 2 3 4 5 6 7 8; do
    bg_start "w$i" "$RLOCK" run --wait 300s q -- sh -c 'echo "$1" >>"$2"' sh "$i" "$T/order"
    pids+=("$BG_PID")
    # the arrival itself: this waiter is in line (the next one starts after it)
    wait_until "[ \$(n_waiters q) -eq $i ]" 30
    sleep 0.15 # arrivals 150 ms apart; the wait above is what orders them
  done
  # status shows the line in arrival order
  line_is q "${pids[@]}"
  touch "$T/holder.go"
  bg_wait "$holder" 30
  assert_equal "$BG_STATUS" 0
  for pid in "${pids[@]}"; do
    bg_wait "$pid" 60
    assert_equal "$BG_STATUS" 0
  done
  order_is 1 2 3 4 5 6 7 8
}

@test "a release wakes only the waiter whose turn it is: Redis work per handoff does not grow with the line" {
  # One handoff is the release script (it publishes once on the lock's channel, where
  # nobody listens, and once 'turn' on the next waiter's own channel) and that waiter's
  # acquire script: 2 script calls. rlock 0.1.0's `run` sends its release twice (the
  # second finds nothing to release), so 3 are measured. A thundering herd would add one
  # acquire per other waiter still in line: at least 3 more in the first 3 handoffs with
  # 6 waiters, at least 6 more in the first 6 with 12. The other waiters also refresh
  # their place every 2s (the head every 1s), and on a busy machine one or two of those
  # may fall into a handoff: hence the bound 3 + 2 = 5, and the fewest of several
  # handoffs. PUBLISH is exact: refreshes publish nothing.
  herd_cost herd6 6 3
  min6=$MIN_SCRIPTS pub6=$MAX_PUBLISHES
  herd_cost herd12 12 6
  min12=$MIN_SCRIPTS pub12=$MAX_PUBLISHES

  assert [ "$min6" -ge 2 ] # the measurement saw the handoff at all
  assert [ "$min6" -le 5 ]
  assert [ "$min12" -le 5 ]
  assert [ "$min12" -le $((min6 + 2)) ] # flat, not growing with the line
  assert [ "$pub6" -le 2 ]
  assert [ "$pub12" -le 2 ]
}

# --- dead, impatient and cancelled waiters -----------------------------------------------------

@test "a SIGKILLed waiter at the head of the line does not stall the others beyond its place's lease" {
  bg_start holder "$RLOCK" run dk -- sh "$T/gate.sh" "$T" holder
  holder=$BG_PID
  wait_for_file "$T/holder.started" 20
  bg_start A "$RLOCK" run --wait 300s dk -- touch "$T/A.ran"
  a=$BG_PID
  wait_until "[ \$(n_waiters dk) -eq 1 ]" 30
  bg_start B "$RLOCK" run --wait 300s dk -- touch "$T/B.started"
  b=$BG_PID
  wait_until "[ \$(n_waiters dk) -eq 2 ]" 30
  line_is dk "$a" "$b"

  kill -9 "$a"
  bg_wait "$a"
  assert_equal "$BG_STATUS" 137
  start=$(now_ms)
  touch "$T/holder.go"
  # A's place lease (6s) runs out, then B's next re-check (every 2s) takes the lock
  wait_for_file "$T/B.started" 15
  elapsed=$(($(now_ms) - start))
  echo "# B served ${elapsed}ms after the release" >&3
  assert [ "$elapsed" -lt 12000 ]
  assert [ ! -e "$T/A.ran" ]
  bg_wait "$b" 20
  assert_equal "$BG_STATUS" 0
  bg_wait "$holder" 20
  assert_equal "$BG_STATUS" 0
  # A is gone from the line, its place and the line itself too
  line_is dk
  assert_equal "$(rcli zcard 'lock:{dk}:queue')" 0
  assert_equal "$(rcli --scan --pattern 'lock:{dk}:w:*')" ""
}

@test "a waiter whose --wait runs out, or that is SIGTERMed, leaves the line at once; the next is served in order" {
  bg_start holder "$RLOCK" run gu -- sh "$T/gate.sh" "$T" holder
  holder=$BG_PID
  wait_for_file "$T/holder.started" 20
  bg_start w1 "$RLOCK" run --wait 6s gu -- sh -c 'echo 1 >>"$1"' sh "$T/order"
  w=("" "$BG_PID") # w[i]: the pid of waiter i
  wait_until "in_line gu ${w[1]}" 30
  # Each joins behind the one before; w1 may run out of --wait meanwhile on a slow
  # machine, so each is awaited by its own place, not by a count of the line.
  for i in 2 3 4; do
    bg_start "w$i" "$RLOCK" run --wait 300s gu -- sh -c 'echo "$1" >>"$2"' sh "$i" "$T/order"
    w+=("$BG_PID")
    wait_until "in_line gu $BG_PID" 30
  done

  # --wait ran out: exit 75, and its place is gone right away (not after its 6s lease)
  bg_wait "${w[1]}" 30
  assert_equal "$BG_STATUS" 75
  line_is gu "${w[2]}" "${w[3]}" "${w[4]}"

  # SIGTERM while waiting: exit 128+15, and its place is gone right away too
  kill -TERM "${w[2]}"
  bg_wait "${w[2]}" 20
  assert_equal "$BG_STATUS" 143
  line_is gu "${w[3]}" "${w[4]}"

  touch "$T/holder.go"
  for pid in "$holder" "${w[3]}" "${w[4]}"; do
    bg_wait "$pid" 30
    assert_equal "$BG_STATUS" 0
  done
  order_is 3 4
  line_is gu
}

@test "a waiter that has waited longer than its place's lease (6s) is still served, in its turn" {
  bg_start holder "$RLOCK" run lw -- sh "$T/gate.sh" "$T" holder
  holder=$BG_PID
  wait_for_file "$T/holder.started" 20
  bg_start w1 "$RLOCK" run --wait 300s lw -- sh -c 'echo 1 >>"$1"' sh "$T/order"
  w1=$BG_PID
  wait_until "[ \$(n_waiters lw) -eq 1 ]" 30
  bg_start w2 "$RLOCK" run --wait 300s lw -- sh -c 'echo 2 >>"$1"' sh "$T/order"
  w2=$BG_PID
  wait_until "[ \$(n_waiters lw) -eq 2 ]" 30

  # well past the 6s place lease (and past several of its refreshes)
  wait_until "[ \"\$(first_waited_ms lw)\" -ge 8000 ]" 30
  line_is lw "$w1" "$w2"

  touch "$T/holder.go"
  for pid in "$holder" "$w1" "$w2"; do
    bg_wait "$pid" 30
    assert_equal "$BG_STATUS" 0
  done
  order_is 1 2
}

# --- clocks --------------------------------------------------------------------------

@test "a client whose clock is far off cannot reorder or stall the line" {
  command -v faketime >/dev/null || skip "faketime is not installed (apt-get install faketime)"
  # Only the wall clock is skewed: a monotonic clock one day back would be negative on a
  # machine up for less than a day, which no real host has.
  export FAKETIME_DONT_FAKE_MONOTONIC=1
  skew=$(($(faketime -f '+2d' date +%s) - $(date +%s)))
  [ "$skew" -gt 100000 ] || skip "faketime does not change the clock here"

  bg_start holder "$RLOCK" run ck -- sh "$T/gate.sh" "$T" holder
  holder=$BG_PID
  wait_for_file "$T/holder.started" 20
  pids=()
  for i in 1 2 3 4; do
    case $i in
      # (an ASan build refuses an LD_PRELOADed library before its own runtime
      # unless told the order does not matter)
      2) clock=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" faketime -f '+2d') ;;
      3) clock=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" faketime -f '-1d') ;;
      *) clock=() ;;
    esac
    bg_start "w$i" "${clock[@]}" "$RLOCK" run --wait 300s ck -- \
      sh -c 'echo "$1" >>"$2"' sh "$i" "$T/order"
    pids+=("$BG_PID")
    wait_until "[ \$(n_waiters ck) -eq $i ]" 30
  done
  # every time in the line is the server's: nobody has "waited" two days or minus one
  waited=$(waiters_json ck | grep -o '"waited_ms":-\?[0-9]*' | cut -d: -f2)
  assert_equal "$(grep -c . <<<"$waited")" 4
  while read -r ms; do
    assert [ "$ms" -ge 0 ]
    assert [ "$ms" -lt 120000 ]
  done <<<"$waited"

  start=$(now_ms)
  touch "$T/holder.go"
  for pid in "$holder" "${pids[@]}"; do
    bg_wait "$pid" 30
    assert_equal "$BG_STATUS" 0
  done
  elapsed=$(($(now_ms) - start))
  echo "# 4 waiters served ${elapsed}ms after the release" >&3
  assert [ "$elapsed" -lt 10000 ]
  order_is 1 2 3 4
}

# --- foreign releases ----------------------------------------------------------------------

@test "a foreign release (DEL, nothing published) is noticed by the head of the line within about a second" {
  run -0 rcli set 'lock:{f}' x NX PX 60000
  assert_output OK
  bg_start w "$RLOCK" run --wait 30s f -- touch "$T/w.started"
  waiter=$BG_PID
  wait_until "[ \$(n_waiters f) -eq 1 ]" 30
  start=$(now_ms)
  run -0 rcli del 'lock:{f}'
  assert_output 1
  wait_for_file "$T/w.started" 10
  elapsed=$(($(now_ms) - start))
  echo "# acquired ${elapsed}ms after the foreign DEL" >&3
  assert [ "$elapsed" -lt 3000 ]
  bg_wait "$waiter" 20
  assert_equal "$BG_STATUS" 0
}

# --- mutual exclusion ----------------------------------------------------------------------

@test "mutual exclusion stays clean under fair waiting: 6 contenders x 10 runs, counter 60, no overlap, fences increase" {
  # crit.sh DIR: the critical section. An atomic mkdir detects a second holder inside; a
  # read-modify-write of a counter loses an update whenever two overlap.
  cat >"$T/crit.sh" <<'EOF'
d=$1
if ! mkdir "$d/inside" 2>/dev/null; then touch "$d/overlap"; fi
echo "$RLOCK_FENCE" >>"$d/fences"
n=$(cat "$d/counter")
sleep 0.01
echo $((n + 1)) >"$d/counter"
rmdir "$d/inside" 2>/dev/null
exit 0
EOF
  echo 0 >"$T/counter"
  pids=()
  for c in 1 2 3 4 5 6; do
    bg_start "c$c" sh -c '
      for i in 1 2 3 4 5 6 7 8 9 10; do
        "$1" run --wait 300s mx -- sh "$2" "$3" || exit $?
      done' sh "$RLOCK" "$T/crit.sh" "$T"
    pids+=("$BG_PID")
  done
  for pid in "${pids[@]}"; do
    bg_wait "$pid" 240
    assert_equal "$BG_STATUS" 0
  done
  assert [ ! -e "$T/overlap" ]
  assert_equal "$(cat "$T/counter")" 60
  assert_equal "$(grep -c . "$T/fences")" 60
  prev=0
  while read -r fence; do
    assert [ "$fence" -gt "$prev" ]
    prev=$fence
  done <"$T/fences"
}
