#!/usr/bin/env bats
# ctest-labels: faults slow
# The keeper of `acquire --while-pid PID` under attack (docs/GUIDE.md "A lock for the script's whole life"): it renews
# while PID lives, releases soon after PID ends, signals PID alone when the lease is lost,
# and never signals PID for the owner's own release, whatever happens to the keeper, PID,
# the caller or the server meanwhile:
# - stopped (SIGSTOP) and continued, killed by any stop signal, started by a caller that
#   exits at once, many at once, at the bounds of --ttl;
# - PID killed while acquire waits, PID's pid reused, PID of another user;
# - the lock broken or released with its token from anywhere, SCRIPT FLUSH, a server
#   stopped past the lease or restarted with its AOF, a replica that stops confirming
#   (--sync-replicas), standard output or error full.
# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell

bats_require_minimum_version 1.5.0

load helpers/redis
load helpers/topology

setup_file() {
  export BATS_NO_PARALLELIZE_WITHIN_FILE=true
  redis_start
}

setup() {
  export T=$BATS_TEST_TMPDIR
  rcli flushall >/dev/null
  rlock_on_path "$T"
}

# After the helpers' teardown: the processes a test watched, and the servers it started.
suite_teardown() {
  local f
  for f in "$T"/pid.*; do
    [[ -f $f ]] && kill -KILL "$(cat "$f")" 2>/dev/null
  done
  redis_stop REPLICA
  redis_stop AOF
  redis_stop SLOW
  return 0
}

is_free() { ! "$RLOCK" status "$1" >/dev/null 2>&1; }
is_held() { "$RLOCK" status "$1" >/dev/null 2>&1; }

# keeper_of TEXT: the keeper pid in an --export output.
keeper_of() { sed -n 's/.*keeper=\([0-9]*\).*/\1/p' <<<"$1" | head -1; }

# watched NAME: a process for --while-pid that creates $T/NAME.term when it gets SIGTERM
# (and exits); sets WPID. Killed by teardown if a test leaves it.
watched() {
  sh -c 'trap "touch \"$0.term\"; exit 0" TERM; while :; do sleep 0.05; done' "$T/$1" 3>&- &
  WPID=$!
  echo "$WPID" >"$T/pid.$1"
}

# sleeper NAME: a plain process for --while-pid; sets SPID.
sleeper() {
  sleep 1000 3>&- &
  SPID=$!
  echo "$SPID" >"$T/pid.$1"
}

# script_alive: the shell function scripts use to wait for a keeper to end (a zombie has
# ended), without sleeping and hoping.
ALIVE='alive() { s=$(sed -n "s/^State:[[:space:]]*\(.\).*/\1/p" "/proc/$1/status" 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ]; }'

# --- the owner's release is never a loss -----------------------------------------------------

@test "a keeper stopped past its owner's release, then continued, does not signal the owner" {
  [ -d /proc/self ] || skip "no /proc"
  cat >"$T/script.sh" <<EOF2
$ALIVE
EOF2
  cat >>"$T/script.sh" <<'EOF2'
trap 'echo got-term; exit 143' TERM
out=$(rlock acquire k --ttl 1s --while-pid $$ --export) || exit 9
eval "$out"
keeper=$(printf '%s\n' "$RLOCK_HELD" | sed -n 's/.*keeper=\([0-9]*\):.*/\1/p')
echo "$keeper" >"$T/pid.keeper"
kill -STOP "$keeper"
# waits (--command-timeout) for the stopped keeper, then releases: past the keeper's deadline
rlock --command-timeout 2s release k || exit 8
rlock status k >/dev/null || echo freed
kill -CONT "$keeper"
# a keeper that took the release for a loss would signal us before it ends
i=0
while alive "$keeper" && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
alive "$keeper" || echo keeper-gone
EOF2
  run timeout 40 sh "$T/script.sh"
  [ "$status" -eq 0 ]
  [[ $output == *freed* ]]
  [[ $output == *keeper-gone* ]]
  [[ $output != *got-term* ]]
  is_free k
}

