#!/usr/bin/env bats
# ctest-labels: fast
# Several keys, all or nothing (`--and KEY`, docs/GUIDE.md "Several keys, all or nothing"): the command starts only when it
# holds every key, with one token; keys are taken in one global order, so runs that name
# them in opposite orders never deadlock; a waiter keeps its place in each line it
# reaches (single-key holders cannot starve it) and holds the earlier keys, renewed,
# while it waits for the next; RLOCK_KEYS/RLOCK_FENCES; a loss of any key is a loss of
# the run; --wait, -n and signals give back every key taken so far.

# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell
load helpers/redis

bats_require_minimum_version 1.5.0

setup_file() { redis_start; }

setup() {
  T=$BATS_TEST_TMPDIR
  write_gate "$T/gate.sh"
}
holder_pid() {
  local j
  j=$(status_json "$1") || return 1
  grep -o '"pid":[0-9]*' <<<"$j" | head -n 1 | cut -d: -f2
}
is_free() { ! "$RLOCK" status "$1" >/dev/null 2>&1; }

@test "the command runs holding every key: RLOCK_KEYS and RLOCK_FENCES in the order given" {
  "$RLOCK" run zz -- true # zz's fence moves ahead of aa's
  run -0 "$RLOCK" run zz --and aa --and mm -- sh -c \
    'printf "%s|%s|%s|%s\n" "$RLOCK_KEY" "$RLOCK_FENCE" "$(echo "$RLOCK_KEYS" | tr "\n" ,)" "$(echo "$RLOCK_FENCES" | tr "\n" ,)"'
  assert_output "zz|2|zz,aa,mm,|2,1,1,"
  # one token for all of them, and all of them are held while it runs
  run -0 "$RLOCK" run k1 --and k2 -- sh -c '
    "$0" status k1 --json | grep -o "\"token\":\"[0-9a-f]*\"" | head -n 1
    "$0" status k2 --json | grep -o "\"token\":\"[0-9a-f]*\"" | head -n 1
    echo "\"token\":\"$RLOCK_TOKEN\""' "$RLOCK"
  assert_equal "$(sort -u <<<"$output" | grep -c .)" 1
  # a single-key run sees the same variables, with one line each
  run -0 "$RLOCK" run one -- sh -c 'printf "%s|%s\n" "$RLOCK_KEYS" "$RLOCK_FENCES"'
  assert_output "one|1"
}

@test "no deadlock: runs that name the same keys in opposite orders all finish" {
  # each run holds both keys for a moment, so that the two loops overlap
  for side in ab ba; do
    if [[ $side == ab ]]; then keys=(da --and db); else keys=(db --and da); fi
    bg_start "$side" sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do "$0" run --wait 60s "$@" -- sleep 0.05 || exit 1; done' \
      "$RLOCK" "${keys[@]}"
    pids+=("$BG_PID")
  done
  for p in "${pids[@]}"; do
    bg_wait "$p" 120
    assert_equal "$BG_STATUS" 0
  done
}

@test "all or nothing: with -n a taken key leaves the others free; -E applies" {
  t=$("$RLOCK" acquire --ttl 60s an2)
  run -75 "$RLOCK" run -n an1 --and an2 -- touch "$T/ran"
  assert [ ! -e "$T/ran" ]
  is_free an1
  run -3 "$RLOCK" acquire -n -E 3 an1 --and an2
  is_free an1
  "$RLOCK" release an2 --token "$t"
  run -0 "$RLOCK" run -n an1 --and an2 -- touch "$T/ran"
  assert [ -e "$T/ran" ]
}

@test "a waiter for several keys holds the earlier ones, renewed past their TTL, while it waits" {
  t=$("$RLOCK" acquire --ttl 60s hw2)
  bg_start m "$RLOCK" run --ttl 1s --wait 60s hw1 --and hw2 -- touch "$T/m.ran"
  m=$BG_PID
  wait_until '[ "$(n_waiters hw2)" -eq 1 ]' 30
  # hw1 is m's, and stays m's past three of its TTLs
  wait_until "[ \"\$(holder_pid hw1)\" = $m ]" 10
  sleep 3
  assert_equal "$(holder_pid hw1)" "$m"
  assert [ ! -e "$T/m.ran" ]
  "$RLOCK" release hw2 --token "$t"
  bg_wait "$m" 20
  assert_equal "$BG_STATUS" 0
  assert [ -e "$T/m.ran" ]
  is_free hw1
  is_free hw2
}

