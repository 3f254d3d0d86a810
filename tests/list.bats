#!/usr/bin/env bats
# ctest-labels: fast
# `rlock list` over many locks (docs/PROTOCOL.md "list"): on one server that is no Cluster node, one
# read-only `list` script call per 512 locks (one prelude each, not one per lock), with
# the same lines as before; where a call cannot hold keys of several slots (a Cluster of
# one node) it falls back to each lock's status.

load helpers/redis
load helpers/topology

bats_require_minimum_version 1.5.0

setup_file() {
  redis_start
  scripts_setup
}

@test "600 held locks: two list script calls, every lock listed once with its holder, semaphores and shared locks as before" {
  local i
  for ((i = 0; i < 600; i++)); do echo "$i"; done |
    xargs -P 4 -I{} "$RLOCK" acquire --ttl 1h "many:{}" >/dev/null
  "$RLOCK" acquire --limit 3 many:sem >/dev/null
  "$RLOCK" acquire -s many:shr >/dev/null
  rcli config resetstat >/dev/null
  run -0 "$RLOCK" list 'many:*'
  assert_equal "${#lines[@]}" 602
  assert_line --regexp $'^many:599\t[^\t]+:[0-9]+\t[0-9]+\t[0-9]+\t0\trlock acquire\t$'
  assert_line --regexp $'^many:sem\t1/3\t'
  assert_line --regexp $'^many:shr\t1 shared\t'
  run -0 bash -c "redis-cli -p $REDIS_PORT info commandstats | tr -d '\r' | grep '^cmdstat_evalsha_ro:' | sed 's/^cmdstat_evalsha_ro:calls=\([0-9]*\),.*/\1/'"
  assert_output 2
  # --json still gives each lock's whole status
  run -0 "$RLOCK" list --json 'many:sem'
  assert_output --partial '"limit":3'
  assert_output --partial '"waiters":[]'
}

@test "a Cluster of one node refuses several slots in one call: list asks each lock instead" {
  cluster_node_start ONE
  rcli_to ONE cluster addslotsrange 0 16383 >/dev/null
  wait_until "rcli_to ONE cluster info | grep -q cluster_state:ok"
  local url="redis://127.0.0.1:$ONE_PORT/0" i
  for i in 1 2 3; do "$RLOCK" -u "$url" acquire "one:$i" >/dev/null; done
  run -0 "$RLOCK" -u "$url" -v list 'one:*'
  assert_line --regexp $'^one:1\t'
  assert_line --regexp $'^one:3\t'
  assert_output --partial "asking each lock"
}

# The list script as rlock sends it (the part of the prelude it uses, then list.lua after
# its "-- >8 --"), as the dump_scripts helper writes it.
list_script() { cat "$SCRIPTS/list.lua"; }

@test "list --json gives each lock what status --json gives, over 600 locks in two list script calls" {
  local i
  for ((i = 0; i < 600; i++)); do echo "$i"; done |
    xargs -P 4 -I{} "$RLOCK" acquire --ttl 1h "js:{}" >/dev/null
  "$RLOCK" acquire --limit 3 --ttl 5m js:sem >/dev/null
  "$RLOCK" acquire -s --ttl 5m js:shr >/dev/null
  "$RLOCK" run --ttl 5m --min-hold 2m js:kept -- true
  # A foreign SET NX holder (no record) and a record a foreign writer made huge: the list
  # script's flat record of a plain holder must say what status says of them.
  rcli set 'lock:{js:foreign}' their-token px 300000 >/dev/null
  local big
  big=$("$RLOCK" acquire --ttl 5m js:big)
  rcli hset "lock:{js:big}:h:$big" cmd "$(printf 'x%.0s' {1..3000})" label "$(printf 'é%.0s' {1..700})" >/dev/null
  rcli config resetstat >/dev/null
  run -0 "$RLOCK" list --json 'js:*'
  local listed=$output
  run -0 bash -c "redis-cli -p $REDIS_PORT info commandstats | tr -d '\r' | grep '^cmdstat_evalsha_ro:' | sed 's/^cmdstat_evalsha_ro:calls=\([0-9]*\),.*/\1/'"
  assert_output 2
  run -0 jq length <<<"$listed"
  assert_output 605
  run -0 jq -r '.[] | select(.key == "js:big") | .holders[0].command | length' <<<"$listed"
  assert_output 1024
  run -0 jq '[.[] | select(has("last_events"))] | length' <<<"$listed"
  assert_output 0
  # in order, each as status has it
  run -0 jq -r '.[].key' <<<"$listed"
  assert_equal "$output" "$(jq -r '.[].key' <<<"$listed" | LC_ALL=C sort)"
  local key
  for key in js:0 js:137 js:599 js:sem js:shr js:kept js:foreign js:big; do
    assert_equal "$(jq -c --arg k "$key" '[.[] | select(.key == $k)]' <<<"$listed" | json_without_times)" \
      "$(status_json "$key" | json_without_times)"
  done
}

