#!/usr/bin/env bats
# ctest-labels: topology slow
# Redis Cluster: a plain redis:// URL of any node is enough. rlock notices the Cluster (the
# first MOVED), routes each lock to the node that serves its slot, follows ASK and MOVED,
# retries TRYAGAIN and CLUSTERDOWN within --command-timeout, publishes notices with sharded pub/sub
# and subscribes again where a slot went. A real 3-master Cluster, made with
# `redis-cli --cluster create`; slots are migrated with SETSLOT and MIGRATE.

bats_require_minimum_version 1.5.0

load helpers/redis
load helpers/topology

setup_file() {
  cluster_start 3
  scripts_setup
}

setup() {
  T=$BATS_TEST_TMPDIR
  export RLOCK_URL=$CLUSTER_URL # node 1 is the seed of every test
  write_gate "$T/gate"
}

# _ceval I SCRIPT KEY ARGS...: EVAL a protocol script directly on CLUSTERi, with the six
# KEYS of lock KEY.
_ceval() {
  local i=$1 file=$SCRIPTS/$2.lua k=$3
  shift 3
  rcli_to "CLUSTER$i" --raw eval "$(<"$file")" 6 "lock:{$k}" "lock:{$k}:fence" \
    "lock:{$k}:holders" "lock:{$k}:limit" "lock:{$k}:queue" "lock:{$k}:qseq" "$@"
}

# _list_waiters I: how many waiters wait on their lists (BLPOP) on CLUSTERi (each test has
# one waiter of its own; a waiter blocks on the node that serves its KEY's slot).
_list_waiters() { blocked_in_blpop "CLUSTER$1"; }

@test "a lock lives on the node that serves its slot, whichever node the URL names" {
  for i in 1 2 3; do
    k=$(cluster_key_on "$i" every)
    run "$RLOCK" run "$k" -- sh -c 'echo "fence=$RLOCK_FENCE"'
    assert_success
    assert_output "fence=1"
    tok=$("$RLOCK" acquire --ttl 60s "$k")
    assert_equal "$(rcli_to "CLUSTER$i" get "lock:{$k}")" "$tok"
    # Any node will do as the seed.
    run "$RLOCK" --url "$CLUSTER2_URL" status "$k"
    assert_success
    assert_line --partial "$k: held (fence 2)"
    run "$RLOCK" --url "$CLUSTER3_URL" release "$k" --token "$tok"
    assert_success
    assert_equal "$(rcli_to "CLUSTER$i" exists "lock:{$k}")" 0
  done
}

@test "-v says when rlock finds out it talks to a Cluster" {
  k=$(cluster_key_on 3 notice)
  rl -v run "$k" -- true
  assert_success
  [[ $stderr == *"MOVED"* && $stderr == *"is a Redis Cluster node"* ]] || fail "$stderr"
}

@test "every script runs whole on a Cluster node, the per-token keys it derives included" {
  k=$(cluster_key_on 2 scripts)
  ch="lock:release:{$k}"
  before=$(rcli_to CLUSTER2 info commandstats | grep -c '^cmdstat_spublish:' || true)
  run _ceval 2 acquire "$k" tokA 10000 0 try 6000 "$ch" h 1 u c 1
  assert_success
  assert_line --index 0 OK
  run _ceval 2 acquire "$k" tokB 10000 0 wait 6000 "$ch" h 2 u c 1
  assert_line --index 0 QUEUED
  run _ceval 2 extend "$k" tokA 0
  assert_line --index 0 1
  run _ceval 2 status "$k" 1000
  assert_success
  run _ceval 2 leave "$k" tokB "$ch"
  assert_output 1
  run _ceval 2 undo "$k" tokA 1 "$ch"
  assert_output 1
  run _ceval 2 acquire "$k" tokC 10000 0 try 6000 "$ch" h 3 u c 1
  assert_line --index 0 OK
  run _ceval 2 release "$k" tokC 0 "$ch" 10000 rid1
  assert_output 1
  run _ceval 2 acquire "$k" tokD 10000 0 try 6000 "$ch" h 4 u c 1
  run _ceval 2 break "$k" "$ch"
  assert_output 1
  # Nothing a script wrote went to another slot or failed half-way.
  run rcli_to CLUSTER2 --raw eval "return redis.call('GET', KEYS[1])" 1 "lock:{$k}:fence"
  assert_output 3
  # The notices went by sharded pub/sub.
  rcli_to CLUSTER2 info commandstats | grep -q '^cmdstat_spublish:calls=' ||
    fail "no SPUBLISH on the node (before: $before)"
}

