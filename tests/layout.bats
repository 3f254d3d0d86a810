#!/usr/bin/env bats
# ctest-labels: fast
# Other tools' layouts (docs/PROTOCOL.md "Other tools' layouts"): --layout plain (the seeds' NestJS service: SET
# PREFIXKEY token NX PX, releases published on PREFIXrelease:KEY) and --layout redisson
# (Redisson's hash at KEY, field = holder id, value = hold count; unlock publishes "0" on
# redisson_lock__channel:{KEY}). Here: rlock on its own, against the keys and channels
# as redis-cli sees them (tests/layout_interop.bats runs the real other clients).

# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell
load helpers/redis

bats_require_minimum_version 1.5.0

setup_file() { redis_start; }

setup() {
  T=$BATS_TEST_TMPDIR
  write_gate "$T/gate.sh"
}

@test "plain: run holds PREFIXKEY with its token and a PX lease, no fence in the command's environment" {
  run -0 env RLOCK_FENCE=99 RLOCK_FENCES=99 "$RLOCK" --layout plain run pk -- \
    sh -c 'echo "tok=$RLOCK_TOKEN fence=${RLOCK_FENCE-unset} fences=${RLOCK_FENCES-unset}"; redis-cli -p '"$REDIS_PORT"' get lock:pk; redis-cli -p '"$REDIS_PORT"' pttl lock:pk'
  local tok
  tok=$(sed -n 's/^tok=\([0-9a-f]*\) .*/\1/p' <<<"$output")
  assert [ ${#tok} -eq 32 ]
  assert_line --index 0 "tok=$tok fence=unset fences=unset"
  assert_line --index 1 "$tok"
  assert [ "${lines[2]}" -gt 25000 ]
  # released: the key is gone, nothing else was written
  run -0 rcli exists lock:pk 'lock:{pk}' 'lock:{pk}:fence' 'lock:{pk}:log'
  assert_output 0
}

@test "plain: a key someone else SET NX holds is taken for rlock (75), and rlock's key is taken for SET NX" {
  rcli set lock:coupon:issue:42 svc-token px 20000 >/dev/null
  run -75 "$RLOCK" --layout plain run -n coupon:issue:42 -- true
  assert_output --partial "held by token svc-token (--layout plain), lease runs out in"
  rcli del lock:coupon:issue:42 >/dev/null
  tok=$("$RLOCK" --layout plain acquire coupon:issue:42 --ttl 20s)
  run -0 rcli set lock:coupon:issue:42 other nx px 5000
  assert_output ""
  run -0 rcli get lock:coupon:issue:42
  assert_output "$tok"
  run -0 "$RLOCK" --layout plain release coupon:issue:42 --token "$tok"
  run -0 rcli exists lock:coupon:issue:42
  assert_output 0
}

@test "plain: release and break publish the KEY on PREFIXrelease:KEY, which a PSUBSCRIBE hears" {
  bg_start sub redis-cli -p "$REDIS_PORT" psubscribe 'lock:release:*'
  wait_until "grep -q psubscribe '$T/sub.out'"
  tok=$("$RLOCK" --layout plain acquire pub:k)
  "$RLOCK" --layout plain release pub:k --token "$tok"
  "$RLOCK" --layout plain acquire pub:k >/dev/null
  run -0 "$RLOCK" --layout plain break pub:k --yes
  wait_until "[ \$(grep -c '^lock:release:pub:k$' '$T/sub.out') -ge 2 ]"
  run -0 grep -A3 -x pmessage "$T/sub.out"
  assert_line --index 2 "lock:release:pub:k"
  assert_line --index 3 "pub:k"
}

@test "plain: a waiter hears a release by SET NX's owner at once, and otherwise takes it when the key expires" {
  rcli set lock:wk svc px 60000 >/dev/null
  rlock_bg w --layout plain run --wait 30s wk -- touch "$T/ran"
  wait_until "grep -q 'waiting for' '$T/w.err'"
  local t0
  t0=$(now_ms)
  rcli del lock:wk >/dev/null
  rcli publish lock:release:wk wk >/dev/null
  wait_for_file "$T/ran" "$(slack 5)"
  # well within the service's own 1s fallback retry (the waiter listens on the channel)
  assert [ $(($(now_ms) - t0)) -lt "$(slack 900)" ]
  bg_wait "$BG_PID"
  assert_equal "$BG_STATUS" 0
  # a holder killed with -9 publishes nothing: taken when the key expires, not before
  rcli set lock:wk dead px 1500 >/dev/null
  t0=$(now_ms)
  run -0 "$RLOCK" --layout plain run --wait 30s wk -- true
  assert [ $(($(now_ms) - t0)) -ge 1300 ]
}

@test "plain: two rlock runs exclude each other; extend renews and refuses a token that no longer holds" {
  rlock_bg a --layout plain run ex -- sh "$T/gate.sh" "$T" a
  wait_for_file "$T/a.started"
  run -75 "$RLOCK" --layout plain run -n ex -- true
  touch "$T/a.go"
  bg_wait "$BG_PID"
  tok=$("$RLOCK" --layout plain acquire ex --ttl 2s)
  run -0 "$RLOCK" --layout plain extend ex --token "$tok" --ttl 60s
  run -0 rcli pttl lock:ex
  assert [ "$output" -gt 50000 ]
  run -76 "$RLOCK" --layout plain extend ex --token nottheholder --ttl 10s
  run -76 "$RLOCK" --layout plain release ex --token nottheholder
  run -0 "$RLOCK" --layout plain release ex --token "$tok"
}

@test "redisson: acquire takes the hash at KEY with field UUID:PID = 1 and a PEXPIRE; status shows the id and TTL" {
  run -0 "$RLOCK" --layout redisson acquire orders:7 --ttl 20s
  tok=$output
  assert_regex "$tok" '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}:[0-9]+$'
  run -0 rcli hgetall orders:7
  assert_output "$tok"$'\n'"1"
  run -0 rcli pttl orders:7
  assert [ "$output" -gt 15000 ]
  run -0 "$RLOCK" --layout redisson status orders:7
  assert_line --index 0 "orders:7: held (--layout redisson)"
  assert_output --partial "Redisson id $tok, holds 1"
  run -0 "$RLOCK" --layout redisson status orders:7 --json
  assert_output --partial '"layout":"redisson"'
  assert_output --partial "\"token\":\"$tok\""
  assert_output --partial '"holds":1'
  run -0 "$RLOCK" --layout redisson release orders:7 --token "$tok"
  run -0 rcli exists orders:7
  assert_output 0
}

@test "redisson: another id's reentrant hold is respected; release touches only its own field; break is the exception" {
  rcli hset r:k 'c0ffee00-0000-4000-8000-000000000000:1' 2 >/dev/null
  rcli pexpire r:k 20000 >/dev/null
  run -75 "$RLOCK" --layout redisson run -n r:k -- true
  assert_output --partial "held by Redisson id c0ffee00-0000-4000-8000-000000000000:1"
  run -0 "$RLOCK" --layout redisson status r:k
  assert_output --partial "holds 2"
  # a token that is not a field: nothing happens to the hash
  run -76 "$RLOCK" --layout redisson release r:k --token 'deadbeef-0000-4000-8000-000000000000:9'
  run -76 "$RLOCK" --layout redisson extend r:k --token 'deadbeef-0000-4000-8000-000000000000:9' --ttl 10s
  run -0 rcli hget r:k 'c0ffee00-0000-4000-8000-000000000000:1'
  assert_output 2
  run -0 "$RLOCK" --layout redisson break r:k --yes
  run -0 rcli exists r:k
  assert_output 0
}

@test "redisson: release publishes 0 on redisson_lock__channel:{KEY} only when the hash is gone, and a waiter hears it" {
  bg_start sub redis-cli -p "$REDIS_PORT" subscribe 'redisson_lock__channel:{rw}'
  wait_until "grep -q '^subscribe$' '$T/sub.out'"
  tok=$("$RLOCK" --layout redisson acquire rw)
  rlock_bg w --layout redisson run --wait 30s rw -- touch "$T/ran"
  wait_until "grep -q 'waiting for' '$T/w.err'"
  local t0
  t0=$(now_ms)
  "$RLOCK" --layout redisson release rw --token "$tok"
  wait_for_file "$T/ran" "$(slack 5)"
  assert [ $(($(now_ms) - t0)) -lt "$(slack 900)" ]
  bg_wait "$BG_PID"
  # one message per release (the token's and the waiter's own), each the unlock message 0
  run -0 grep -A2 -x message "$T/sub.out"
  assert_output $'message\nredisson_lock__channel:{rw}\n0\nmessage\nredisson_lock__channel:{rw}\n0'
}

@test "a key of another type is never touched: acquire exits 70 naming the key and its type" {
  rcli rpush lock:lst x >/dev/null
  run -70 "$RLOCK" --layout plain run -n lst -- true
  assert_output --partial "the Redis key 'lock:lst' of 'lst' holds a list, not a --layout plain lock"
  rcli set rs x >/dev/null
  run -70 "$RLOCK" --layout redisson acquire -n rs
  assert_output --partial "holds a string, not a --layout redisson lock"
  run -1 "$RLOCK" --layout plain break lst --yes
  run -0 rcli type lock:lst
  assert_output list
}

@test "what a layout cannot carry is refused with 64, before anything is sent" {
  local opt
  for opt in "--limit 2" "--shared" "--and other" "--priority 5" "--supersede" "--max-waiters 3" \
    "--done-for 1h" "--min-hold 5s"; do
    # shellcheck disable=SC2086 # word splitting of the option and its value is intended
    run -64 "$RLOCK" --layout plain run $opt k -- true
    assert_output --regexp "does not work with --layout plain"
    # shellcheck disable=SC2086
    run -64 "$RLOCK" --layout redisson acquire $opt k
  done
  run -64 "$RLOCK" --layout plain run --label job-7 k -- true
  assert_output --partial "--label does not work with --layout plain"
  # a label from the environment (a CI job's) is not kept, and no reason to refuse
  run -0 env RLOCK_LABEL=job-8 "$RLOCK" --layout plain run k -- true
  run -64 "$RLOCK" --layout plain history k
  assert_output --partial "history does not work with --layout plain"
  run -64 "$RLOCK" --layout redisson forget k --yes
  run -64 "$RLOCK" --layout plain --url "redis://127.0.0.1:$REDIS_PORT/0" --url "redis://127.0.0.1:1/0" run k -- true
  assert_output --partial "quorum mode (several URLs) does not work with --layout plain"
  run -64 "$RLOCK" --layout sideways status k
  assert_output "rlock: invalid --layout 'sideways': use rlock, plain or redisson"
  run -64 env RLOCK_LAYOUT=Plain "$RLOCK" status k
  assert_output "rlock: invalid RLOCK_LAYOUT 'Plain': use rlock, plain or redisson"
  run -0 rcli exists k lock:k 'lock:{k}'
  assert_output 0
}

@test "RLOCK_LAYOUT says it once for a fleet; --layout overrides it" {
  RLOCK_LAYOUT=plain "$RLOCK" acquire env:k >/dev/null
  run -0 rcli type lock:env:k
  assert_output string
  RLOCK_LAYOUT=redisson "$RLOCK" acquire env:k >/dev/null
  run -0 rcli type env:k
  assert_output hash
  RLOCK_LAYOUT=plain "$RLOCK" --layout rlock acquire env:k >/dev/null
  run -0 rcli exists 'lock:{env:k}'
  assert_output 1
}

@test "status warns when the same name is held under another layout" {
  "$RLOCK" --layout plain acquire two >/dev/null
  run -1 "$RLOCK" status two
  assert_output --partial "warning: 'two' is also held under --layout plain (key lock:two): two layouts for one name are two different locks"
  "$RLOCK" acquire two >/dev/null
  rcli hset two someone:1 1 >/dev/null
  rcli pexpire two 30000 >/dev/null
  run -0 "$RLOCK" --layout plain status two
  assert_output --partial "also held under --layout rlock (key lock:{two})"
  assert_output --partial "also held under --layout redisson (key two)"
  # -q: the warning is informational
  run -0 "$RLOCK" -q --layout plain status two
  refute_output --partial warning
}

@test "list finds a layout's held locks and nothing else (rlock's own keys, other types, keys without expiry)" {
  "$RLOCK" --layout plain acquire ls:a >/dev/null
  "$RLOCK" acquire ls:b >/dev/null
  rcli set lock:ls:noexpiry x >/dev/null
  rcli rpush lock:ls:list x >/dev/null
  run -0 "$RLOCK" --layout plain list 'ls:*'
  assert_equal "${#lines[@]}" 1
  assert_line --index 0 --regexp $'^ls:a\t\\?\t[0-9]+\t0\t0\t\t$'
  run -0 "$RLOCK" list 'ls:*'
  assert_line --index 0 --regexp $'^ls:b\t'
  assert_equal "${#lines[@]}" 1
  "$RLOCK" --layout redisson acquire ls:c >/dev/null
  rcli hset ls:plainhash a 1 >/dev/null
  run -0 "$RLOCK" --layout redisson list 'ls:*'
  assert_equal "${#lines[@]}" 1
  assert_line --index 0 --regexp $'^ls:c\t'
  run -0 "$RLOCK" --layout redisson list --json 'ls:*'
  assert_output --partial '"layout":"redisson"'
}

@test "acquire --json has no fence and --export unsets the fences under a layout" {
  run -0 "$RLOCK" --layout plain acquire --json j:k
  assert_output --regexp '^\{"key":"j:k","token":"[0-9a-f]{32}","ttl_ms":30000\}$'
  run -0 env RLOCK_FENCE=5 "$RLOCK" --layout plain acquire --export j:l
  assert_output --partial "unset RLOCK_FENCE RLOCK_FENCES"
  refute_output --partial "RLOCK_FENCE="
}

@test "nesting: a run inside a run of the same key and layout runs at once; another layout is another lock" {
  run -0 "$RLOCK" --layout redisson run --ttl 10s nest -- \
    "$RLOCK" --layout redisson run --wait 2s nest -- sh -c 'echo inner "$RLOCK_TOKEN"'
  assert_output --regexp '^inner [0-9a-f-]+:[0-9]+$'
  run -0 "$RLOCK" --layout plain run nest2 -- \
    "$RLOCK" --layout plain run --wait 2s nest2 -- echo inner
  assert_output inner
  # the default layout's nest2 is another lock: taken at once, not nested
  run -0 "$RLOCK" --layout plain run nest3 -- "$RLOCK" -v run -n nest3 -- true
  refute_output --partial "enclosing holder"
}

@test "nesting: plain and redisson refuse a nested run outside the holder's process group (64, why)" {
  local l
  for l in plain redisson; do
    # set -m: the nested run is a job in a process group of its own
    run -64 "$RLOCK" --layout "$l" run --ttl 10s "ng-$l" -- \
      bash -c 'set -m; "$0" --layout "$1" run -n "ng-$1" -- echo "$1-ran" & wait $!' "$RLOCK" "$l"
    assert_output --partial "outside its process group and --layout $l has nowhere to record a nested hold"
    refute_output --partial "$l-ran"
  done
}