@test "a waiter for several keys killed with -9 blocks the keys it holds no longer than a dead waiter its line, not its --ttl" {
  t=$("$RLOCK" acquire --ttl 60s hd2)
  bg_start m "$RLOCK" run --ttl 10m --wait 60s hd1 --and hd2 -- true
  m=$BG_PID
  wait_until '[ "$(n_waiters hd2)" -eq 1 ]' 30
  wait_until "[ \"\$(holder_pid hd1)\" = $m ]" 10
  # held on a waiter's place lease (6s) while it waits, not on its --ttl
  assert [ "$(rcli pttl 'lock:{hd1}')" -le 6000 ]
  kill -9 "$m"
  start=$(now_ms)
  run -0 "$RLOCK" run --wait "$(slack 30)s" hd1 -- true
  assert [ $(($(now_ms) - start)) -lt "$(slack 12000)" ]
  "$RLOCK" release hd2 --token "$t"
  # and a run that gets every key holds each on its --ttl again
  bg_start h "$RLOCK" run --ttl 10m hd1 --and hd2 -- sh "$T/gate.sh" "$T" h
  wait_for_file "$T/h.started" 20
  assert [ "$(rcli pttl 'lock:{hd1}')" -gt 60000 ]
  assert [ "$(rcli pttl 'lock:{hd2}')" -gt 60000 ]
  touch "$T/h.go"
  bg_wait "$BG_PID" 20
}

@test "a waiter for several keys keeps its place: a single-key waiter that came later goes after it" {
  bg_start h "$RLOCK" run st2 -- sh "$T/gate.sh" "$T" h
  h=$BG_PID
  wait_for_file "$T/h.started" 20
  bg_start m "$RLOCK" run --wait 60s st1 --and st2 -- sh -c 'echo m >>"$0"' "$T/order"
  m=$BG_PID
  wait_until '[ "$(n_waiters st2)" -eq 1 ]' 30
  bg_start s "$RLOCK" run --wait 60s st2 -- sh -c 'echo s >>"$0"' "$T/order"
  s=$BG_PID
  wait_until '[ "$(n_waiters st2)" -eq 2 ]' 30
  touch "$T/h.go"
  for p in "$h" "$m" "$s"; do
    bg_wait "$p" 30
    assert_equal "$BG_STATUS" 0
  done
  assert_equal "$(tr '\n' ' ' <"$T/order")" "m s "
}

# in_key KEY LABEL: LABEL holds KEY or waits in its line.
in_key() {
  status_json "$1" | jq -e --arg l "$2" '[.holders[].label, .waiters[].label] | index($l) != null' >/dev/null
}

@test "--supersede crosses --and: the newest job supersedes older ones in every key, one holding some keys gives them back" {
  t=$("$RLOCK" acquire --ttl 60s sz1)
  for j in j1 j2 j3; do
    bg_start "$j" "$RLOCK" run --wait 60s --ttl 3s --supersede --label "$j" sa1 --and sz1 -- touch "$T/$j.ran"
    eval "$j=\$BG_PID"
    # each joins after the one before: j1 holds sa1 and waits in sz1's line
    wait_until "in_key sa1 $j" 30
  done
  bg_wait "$j2" 20
  assert_equal "$BG_STATUS" 75
  "$RLOCK" release sz1 --token "$t"
  bg_wait "$j1" 20
  assert_equal "$BG_STATUS" 75
  grep -q "superseded by j[23]" "$T/j1.err"
  bg_wait "$j3" 20
  assert_equal "$BG_STATUS" 0
  assert_equal "$(cd "$T" && echo ./*.ran)" "./j3.ran"
  is_free sa1
  is_free sz1
}

@test "--wait covers every key: it runs out while holding the first, which is given back (75)" {
  t=$("$RLOCK" acquire --ttl 60s ww2)
  start=$(now_ms)
  run -75 "$RLOCK" run --wait 2s ww1 --and ww2 -- touch "$T/ran"
  elapsed=$(($(now_ms) - start))
  assert [ "$elapsed" -ge 1900 ]
  assert [ "$elapsed" -lt "$(slack 6000)" ]
  assert_output --partial "gave up waiting for 'ww2'"
  is_free ww1
  assert_equal "$(n_waiters ww2)" 0
  "$RLOCK" release ww2 --token "$t"
}

@test "SIGTERM while waiting for the second key leaves its line and gives the first back" {
  t=$("$RLOCK" acquire --ttl 60s sg2)
  bg_start m env --default-signal=TERM "$RLOCK" run --wait 60s sg1 --and sg2 -- touch "$T/ran"
  m=$BG_PID
  wait_until '[ "$(n_waiters sg2)" -eq 1 ]' 30
  kill -TERM "$m"
  bg_wait "$m" 10
  assert_equal "$BG_STATUS" 143
  is_free sg1
  assert_equal "$(n_waiters sg2)" 0
  "$RLOCK" release sg2 --token "$t"
}