# _acl_users: on every node, the man page's "ACL SETUSER locker" (no +cluster) and a user
# kept to sharded pub/sub (no PUBLISH).
_acl_users() {
  local i
  for ((i = 1; i <= CLUSTER_N; i++)); do
    rcli_to "CLUSTER$i" acl setuser locker on '>pw' resetkeys '~lock:*' resetchannels '&lock:*' -@all \
      +@connection +evalsha +eval +evalsha_ro +eval_ro +blpop +subscribe +unsubscribe +ssubscribe \
      +sunsubscribe +scan +time +del +exists +get +mget +hdel +hexists +hget +hgetall +hlen +hmget \
      +hset +hsetnx +incr +persist +pexpire +pttl +set +zadd +zcard +zcount +zrange +zrangebyscore \
      +zrank +zrem +zremrangebyscore +zscore +publish +spublish +lpush +xadd +xrange +xrevrange >/dev/null
    rcli_to "CLUSTER$i" acl setuser shardonly on '>pw' '~lock:*' '&lock:*' +@all -publish >/dev/null
  done
}

@test "a user refused CLUSTER (the documented locker ACL) does not mark the key 'no Cluster node': a user without PUBLISH still releases" {
  _acl_users
  k=$(cluster_key_on 1 ctopo)
  local sh="redis://shardonly:pw@127.0.0.1:$CLUSTER1_PORT/0"
  run -0 "$RLOCK" --url "$sh" run "$k" -- true
  run -0 "$RLOCK" --url "redis://locker:pw@127.0.0.1:$CLUSTER1_PORT/0" run "$k" -- true
  assert_equal "$(rcli_to CLUSTER1 hget "lock:{$k}:live" ' topo')" ""
  run -0 "$RLOCK" --url "$sh" run "$k" -- true
  run -1 "$RLOCK" --url "$sh" status "$k" # free: released, not left to its lease
}

@test "a history that says 'no Cluster node' (copied from a plain server) costs no notice: PUBLISH reaches every node" {
  k=$(cluster_key_on 2 topo)
  ch="lock:release:{$k}"
  rcli_to CLUSTER2 hset "lock:{$k}:live" ' topo' p >/dev/null
  rcli_to CLUSTER2 pexpire "lock:{$k}:live" 60000 >/dev/null
  # a subscriber with SUBSCRIBE alone on another node hears the release
  timeout 20 redis-cli -s "$CLUSTER1_SOCK" ${CLUSTER1_PASSWORD:+--no-auth-warning -a "$CLUSTER1_PASSWORD"} \
    subscribe "$ch" >"$T/sub.out" &
  sub=$!
  wait_until "[[ \$(rcli_to CLUSTER1 pubsub numsub '$ch' | tail -n 1) == 1 ]]"
  rlock_bg holder run "$k" -- sh "$T/gate" "$T" h
  wait_for_file "$T/h.started"
  rlock_bg waiter -v run --wait 30s "$k" -- true
  waiter=$BG_PID
  wait_until "(( \$(_list_waiters 2) == 1 ))"
  rcli_to CLUSTER2 config resetstat >/dev/null
  touch "$T/h.go"
  bg_wait "$waiter"
  assert_equal "$BG_STATUS" 0
  grep -q "woken (turn)" "$T/waiter.err" || fail "not woken: $(cat "$T/waiter.err")"
  wait_until "[[ \$(wc -l <'$T/sub.out') -ge 6 ]]"
  kill "$sub" 2>/dev/null || true
  [[ $(sed -n 6p "$T/sub.out") =~ ^[0-9a-f]{32}$ ]] || fail "no release heard on node 1: $(cat "$T/sub.out")"
  # the releases published with PUBLISH, as the history told them
  stats=$(rcli_to CLUSTER2 info commandstats | tr -d '\r')
  [[ $stats == *cmdstat_publish:* ]] || fail "no PUBLISH: $stats"
}