@test "a release with the token from outside the environment stops the keeper quietly" {
  [ -d /proc/self ] || skip "no /proc"
  cat >"$T/script.sh" <<EOF2
$ALIVE
EOF2
  cat >>"$T/script.sh" <<'EOF2'
trap 'echo got-term; exit 143' TERM
# the bare token, no RLOCK_HELD: the release cannot tell the keeper by a signal
tok=$(rlock acquire k --ttl 1s --while-pid $$) || exit 9
env -u RLOCK_HELD rlock release k --token "$tok" || exit 8
rlock status k >/dev/null || echo freed
# past the renewals that find it gone: a keeper that took it for a loss signals us
i=0
while pgrep -f "acquire k --ttl 1s --while-pid $$" >/dev/null && [ $i -lt 200 ]; do
  sleep 0.05
  i=$((i + 1))
done
[ $i -lt 200 ] && echo keeper-gone
EOF2
  run timeout 40 sh "$T/script.sh"
  [ "$status" -eq 0 ]
  [[ $output == *freed* ]]
  [[ $output == *keeper-gone* ]]
  [[ $output != *got-term* ]]
}

@test "a release at once after the acquire, by the environment or by the token, is always quiet" {
  cat >"$T/script.sh" <<'EOF2'
trap 'echo got-term; exit 143' TERM
if [ "$1" = env ]; then
  eval "$(rlock acquire k --ttl 500ms --while-pid $$ --export)" || exit 9
  rlock release k || exit 8
else
  tok=$(rlock acquire k --ttl 500ms --while-pid $$) || exit 9
  rlock release k --token "$tok" || exit 8
fi
# renewals every 166ms: one racing the release would take it for a loss
i=0
while [ $i -lt 6 ]; do sleep 0.05; i=$((i + 1)); done
echo done
EOF2
  for i in 1 2 3 4 5 6 7 8; do
    for how in env token; do
      run timeout 20 sh "$T/script.sh" "$how"
      [ "$status" -eq 0 ] || fail "$how, round $i: status $status: $output"
      [[ $output == "done" ]] || fail "$how, round $i: $output"
    done
  done
  _rlock_poll "k to be free" 10 is_free k
}

@test "no verdict from the keeper (its private directory not this user's alone): the owner's release says so" {
  mkdir -p "$T/tmp/rlock-$(id -u)"
  chmod 0777 "$T/tmp/rlock-$(id -u)"
  cat >"$T/script.sh" <<'EOF2'
eval "$(rlock acquire k-noverdict --ttl 5s --while-pid $$ --export)" || exit 9
rlock release k-noverdict || exit 8
echo done
EOF2
  XDG_RUNTIME_DIR= TMPDIR="$T/tmp" run --separate-stderr timeout 20 sh "$T/script.sh"
  assert_success
  assert_output "done"
  [[ $stderr == *"warning: 'k-noverdict': no verdict came from its keeper (pid "*"had a failover lost the hold, it would not be known here"* ]] || fail "$stderr"
  _rlock_poll "k-noverdict to be free" 10 is_free k-noverdict
}

# --- losses reach PID, and only PID -----------------------------------------------------------

@test "a break reaches the keeper within about a second: PID gets SIGTERM" {
  watched w
  rlock acquire k --while-pid "$WPID" >/dev/null # 30s: the next renewal is 10s away
  start=$(now_ms)
  run rlock break --yes k
  [ "$status" -eq 0 ]
  _rlock_poll "SIGTERM to PID" 15 test -e "$T/w.term"
  # the promise: "within about a second" (a renewal would take 10s)
  [ $(($(now_ms) - start)) -lt 3000 ]
}

@test "SIGHUP, SIGINT or SIGQUIT to the keeper gives the lock up, and PID hears of it" {
  for sig in HUP INT QUIT; do
    watched "w$sig"
    out=$(rlock acquire "k$sig" --while-pid "$WPID" --export)
    keeper=$(keeper_of "$out")
    [ -n "$keeper" ]
    kill "-$sig" "$keeper"
    _rlock_poll "SIGTERM to PID after SIG$sig" 10 test -e "$T/w$sig.term"
    _rlock_poll "k$sig to be free" 10 is_free "k$sig"
  done
}