@test "a loss of any key is a loss of the run (76), and the other keys are released" {
  bg_start l "$RLOCK" run lo1 --and lo2 -- sh "$T/gate.sh" "$T" l
  l=$BG_PID
  wait_for_file "$T/l.started" 20
  run -0 "$RLOCK" break --yes lo2
  bg_wait "$l" "$(slack 10)"
  assert_equal "$BG_STATUS" 76
  # the key lost is named, not the first one given
  grep -q "lost the lock 'lo2'" "$T/l.err"
  run -1 grep -q "'lo1'" "$T/l.err"
  is_free lo1
}

@test "a loss found at the release names the key lost, not the first one given" {
  # --ttl 10m: no renewal comes before the release on a slow runner (one would find
  # the loss first, in other words)
  bg_start l "$RLOCK" run --ttl 10m --on-lost warn --done-for 1h rl1 --and rl2 -- sh "$T/gate.sh" "$T" l
  l=$BG_PID
  wait_for_file "$T/l.started" 20
  rcli del 'lock:{rl2}' >/dev/null
  touch "$T/l.go"
  bg_wait "$l" 20
  assert_equal "$BG_STATUS" 0 # --on-lost warn passes the status through
  grep -q "warning: lost the lock 'rl2': it was no longer held" "$T/l.err" || {
    cat "$T/l.err" >&2
    false
  }
  run -1 grep -q "'rl1'" "$T/l.err"
  # without warn the same loss is 76, named the same way
  bg_start m "$RLOCK" run --ttl 10m rm1 --and rm2 -- sh "$T/gate.sh" "$T" m
  m=$BG_PID
  wait_for_file "$T/m.started" 20
  rcli del 'lock:{rm2}' >/dev/null
  touch "$T/m.go"
  bg_wait "$m" 20
  assert_equal "$BG_STATUS" 76
  grep -q "^rlock: lost the lock 'rm2': it was no longer held" "$T/m.err"
  run -1 grep -q "'rm1'" "$T/m.err"
}

@test "a holder of several keys killed with -9: each key expires after its TTL" {
  bg_start k "$RLOCK" run --ttl 2s k9a --and k9b -- sh "$T/gate.sh" "$T" k
  k=$BG_PID
  wait_for_file "$T/k.started" 20
  kill -9 "$k"
  run -0 "$RLOCK" status k9a
  start=$(now_ms)
  run -0 "$RLOCK" run --wait "$(slack 10)s" k9b --and k9a -- true
  assert [ $(($(now_ms) - start)) -lt "$(slack 5000)" ]
  touch "$T/k.go"
}

@test "a server restart without data while holding the first key and waiting for the second: taken again, then it runs" {
  t=$("$RLOCK" acquire --ttl 60s rs2)
  bg_start m "$RLOCK" run --ttl 2s --wait 60s rs1 --and rs2 -- touch "$T/m.ran"
  m=$BG_PID
  wait_until '[ "$(n_waiters rs2)" -eq 1 ]' 30
  rm -f "$BATS_FILE_TMPDIR"/redis-*/dump.rdb
  redis_restart # rs1, rs2 and the line are gone
  bg_wait "$m" "$(slack 20)"
  assert_equal "$BG_STATUS" 0
  assert [ -e "$T/m.ran" ]
}

@test "taken again from the first after an outage, with its old place still in the next key's line: it gets the key (not 70)" {
  # The first key is lost to a partition while the run waits in the second key's line;
  # the place it had there (stamped with its latest attempt number) outlives the
  # partition, since leaving the line could not get through either. Taking the keys
  # again numbers the attempts on from there: an attempt numbered from 1 again was
  # answered STALE, which rlock took for a protocol error (70).
  local t
  t=$("$RLOCK" acquire --ttl 60s so2)
  proxy_start "$REDIS_PORT"
  bg_start m "$RLOCK" -u "$PROXY_URL" -v --command-timeout 300ms run --ttl 1s --wait 60s so1 --and so2 -- touch "$T/m.ran"
  m=$BG_PID
  wait_until '[ "$(n_waiters so2)" -eq 1 ]' 30
  # its place was refreshed at least once: an attempt number above 1 is on it
  wait_until '[ "$(rcli --raw eval "for _, k in ipairs(redis.call(\"keys\", \"lock:{so2}:w:*\")) do return redis.call(\"hget\", k, \"att\") end return 0" 0)" -ge 2 ]' 30
  proxy_partition
  wait_until 'grep -q "taking the keys again from the first" "$T/m.err"' "$(slack 20)"
  proxy_heal
  "$RLOCK" release so2 --token "$t"
  bg_wait "$m" "$(slack 30)"
  assert_equal "$BG_STATUS" 0
  assert [ -e "$T/m.ran" ]
}

