#!/usr/bin/env bats
# ctest-timeout: 420
# ctest-labels: topology slow
# --layout plain and --layout redisson against clients nobody here wrote (docs/PROTOCOL.md
# "Other tools' layouts"):
# - plain: tests/interop/seed_service.js, the NestJS RedisLockService of the seeds
#   (../shared/seeds/000_*), re-implemented from its text over ioredis: `lock:KEY`, a
#   1 s fallback retry, PSUBSCRIBE lock:release:*;
# - redisson: tests/interop/redisson.js over node-redisson (a Node port of Redisson 3.x's
#   RLock): a hash at KEY, `redisson_lock__channel:{KEY}`, a waiter that falls back on the
#   holder's TTL.
# Both ways: exclusion, mutual exclusion under contention (a shared log of critical
# sections), a release waking the other side's waiter at once, a holder killed with -9,
# on one redis-server and on a 3-master Redis Cluster (the seed's own deployment).
# The npm packages come from scripts/setup.sh (npm ci in tests/interop): without node or
# tests/interop/node_modules every test is skipped, saying so (under CI=true, fails).
#
# Ordering events are awaited, never slept for: a driver's "acquired"/"waiting" lines, a
# gate file, a waiter's subscription (CLIENT LIST). Bounds that measure a promise (a
# release wakes a waiter at once, not at its next retry; nobody gets the lock before the
# dead holder's TTL ran out) are not scaled by the slack; each says so.

# shellcheck disable=SC2016,SC2154 # single-quoted scripts are the child's; bats sets $stderr
bats_require_minimum_version 1.5.0

load helpers/redis
load helpers/topology

INTEROP=$BATS_TEST_DIRNAME/interop

# Why the suite cannot run, or nothing.
_interop_missing() {
  if ! command -v node >/dev/null; then
    echo "node is not installed (scripts/setup.sh --deps-only installs nodejs and npm)"
  elif [[ ! -d $INTEROP/node_modules/node-redisson || ! -d $INTEROP/node_modules/ioredis ]]; then
    echo "tests/interop/node_modules is missing (scripts/setup.sh --deps-only runs npm ci there)"
  fi
}

setup_file() {
  [[ -z $(_interop_missing) ]] || return 0
  redis_start
  cluster_start 3
}

setup() {
  local why
  why=$(_interop_missing)
  if [[ -n $why && ${CI:-} == true ]]; then
    fail "$why: CI installs them (.ci/run runs scripts/setup.sh --deps-only)"
  fi
  [[ -z $why ]] || skip "$why"
  T=$BATS_TEST_TMPDIR
  write_gate "$T/gate"
  # crit.sh LOG WHO SECONDS: one critical section of the contention tests
  cat >"$T/crit.sh" <<'EOF'
echo "start $2 $(date +%s%3N)" >>"$1"
sleep "$3"
echo "end $2 $(date +%s%3N)" >>"$1"
EOF
}

# --- which layout, which Redis ----------------------------------------------------------------

# use LAYOUT TOPOLOGY: plain|redisson, single|cluster. Sets RL (rlock with --layout),
# DRIVER (the node client of that layout), NODE_ARGS (its connection) and RLOCK_URL.
use() {
  LAYOUT=$1 TOPO=$2
  RL=("$RLOCK" --layout "$LAYOUT")
  case $LAYOUT in
    plain) DRIVER=$INTEROP/seed_service.js ;;
    redisson) DRIVER=$INTEROP/redisson.js ;;
    *) fail "no layout $LAYOUT" ;;
  esac
  if [[ $TOPO == cluster ]]; then
    NODES=(CLUSTER1 CLUSTER2 CLUSTER3)
    NODE_ARGS=(--port "$CLUSTER1_PORT" --port "$CLUSTER2_PORT" --cluster)
    export RLOCK_URL=$CLUSTER_URL
  else
    NODES=(REDIS)
    NODE_ARGS=(--port "$REDIS_PORT")
    export RLOCK_URL=$REDIS_URL
  fi
}

# rkey KEY: the Redis key of lock KEY in the layout; channel KEY: its release channel.
rkey() { if [[ $LAYOUT == plain ]]; then echo "lock:$1"; else echo "$1"; fi; }
channel() {
  if [[ $LAYOUT == plain ]]; then echo "lock:release:$1"; else echo "redisson_lock__channel:{$1}"; fi
}