@test "--sync-replicas: renewals the replica cannot confirm lose the lease, and PID gets SIGTERM" {
  replica_start REPLICA REDIS
  wait_until '[[ $(rcli info replication) == *"slave0:"*"state=online"* ]]'
  watched w
  # the replica's confirmation within a share of the TTL and --command-timeout: slack for a busy machine
  rlock --command-timeout "$(slack 1)s" acquire k --ttl "$(slack 2)s" --sync-replicas 1 \
    --while-pid "$WPID" >/dev/null
  # renewed past its TTL while the replica confirms
  sleep "$(slack 2).5"
  [ ! -e "$T/w.term" ]
  redis_pause REPLICA
  _rlock_poll "SIGTERM to PID" 15 test -e "$T/w.term"
  redis_resume REPLICA
  redis_stop REPLICA
}

@test "a server stopped for longer than the lease: PID gets SIGTERM, and the lock is free once it is back" {
  watched w
  out=$(rlock --command-timeout 500ms acquire k --ttl 2s --while-pid "$WPID" --export)
  keeper=$(keeper_of "$out")
  redis_pause
  _rlock_poll "SIGTERM to PID" 15 test -e "$T/w.term"
  redis_resume
  _rlock_poll "the keeper to end" 15 _rlock_dead "$keeper"
  _rlock_poll "k to be free" 10 is_free k
}

@test "SCRIPT FLUSH does not disturb the keeper" {
  sleeper s
  rlock acquire k --ttl 1s --while-pid "$SPID" >/dev/null
  rcli script flush >/dev/null
  sleep 1.5 # more than a TTL: only renewals after the flush keep it
  rcli script flush >/dev/null
  sleep 1.5
  is_held k
  kill "$SPID"
  _rlock_poll "k to be free" 10 is_free k
}

@test "a server restarted with its append-only file: the keeper holds on" {
  redis_start_named AOF --appendonly yes
  export RLOCK_URL=$AOF_URL
  watched w
  rlock acquire k --ttl 3s --while-pid "$WPID" >/dev/null
  redis_restart AOF
  sleep 4 # past the TTL: only a renewal after the restart keeps it
  is_held k
  [ ! -e "$T/w.term" ]
  kill "$WPID"
  _rlock_poll "k to be free" 10 is_free k
  redis_stop AOF
}

# --- PID ----------------------------------------------------------------------------------------

@test "PID killed with -9 while acquire waits: it leaves the line within about a second, 64" {
  rlock_bg holder run k -- sleep 60
  wait_until 'is_held k'
  sleeper s
  bg_start waiter "$RLOCK" acquire k --wait 60s --while-pid "$SPID"
  waiter=$BG_PID
  wait_until '[[ $("$RLOCK" status --json k) == *"\"waiter_count\":1"* ]]'
  start=$(now_ms)
  kill -KILL "$SPID"
  bg_wait "$waiter" 20
  # the promise: "within about a second" (the holder keeps it for a minute)
  [ $(($(now_ms) - start)) -lt 3000 ]
  [ "$BG_STATUS" -eq 64 ]
  grep -q "the process ended while waiting" "$T/waiter.err"
  [[ $("$RLOCK" status --json k) == *'"waiter_count":0'* ]]
}

@test "a reused pid does not keep the lock: the keeper compares PID's start time" {
  [ -w /proc/sys/kernel/ns_last_pid ] || [ "$(id -u)" -eq 0 ] || skip "needs root"
  unshare -fp --mount-proc true 2>/dev/null || skip "no pid namespaces here"
  cat >"$T/reuse.sh" <<EOF2
$ALIVE
EOF2
  cat >>"$T/reuse.sh" <<'EOF2'
# in a pid namespace of its own, where the next pid can be chosen
sleep 1000 &
old=$!
out=$(rlock acquire k --while-pid $old --export) || exit 9
keeper=$(printf '%s\n' "$out" | sed -n 's/.*keeper=\([0-9]*\):.*/\1/p')
kill -STOP "$keeper" # it cannot see PID end
kill -KILL $old
wait $old 2>/dev/null
sleep 0.05 # Linux counts start times in clock ticks (10ms): the new one starts later
echo $((old - 1)) >/proc/sys/kernel/ns_last_pid
sleep 1000 &
new=$!
[ "$new" = "$old" ] && echo reused
kill -CONT "$keeper"
i=0
while alive "$keeper" && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
alive "$keeper" || echo keeper-gone
rlock status k >/dev/null || echo freed
kill $new
EOF2
  run timeout 30 unshare -fp --mount-proc sh "$T/reuse.sh"
  [ "$status" -eq 0 ]
  [[ $output == *reused* ]] || skip "the pid was not reused: $output"
  [[ $output == *keeper-gone* ]]
  [[ $output == *freed* ]]
}