@test "a lock key of another type (a hash: another tool's) does not fail list --json" {
  # Before, status_of's GET of it failed the whole listing with WRONGTYPE (70).
  rcli hset 'lock:{ot:hash}' a b >/dev/null
  "$RLOCK" acquire --ttl 5m ot:mine >/dev/null
  run -0 "$RLOCK" list --json 'ot:*'
  assert_equal "$(jq -c '[.[] | [.key, .holder_count]]' <<<"$output")" '[["ot:mine",1]]'
}

@test "a foreign value at the fence counter (abc, nan, inf, 1e30) shows as fence 0: status and list --json still answer" {
  # Before, "abc" put a nil in status_of's reply (tonumber), which cut the array short:
  # status and list --json failed with 70 "wanted a status reply". Lua reads "nan",
  # "inf" and "1e30" as numbers, which the reply turned into -2^63.
  local v k
  for v in abc nan inf -inf 1e30; do
    k="fn:$v"
    "$RLOCK" acquire --ttl 5m "$k" >/dev/null
    rcli set "lock:{$k}:fence" "$v" >/dev/null
    run -0 "$RLOCK" status --json "$k"
    assert_equal "$v $(jq -c '[.fence, .holder_count]' <<<"$output")" "$v [0,1]"
    run -0 "$RLOCK" list --json "$k"
    assert_equal "$v $(jq -c '[.[] | [.key, .fence, .holder_count]]' <<<"$output")" "$v [[\"$k\",0,1]]"
  done
}

@test "list counts the waiters of a line and the holders of a semaphore, and --json lists the waiters" {
  "$RLOCK" acquire --ttl 5m wl:a >/dev/null
  "$RLOCK" acquire --limit 2 --ttl 5m wl:sem >/dev/null
  "$RLOCK" acquire --limit 2 --ttl 5m wl:sem >/dev/null
  local w1 w2
  rlock_bg w1 run --wait 60s --ttl 5m wl:a -- true
  w1=$BG_PID
  rlock_bg w2 run --wait 60s --ttl 5m --limit 2 wl:sem -- true
  w2=$BG_PID
  wait_until "[ \"\$(n_waiters wl:a)\" = 1 ] && [ \"\$(n_waiters wl:sem)\" = 1 ]"
  run -0 "$RLOCK" list 'wl:*'
  assert_line --regexp $'^wl:a\t[^\t]+\t[0-9]+\t[0-9]+\t1\t'
  assert_line --regexp $'^wl:sem\t2/2\t[0-9]+\t[0-9]+\t1\t'
  run -0 "$RLOCK" list --json 'wl:*'
  assert_equal "$(jq -c '[.[] | [.key, .holder_count, .waiter_count, (.waiters | length), .limit]]' <<<"$output")" \
    '[["wl:a",1,1,1,0],["wl:sem",2,1,1,2]]'
  "$RLOCK" break --yes wl:a >/dev/null
  "$RLOCK" break --yes wl:sem >/dev/null
  bg_wait "$w1"
  bg_wait "$w2"
}