# kv ARGS...: redis-cli on the server that has the key (following MOVED in the Cluster).
kv() {
  if [[ $TOPO == cluster ]]; then
    redis-cli -c -h 127.0.0.1 -p "$CLUSTER1_PORT" "$@"
  else
    rcli "$@"
  fi
}

# key NAME: a lock name for this test; in the Cluster one whose Redis key the seed node
# (CLUSTER1, the one rlock and the clients are given) does not serve, so MOVED is followed.
key() {
  local j k
  [[ $TOPO == cluster ]] || {
    echo "$1"
    return 0
  }
  for ((j = 0; j < 200; j++)); do
    k="$1-$j"
    if [[ $(rcli_to CLUSTER1 exists "$(rkey "$k")" 2>&1) == *MOVED* ]]; then
      echo "$k"
      return 0
    fi
  done
  fail "no name $1-j among 200 whose key is not on CLUSTER1"
}

# drv ARGS... / drv_bg NAME ARGS...: the layout's client, in the foreground or as a
# bg_start job ($T/NAME.out, BG_PID).
drv() { node "$DRIVER" "${NODE_ARGS[@]}" "$@"; }
drv_bg() {
  local name=$1
  shift
  bg_start "$name" node "$DRIVER" "${NODE_ARGS[@]}" "$@"
}

# field NAME WORD N: the Nth field of the line WORD … in $T/NAME.out.
field() { awk -v w="$2" -v n="$3" '$1 == w { print $n; exit }' "$T/$1.out"; }

# wait_acquired NAME: waits for the client's "acquired" line; sets HOLDER_ID (the value
# or hash field it keeps in Redis).
wait_acquired() {
  wait_until "grep -q '^acquired ' '$T/$1.out'" 20 || return 1
  HOLDER_ID=$(field "$1" acquired 3)
}

# n_subscribed clients|others: connections subscribed to anything (channels, patterns,
# shard channels) on every server of the topology: the node clients' (named interop-…,
# see tests/interop/cli.js; ioredis names a Cluster's subscriber
# "ioredis-cluster(subscriber):interop-…"), or the others' (rlock's).
n_subscribed() {
  local n=0 c name re=' name=[^ ]*interop-'
  for name in "${NODES[@]}"; do
    c=$(rcli_to "$name" client list | grep -E ' (sub|psub|ssub)=[1-9]' |
      if [[ $1 == clients ]]; then grep -c "$re"; else grep -vc "$re"; fi) || true
    n=$((n + c))
  done
  echo "$n"
}

# wait_subscribed clients|others N: until more than N such connections are subscribed.
wait_subscribed() { wait_until "(( \$(n_subscribed $1) > $2 ))" 20; }

now() { date +%s%3N; }

# assert_serial LOG N: the critical sections in LOG never overlap: "start WHO MS" and
# "end WHO MS" alternate, each end closes its own start, no start is earlier than the
# previous end, and there are N sections in all.
assert_serial() {
  run awk -v n="$2" '
    function bad(msg) { print "line " NR ": " msg " (" $0 ")"; broken = 1; exit }
    $1 == "start" {
      if (open != "") bad("starts while " open " holds")
      if ($3 < last) bad("starts before the previous section ended (" last ")")
      open = $2; count++; next
    }
    $1 == "end" {
      if (open != $2) bad("ends while " (open == "" ? "nobody" : open) " holds")
      open = ""; last = $3; next
    }
    { bad("not a start or end line") }
    END {
      if (broken) exit 1
      if (open != "") { print open " never ended"; exit 1 }
      if (count != n) { print count " sections, not " n; exit 1 }
    }' "$1"
  assert_success
}

# --- the scenarios, for a layout and a topology set by `use` -------------------------------