@test "status shows the user PID runs as, not the caller's" {
  [ "$(id -u)" -eq 0 ] || skip "needs root to start a process as another user"
  command -v setpriv >/dev/null || skip "no setpriv"
  id nobody >/dev/null 2>&1 || skip "no user nobody"
  setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups sleep 1000 3>&- &
  pid=$!
  echo "$pid" >"$T/pid.other"
  wait_until '[[ $(ps -o user= -p '"$pid"') == nobody && $(ps -o comm= -p '"$pid"') == sleep ]]'
  rlock acquire k --while-pid "$pid" >/dev/null
  run "$RLOCK" status k
  [[ $output == *"pid $pid user nobody: sleep 1000"* ]] || fail "$output"
  run "$RLOCK" status --json k
  [[ $output == *'"user":"nobody"'* ]]
  kill "$pid"
  _rlock_poll "k to be free" 10 is_free k
}

# --- the caller -------------------------------------------------------------------------------

@test "a caller that exits before its keeper is ready leaves nothing held, and no keeper behind" {
  for i in 1 2 3 4 5; do
    sh -c 'rlock acquire "kx'"$i"'" --while-pid $$ >/dev/null 2>&1 & exit 0'
  done
  for i in 1 2 3 4 5; do _rlock_poll "kx$i to be free" 10 is_free "kx$i"; done
  _rlock_poll "no keeper left" 10 eval '! pgrep -f "acquire kx[0-9] --while-pid" >/dev/null'
}

@test "standard output full: nothing is held and no keeper stays; standard error full: it works" {
  sleeper s
  run sh -c 'rlock acquire k --while-pid "$1" >/dev/full' sh "$SPID"
  [ "$status" -eq 70 ]
  _rlock_poll "k to be free" 10 is_free k
  _rlock_poll "no keeper left" 10 eval '! pgrep -f "acquire k --while-pid $SPID" >/dev/null'
  run sh -c 'rlock -v acquire k --while-pid "$1" 2>/dev/full' sh "$SPID"
  [ "$status" -eq 0 ]
  [ -n "$output" ]
  is_held k
  kill "$SPID"
  _rlock_poll "k to be free" 10 is_free k
}

# --- many, and the bounds -----------------------------------------------------------------------

@test "many keepers at once: each key is held while its PID lives and freed when it ends" {
  local -a pids=()
  for i in $(seq 1 16); do
    sleep 1000 3>&- &
    pids+=($!)
    echo "$!" >"$T/pid.s$i"
  done
  local -a acquires=()
  for i in $(seq 1 16); do
    rlock acquire --ttl 1s "m$i" --while-pid "${pids[$((i - 1))]}" >/dev/null &
    acquires+=($!)
  done
  for pid in "${acquires[@]}"; do wait "$pid" || fail "an acquire failed"; done
  sleep 1.5 # past the TTL: each is renewed by its keeper
  for i in $(seq 1 16); do is_held "m$i" || fail "m$i is free"; done
  kill "${pids[@]}"
  for i in $(seq 1 16); do _rlock_poll "m$i to be free" 10 is_free "m$i"; done
}

@test "scripts that each hold one key with --while-pid take turns, never two at once" {
  cat >"$T/turn.sh" <<'EOF2'
eval "$(rlock acquire k --wait 60s --while-pid $$ --export)" || exit 9
echo "in $$" >>"$T/order"
i=0
while [ $i -lt 4 ]; do sleep 0.05; i=$((i + 1)); done
echo "out $$" >>"$T/order"
EOF2
  for i in 1 2 3 4 5; do bg_start "turn$i" sh "$T/turn.sh"; done
  for pid in "${BG_PIDS[@]}"; do bg_wait "$pid" 60; [ "$BG_STATUS" -eq 0 ]; done
  [ "$(wc -l <"$T/order")" -eq 10 ]
  # in, out, in, out...: every "in" follows the previous holder's "out"
  run awk '{ if (($1 == "in") == held) exit 1; held = ($1 == "in") } END { exit held }' "$T/order"
  [ "$status" -eq 0 ] || fail "$(cat "$T/order")"
  _rlock_poll "k to be free" 10 is_free k
}