@test "a waiter killed with -9 is not counted once its place's lease ran out: list says 0, as status --json does" {
  "$RLOCK" acquire --ttl 5m dw:a >/dev/null
  rlock_bg w run --wait 60s --ttl 5m dw:a -- true
  local w=$BG_PID k
  wait_until "[ \"\$(n_waiters dw:a)\" = 1 ]"
  kill -KILL "$w"
  bg_wait "$w"
  # its place's lease runs out now rather than in a few seconds: its record goes, and
  # its queue entry stays until a script that changes the lock passes by
  for k in $(rcli --raw keys 'lock:{dw:a}:w:*'); do rcli pexpire "$k" 1 >/dev/null; done
  wait_until "[ \"\$(n_waiters dw:a)\" = 0 ]"
  run -0 "$RLOCK" list 'dw:*'
  assert_line --regexp $'^dw:a\t[^\t]+\t[0-9]+\t[0-9]+\t0\t'
  run -0 "$RLOCK" list --json 'dw:*'
  assert_equal "$(jq -c '[.[] | [.key, .waiter_count, (.waiters | length)]]' <<<"$output")" '[["dw:a",0,0]]'
  "$RLOCK" break --yes dw:a >/dev/null
}

@test "the list script reads what it was told SCAN saw: keys that vanished read as absent, a line it did not see is not read" {
  "$RLOCK" acquire --ttl 5m sk:gone >/dev/null
  local sha
  sha=$(rcli script load "$(list_script)")
  # told that :queue and :limit exist, though they do not: the same line as told nothing
  run -0 rcli evalsha_ro "$sha" 1 'lock:{sk:gone}' line 3
  local told=$output
  run -0 rcli evalsha_ro "$sha" 1 'lock:{sk:gone}' line 0
  assert_equal "$(sed '4d;$d' <<<"$told")" "$(sed '4d;$d' <<<"$output")"
  assert_equal "$(sed -n 1,3p <<<"$told" | tr '\n' ' ')" "0 1 0 "
  # a lock gone since SCAN: free, nothing else read
  "$RLOCK" break --yes sk:gone >/dev/null
  run -0 rcli evalsha_ro "$sha" 1 'lock:{sk:gone}' line 3
  assert_equal "$(sed -n 2p <<<"$output")" 0
  run -0 rcli evalsha_ro "$sha" 1 'lock:{sk:gone}' full 3
  assert_equal "${#lines[@]}" 1
  # a line SCAN did not see is not counted (it formed after SCAN passed the lock)
  "$RLOCK" acquire --ttl 5m sk:line >/dev/null
  rlock_bg w run --wait 60s --ttl 5m sk:line -- true
  wait_until "[ \"\$(n_waiters sk:line)\" = 1 ]"
  run -0 rcli evalsha_ro "$sha" 1 'lock:{sk:line}' line 1
  assert_equal "$(sed -n 3p <<<"$output")" 1
  run -0 rcli evalsha_ro "$sha" 1 'lock:{sk:line}' line 0
  assert_equal "$(sed -n 3p <<<"$output")" 0
  "$RLOCK" break --yes sk:line >/dev/null
  bg_wait "$BG_PID"
}