# The client holds KEY: rlock is refused, and gets it once the client released it.
client_excludes_rlock() {
  local k=$1 s
  drv_bg s hold "$k" --ttl 5000 --until-signal
  s=$BG_PID
  wait_acquired s
  run -75 "${RL[@]}" run -n "$k" -- true
  run -75 "${RL[@]}" run --wait 1s "$k" -- true
  run -75 "${RL[@]}" acquire -n "$k" --ttl 10s
  kill -TERM "$s"
  bg_wait "$s" 20
  assert_equal "$BG_STATUS" 0
  run -0 "${RL[@]}" run -n "$k" -- sh -c 'echo "ran fence=${RLOCK_FENCE-unset}"'
  # (these layouts have no fencing counter)
  assert_output "ran fence=unset"
  assert_equal "$(kv exists "$(rkey "$k")")" 0
}

# rlock holds KEY: the client is refused, and gets it once rlock released it.
rlock_excludes_client() {
  local k=$1 h tok
  rlock_bg h "${RL[@]:1}" run --ttl 10s "$k" -- sh "$T/gate" "$T" h
  h=$BG_PID
  wait_for_file "$T/h.started" 20
  run -75 drv hold "$k" --ttl 5000 --hold 0 --max-wait 0
  run -75 drv hold "$k" --ttl 5000 --hold 0 --max-wait 1500
  touch "$T/h.go"
  bg_wait "$h" 20
  assert_equal "$BG_STATUS" 0
  run -0 drv hold "$k" --ttl 5000 --hold 0 --max-wait 0
  assert_line --regexp '^released [0-9]+$'
  # and a lease by acquire likewise, released by its token
  tok=$("${RL[@]}" acquire "$k" --ttl 20s)
  run -75 drv hold "$k" --ttl 5000 --hold 0 --max-wait 0
  run -0 "${RL[@]}" release "$k" --token "$tok"
  run -0 drv hold "$k" --ttl 5000 --hold 0 --max-wait 0
  assert_equal "$(kv exists "$(rkey "$k")")" 0
}

# Two rlock loops and two client workers, N sections each, on one KEY: a shared log.
contention() {
  local k=$1 n=12 i
  local -a pids=()
  for i in A B; do
    bg_start "r$i" bash -c 'for ((i = 0; i < $1; i++)); do
        "${@:2:3}" run --wait 60s "$5" -- sh "$6" "$7" "$8" 0.02 || exit
      done' _ "$n" "${RL[@]}" "$k" "$T/crit.sh" "$T/log" "rlock-$i"
    pids+=("$BG_PID")
    drv_bg "s$i" worker "$k" --ttl 2000 --iterations "$n" --log "$T/log" --work-ms 20 \
      --who "client-$i" --max-wait 60000
    pids+=("$BG_PID")
  done
  for i in "${pids[@]}"; do
    bg_wait "$i" 120
    assert_equal "$BG_STATUS" 0
  done
  assert_serial "$T/log" $((4 * n))
  assert_equal "$(grep -c '^start rlock-' "$T/log")" $((2 * n))
  assert_equal "$(grep -c '^start client-' "$T/log")" $((2 * n))
  assert_equal "$(kv exists "$(rkey "$k")")" 0
}

# The client releases: a waiting rlock starts at once.
client_release_wakes_rlock() {
  local k=$1 s w base released started
  drv_bg s hold "$k" --ttl 5000 --until-signal
  s=$BG_PID
  wait_acquired s
  base=$(n_subscribed others)
  rlock_bg w "${RL[@]:1}" run --wait 30s "$k" -- sh -c 'date +%s%3N >"$0"' "$T/w.started"
  w=$BG_PID
  wait_subscribed others "$base"
  [[ ! -e $T/w.started ]] || fail "rlock ran while the client held $k"
  kill -USR1 "$s"
  bg_wait "$s" 20
  assert_equal "$BG_STATUS" 0
  bg_wait "$w" 20
  assert_equal "$BG_STATUS" 0
  released=$(field s released 2) started=$(<"$T/w.started")
  # The promise: the client's release message wakes rlock's waiter, which retries at once,
  # not when the holder's TTL would have run out (5 s): within a round trip, a process
  # start and the machine's scheduling, far below 900 ms.
  ((started - released < 900)) ||
    fail "rlock started $((started - released)) ms after the client released $k"
}