@test "--ttl at its bounds: 100ms is renewed or PID is told; 366d is freed soon after PID ends" {
  watched w
  rlock acquire k --ttl 100ms --while-pid "$WPID" >/dev/null
  sleep 1.5 # fifteen TTLs
  # renewed every 33ms; a busy machine may miss its 50ms margin, and then PID hears of it
  # (the keeper, late itself, may tell it a moment after the lease ran out: polled)
  _rlock_poll "k to be held, or PID told it is not" 10 eval 'is_held k || [ -e "$T/w.term" ]'
  sleeper s
  rlock acquire long --ttl 366d --while-pid "$SPID" >/dev/null
  kill "$SPID" "$WPID" 2>/dev/null || true
  _rlock_poll "k to be free" 10 is_free k
  _rlock_poll "long to be free" 10 is_free long
  run rlock acquire k --ttl 367d --while-pid "$$"
  [ "$status" -eq 64 ]
  run rlock acquire k --ttl 99ms --while-pid "$$"
  [ "$status" -eq 64 ]
  is_free k
}

@test "the keeper killed with -9 before it is ready: acquire says so (71) and the lease is released" {
  # every reply a second late: the keeper's subscription takes a second, time enough to kill it
  proxy_start_named SLOW "$REDIS_PORT" 127.0.0.1 1000
  sleeper s
  bg_start acq "$RLOCK" --url "$SLOW_URL" --command-timeout 10s acquire kd --while-pid "$SPID"
  acq=$BG_PID
  # the keeper: the acquire's child once the lease is granted
  wait_until '[[ -n $(pgrep -P '"$acq"' -f "acquire kd") ]]' 30
  kill -KILL "$(pgrep -P "$acq" -f "acquire kd")"
  bg_wait "$acq" 60
  [ "$BG_STATUS" -eq 71 ] || fail "status $BG_STATUS: $(cat "$T/acq.err")"
  grep -q "cannot start the keeper" "$T/acq.err"
  [ ! -s "$T/acq.out" ]
  _rlock_poll "kd to be free" 30 is_free kd
  redis_stop SLOW
}

@test "--and: the bare token releasing one key is a loss for PID; releasing every key is quiet" {
  watched w
  tok=$(rlock acquire --while-pid "$WPID" ka --and kb)
  env -u RLOCK_HELD rlock release ka --token "$tok"
  # kb alone is not the lock PID asked for: PID hears of it, and kb is given back
  _rlock_poll "SIGTERM to PID" 10 test -e "$T/w.term"
  _rlock_poll "kb to be free" 10 is_free kb
  watched v
  tok=$(rlock acquire --while-pid "$WPID" ka --and kb)
  env -u RLOCK_HELD rlock release ka --and kb --token "$tok"
  _rlock_poll "the keeper to end" 10 eval '! pgrep -f "acquire --while-pid $WPID ka" >/dev/null'
  [ ! -e "$T/v.term" ]
}

@test "too few file descriptors for the keeper's pipes: acquire says so (71) and nothing stays held" {
  # The sanitizers' runtime (the test command's second pass sets ASAN_OPTIONS) fails by
  # itself at these limits: it cannot open what it reads.
  [[ -z ${ASAN_OPTIONS:-} ]] || skip "the sanitizers' runtime needs more descriptors"
  sleeper s
  # Whatever the limit, a failed acquire leaves the key free and a granted one holds it; the
  # low limits make the keeper's pipes (or an earlier step) fail after the grant.
  local n saw71=0
  for n in 6 7 8 9 10 11 12 13; do
    run sh -c 'ulimit -n "$1" && exec rlock acquire "kf$1" --while-pid "$2"' sh "$n" "$SPID"
    if [ "$status" -eq 0 ]; then
      is_held "kf$n"
    else
      [[ $output == *rlock:* ]] || fail "limit $n: status $status without a message: $output"
      # no descriptor left to read /proc/PID says nothing about PID, which still runs
      [[ $output != *"process ended"* && $output != *"no such process"* ]] ||
        fail "limit $n: PID $SPID runs, but: $output"
      is_free "kf$n" || fail "limit $n: status $status, but kf$n is held: $output"
      [ "$status" -eq 71 ] && saw71=1
    fi
  done
  [ "$saw71" -eq 1 ] || fail "no limit made the keeper's start fail: the test did not test it"
  kill "$SPID"
}