@test "a waiter whose seed does not serve the slot is woken at once by the release" {
  k=$(cluster_key_on 2 wake)
  rlock_bg holder run "$k" -- sh "$T/gate" "$T" h
  wait_for_file "$T/h.started"
  rlock_bg waiter -v run --wait 30s "$k" -- touch "$T/w.done"
  waiter=$BG_PID
  wait_until "[[ \$(rcli_to CLUSTER2 zcard 'lock:{$k}:queue') == 1 ]]"
  # Waiting on its list where the slot lives.
  wait_until "(( \$(_list_waiters 2) == 1 ))"
  touch "$T/h.go"
  bg_wait "$waiter"
  assert_equal "$BG_STATUS" 0
  [[ -e $T/w.done ]] || fail "the waiter's command did not run"
  grep -q "woken (turn)" "$T/waiter.err" || fail "not woken: $(cat "$T/waiter.err")"
}

@test "a slot migrated while its lock is held and waited for: no lease lost, no waiter stranded" {
  k=$(cluster_key_on 2 mig)
  slot=$(cluster_slot "$k")
  rlock_bg holder -v run --ttl 4s "$k" -- sh "$T/gate" "$T" h
  holder=$BG_PID
  wait_for_file "$T/h.started"
  rlock_bg waiter -v run --wait 60s "$k" -- sh -c 'echo "$RLOCK_FENCE" >"$0"' "$T/w.fence"
  waiter=$BG_PID
  wait_until "[[ \$(rcli_to CLUSTER2 zcard 'lock:{$k}:queue') == 1 ]]"
  wait_until "(( \$(_list_waiters 2) == 1 ))"
  # A second in the migrating state: every script on the slot meets TRYAGAIN (or ASK, then
  # TRYAGAIN) meanwhile, and the holder's renewals with it.
  cluster_migrate_slot "$slot" 2 3 1
  assert_equal "$(rcli_to CLUSTER3 exists "lock:{$k}")" 1
  # The node unblocked the waiter's BLPOP (MOVED) when the slot left; it waits on the new one.
  wait_until "(( \$(_list_waiters 3) == 1 ))"
  # The holder renews on the new node.
  wait_until "(( \$(rcli_to CLUSTER3 pttl 'lock:{$k}') > 3500 ))" 5
  touch "$T/h.go"
  bg_wait "$holder"
  assert_equal "$BG_STATUS" 0
  bg_wait "$waiter"
  assert_equal "$BG_STATUS" 0
  assert_equal "$(cat "$T/w.fence")" 2
  ! grep -q "lost" "$T/holder.err" || fail "$(cat "$T/holder.err")"
  grep -q "moved to another node" "$T/waiter.err" || fail "$(cat "$T/waiter.err")"
  grep -q "TRYAGAIN" "$T/holder.err" "$T/waiter.err" || fail "no TRYAGAIN was met"
}

# _serving REDIS_KEY: prints i when CLUSTERi serves the slot of the Redis key REDIS_KEY (any
# layout's: plain's lock:KEY and Redisson's KEY have no hash tag).
_serving() {
  local i
  for ((i = 1; i <= CLUSTER_N; i++)); do
    if [[ $(rcli_to "CLUSTER$i" exists "$1" 2>&1) =~ ^[0-9]+$ ]]; then
      echo "$i"
      return 0
    fi
  done
  fail "no node serves the slot of $1"
}

# _migrating I SLOT: CLUSTERi has SLOT in the migrating state.
_migrating() {
  rcli_to "CLUSTER$1" cluster nodes | grep myself | grep -qF "[$2->-"
}