# rlock releases: a waiting client worker takes the lock at once.
rlock_release_wakes_client() {
  local k=$1 h s base ended started
  rlock_bg h "${RL[@]:1}" run --ttl 30s "$k" -- \
    sh -c 'sh "$0" "$1" h && date +%s%3N >"$1/h.ended"' "$T/gate" "$T"
  h=$BG_PID
  wait_for_file "$T/h.started" 20
  # --retry-ms 60000: the seed service's waiter tries again after 60 s instead of 1 s,
  # node-redisson's when the lease it read runs out (rlock renews 30 s at every 10 s, so
  # 20 s at least): until then only the release message can wake it.
  drv_bg s worker "$k" --ttl 5000 --iterations 1 --log "$T/log" --who client --max-wait 60000 \
    --retry-ms 60000
  s=$BG_PID
  wait_until "grep -q '^waiting ' '$T/s.out'" 20
  wait_subscribed clients 0
  touch "$T/h.go"
  bg_wait "$h" 20
  assert_equal "$BG_STATUS" 0
  bg_wait "$s" 20
  assert_equal "$BG_STATUS" 0
  ended=$(<"$T/h.ended") started=$(awk '$1 == "start" { print $3 }' "$T/log")
  # The promise: rlock's release message wakes the client's waiter, which retries at once,
  # not at its fallback retry (seconds later).
  ((started - ended < $(slack 1000))) ||
    fail "the client started $((started - ended)) ms after rlock's command ended"
}

# pttl_deadline KEY: after the holder's death, the earliest moment (epoch ms) its key can
# expire: the time before PTTL was asked, plus PTTL. Sets EXPIRES.
pttl_deadline() {
  local before pttl
  before=$(now)
  pttl=$(kv pttl "$(rkey "$1")")
  ((pttl > 0)) || fail "$(rkey "$1") has PTTL $pttl right after its holder died"
  EXPIRES=$((before + pttl))
}

# The client is killed with -9 while holding: rlock gets the lock once its TTL ran out.
client_killed_rlock_takes_over() {
  local k=$1 s w started
  drv_bg s hold "$k" --ttl 3000 --until-signal
  s=$BG_PID
  wait_acquired s
  kill -KILL "$s"
  pttl_deadline "$k"
  run -75 "${RL[@]}" run -n "$k" -- true
  rlock_bg w "${RL[@]:1}" run --wait 30s "$k" -- sh -c 'date +%s%3N >"$0"' "$T/w.started"
  w=$BG_PID
  bg_wait "$w" 30
  assert_equal "$BG_STATUS" 0
  started=$(<"$T/w.started")
  # The promises: not before the dead holder's key expired (a lock is a lock: 2 ms for
  # the clocks' rounding), and soon after, since a waiter retries when the holder's TTL
  # runs out (a bound that measures no promise: scaled).
  ((started >= EXPIRES - 2)) || fail "rlock started $((EXPIRES - started)) ms before the key expired"
  ((started - EXPIRES < $(slack 2000))) || fail "rlock started $((started - EXPIRES)) ms after the key expired"
}

# rlock is killed with -9 while holding: the client gets the lock once its TTL ran out.
rlock_killed_client_takes_over() {
  local k=$1 h s acq
  rlock_bg h "${RL[@]:1}" run --ttl 3s "$k" -- sh "$T/gate" "$T" h
  h=$BG_PID
  wait_for_file "$T/h.started" 20
  kill -KILL "$h"
  pttl_deadline "$k"
  run -75 drv hold "$k" --ttl 5000 --hold 0 --max-wait 0
  drv_bg s hold "$k" --ttl 5000 --hold 0 --max-wait 30000
  s=$BG_PID
  bg_wait "$s" 30
  assert_equal "$BG_STATUS" 0
  acq=$(field s acquired 2)
  # The promises as above; the seed service notices at its next 1 s retry, node-redisson
  # when the TTL it was told runs out.
  ((acq >= EXPIRES - 2)) || fail "the client acquired $((EXPIRES - acq)) ms before the key expired"
  ((acq - EXPIRES < $(slack 2500))) || fail "the client acquired $((acq - EXPIRES)) ms after the key expired"
}

# --- plain: the seeds' NestJS service -------------------------------------------------------

