#!/usr/bin/env bats
# ctest-labels: slow
# rlock doctor: each unsafe configuration is found on a real server set up that way
# (eviction of leases, no persistence, a replica, an ACL user missing a command, a skewed
# clock), a healthy server passes, and the probe leaves nothing behind.
# shellcheck disable=SC2154 # $stderr and $stderr_lines come from `run --separate-stderr`

bats_require_minimum_version 1.5.0

load helpers/redis
load helpers/topology

setup_file() {
  # A healthy server: persistence on every write, nothing evicted.
  redis_start --appendonly yes --appendfsync always --maxmemory-policy noeviction
  acl_lock_user nopexpire pw1 -pexpire
  acl_lock_user nohistory pw2 -xadd
  rcli acl setuser otherkeys on '>pw3' '~other:*' '&lock:*' '+@all' >/dev/null
}

# line CHECK: the line of the last `rl doctor` for CHECK (its status word first).
line() { grep -E "^[a-z]+ +$1( |:)" <<<"$doc"; }
doctor() {
  rl "$@" doctor
  doc=$output
}

@test "doctor: a healthy server passes every check (exit 0)" {
  doctor
  assert_success
  assert_line 'every check passed'
  refute_output --partial 'fix:'
  assert_equal "$stderr" ""
  for check in round-trip version role eviction persistence acl clock footprint; do
    run line "$check"
    assert_output --regexp '^ok '
  done
}

@test "doctor: maxmemory with a volatile or allkeys policy fails: leases are evicted" {
  rcli config set maxmemory 200mb >/dev/null
  for policy in volatile-lru volatile-ttl allkeys-lru; do
    rcli config set maxmemory-policy "$policy" >/dev/null
    doctor
    assert_equal "$status" 1
    assert_output --partial 'fix: CONFIG SET maxmemory-policy noeviction'
    run line eviction
    assert_output --regexp "^fail +eviction: .*$policy"
  done
  rcli config set maxmemory-policy noeviction >/dev/null
  rcli config set maxmemory 0 >/dev/null
  rl doctor
  assert_success
}

@test "doctor: noeviction with maxmemory nearly used warns; with room, ok" {
  local used
  used=$(rcli info memory | tr -d '\r' | sed -n 's/^used_memory://p')
  rcli config set maxmemory $((used + used / 20)) >/dev/null
  doctor
  run line eviction
  assert_output --regexp "^warn +eviction: noeviction, but (9[0-9]|1[0-9][0-9])% of maxmemory"
  assert_output --partial "rlock's own grants go on past the limit"
  rcli config set maxmemory $((used * 4)) >/dev/null
  doctor
  run line eviction
  assert_output --regexp "^ok +eviction: noeviction with maxmemory [0-9]+ \([0-9]+% used\)"
  rcli config set maxmemory 0 >/dev/null
}

@test "doctor: appendonly no warns: a restart forgets every lock and fence" {
  rcli config set appendonly no >/dev/null
  doctor
  rcli config set appendonly yes >/dev/null
  assert_equal "$status" 1
  run line persistence
  assert_output --regexp '^warn +persistence: appendonly no'
}

@test "doctor: a replica fails (writes refused) and names its master" {
  replica_start REPLICA REDIS
  doctor --url "redis://127.0.0.1:$REPLICA_PORT/0"
  redis_stop REPLICA
  assert_equal "$status" 1
  run line role
  assert_output --regexp "^fail +role: a replica \\(of 127.0.0.1:$REDIS_PORT\\)"
}

@test "doctor: an ACL user missing one command fails and is told the ACL SETUSER that grants it" {
  doctor --url "redis://nopexpire:pw1@127.0.0.1:$REDIS_PORT/0"
  assert_equal "$status" 1
  assert_output --partial 'fix: ACL SETUSER nopexpire +pexpire ~lock:* &lock:*'
  run line acl
  assert_output --regexp '^fail +acl: this user may not use PEXPIRE: '
  # Without XADD locks work and only the history is lost: a warning, not a failure.
  doctor --url "redis://nohistory:pw2@127.0.0.1:$REDIS_PORT/0"
  assert_equal "$status" 1
  run line acl-history
  assert_output --regexp '^warn +acl-history: this user may not use XADD'
  run line acl
  assert_output --regexp '^ok +acl:'
  # Keys outside the user's patterns: named as such, not as a list of every command.
  doctor --url "redis://otherkeys:pw3@127.0.0.1:$REDIS_PORT/0"
  assert_equal "$status" 1
  run line acl
  assert_output "fail  acl: this user may not use the keys under 'lock:': taking a lock fails with exit 77"
}