@test "--layout plain and redisson: a slot migrated for longer than the TTL during a hold: the lease is renewed throughout, a contender stays out, nothing is left" {
  local l k rk from to slot holder mig tomb
  for l in plain redisson; do
    k=lmig-$l
    rk=lock:$k
    [[ $l == redisson ]] && rk=$k
    from=$(_serving "$rk")
    to=$((from % 3 + 1))
    slot=$(rcli_to CLUSTER1 cluster keyslot "$rk")
    rlock_bg "h$l" -v --layout "$l" run --ttl 3s "$k" -- sh "$T/gate" "$T" "h$l"
    holder=$BG_PID
    wait_for_file "$T/h$l.started"
    # Five seconds in the migrating state (longer than the TTL) before the keys move: the
    # holder's renewals must get through all along, as the other tool's one-key renewals do.
    (cluster_migrate_slot "$slot" "$from" "$to" 5 >"$T/mig$l.log" 2>&1) 3>&- &
    mig=$!
    wait_until "_migrating $from $slot"
    run -75 "$RLOCK" --layout "$l" run -n "$k" -- true
    wait "$mig" || fail "the migration failed: $(cat "$T/mig$l.log")"
    assert_equal "$(rcli_to "CLUSTER$to" exists "$rk")" 1
    # renewed on the new node
    wait_until "(( \$(rcli_to CLUSTER$to pttl '$rk') > 2500 ))" 5
    run -75 "$RLOCK" --layout "$l" run -n "$k" -- true
    touch "$T/h$l.go"
    bg_wait "$holder"
    assert_equal "$BG_STATUS" 0
    ! grep -q "lost\|could not" "$T/h$l.err" || fail "$(grep -v 'ASK\|EVAL\|TRYAGAIN' "$T/h$l.err")"
    # Released on the new node; only the release's tombstone is left there, expiring.
    assert_equal "$(rcli_to "CLUSTER$to" exists "$rk")" 0
    for i in 1 2 3; do
      while read -r tomb; do
        [[ -n $tomb ]] || continue
        ((i == to)) && [[ $tomb == *"{$rk}:"* ]] || fail "left on CLUSTER$i: $tomb"
        (($(rcli_to "CLUSTER$i" pttl "$tomb") > 0)) || fail "a tombstone without expiry: $tomb"
      done < <(rcli_to "CLUSTER$i" --raw keys "*$k*")
    done
  done
}

# A waiter blocked in BLPOP when its slot starts migrating stays blocked at the old node
# until the slot has moved (then MOVED); one that sends BLPOP meanwhile is answered ASK
# (its list is not there). Redirects, not an outage: a migration longer than the outage
# notice (1s) must not make the waiter say Redis is unreachable.
@test "a slot migrating for 3s under a waiting waiter: no outage told, the waiter gets the lock" {
  k=$(cluster_key_on 2 migw)
  slot=$(cluster_slot "$k")
  rlock_bg holder run --ttl 30s "$k" -- sh "$T/gate" "$T" h
  holder=$BG_PID
  wait_for_file "$T/h.started"
  rlock_bg waiter run --wait 60s "$k" -- sh -c 'echo "$RLOCK_FENCE" >"$0"' "$T/w.fence"
  waiter=$BG_PID
  wait_until "(( \$(_list_waiters 2) == 1 ))"
  cluster_migrate_slot "$slot" 2 3 3
  wait_until "(( \$(_list_waiters 3) == 1 ))"
  touch "$T/h.go"
  bg_wait "$holder"
  assert_equal "$BG_STATUS" 0
  bg_wait "$waiter"
  assert_equal "$BG_STATUS" 0
  assert_equal "$(cat "$T/w.fence")" 2
  ! grep -q "unreachable" "$T/waiter.err" || fail "$(cat "$T/waiter.err")"
}

@test "--limit, break and first-come-first-served work as on one server" {
  k=$(cluster_key_on 3 sem)
  t1=$("$RLOCK" acquire --limit 2 --ttl 60s "$k")
  t2=$("$RLOCK" acquire --limit 2 --ttl 60s "$k")
  run -75 "$RLOCK" acquire --limit 2 -n "$k"
  run "$RLOCK" release "$k" --token "$t1"
  assert_success
  run "$RLOCK" release "$k" --token "$t2"
  assert_success
  # Two waiters in line behind a holder get the lock in the order they came.
  f=$(cluster_key_on 2 fifo)
  rlock_bg holder run "$f" -- sh "$T/gate" "$T" h
  wait_for_file "$T/h.started"
  rlock_bg w1 run --wait 30s "$f" -- sh -c 'echo w1 >>"$0"' "$T/order"
  w1=$BG_PID
  wait_until "[[ \$(rcli_to CLUSTER2 zcard 'lock:{$f}:queue') == 1 ]]"
  rlock_bg w2 run --wait 30s "$f" -- sh -c 'echo w2 >>"$0"' "$T/order"
  w2=$BG_PID
  wait_until "[[ \$(rcli_to CLUSTER2 zcard 'lock:{$f}:queue') == 2 ]]"
  touch "$T/h.go"
  bg_wait "$w1"
  bg_wait "$w2"
  assert_equal "$(cat "$T/order")" $'w1\nw2'
  # A break reaches the holder through its (sharded) release channel: it stops at once.
  b=$(cluster_key_on 3 brk)
  rlock_bg breakme run --on-lost kill "$b" -- sleep 60
  holder=$BG_PID
  wait_until "(( \$(rcli_to CLUSTER3 pubsub shardnumsub 'lock:release:{$b}' | sed -n 2p) == 1 ))"
  run "$RLOCK" break --yes "$b"
  assert_success
  bg_wait "$holder" 5
  assert_equal "$BG_STATUS" 76
  grep -q "broken" "$T/breakme.err" || fail "$(cat "$T/breakme.err")"
}