@test "plain: the service's lock is lock:KEY holding rlock's token, PX; rlock's holder excludes the service" {
  use plain single
  tok=$("${RL[@]}" acquire pl-shape --ttl 10s)
  assert_equal "$(rcli get lock:pl-shape)" "$tok"
  pttl=$(rcli pttl lock:pl-shape)
  ((pttl > 0 && pttl <= 10000)) || fail "PTTL $pttl"
  run -0 "${RL[@]}" release pl-shape --token "$tok"
  rlock_excludes_client pl-excl
}

@test "plain: a service holder excludes rlock" {
  use plain single
  client_excludes_rlock pl-held
}

@test "plain: rlock and the service under contention never overlap" {
  use plain single
  contention pl-busy
}

@test "plain: the service's release wakes a waiting rlock at once" {
  use plain single
  client_release_wakes_rlock pl-wake1
}

@test "plain: rlock's release wakes a waiting service at once, not at its fallback retry" {
  use plain single
  rlock_release_wakes_client pl-wake2
}

@test "plain: a service holder killed with -9: rlock takes over when its TTL ran out, not before" {
  use plain single
  client_killed_rlock_takes_over pl-kill1
}

@test "plain: rlock killed with -9: the service takes over when its TTL ran out, not before" {
  use plain single
  rlock_killed_client_takes_over pl-kill2
}

@test "plain in a Cluster: exclusion both ways" {
  use plain cluster
  client_excludes_rlock "$(key pl-c-held)"
  rlock_excludes_client "$(key pl-c-excl)"
}

@test "plain in a Cluster: the service's release wakes a waiting rlock at once" {
  use plain cluster
  client_release_wakes_rlock "$(key pl-c-wake1)"
}

@test "plain in a Cluster: rlock's release wakes a waiting service at once" {
  use plain cluster
  rlock_release_wakes_client "$(key pl-c-wake2)"
}

@test "RLOCK_LAYOUT=plain works like --layout plain; two layouts are two locks" {
  use plain single
  tok=$(RLOCK_LAYOUT=plain "$RLOCK" acquire env-k --ttl 10s)
  assert_equal "$(rcli get lock:env-k)" "$tok"
  run -75 drv hold env-k --ttl 5000 --hold 0 --max-wait 0
  run -0 env RLOCK_LAYOUT=plain "$RLOCK" release env-k --token "$tok"
  drv_bg s hold env-k --ttl 5000 --until-signal
  wait_acquired s
  run -75 env RLOCK_LAYOUT=plain "$RLOCK" run -n env-k -- true
  # the command line wins; rlock's own layout is another lock, with another key
  run -0 env RLOCK_LAYOUT=plain "$RLOCK" --layout rlock run -n env-k -- true
  run -0 "$RLOCK" run -n env-k -- true
}

@test "status under rlock's layout warns that the plain layout's key of the name is held" {
  use plain single
  drv_bg s hold warn-k --ttl 5000 --until-signal
  wait_acquired s
  rl status warn-k
  assert_equal "$status" 1 # free in rlock's own layout
  [[ $stderr == *"--layout plain"* && $stderr == *lock:warn-k* ]] ||
    fail "no warning about the plain layout's lock:warn-k on stderr: '$stderr'"
}

# --- redisson: node-redisson ---------------------------------------------------------------

@test "redisson: rlock's lock is a hash at KEY, its token the field, count 1; rlock's holder excludes node-redisson" {
  use redisson single
  tok=$("${RL[@]}" acquire rs-shape --ttl 10s)
  assert_equal "$(rcli type rs-shape)" hash
  assert_equal "$(rcli hlen rs-shape)" 1
  assert_equal "$(rcli hget rs-shape "$tok")" 1
  [[ $tok =~ ^[0-9a-fA-F-]{36}:[0-9]+$ ]] || fail "the token '$tok' is not UUID:NUMBER"
  pttl=$(rcli pttl rs-shape)
  ((pttl > 0 && pttl <= 10000)) || fail "PTTL $pttl"
  run -0 "${RL[@]}" release rs-shape --token "$tok"
  rlock_excludes_client rs-excl
}

@test "redisson: a node-redisson holder excludes rlock" {
  use redisson single
  client_excludes_rlock rs-held
}

@test "redisson: rlock and node-redisson under contention never overlap" {
  use redisson single
  contention rs-busy
}

@test "redisson: node-redisson's unlock wakes a waiting rlock at once" {
  use redisson single
  client_release_wakes_rlock rs-wake1
}