@test "a key broken while waiting for a third: the keys still held are given back and taken again with the same token (0, not 75)" {
  # Giving back the first key must not leave the release's tombstone: the token's next
  # attempt there would be answered GONE ("granted to this attempt and released with
  # its token before the grant was heard of").
  local t
  t=$("$RLOCK" acquire --ttl 60s tk3)
  bg_start m "$RLOCK" -v run --ttl 5s --wait 60s tk1 --and tk2 --and tk3 -- touch "$T/m.ran"
  m=$BG_PID
  wait_until '[ "$(n_waiters tk3)" -eq 1 ]' 30
  "$RLOCK" break tk2 --yes
  wait_until 'grep -q "taking the keys again from the first" "$T/m.err"' "$(slack 20)"
  wait_until '[ "$(n_waiters tk3)" -eq 1 ]' "$(slack 20)" || { cat "$T/m.err"; false; }
  "$RLOCK" release tk3 --token "$t"
  bg_wait "$m" "$(slack 30)"
  assert_equal "$BG_STATUS" 0
  assert [ -e "$T/m.ran" ]
}

@test "acquire --and prints one token; extend --and and release --and act on every key" {
  tok=$("$RLOCK" acquire --ttl 2s ax1 --and ax2)
  run -0 "$RLOCK" extend ax1 --and ax2 --token "$tok" --ttl 60s
  assert [ "$(rcli pttl 'lock:{ax1}')" -gt 50000 ]
  assert [ "$(rcli pttl 'lock:{ax2}')" -gt 50000 ]
  run -0 "$RLOCK" release ax1 --and ax2 --token "$tok"
  is_free ax1
  is_free ax2
  # released already: 76
  run -76 "$RLOCK" release ax1 --and ax2 --token "$tok"
  run -0 "$RLOCK" acquire ax1 --and ax2 --json
  assert_output --regexp '"keys":\["ax1","ax2"\],"fences":\[[0-9]+,[0-9]+\]'
}

@test "--and with --shared: shared holds of every key" {
  t1=$("$RLOCK" acquire -s --ttl 60s sa1 --and sa2)
  t2=$("$RLOCK" acquire -s --ttl 60s sa2 --and sa1)
  run -75 "$RLOCK" acquire -n sa2
  "$RLOCK" release sa1 --and sa2 --token "$t1"
  "$RLOCK" release sa1 --and sa2 --token "$t2"
  run -0 "$RLOCK" acquire -n sa1 --and sa2
}

@test "nested: a run inside a run of the same keys runs at once; inside some of them it is 64" {
  run -0 "$RLOCK" run n1 --and n2 -- "$RLOCK" run --wait 3s n2 --and n1 -- sh -c 'echo "in $RLOCK_KEYS" | tr "\n" " "'
  assert_output "in n2 n1 "
  run -0 "$RLOCK" run n1 --and n2 -- "$RLOCK" run --wait 3s n2 -- echo inner
  assert_output inner
  run -64 "$RLOCK" run n1 -- "$RLOCK" run --wait 3s n1 --and n3 -- echo inner
  assert_output --partial "not every key"
  refute_output --partial inner
}

@test "bad input: the same key twice, --and with --limit, a bad key (64)" {
  run -64 "$RLOCK" run dup --and dup -- true
  assert_output --partial "given twice"
  run -64 "$RLOCK" run l1 --and l2 --limit 2 -- true
  assert_output --partial "--and and --limit"
  run -64 "$RLOCK" acquire ok --and 'bad{key}'
  run -64 "$RLOCK" release ok --and '' --token abc
}

@test "acquire --and --while-pid: the keeper renews every key and releases them all when PID ends" {
  sleep 1000 &
  spid=$!
  "$RLOCK" acquire --ttl 1s --while-pid "$spid" wp1 --and wp2 >/dev/null
  sleep 2 # past the TTL: only the keeper's renewals keep them
  run -0 "$RLOCK" status wp1
  run -0 "$RLOCK" status wp2
  kill "$spid"
  wait_until 'is_free wp1 && is_free wp2' "$(slack 10)"
}