@test "a slot migrating for longer than 8 redirects: ASK and TRYAGAIN retried until it ends" {
  k=$(cluster_key_on 2 longmig)
  slot=$(cluster_slot "$k")
  id2=$(rcli_to CLUSTER2 cluster myid)
  id3=$(rcli_to CLUSTER3 cluster myid)
  # Nothing of the lock exists yet: ASK to the target, TRYAGAIN there, again and again.
  rcli_to CLUSTER3 cluster setslot "$slot" importing "$id2" >/dev/null
  rcli_to CLUSTER2 cluster setslot "$slot" migrating "$id3" >/dev/null
  rlock_bg mig -v --command-timeout 20s run "$k" -- true
  mig=$BG_PID
  wait_until "(( \$(grep -c 'ASK ' '$T/mig.err') >= 12 ))" 15
  for i in 1 2 3; do rcli_to "CLUSTER$i" cluster setslot "$slot" node "$id3" >/dev/null; done
  bg_wait "$mig" 20
  assert_equal "$BG_STATUS" 0
}

@test "a Cluster node that serves no slot: list says so (69)" {
  cluster_node_start LONE
  rl --url "$LONE_URL" list
  assert_error 69
  [[ $stderr == *"knows no slot served"* ]] || fail "$stderr"
}

@test "a sentinel that names a Cluster node: one clear line (70), no crash" {
  k=$(cluster_key_on 2 sentcl)
  p=$CLUSTER1_PORT
  garbage_start_named CLSENT "sentinel=127.0.0.1:$p:1"
  rl --url "redis-sentinel://127.0.0.1:$CLSENT_PORT/m" run "$k" -- true
  assert_error 70
  [[ $stderr == *"answers like a Redis Cluster node"* ]] || fail "$stderr"
}

@test "list scans every master" {
  for i in 1 2 3; do
    k=$(cluster_key_on "$i" lst)
    "$RLOCK" acquire --ttl 60s "$k" >/dev/null
  done
  run "$RLOCK" list 'lst-*'
  assert_success
  assert_equal "${#lines[@]}" 3
  run "$RLOCK" list 'lst-*' --json
  assert_success
  assert_equal "$(jq length <<<"$output")" 3
  # each lock's status, asked without its last events (list --json leaves them out)
  assert_equal "$(jq '[.[] | select(has("last_events"))] | length' <<<"$output")" 0
  assert_equal "$(jq -c '[.[].holder_count]' <<<"$output")" '[1,1,1]'
}

@test "a Cluster URL with a database other than 0: one line and 64" {
  k=$(cluster_key_on 1 db)
  rl --url "redis://127.0.0.1:$CLUSTER1_PORT/3" status "$k"
  assert_error 64
  [[ $stderr == *"database 0 only"* && $stderr == *"remove '/3'"* ]] || fail "$stderr"
}

@test "a slot that no node serves: CLUSTERDOWN is retried within --command-timeout, then 69" {
  k=$(cluster_key_on 2 down)
  slot=$(cluster_slot "$k")
  rcli_to CLUSTER2 cluster delslots "$slot"
  start=$(now_ms)
  rl --command-timeout 1s acquire "$k"
  took=$(($(now_ms) - start))
  rcli_to CLUSTER2 cluster addslots "$slot"
  assert_error 69
  [[ $stderr == *CLUSTERDOWN* ]] || fail "$stderr"
  ((took >= 900)) || fail "gave up after ${took}ms, before --command-timeout"
  ((took < 5000)) || fail "took ${took}ms"
  for i in 1 2 3; do
    _rlock_poll "CLUSTER$i to be ok again" 20 _rlock_cluster_ok "CLUSTER$i" 3
  done
}