@test "redisson: rlock's release (\"0\" on redisson_lock__channel:{KEY}) wakes a waiting node-redisson at once" {
  use redisson single
  bg_start sub redis-cli -h 127.0.0.1 -p "$REDIS_PORT" psubscribe 'redisson_lock__channel:*'
  wait_until "grep -q psubscribe '$T/sub.out'" 10
  rlock_release_wakes_client rs-wake2
  wait_until "grep -qx 'redisson_lock__channel:{rs-wake2}' '$T/sub.out'" 10
  assert_equal "$(grep -A1 -x 'redisson_lock__channel:{rs-wake2}' "$T/sub.out" | sed -n 2p)" 0
}

@test "redisson: a node-redisson holder killed with -9: rlock takes over when its TTL ran out, not before" {
  use redisson single
  client_killed_rlock_takes_over rs-kill1
}

@test "redisson: rlock killed with -9: node-redisson takes over when its TTL ran out, not before" {
  use redisson single
  rlock_killed_client_takes_over rs-kill2
}

@test "redisson: rlock never deletes a hash it does not own (reentrant node-redisson holder); break does" {
  use redisson single
  drv_bg s hold rs-own --ttl 30000 --until-signal --reentrant 2
  s=$BG_PID
  wait_acquired s
  assert_equal "$(rcli hget rs-own "$HOLDER_ID")" 2
  other="$(cat /proc/sys/kernel/random/uuid):1"
  run -76 "${RL[@]}" release rs-own --token "$other"
  run -76 "${RL[@]}" extend rs-own --token "$other" --ttl 90s
  run -75 "${RL[@]}" run -n rs-own -- true
  run -75 "${RL[@]}" acquire -n rs-own --ttl 10s
  assert_equal "$(rcli hgetall rs-own | tr '\n' ' ')" "$HOLDER_ID 2 "
  pttl=$(rcli pttl rs-own)
  ((pttl > 0 && pttl <= 30000)) || fail "PTTL $pttl"
  # break is the operator's explicit exception: the hash goes, whoever owns it
  run -0 "${RL[@]}" break -y rs-own
  assert_equal "$(rcli exists rs-own)" 0
  run -0 "${RL[@]}" run -n rs-own -- true
  # node-redisson then finds its lock gone when it unlocks (an error of its own)
  kill -TERM "$s"
  bg_wait "$s" 20
  assert_equal "$BG_STATUS" 1
  run cat "$T/s.err"
  assert_output --partial "not locked by current client"
}

@test "redisson: status shows node-redisson's holder id (UUID:UUID), its hold count and its TTL" {
  use redisson single
  drv_bg s hold rs-status --ttl 20000 --until-signal --reentrant 2
  wait_acquired s
  [[ $HOLDER_ID =~ ^[0-9a-f-]{36}:[0-9a-f-]{36}$ ]] || fail "holder id '$HOLDER_ID'"
  run -0 "${RL[@]}" status rs-status
  assert_output --partial "$HOLDER_ID"
  # its TTL as status shows TTLs ("19.8s left"): the watchdog renews it to 20 s
  assert_output --regexp '(^|[^0-9.])([1-9]|1[0-9]|20)(\.[0-9]+)?s left'
  run -0 "${RL[@]}" status rs-status --json
  assert_equal "$(jq -r '.holders[0].token' <<<"$output")" "$HOLDER_ID"
  assert_equal "$(jq -r '.holders[0].holds' <<<"$output")" 2
  ttl=$(jq -r '.holders[0].ttl_left_ms' <<<"$output")
  ((ttl > 0 && ttl <= 20000)) || fail "ttl_left_ms $ttl"
}

@test "redisson in a Cluster: exclusion both ways" {
  use redisson cluster
  client_excludes_rlock "$(key rs-c-held)"
  rlock_excludes_client "$(key rs-c-excl)"
}

@test "redisson in a Cluster: node-redisson's unlock wakes a waiting rlock at once" {
  use redisson cluster
  client_release_wakes_rlock "$(key rs-c-wake1)"
}

@test "redisson in a Cluster: rlock's release wakes a waiting node-redisson at once" {
  use redisson cluster
  rlock_release_wakes_client "$(key rs-c-wake2)"
}