@test "hostile holder records: list escapes every field and cuts them to 1 KiB, --json as status does" {
  "$RLOCK" acquire --ttl 5m hr:x >/dev/null
  local tok long
  tok=$(rcli get 'lock:{hr:x}')
  long=$(head -c 3000 /dev/zero | tr '\0' 'y')
  rcli hset "lock:{hr:x}:h:$tok" host $'h\tost\n' pid 'x9' cmd $'\e[31mred\r' label "$long" \
    since nope fence -3 kept $'\t' mode shared 'done' '' >/dev/null
  run -0 "$RLOCK" list 'hr:*'
  assert_equal "${#lines[@]}" 1
  assert_line --regexp $'^hr:x\t1 shared\t[0-9]+\t-3\t0\t'
  refute_output --partial $'\e'
  [[ ${#output} -lt 1200 ]]
  run -0 "$RLOCK" list --json 'hr:*'
  assert_equal "$(json_without_times <<<"$output")" "$(status_json hr:x | json_without_times)"
  "$RLOCK" break --yes hr:x >/dev/null
}

@test "a --json call stops after 1000 holder records and asks again for the rest" {
  # A semaphore with 1100 live holders, written as acquire writes them, then 3 locks.
  local now i
  now=$(now_ms)
  rcli set 'lock:{hb:big}:limit' 2000 >/dev/null
  for ((i = 0; i < 1100; i++)); do
    printf 'ZADD lock:{hb:big}:holders %s t%s\n' $((now + 300000)) "$i"
    printf 'HSET lock:{hb:big}:h:t%s host h pid %s cmd c since %s fence %s ttl 300000\n' \
      "$i" "$i" "$now" "$i"
  done | rcli >/dev/null
  for i in 1 2 3; do "$RLOCK" acquire --ttl 5m "hb:k$i" >/dev/null; done
  rcli config resetstat >/dev/null
  run -0 "$RLOCK" list --json 'hb:*'
  assert_equal "$(jq -c '[.[] | [.key, .holder_count, (.holders | length)]]' <<<"$output")" \
    '[["hb:big",1100,1000],["hb:k1",1,1],["hb:k2",1,1],["hb:k3",1,1]]'
  run -0 bash -c "redis-cli -p $REDIS_PORT info commandstats | tr -d '\r' | grep '^cmdstat_evalsha_ro:' | sed 's/^cmdstat_evalsha_ro:calls=\([0-9]*\),.*/\1/'"
  assert_output 2
  run -0 "$RLOCK" list 'hb:*'
  assert_equal "${#lines[@]}" 4
  assert_line --regexp $'^hb:big\t1100/2000\t'
}

@test "locks whose lease ends while list runs (their keys deleted): list succeeds, every lock held throughout is listed" {
  local i n=1500
  # 300 of each in a sanitizer build (still more than one of list's reads): its 3000
  # acquisitions took 8 minutes, most of the sanitizer pass's time.
  ldd "$RLOCK" 2>/dev/null | grep -q libasan && n=300
  # Leases of an hour: none of the kept locks may expire before list reads them.
  for ((i = 0; i < n; i++)); do echo "$i"; done |
    xargs -P 4 -I{} "$RLOCK" acquire --ttl 1h "mid:keep:{}" >/dev/null
  for ((i = 0; i < n; i++)); do echo "$i"; done |
    xargs -P 4 -I{} "$RLOCK" acquire --ttl 1h "mid:go:{}" >/dev/null
  # their lock keys go as fast as one redis-cli deletes them, while list reads
  (for ((i = 0; i < n; i++)); do printf 'DEL lock:{mid:go:%s}\n' "$i"; done | rcli >/dev/null) 3>&- &
  local deleter=$!
  "$RLOCK" list 'mid:*' >"$BATS_TEST_TMPDIR/listed"
  wait "$deleter"
  run -0 grep -c $'^mid:keep:' "$BATS_TEST_TMPDIR/listed"
  assert_output "$n"
  # every line whole: a kept lock as acquired, a released one (if listed) with its holder
  run -1 grep -v -e $'^mid:keep:[0-9]*\t[^\t]*:[0-9]*\t[0-9]*\t[0-9]*\t0\trlock acquire\t$' \
    -e $'^mid:go:[0-9]*\t[^\t]*:[0-9]*\t[0-9]*\t[0-9]*\t0\trlock acquire\t$' "$BATS_TEST_TMPDIR/listed"
  run -0 "$RLOCK" list --json 'mid:*'
  run -0 jq length <<<"$output"
  assert_output "$n"
}