@test "doctor: the ACL probe touches no lock and leaves no key behind" {
  tok=$("$RLOCK" acquire doc-held --ttl 30s)
  before=$(rcli dbsize)
  rl doctor
  assert_success
  rl --url "redis://nopexpire:pw1@127.0.0.1:$REDIS_PORT/0" doctor
  assert_equal "$(rcli dbsize)" "$before"
  run rcli --scan --pattern '*rlock-doctor*'
  assert_output ''
  run rcli get 'lock:{doc-held}'
  assert_output "$tok"
  "$RLOCK" release doc-held --token "$tok"
}

@test "doctor: the footprint counts locks, history streams and fence counters under the prefix, memory sampled" {
  "$RLOCK" --prefix fp: run fp-a -- true
  tok=$("$RLOCK" --prefix fp: acquire fp-b --ttl 60s)
  doctor --prefix fp:
  assert_success
  run line footprint
  assert_output --regexp "^ok +footprint: 1 held lock, 2 history streams, 2 fence counters \(0 of idle keys\), [0-9]+ keys in all under 'fp:': about [0-9.]+ [KM]?i?B \(MEMORY USAGE of [0-9]+ sampled keys, extrapolated\)$"
  rl --prefix fp: doctor --json
  assert_success
  run jq -c '.[] | select(.check == "footprint") | .footprint |
    [.locks, .histories, .fences, .idle_fences, .complete, (.keys >= 7), (.sampled > 0), (.bytes > 0)]' <<<"$output"
  assert_output '[1,2,2,0,true,true,true,true]'
  "$RLOCK" --prefix fp: release fp-b --token "$tok"
}

@test "doctor: over 10000 fence counters of keys with nothing else left warn (KEY names that never repeat)" {
  rcli eval "for i = 1, 10002 do redis.call('SET', 'fpw:{job' .. i .. '}:fence', '1') end" 0 >/dev/null
  "$RLOCK" --prefix fpw: run job1 -- true # a key in use is not idle
  doctor --prefix fpw:
  rcli eval "for i = 1, 10002 do redis.call('DEL', 'fpw:{job' .. i .. '}:fence', 'fpw:{job' .. i .. '}:log') end; redis.call('DEL', 'fpw:{job1}:live')" 0 >/dev/null
  assert_equal "$status" 1
  run line footprint
  assert_output --regexp '^warn +footprint: 0 held locks, 1 history stream, 10002 fence counters \(10001 of idle keys\)'
  [[ $doc == *'fix: name locks after what they protect'* ]] || fail "$doc"
}