# --- first contact (man page, WAITING AND FAIRNESS) ---------------------------------------

@test "first contact: a Cluster node that does not answer the redirect is retried within --wait" {
  # The seed (node 1) is healthy and redirects to node 2, which is stopped: the first
  # contact times out there, is retried, and gets through once node 2 continues.
  k=$(cluster_key_on 2 firstcontact)
  redis_pause CLUSTER2
  rlock_bg waiter --command-timeout 1s run --wait 60s "$k" -- true
  waiter=$BG_PID
  wait_until "grep -q 'retrying until --wait runs out' '$T/waiter.err'" 20
  redis_resume CLUSTER2
  bg_wait "$waiter" 40
  assert_equal "$BG_STATUS" 0
  run cat "$T/waiter.err"
  assert_equal "${#lines[@]}" 1
  assert_regex "${lines[0]}" "127\.0\.0\.1:$CLUSTER2_PORT.*retrying until --wait runs out$"
  for i in 1 2 3; do _rlock_poll "CLUSTER$i ok" 20 _rlock_cluster_ok "CLUSTER$i" 3; done
}

@test "first contact: a Cluster node that does not answer, without --wait, exits 69 at once" {
  k=$(cluster_key_on 2 firstcontact-now)
  redis_pause CLUSTER2
  rl --command-timeout 1s run "$k" -- true
  redis_resume CLUSTER2
  assert_error 69
  assert_regex "$stderr" "did not answer"
  for i in 1 2 3; do _rlock_poll "CLUSTER$i ok" 20 _rlock_cluster_ok "CLUSTER$i" 3; done
}

@test "nesting and acquire --while-pid work in a Cluster" {
  assert_nesting_and_while_pid cnest # renewed through the Cluster
  assert_keeper_release_and_break cnest
}

@test "shared locks and --done-for work in a Cluster, on the node that serves the slot" {
  k=$(cluster_key_on 3 shc)
  t1=$("$RLOCK" acquire -s --ttl 60s "$k")
  t2=$("$RLOCK" acquire -s --ttl 60s "$k")
  assert_equal "$(rcli_to CLUSTER3 get "lock:{$k}")" "shared lock"
  run -75 "$RLOCK" acquire -n "$k"
  # an exclusive waiter is woken by the last shared release (sharded channel)
  rlock_bg x run --wait 30s "$k" -- touch "$T/x.ran"
  x=$BG_PID
  wait_until "[[ \$(rcli_to CLUSTER3 zcard 'lock:{$k}:queue') == 1 ]]"
  "$RLOCK" release "$k" --token "$t1"
  run -0 "$RLOCK" status "$k"
  assert_output --partial "held shared by 1 holder"
  "$RLOCK" release "$k" --token "$t2"
  bg_wait "$x" 10
  assert_equal "$BG_STATUS" 0
  d=$(cluster_key_on 2 done)
  run -0 "$RLOCK" run --done-for 1h "$d" -- true
  run -75 "$RLOCK" run --done-for 1h "$d" -- true
  assert_output --partial "already done"
}

@test "--and takes keys in different slots on different nodes, all or nothing" {
  a=$(cluster_key_on 1 and)
  b=$(cluster_key_on 3 and)
  t=$("$RLOCK" acquire --ttl 60s "$b")
  run -75 "$RLOCK" run -n "$a" --and "$b" -- touch "$T/ran"
  [ ! -e "$T/ran" ]
  assert_equal "$(rcli_to CLUSTER1 exists "lock:{$a}")" 0
  "$RLOCK" release "$b" --token "$t"
  run -0 "$RLOCK" run "$b" --and "$a" -- sh -c 'echo "$RLOCK_KEYS" | wc -l'
  assert_output 2
}

@test "history and list --prometheus work in a Cluster" {
  k=$(cluster_key_on 3 hist)
  run -0 "$RLOCK" run "$k" -- true
  run -0 "$RLOCK" history "$k"
  assert_equal "${#lines[@]}" 2
  assert_equal "$(rcli_to CLUSTER3 xlen "lock:{$k}:log")" 2
  t=$("$RLOCK" acquire --ttl 60s "$k")
  run -0 "$RLOCK" list --prometheus
  assert_output --partial "rlock_held{key=\"$k\"} 1"
  "$RLOCK" release "$k" --token "$t"
}
