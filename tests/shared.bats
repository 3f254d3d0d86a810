#!/usr/bin/env bats
# ctest-labels: fast
# Shared locks (`--shared`/`-s`, as flock -s; docs/GUIDE.md "Shared locks"): any number of shared holders or
# one exclusive holder; the line stays first come, first served across both kinds, so an
# exclusive waiter is never overtaken by shared ones that came after it; each acquisition
# has its own fence; a `SET NX` client is kept out while shared holders hold (the key
# holds a marker no token can equal); status, list and --json show each holder's mode.
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

# field_values JSON FIELD: every value of "FIELD" in JSON, one per line.
field_values() {
  grep -o "\"$2\":\(\"[^\"]*\"\|-\?[0-9]*\)" <<<"$1" | cut -d: -f2 | tr -d '"' || true
}
holders_json() {
  local j
  j=$(status_json "$1") || return 1
  j=${j#*\"holders\":}
  echo "${j%%,\"waiters\":*}"
}
order_is() { assert_equal "$(tr '\n' ' ' <"$T/order")" "$* "; }

# --- many shared, or one exclusive ---------------------------------------------------------

@test "shared holders hold together; an exclusive acquire is refused until the last one leaves" {
  t1=$("$RLOCK" acquire -s --ttl 60s sh)
  t2=$("$RLOCK" acquire --shared --ttl 60s sh)
  assert [ "$t1" != "$t2" ]
  run -75 "$RLOCK" acquire -n sh
  assert_output --partial "held shared by 2 holders"
  run -0 "$RLOCK" release sh --token "$t1"
  run -75 "$RLOCK" acquire -n sh
  run -0 "$RLOCK" release sh --token "$t2"
  run -0 "$RLOCK" acquire -n --ttl 60s sh
  x=$output
  # and an exclusive holder keeps shared ones out
  run -75 "$RLOCK" acquire -s -n sh
  run -0 "$RLOCK" release sh --token "$x"
  run -1 "$RLOCK" status sh
}

@test "every shared acquisition gets its own fence, and fences keep growing across kinds" {
  t1=$("$RLOCK" acquire -s --ttl 60s --json fn)
  t2=$("$RLOCK" acquire -s --ttl 60s --json fn)
  f1=$(field_values "$t1" fence)
  f2=$(field_values "$t2" fence)
  assert [ "$f2" -gt "$f1" ]
  run -0 "$RLOCK" status fn --json
  assert_equal "$(field_values "$(holders_json fn)" fence | sort -u | grep -c .)" 2
  "$RLOCK" release fn --token "$(field_values "$t1" token)"
  "$RLOCK" release fn --token "$(field_values "$t2" token)"
  run -0 "$RLOCK" run fn -- sh -c 'echo "$RLOCK_FENCE"'
  assert [ "$output" -gt "$f2" ]
}

@test "status, list and --json show each holder's mode" {
  t1=$("$RLOCK" acquire -s --ttl 60s md)
  t2=$("$RLOCK" acquire -s --ttl 60s md)
  run -0 "$RLOCK" status md
  assert_line --index 0 --partial "md: held shared by 2 holders"
  assert_line --partial "  shared  "
  run -0 "$RLOCK" status md --json
  assert_output --partial '"mode":"shared"'
  refute_output --partial '"mode":"exclusive"'
  assert_output --partial '"holder_count":2'
  run -0 "$RLOCK" list 'md'
  assert_output --partial $'md\t2 shared\t'
  "$RLOCK" release md --token "$t1"
  "$RLOCK" release md --token "$t2"
  x=$("$RLOCK" acquire --ttl 60s md)
  run -0 "$RLOCK" status md --json
  assert_output --partial '"mode":"exclusive"'
  "$RLOCK" release md --token "$x"
}

@test "a SET NX client is kept out while shared holders hold, and gets in after the last leaves" {
  t1=$("$RLOCK" acquire -s --ttl 60s nx)
  t2=$("$RLOCK" acquire -s --ttl 60s nx)
  run -0 rcli set 'lock:{nx}' other NX PX 10000
  assert_output ""
  "$RLOCK" release nx --token "$t1"
  run -0 rcli set 'lock:{nx}' other NX PX 10000
  assert_output ""
  "$RLOCK" release nx --token "$t2"
  run -0 rcli set 'lock:{nx}' other NX PX 10000
  assert_output OK
  # and a SET NX holder keeps shared acquirers out
  run -75 "$RLOCK" acquire -s -n nx
  assert_output --partial "not rlock"
}

@test "the marker lasts as long as the longest shared lease, and goes with the last holder" {
  t1=$("$RLOCK" acquire -s --ttl 60s mk)
  t2=$("$RLOCK" acquire -s --ttl 5s mk)
  p=$(rcli pttl 'lock:{mk}')
  assert [ "$p" -gt 50000 ]
  "$RLOCK" release mk --token "$t1"
  p=$(rcli pttl 'lock:{mk}')
  assert [ "$p" -le 5000 ]
  assert [ "$p" -gt 0 ]
  "$RLOCK" release mk --token "$t2"
  assert_equal "$(rcli exists 'lock:{mk}')" 0
}

@test "the shared holders' set expires with the marker: leases that run out unreleased leave no key" {
  t1=$("$RLOCK" acquire -s --ttl 60s hx)
  "$RLOCK" acquire -s --ttl 5s hx >/dev/null
  p=$(rcli pttl 'lock:{hx}:holders')
  assert [ "$p" -gt 50000 ]
  # the longest lease leaves: the set now lasts as long as the lease left
  "$RLOCK" release hx --token "$t1"
  p=$(rcli pttl 'lock:{hx}:holders')
  assert [ "$p" -le 5000 ]
  assert [ "$p" -gt 0 ]
}

# --- the line: first come, first served across both kinds -----------------------------------

@test "an exclusive waiter is never overtaken by shared ones that came after it" {
  bg_start s1 "$RLOCK" run -s ff -- sh "$T/gate.sh" "$T" s1 s1
  s1=$BG_PID
  wait_for_file "$T/s1.started" 20
  bg_start x "$RLOCK" run --wait 120s ff -- sh "$T/gate.sh" "$T" x x
  x=$BG_PID
  wait_until '[ "$(n_waiters ff)" -eq 1 ]' 30
  # a shared newcomer could hold beside s1, but the exclusive waiter came first
  bg_start s2 "$RLOCK" run -s --wait 120s ff -- sh "$T/gate.sh" "$T" s2 s2
  s2=$BG_PID
  wait_until '[ "$(n_waiters ff)" -eq 2 ]' 30
  run -75 "$RLOCK" acquire -s -n ff
  assert [ ! -e "$T/s2.started" ]
  touch "$T/s1.go"
  wait_for_file "$T/x.started" 20
  assert [ ! -e "$T/s2.started" ]
  touch "$T/x.go"
  wait_for_file "$T/s2.started" 20
  touch "$T/s2.go"
  for p in "$s1" "$x" "$s2"; do
    bg_wait "$p" 30
    assert_equal "$BG_STATUS" 0
  done
  order_is s1 x s2
}

@test "shared waiters behind an exclusive holder all get in together when it lets go" {
  bg_start x "$RLOCK" run tg -- sh "$T/gate.sh" "$T" x
  x=$BG_PID
  wait_for_file "$T/x.started" 20
  pids=()
  for i in 1 2 3; do
    bg_start "s$i" "$RLOCK" run -s --wait 120s tg -- sh "$T/gate.sh" "$T" "s$i"
    pids+=("$BG_PID")
    wait_until "[ \"\$(n_waiters tg)\" -eq $i ]" 30
  done
  touch "$T/x.go"
  bg_wait "$x" 30
  # all three inside at once, none of them gone yet (their gates are closed)
  for i in 1 2 3; do wait_for_file "$T/s$i.started" 20; done
  assert_equal "$(n_holders tg)" 3
  assert_equal "$(n_waiters tg)" 0
  for i in 1 2 3; do touch "$T/s$i.go"; done
  for p in "${pids[@]}"; do
    bg_wait "$p" 30
    assert_equal "$BG_STATUS" 0
  done
}

@test "a release by the last shared holder wakes the exclusive waiter at once, not at a re-check" {
  t1=$("$RLOCK" acquire -s --ttl 60s wk)
  bg_start x "$RLOCK" run --wait 60s wk -- touch "$T/x.ran"
  x=$BG_PID
  wait_until '[ "$(n_waiters wk)" -eq 1 ]' 30
  start=$(now_ms)
  "$RLOCK" release wk --token "$t1"
  wait_for_file "$T/x.ran" 20
  elapsed=$(($(now_ms) - start))
  echo "# the exclusive waiter ran ${elapsed}ms after the release" >&3
  bg_wait "$x" 20
  assert_equal "$BG_STATUS" 0
}

# --- faults ------------------------------------------------------------------------------

@test "a shared holder whose lease runs out frees its part: the exclusive waiter then gets in" {
  run -0 "$RLOCK" acquire -s --ttl 1s ex # nothing renews it
  start=$(now_ms)
  run -0 "$RLOCK" run --wait "$(slack 10)s" ex -- true
  elapsed=$(($(now_ms) - start))
  echo "# in after ${elapsed}ms" >&3
  assert [ "$elapsed" -lt "$(slack 5000)" ]
}

@test "a shared holder killed with -9 leaves within its lease; the other shared holder holds on" {
  bg_start k1 "$RLOCK" run -s --ttl 2s k9 -- sh "$T/gate.sh" "$T" k1
  k1=$BG_PID
  bg_start k2 "$RLOCK" run -s --ttl 2s k9 -- sh "$T/gate.sh" "$T" k2
  k2=$BG_PID
  wait_for_file "$T/k1.started" 20
  wait_for_file "$T/k2.started" 20
  kill -9 "$k1"
  # k2 renews, k1's record runs out
  wait_until '[ "$(n_holders k9)" -eq 1 ]' "$(slack 10)"
  run -75 "$RLOCK" acquire -n k9
  touch "$T/k2.go" "$T/k1.go"
  bg_wait "$k2" 20
  assert_equal "$BG_STATUS" 0
  run -0 "$RLOCK" acquire -n k9
}

@test "break removes every shared holder, and each one hears it and applies --on-lost" {
  bg_start b1 "$RLOCK" run -s bk -- sh "$T/gate.sh" "$T" b1
  b1=$BG_PID
  bg_start b2 "$RLOCK" run -s bk -- sh "$T/gate.sh" "$T" b2
  b2=$BG_PID
  wait_for_file "$T/b1.started" 20
  wait_for_file "$T/b2.started" 20
  run -0 "$RLOCK" break --yes bk
  for p in "$b1" "$b2"; do
    bg_wait "$p" "$(slack 15)"
    assert_equal "$BG_STATUS" 76
  done
  run -0 "$RLOCK" acquire -n bk
}

@test "the marker deleted behind the shared holders' backs is a loss for them" {
  bg_start d1 "$RLOCK" run -s --ttl 3s dl -- sh "$T/gate.sh" "$T" d1
  d1=$BG_PID
  wait_for_file "$T/d1.started" 20
  rcli del 'lock:{dl}' >/dev/null
  # an exclusive client may take it now; the shared holder finds out at its next renewal
  bg_wait "$d1" "$(slack 10)"
  assert_equal "$BG_STATUS" 76
  grep -q "lost the lock 'dl'" "$T/d1.err"
}

@test "a semaphore granted where shared holders lost their marker keeps its whole lease and its limit" {
  # The shared holder's :holders carries the marker's expiry; the marker goes (a DEL, or
  # eviction), and a --limit acquire must neither inherit that expiry nor count the
  # shared holder as one of its places.
  end=$(($(now_ms) + 2000))
  "$RLOCK" acquire -s --ttl 2s sx >/dev/null
  rcli del 'lock:{sx}' >/dev/null
  t=$("$RLOCK" acquire --limit 2 --ttl 20s sx)
  assert_equal "$(rcli pttl 'lock:{sx}:holders')" -1
  assert_equal "$(rcli zcard 'lock:{sx}:holders')" 1
  # past the shared lease (timing is the point): the semaphore holder still holds
  wait_until '(( $(now_ms) > end + 500 ))' 10
  "$RLOCK" extend sx --token "$t"
  run -0 "$RLOCK" status sx
  assert_output --partial "held by 1 of 2 (last"
  "$RLOCK" acquire --limit 2 --ttl 20s sx >/dev/null
  run -75 "$RLOCK" acquire --limit 2 -n sx
}

@test "shared holders dropped by a grant because their marker went are in the history as lost, not never" {
  # Their own release would have recorded it, but a holder that died never releases, and
  # nothing lists it once the grant dropped it: the grant records the loss.
  local t1 t2
  t1=$("$RLOCK" acquire -s --ttl 30s --label first hl)
  t2=$("$RLOCK" acquire -s --ttl 30s --label other hl2)
  rcli del 'lock:{hl}' 'lock:{hl2}' >/dev/null
  "$RLOCK" acquire -s --ttl 30s hl >/dev/null
  "$RLOCK" acquire --limit 2 --ttl 30s hl2 >/dev/null
  local k tok
  for k in hl hl2; do
    tok=$t1
    [[ $k == hl2 ]] && tok=$t2
    run -0 "$RLOCK" history "$k" --json
    [[ $(jq -r --arg t "$tok" '[.[] | select(.tok == $t) | .event] | join(" ")' <<<"$output") == "acquired lost" ]] ||
      fail "$k: the dropped holder's events: $output"
    jq -e --arg t "$tok" '.[] | select(.tok == $t and .event == "lost") | .why == "its shared marker was gone"' <<<"$output" >/dev/null ||
      fail "$k: no reason: $output"
  done
  # nothing more is recorded when the dropped holder's own release finds it gone (76)
  run -76 "$RLOCK" release hl --token "$t1"
  run -0 "$RLOCK" history hl --json
  assert_equal "$(jq --arg t "$t1" '[.[] | select(.tok == $t and .event == "lost")] | length' <<<"$output")" 1
}

@test "a server restart without its data loses the shared holders' leases (76)" {
  bg_start r1 "$RLOCK" run -s --ttl 3s rs -- sh "$T/gate.sh" "$T" r1
  r1=$BG_PID
  wait_for_file "$T/r1.started" 20
  rm -f "$BATS_FILE_TMPDIR"/redis-*/dump.rdb
  redis_restart
  bg_wait "$r1" "$(slack 15)"
  assert_equal "$BG_STATUS" 76
}

# --- bad input and combinations ----------------------------------------------------------

@test "--shared with --limit, and --done-for with --shared, are usage errors (64)" {
  run -64 "$RLOCK" run -s --limit 2 bad -- true
  assert_output --partial "--shared and --limit"
  run -64 "$RLOCK" acquire --shared --limit 2 bad
  run -64 "$RLOCK" run -s --done-for 1m bad -- true
  assert_output --partial "--done-for and --shared"
  run -64 "$RLOCK" run --limit 2 --done-for 1m bad -- true
}

@test "a shared acquire of a semaphore key, and a semaphore acquire of a shared key, are refused (64)" {
  t=$("$RLOCK" acquire --limit 2 --ttl 60s sm)
  run -64 "$RLOCK" acquire -s -n sm
  assert_output --partial "--shared cannot share it"
  "$RLOCK" release sm --token "$t"
  t=$("$RLOCK" acquire -s --ttl 60s sm)
  run -64 "$RLOCK" acquire --limit 2 -n sm
  assert_output --partial "'sm' is held as a shared lock (--shared); --limit 2 cannot share it"
  "$RLOCK" release sm --token "$t"
}

@test "a score another program wrote in :holders (1e300, inf, a fraction) gives the marker a whole lease, not a script error" {
  for score in 1e300 inf "$(($(now_ms) + 60000)).5"; do
    rcli del 'lock:{hs}' 'lock:{hs}:holders' >/dev/null
    rcli set 'lock:{hs}' 'shared lock' >/dev/null
    rcli zadd 'lock:{hs}:holders' "$score" zz >/dev/null
    run -0 --separate-stderr "$RLOCK" acquire -s --ttl 20s hs
    left=$(rcli pttl 'lock:{hs}')
    (( left > 20000 && left <= 4503599627370496 )) || fail "score $score: marker PTTL $left"
  done
}

@test "status and list say a long time left for a holder whose score is 1e300 or inf, never a negative time" {
  for score in 1e300 inf; do
    rcli set 'lock:{hl}' 'shared lock' >/dev/null
    rcli zadd 'lock:{hl}:holders' "$score" zz >/dev/null
    run -0 "$RLOCK" status hl
    assert_output --partial "token zz"
    refute_output --regexp '-[0-9]+h'
    assert_output --regexp '[0-9]+h[0-9]+m[0-9]+s left'
    run -0 "$RLOCK" status hl --json
    assert_output --partial '"ttl_left_ms":4503599627370496'
    run -0 "$RLOCK" list
    assert_line --regexp $'^hl\t.*\t4503599627370496\t'
  done
}

# --- nesting -----------------------------------------------------------------------------

@test "nested: shared inside shared and shared inside exclusive run at once; exclusive inside shared is 64" {
  run -0 "$RLOCK" run -s ns -- "$RLOCK" run -s ns -- echo inner
  assert_output inner
  run -0 "$RLOCK" run ns -- "$RLOCK" run -s --wait 3s ns -- echo inner
  assert_output inner
  run -64 "$RLOCK" run -s ns -- "$RLOCK" run --wait 3s ns -- echo inner
  assert_output --partial "held shared by an enclosing holder"
  refute_output --partial inner
}