@test "doctor: every command the lock scripts call is in the ACL probe and the guide's locker ACL" {
  # The rlock layout's scripts (the other layouts are other tools' protocols); CLUSTER
  # and SPUBLISH are asked with pcall and optional.
  src=$BATS_TEST_DIRNAME/../src
  mapfile -t used < <(ls "$src"/lock/lua/*.lua | grep -v -e plain_ -e redisson_ |
    xargs grep -ho -e "redis\.p\?call('[A-Z_]*'" -e "hcall('[A-Z_]*'" | sed "s/.*('//; s/'//" |
    sort -u | grep -v -x -e CLUSTER -e SPUBLISH)
  [ "${#used[@]}" -gt 20 ]
  locker=$(grep -m1 'ACL SETUSER locker' "$BATS_TEST_DIRNAME/../docs/GUIDE.md")
  for c in "${used[@]}"; do
    grep -q -e "t('$c'" -e "try(hist, '$c'" "$src/commands/doctor.cc" ||
      fail "the doctor's ACL probe does not try $c, which the scripts call"
    [[ $locker == *" +${c,,}"* ]] || fail "the guide's locker ACL does not grant $c, which the scripts call"
  done
}

@test "doctor --json: an array of typed findings, the fix only where there is one" {
  rcli config set appendonly no >/dev/null
  rl doctor --json
  rcli config set appendonly yes >/dev/null
  assert_equal "$status" 1
  run jq -r '.[] | "\(.check) \(.status) \(has("fix"))"' <<<"$output"
  assert_success
  assert_line 'persistence warn true'
  assert_line 'version ok false'
  assert_line 'acl ok false'
}

@test "doctor: a server clock minutes off warns" {
  command -v faketime >/dev/null || skip "faketime is not installed (apt-get install faketime)"
  skew=$(($(faketime -f '+300s' date +%s) - $(date +%s)))
  [ "$skew" -gt 100 ] || skip "faketime does not change the clock here"
  run --separate-stderr env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    faketime -f '+300s' "$RLOCK" doctor
  doc=$output
  assert_equal "$status" 1
  run line clock
  assert_output --regexp '^warn +clock: the server.s clock is 30[0-9]\.[0-9] s behind this host.s'
}

@test "doctor: an unreachable server is 69, a refused password 77, one line each" {
  port=$(free_port)
  rl --url "redis://127.0.0.1:$port/0" doctor
  assert_error 69
  rl --url "redis://nopexpire:wrong@127.0.0.1:$REDIS_PORT/0" doctor
  assert_error 77
}

@test "doctor: quorum mode checks every master and names it; one down is a failure, not 69" {
  redis_start_named M2 --appendonly yes --appendfsync always
  m2=$M2_PORT port=$(free_port)
  doctor --url "redis://127.0.0.1:$REDIS_PORT/0" --url "redis://127.0.0.1:$m2/0" \
    --url "redis://127.0.0.1:$port/0"
  redis_stop M2
  assert_equal "$status" 1
  assert_output --regexp "ok +persistence \\(redis://127.0.0.1:$m2/0\\)"
  assert_output --regexp "fail +reach \\(redis://127.0.0.1:$port/0\\)"
}

@test "doctor: quorum masters that are one server under two names fail; distinct ones pass" {
  redis_start_named M3 --appendonly yes --appendfsync always
  doctor --url "redis://127.0.0.1:$REDIS_PORT/0" --url "redis://localhost:$REDIS_PORT/0" \
    --url "redis://127.0.0.1:$M3_PORT/0"
  assert_equal "$status" 1
  assert_line --regexp "^fail +masters: redis://127.0.0.1:$REDIS_PORT/0 and redis://localhost:$REDIS_PORT/0 are one server \\(run_id [0-9a-f]+\\)"
  redis_start_named M4 --appendonly yes --appendfsync always
  doctor --url "redis://127.0.0.1:$REDIS_PORT/0" --url "redis://127.0.0.1:$M3_PORT/0" \
    --url "redis://127.0.0.1:$M4_PORT/0"
  assert_line --regexp '^ok +masters: 3 masters, 3 distinct servers'
  redis_stop M3
  redis_stop M4
}

@test "doctor: a Cluster with a slot nobody serves fails; every master is checked" {
  cluster_start 3
  for i in 1 2 3; do rcli_to "CLUSTER$i" config set appendonly yes >/dev/null; done
  doctor --url "$CLUSTER_URL"
  assert_success
  run line cluster
  assert_output --regexp '^ok +cluster: state ok, all 16384 slots served, 3 masters'
  assert_equal "$(grep -c -E '^ok +persistence \(127\.0\.0\.1:' <<<"$doc")" 3
  # Slot 0 taken from the master that serves it: no node serves it any more.
  for i in 1 2 3; do rcli_to "CLUSTER$i" cluster delslots 0 >/dev/null 2>&1 || true; done
  wait_until 'rcli_to CLUSTER1 cluster info | grep -q "cluster_slots_assigned:16383"'
  doctor --url "$CLUSTER_URL"
  assert_equal "$status" 1
  run line cluster
  assert_output --regexp '^fail +cluster: state [a-z]+: 16383 of 16384 slots assigned'
  for i in 1 2 3; do redis_stop "CLUSTER$i"; done
}

@test "doctor: a Sentinel whose quorum is gone fails; a sentinel down warns" {
  sentinel_setup doctormaster 1
  rcli_to SMASTER config set appendonly yes >/dev/null
  doctor --url "$SENTINEL_URL"
  assert_success
  assert_equal "$(grep -c -E '^ok +sentinel \(sentinel 127\.0\.0\.1:[0-9]+\): OK' <<<"$doc")" 3
  redis_stop SENT2
  redis_stop SENT3
  # (once SENT1 finds the other two down: their down-after, 2 s)
  wait_until 'rcli_to SENT1 sentinel ckquorum doctormaster 2>&1 | grep -q NOQUORUM' 20
  doctor --url "$SENTINEL_URL"
  assert_equal "$status" 1
  assert_output --regexp "fail +sentinel \\(sentinel 127\\.0\\.0\\.1:$SENT1_PORT\\): NOQUORUM"
  assert_equal "$(grep -c -E '^warn +sentinel' <<<"$doc")" 2
  redis_stop SENT1
  redis_stop SREPLICA
  redis_stop SMASTER
}
