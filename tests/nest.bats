#!/usr/bin/env bats
# ctest-labels: slow
# A lock for a script's whole life, and nesting that never waits on itself (docs/GUIDE.md
# "Nesting"):
# - a nested `run` of a key the environment (RLOCK_HELD) says is held runs at once,
#   renews and releases nothing and passes the exit status; across keys (a, b, a) too;
# - RLOCK_HELD is checked against Redis: a forged one, one copied from a finished run, or
#   one whose lease --min-hold keeps after its run ended never skips the lock;
# - a nested release never frees the outer lock; a nested acquire prints the held token;
# - `acquire --while-pid PID`: a detached keeper renews while PID lives and releases soon
#   after it ends (also after kill -9); `$(…)` returns at once; the keeper keeps no
#   descriptor of the caller's; a lost lease signals PID alone; the keeper killed with -9
#   leaves the lease to expire; the owner's own release stops the keeper.
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

suite_teardown() {
  # keepers left by a failed test: their PID (a sleep of the test's) is killed by bats
  if [[ -f $T/sleeper ]]; then kill -KILL "$(cat "$T/sleeper")" 2>/dev/null || true; fi
  if [[ -f $T/keeper ]]; then kill -KILL "$(cat "$T/keeper")" 2>/dev/null || true; fi
}

is_free() { ! "$RLOCK" status "$1" >/dev/null 2>&1; }
is_held() { "$RLOCK" status "$1" >/dev/null 2>&1; }

# sleeper: a process to watch, in the background; sets SPID.
sleeper() {
  sleep 1000 &
  SPID=$!
  echo "$SPID" >"$T/sleeper"
}

# keeper_of TEXT: the keeper pid in an --export output.
keeper_of() { sed -n 's/.*keeper=\([0-9]*\).*/\1/p' <<<"$1" | head -1; }

# --- nesting ----------------------------------------------------------------------------------

@test "a nested run of the same key runs at once, inside the lock, and passes the exit status" {
  run timeout 20 rlock run --wait 3s nest -- rlock run --wait 3s nest -- \
    sh -c 'echo "inner $RLOCK_KEY $RLOCK_FENCE"; exit 7'
  [ "$status" -eq 7 ]
  [[ $output == *"inner nest 1"* ]]
  is_free nest
}

@test "the nested command sees the outer token and fence, and RLOCK_HELD names every held key" {
  run timeout 20 rlock run a -- sh -c 'echo "outer $RLOCK_TOKEN $RLOCK_FENCE"
    rlock run --wait 3s b -- rlock run --wait 3s a -- \
      sh -c "echo \"inner \$RLOCK_KEY \$RLOCK_TOKEN \$RLOCK_FENCE\"; printf \"%s\n\" \"\$RLOCK_HELD\" >\"$T/held\""'
  [ "$status" -eq 0 ]
  outer=$(sed -n 's/^outer //p' <<<"$output")
  inner=$(sed -n 's/^inner a //p' <<<"$output")
  [ -n "$outer" ]
  [ "$outer" = "$inner" ]
  [ "$(wc -l <"$T/held")" -eq 2 ]
  grep -q "	a	lock:	" "$T/held"
  grep -q "	b	lock:	" "$T/held"
  is_free a
  is_free b
}

@test "a nested run releases and renews nothing: the outer run still holds afterwards" {
  run timeout 20 rlock run k -- sh -c 'rlock run k -- true; rlock status k >/dev/null && echo still-held'
  [ "$status" -eq 0 ]
  [[ $output == *still-held* ]]
  is_free k
}

# --- nested holds (docs/GUIDE.md "Nesting") -------------------------------------------------

# job_script: $T/job.sh, a job that says it started (and its rlock's pid, its parent), then
# runs until $T/go exists.
job_script() {
  cat >"$T/job.sh" <<'EOF2'
echo "$PPID" >"$T/npid"
touch "$T/started"
while [ ! -e "$T/go" ] && [ -d "$T" ]; do sleep 0.05; done
EOF2
}

# nested_bg KEY [OPTS...]: the bash -c text of an outer command that starts a nested run of
# KEY in its own process group (set -m) and returns once the nested job has started.
nested_bg() {
  local key=$1
  shift
  echo "set -m; ( rlock run $* $key -- sh \"\$T/job.sh\"; echo \$? >\"\$T/nested.rc\" ) \
>/dev/null 2>\"\$T/nested.err\" & until [ -e \"\$T/started\" ]; do sleep 0.05; done"
}

@test "a nested run in its own process group holds the lock after the outer run exits; a stranger waits" {
  job_script
  run timeout 20 rlock run --ttl 3s k -- bash -c "$(nested_bg k)"
  [ "$status" -eq 0 ]
  # The outer run has exited, saying so; its nested run still holds k.
  [[ $output == *"'k' stays held by 1 nested run under this one"* ]]
  is_held k
  run rlock run -n k -- true
  [ "$status" -eq 75 ]
  touch "$T/go"
  wait_for_content "$T/nested.rc"
  [ "$(cat "$T/nested.rc")" = 0 ]
  [ ! -s "$T/nested.err" ]
  # The last nested hold to end released it (well before a TTL).
  _rlock_poll "k to be free" 2 is_free k
}

@test "a nested run under a --while-pid script holds the lock after the script exits" {
  job_script
  cat >"$T/script.sh" <<EOF2
eval "\$(rlock acquire --ttl 2s --while-pid \$\$ --export k)" || exit 9
echo "\$RLOCK_HELD"
$(nested_bg k)
EOF2
  run timeout 20 bash "$T/script.sh"
  [ "$status" -eq 0 ]
  keeper=$(keeper_of "$output")
  [ -n "$keeper" ]
  # The keeper saw the script end and gave its hold up: the nested run keeps k.
  _rlock_poll "the keeper to exit" 10 _rlock_dead "$keeper"
  is_held k
  run rlock run -n k -- true
  [ "$status" -eq 75 ]
  touch "$T/go"
  wait_for_content "$T/nested.rc"
  [ "$(cat "$T/nested.rc")" = 0 ]
  _rlock_poll "k to be free" 2 is_free k
}

@test "a nested run whose outer command exits at once runs inside the lock or not at all (0 or 75, never 76)" {
  # The outer run may end between the nested run's check of RLOCK_HELD and its join: then
  # the nested command does not run (75); when it runs, it holds (0). Never a lost lease.
  for i in $(seq 1 15); do
    "$RLOCK" run --ttl 5s nx -- bash -c 'set -m
      ( "$0" run nx -- touch "$1/ran.$2" 2>>"$1/err.$2"; echo $? >"$1/st.$2" ) </dev/null &' \
      "$RLOCK" "$T" "$i"
    wait_until "[ -s '$T/st.$i' ]" 20
    st=$(<"$T/st.$i")
    case $st in
      0) [ -e "$T/ran.$i" ] || fail "run $i: 0 without running" ;;
      75) [ ! -e "$T/ran.$i" ] || fail "run $i: 75 after running"
        grep -q 'ended before this nested run could join it' "$T/err.$i" ;;
      *) fail "run $i: exit $st: $(cat "$T/err.$i")" ;;
    esac
  done
}

@test "a nested run killed with -9 stops counting within its lease: the lock is freed" {
  job_script
  run timeout 20 rlock run --ttl 2s k -- bash -c "$(nested_bg k --ttl 2s)"
  [ "$status" -eq 0 ]
  is_held k
  kill -KILL "$(cat "$T/npid")"
  _rlock_poll "k to be free" 6 is_free k
}

@test "a nested run without --ttl takes the enclosing hold's: killed with -9, it keeps the lock no longer" {
  # It took the default 30 s: the outer run's --ttl 1s lock stayed blocked 30 s after
  # every holder had ended.
  job_script
  run timeout 20 rlock run --ttl 1s k -- bash -c "$(nested_bg k)"
  [ "$status" -eq 0 ]
  is_held k
  kill -KILL "$(cat "$T/npid")"
  start=$(now_ms)
  _rlock_poll "k to be free" 10 is_free k
  [ $(($(now_ms) - start)) -lt "$(slack 3000)" ]
  touch "$T/go"
}

@test "the outer run killed with -9: its nested run keeps the lock renewed, which then expires" {
  job_script
  rlock run --ttl 1s k -- bash -c "$(nested_bg k --ttl 1s); sleep 1000" 3>&- &
  outer=$!
  wait_for_file "$T/started"
  kill -KILL "$outer"
  # Past several of the outer run's TTLs, the nested run still holds it.
  sleep 2.5
  is_held k
  touch "$T/go"
  wait_for_content "$T/nested.rc"
  [ "$(cat "$T/nested.rc")" = 0 ]
  _rlock_poll "k to expire" 5 is_free k
}

@test "status and list show the nested holds of an outer run that has ended" {
  # They named the exited outer run's pid as the holder and said nothing of the nested run.
  job_script
  run timeout 20 rlock run --ttl 3s k -- bash -c "$(nested_bg k)"
  [ "$status" -eq 0 ]
  npid=$(cat "$T/npid")
  run -0 rlock status k
  [[ $output == *"its run ended at "*"; 1 nested run still holds it"* ]]
  [[ $output == *"  nested  "*" pid $npid, "*" left"* ]]
  run -0 rlock status --json k
  [ "$(jq '.nested' <<<"$output")" = 1 ]
  [ "$(jq '.holders[0].nested' <<<"$output")" = 1 ]
  [ "$(jq -r '.holders[0].ended' <<<"$output")" != null ]
  [ "$(jq '.holders[0].nested_holds[0].pid' <<<"$output")" = "$npid" ]
  [ "$(jq '.holders[0].nested_holds[0].ttl_left_ms > 0' <<<"$output")" = true ]
  run -0 rlock list
  [[ $(cut -f2 <<<"$output") == *":"*" +1 nested" ]]
  run -0 rlock list --json
  [ "$(jq '.[0].nested' <<<"$output")" = 1 ]
  touch "$T/go"
  wait_for_file "$T/nested.rc"
  _rlock_poll "k to be free" 2 is_free k
}

@test "status marks an outer holder killed with -9 as gone (on its own host) beside its nested run" {
  job_script
  rlock run --ttl 3s k -- bash -c "$(nested_bg k); sleep 1000" 3>&- &
  outer=$!
  wait_for_file "$T/started"
  run -0 rlock status --json k
  [ "$(jq '.holders[0].process_gone' <<<"$output")" = false ]
  kill -KILL "$outer"
  run -0 rlock status k
  [[ $output == *"its process (pid $outer) is gone; 1 nested run still holds it"* ]]
  run -0 rlock status --json k
  [ "$(jq '.holders[0].process_gone' <<<"$output")" = true ]
  [ "$(jq -r '.holders[0].ended' <<<"$output")" = null ]
  touch "$T/go"
  wait_for_file "$T/nested.rc"
}

@test "status never marks a running outer holder gone when /proc cannot be read (no descriptor left)" {
  [[ -z ${ASAN_OPTIONS:-} ]] || skip "the sanitizers' runtime needs more descriptors"
  job_script
  rlock run --ttl 3s k -- bash -c "$(nested_bg k); sleep 1000" 3>&- &
  outer=$!
  wait_for_file "$T/started"
  # At some limit status has its connection but no descriptor left to read /proc/PID:
  # unknown, never "gone".
  local n saw_unknown=0
  for n in 6 7 8 9 10 11 12; do
    run sh -c 'ulimit -n "$1" && exec rlock status --json k' sh "$n"
    [ "$status" -eq 0 ] || continue
    case $(jq '.holders[0].process_gone' <<<"$output") in
      false) ;;
      null) saw_unknown=1 ;;
      *) fail "limit $n: pid $outer runs, but: $output" ;;
    esac
    run sh -c 'ulimit -n "$1" && exec rlock status k' sh "$n"
    [[ $output != *"is gone"* ]] || fail "limit $n: pid $outer runs, but: $output"
  done
  [ "$saw_unknown" -eq 1 ] || fail "no limit left status without a descriptor for /proc"
  touch "$T/go"
  kill "$outer"
  wait_for_file "$T/nested.rc"
}

@test "an outer run stopped past its TTL while its nested run kept the lock carries on: 0, not 76" {
  # On SIGCONT it said "lost the lock" and exited 76 although its token held k all along.
  job_script
  rlock run --ttl 1s k -- bash -c "$(nested_bg k --ttl 1s); until [ -e \"\$T/go\" ]; do sleep 0.05; done" \
    3>&- 2>"$T/outer.err" &
  outer=$!
  wait_for_file "$T/started"
  kill -STOP "$outer"
  sleep 2.5 # the point: stopped past the outer run's lease (1s) and its deadline
  is_held k
  kill -CONT "$outer"
  touch "$T/go"
  st=0
  wait "$outer" || st=$?
  [ "$st" -eq 0 ] || fail "outer run: $st: $(cat "$T/outer.err")"
  ! grep -q "lost" "$T/outer.err"
  wait_for_content "$T/nested.rc"
  [ "$(cat "$T/nested.rc")" = 0 ]
  _rlock_poll "k to be free" 2 is_free k
}

@test "a nested run whose enclosing hold is broken has lost its lease: 76, one line" {
  job_script
  run timeout 20 rlock run --ttl 3s k -- bash -c "$(nested_bg k)"
  [ "$status" -eq 0 ]
  rlock break --yes k
  wait_for_content "$T/nested.rc"
  [ "$(cat "$T/nested.rc")" = 76 ]
  [ "$(wc -l <"$T/nested.err")" -eq 1 ]
  grep -q "lost the lock 'k'" "$T/nested.err"
  touch "$T/go"
}

@test "--and: a nested run of several keys holds each of them after the outer run exits" {
  job_script
  run timeout 20 rlock run --ttl 3s a1 --and b1 -- bash -c "$(nested_bg 'a1 --and b1')"
  [ "$status" -eq 0 ]
  is_held a1
  is_held b1
  touch "$T/go"
  wait_for_content "$T/nested.rc"
  [ "$(cat "$T/nested.rc")" = 0 ]
  _rlock_poll "a1 to be free" 2 is_free a1
  _rlock_poll "b1 to be free" 2 is_free b1
}

@test "a stop request to the outer run reaches its nested run in another process group" {
  job_script
  rlock run --ttl 3s k -- bash -c "$(nested_bg k); sleep 1000" 3>&- &
  outer=$!
  wait_for_file "$T/started"
  kill -TERM "$outer"
  # The nested run heard it too and passed it to its own command's group.
  wait_for_content "$T/nested.rc" 5
  [ "$(cat "$T/nested.rc")" = 143 ]
  _rlock_poll "k to be free" 5 is_free k
}

@test "a nested acquire outside the holder's process group is refused (64): it would run on unlocked" {
  # A nested acquire takes nothing: in a set -m job it outlived the outer run, which
  # released the lock while the job went on holding its token (a stranger ran).
  run timeout 20 rlock run --ttl 2s k -- bash -c '
    rlock acquire k >/dev/null; echo "inside=$?"
    eval "$(rlock acquire --while-pid $$ --export k)"; echo "inside-pid=$?"
    set -m
    ( rlock acquire --while-pid $BASHPID k >/dev/null; echo "job-pid=$?" ) &
    wait $!
    ( rlock acquire k >/dev/null; echo "job=$?" ) &
    wait $!'
  [ "$status" -eq 0 ]
  [[ $output == *"inside=0"* ]]
  [[ $output == *"inside-pid=0"* ]]
  [[ $output == *"job-pid=64"* ]]
  [[ $output == *"job=64"* ]]
  [[ $output == *"is outside its process group: a nested acquire takes nothing"* ]]
  is_free k
  # The holder's own command, which leads that group, is inside.
  run timeout 20 rlock run k -- rlock acquire k
  [ "$status" -eq 0 ]
}

@test "a forged RLOCK_HELD never skips the lock: a holder elsewhere keeps it" {
  rlock_bg holder run k -- sleep 30
  wait_until 'is_held k'
  forged=$(printf 'forged-token\tk\tlock:\t%s' "$RLOCK_URL")
  RLOCK_HELD=$forged run rlock run --no-wait k -- echo ran
  [ "$status" -eq 75 ]
  [[ $output != *ran* ]]
}

@test "an RLOCK_HELD copied from a finished run is not trusted: the lock is taken as usual" {
  rlock run k -- sh -c 'printf "%s" "$RLOCK_HELD" >"$T/held"'
  rlock_bg holder run k -- sleep 30
  wait_until 'is_held k'
  RLOCK_HELD=$(cat "$T/held") run rlock run --no-wait k -- echo ran
  [ "$status" -eq 75 ]
  bg_cleanup
  wait_until 'is_free k'
  # free: taken and released as usual
  RLOCK_HELD=$(cat "$T/held") run rlock run --no-wait k -- echo ran
  [ "$status" -eq 0 ]
  [[ $output == *ran* ]]
  is_free k
}

@test "an RLOCK_HELD copied from a finished run, used inside a new run of the key, is not that run's hold" {
  # The new holder is an ancestor of the nested run, so only the entry's token, which is
  # the finished run's, tells the two holds apart.
  rlock run k -- sh -c 'printf "%s" "$RLOCK_HELD" >"$T/held"'
  run timeout 20 rlock run k -- sh -c 'RLOCK_HELD=$(cat "$T/held") rlock run --no-wait k -- echo ran'
  [ "$status" -eq 75 ]
  [[ $output != *ran* ]]
  is_free k
}

@test "a live holder's own RLOCK_HELD, used by a process outside its tree, never skips the lock" {
  # The token is the holder's and still holds: only the holder's pid, which is no
  # ancestor of this process, says the entry is not this process's to use.
  rlock_bg holder run k -- sh -c 'printf "%s" "$RLOCK_HELD" >"$T/held.tmp"; mv "$T/held.tmp" "$T/held"; sleep 30'
  wait_for_content "$T/held"
  RLOCK_HELD=$(cat "$T/held") run rlock run --no-wait k -- echo ran
  [ "$status" -eq 75 ]
  [[ $output != *ran* ]]
  [[ $output == *"is held by"* ]]
}

@test "a lease kept by --min-hold after its run ended does not let a copied RLOCK_HELD in" {
  rlock run --min-hold 60s k -- sh -c 'printf "%s" "$RLOCK_HELD" >"$T/held"'
  is_held k
  RLOCK_HELD=$(cat "$T/held") run rlock run --no-wait k -- echo ran
  [ "$status" -eq 75 ]
  [[ $output != *ran* ]]
}

@test "a nested release does nothing; a nested acquire prints the token that holds" {
  run timeout 20 rlock run k -- sh -c '
    [ "$(rlock acquire k)" = "$RLOCK_TOKEN" ] && echo same-token
    rlock release k && echo released-ok
    rlock status k >/dev/null && echo still-held'
  [ "$status" -eq 0 ]
  [[ $output == *same-token* ]]
  [[ $output == *released-ok* ]]
  [[ $output == *still-held* ]]
  is_free k
}

# --- acquire --while-pid ----------------------------------------------------------------------

@test "acquire --while-pid returns at once under \$(...) and the lock is freed soon after PID ends" {
  sleeper
  run timeout 10 sh -c "rlock acquire --while-pid $SPID k"
  [ "$status" -eq 0 ]
  [ -n "$output" ]
  is_held k
  run "$RLOCK" status --json k
  [[ $output == *"\"pid\":$SPID"* ]]
  [[ $output == *"sleep 1000"* ]]
  # renewed past its TTL while PID lives
  kill -KILL "$SPID"
  start=$(now_ms)
  _rlock_poll "k to be free" 10 is_free k
  [ $(($(now_ms) - start)) -lt "$(slack 3000)" ]
}

@test "the keeper renews the lease while PID lives, past several TTLs" {
  sleeper
  tok=$(rlock acquire --ttl 1s --while-pid "$SPID" k)
  sleep 3.5 # more than three TTLs: only renewals keep it
  run "$RLOCK" status --json k
  [[ $output == *"$tok"* ]] || [[ $output == *'"held":true'* ]]
  is_held k
  kill "$SPID"
  _rlock_poll "k to be free" 10 is_free k
}

@test "eval of --export gives the script RLOCK_TOKEN, RLOCK_FENCE and RLOCK_HELD; nested run inside it runs at once" {
  cat >"$T/script.sh" <<'EOF2'
eval "$(rlock acquire --while-pid $$ --export k)" || exit 9
echo "token=$RLOCK_TOKEN fence=$RLOCK_FENCE"
rlock run --wait 2s k -- sh -c 'echo "inner $RLOCK_TOKEN"'
rlock status k >/dev/null && echo held-in-script
EOF2
  run timeout 20 sh "$T/script.sh"
  [ "$status" -eq 0 ]
  tok=$(sed -n 's/^token=\([^ ]*\) .*/\1/p' <<<"$output")
  [ -n "$tok" ]
  [[ $output == *"inner $tok"* ]]
  [[ $output == *held-in-script* ]]
  _rlock_poll "k to be free" 10 is_free k
}

@test "the script's own release stops its keeper, which does not signal the script" {
  cat >"$T/script.sh" <<'EOF2'
trap 'echo got-term; exit 143' TERM
eval "$(rlock acquire --ttl 1s --while-pid $$ --export k)" || exit 9
rlock release k || exit 8
rlock status k >/dev/null || echo freed
sleep 2 # past the next renewals: a keeper that took it for lost would SIGTERM us
echo done
EOF2
  run timeout 20 sh "$T/script.sh"
  [ "$status" -eq 0 ]
  [[ $output == *freed* ]]
  [[ $output == *done* ]]
  [[ $output != *got-term* ]]
}

@test "the keeper holds no descriptor of the caller and no terminal" {
  sleeper
  out=$(rlock acquire --while-pid "$SPID" --export k 9>"$T/nine")
  keeper=$(keeper_of "$out")
  [ -n "$keeper" ]
  echo "$keeper" >"$T/keeper"
  [ -d "/proc/$keeper" ] || skip "no /proc"
  # (a bare `! cmd` never fails a bats test unless it comes last)
  if [[ $(readlink "/proc/$keeper/fd/"*) == *"$T/nine"* ]]; then fail "the keeper holds $T/nine"; fi
  for fd in 0 1 2; do [ "$(readlink "/proc/$keeper/fd/$fd")" = /dev/null ]; done
  [ "$(ps -o tty= -p "$keeper" | tr -d ' ')" = "?" ]
  kill "$SPID"
  _rlock_poll "keeper to exit" 10 _rlock_dead "$keeper"
  is_free k
}

@test "a lock deleted behind the keeper's back: PID alone gets SIGTERM" {
  sh -c 'trap "touch \"$T/term\"; exit 0" TERM; while :; do sleep 0.05; done' &
  spid=$!
  echo "$spid" >"$T/sleeper"
  rlock acquire --ttl 1s --while-pid "$spid" k >/dev/null
  rcli del 'lock:{k}' >/dev/null
  _rlock_poll "SIGTERM to PID" 10 test -e "$T/term"
  _rlock_poll "PID to exit" 10 _rlock_dead "$spid"
}

@test "--on-lost warn: a lost lease signals nothing" {
  sh -c 'trap "touch \"$T/term\"; exit 0" TERM; while :; do sleep 0.05; done' &
  spid=$!
  echo "$spid" >"$T/sleeper"
  out=$(rlock acquire --ttl 1s --on-lost warn --while-pid "$spid" --export k)
  keeper=$(keeper_of "$out")
  rcli del 'lock:{k}' >/dev/null
  _rlock_poll "keeper to exit" 10 _rlock_dead "$keeper"
  [ ! -e "$T/term" ]
  kill "$spid"
}

@test "the keeper killed with -9: the lease expires by itself after its TTL" {
  sleeper
  out=$(rlock acquire --ttl 2s --while-pid "$SPID" --export k)
  keeper=$(keeper_of "$out")
  kill -KILL "$keeper"
  is_held k
  _rlock_poll "k to expire" 15 is_free k
}

@test "a server restart with its data: the keeper holds on" {
  sleeper
  rlock acquire --ttl 3s --while-pid "$SPID" k >/dev/null
  rcli save >/dev/null
  redis_restart
  sleep 4 # past the TTL: only a renewal after the restart keeps it
  is_held k
  kill "$SPID"
  _rlock_poll "k to be free" 10 is_free k
}

@test "a server restart without its data: the keeper finds the lease gone and PID gets SIGTERM" {
  sh -c 'trap "touch \"$T/term\"; exit 0" TERM; while :; do sleep 0.05; done' &
  spid=$!
  echo "$spid" >"$T/sleeper"
  rlock acquire --ttl 1s --while-pid "$spid" k >/dev/null
  rm -f "$BATS_FILE_TMPDIR"/redis-*/dump.rdb
  redis_restart
  _rlock_poll "SIGTERM to PID" 15 test -e "$T/term"
}

@test "--while-pid of a process that does not exist is 64; --on-lost without it is 64" {
  run rlock acquire --while-pid 999999999 k
  [ "$status" -eq 64 ]
  [[ $output == *"no such process"* ]]
  run rlock acquire --on-lost kill k
  [ "$status" -eq 64 ]
  run rlock acquire --export --json k
  [ "$status" -eq 64 ]
  is_free k
}

# --- other topologies -------------------------------------------------------------------------

@test "quorum mode: a nested run runs at once; --while-pid keeps and frees the lock" {
  masters_start Q 2
  export RLOCK_URL="$RLOCK_URL $Q_URLS"
  run timeout 30 rlock run --wait 3s qn -- rlock run --wait 3s qn -- sh -c 'echo "inner $RLOCK_KEY"'
  [ "$status" -eq 0 ]
  [[ $output == *"inner qn"* ]]
  # It has nowhere to record a nested hold: one outside the holder's group is refused.
  run timeout 30 rlock run --wait 3s qn -- bash -c 'set -m; rlock run -n qn -- echo "$0-ran" & wait $!' qn
  [ "$status" -eq 64 ]
  [[ $output == *"outside its process group and quorum mode has nowhere to record a nested hold"* ]]
  [[ $output != *qn-ran* ]]
  sleeper
  rlock acquire --ttl 2s --while-pid "$SPID" qn >/dev/null
  sleep 3 # past its TTL: renewed on the quorum
  is_held qn
  kill "$SPID"
  _rlock_poll "qn to be free" 10 is_free qn
}

@test "quorum mode: the owner's release with the bare token stops the keeper quietly; a break reaches PID" {
  # A keeper that hears the release on the first master renews at once; its renewal may
  # reach the other masters before the release does. The master that released the token
  # says so (its tombstone), and it is never granted the token again: without that, a slow
  # release let the regrants cascade over every master and undo the release (7 of 20
  # times in a loop on a loaded machine).
  masters_start QR 2
  export RLOCK_URL="$RLOCK_URL $QR_URLS"
  assert_keeper_release_and_break qn
}

# --- what the fault injection found -----------------------------------------------------------

@test "a plain acquire --export adds nothing to RLOCK_HELD: the script's own release frees the lock" {
  run timeout 20 sh -c 'eval "$(rlock acquire k --ttl 60s --export)" || exit 9
    printf "%s" "$RLOCK_HELD" >"$T/held"
    rlock release k || exit 8
    rlock status k >/dev/null || echo freed'
  [ "$status" -eq 0 ]
  [[ $output == *freed* ]]
  [ ! -s "$T/held" ]
}

@test "the owner's release from a subshell or \$(...) stops the keeper quietly" {
  cat >"$T/script.sh" <<'EOF2'
trap 'echo got-term; exit 143' TERM
eval "$(rlock acquire k --ttl 1s --while-pid $$ --export)" || exit 9
out=$( (rlock release k) ) || exit 8
rlock status k >/dev/null || echo freed
sleep 2
echo done
EOF2
  run timeout 20 sh "$T/script.sh"
  [ "$status" -eq 0 ]
  [[ $output == *freed* ]]
  [[ $output == *done* ]]
  [[ $output != *got-term* ]]
}

@test "a script the owner runs may take the lock again: its acquire and release do nothing" {
  printf '%s\n' 'eval "$(rlock acquire k --wait 2s --export)" || exit 7' \
    'rlock release k || exit 6' >"$T/inner.sh"
  cat >"$T/script.sh" <<'EOF2'
eval "$(rlock acquire k --while-pid $$ --export)" || exit 9
sh "$T/inner.sh" || exit $?
rlock status k >/dev/null && echo still-held
rlock release k
EOF2
  run timeout 20 sh "$T/script.sh"
  [ "$status" -eq 0 ]
  [[ $output == *still-held* ]]
  is_free k
}

@test "an operator's SIGTERM to the keeper gives the lock up, and PID hears of it as a loss" {
  sh -c 'trap "touch \"$T/term\"; exit 0" TERM; while :; do sleep 0.05; done' &
  spid=$!
  echo "$spid" >"$T/sleeper"
  out=$(rlock acquire k --while-pid "$spid" --export)
  keeper=$(keeper_of "$out")
  [ -n "$keeper" ]
  kill -TERM "$keeper"
  _rlock_poll "SIGTERM to PID" 10 test -e "$T/term"
  _rlock_poll "k to be free" 10 is_free k
}

# --- the second review ------------------------------------------------------------------------

@test "one server spelled two ways is one lock: a nested run under another spelling runs at once" {
  # shellcheck disable=SC2153 # exported by redis_start
  local tcp="redis://127.0.0.1:$REDIS_PORT" sock="unix://$REDIS_SOCK"
  run timeout 20 rlock -u "$tcp/0" run --wait 3s k -- \
    rlock -u "$tcp" run --wait 3s k -- rlock -u "$tcp/" run --wait 3s k -- echo inner-tcp
  [ "$status" -eq 0 ]
  [[ $output == *inner-tcp* ]]
  run timeout 20 rlock -u "$sock?db=0" run --wait 3s k -- rlock -u "$sock" run --wait 3s k -- \
    echo inner-unix
  [ "$status" -eq 0 ]
  [[ $output == *inner-unix* ]]
  # a quorum's masters in another order are the same deployment
  redis_start_named SPELL
  run timeout 20 rlock -u "$tcp/0" -u "$SPELL_URL" run --wait 3s q -- \
    rlock -u "$SPELL_URL" -u "$tcp" run --wait 3s q -- echo inner-quorum
  redis_stop SPELL
  [ "$status" -eq 0 ]
  [[ $output == *inner-quorum* ]]
  is_free k
}

@test "a nested acquire --while-pid of a process under the holder takes nothing and starts no keeper" {
  run timeout 20 rlock run k -- sh -c '
    out=$(rlock -v acquire k --while-pid $$ --export 2>"$T/err") || exit 9
    eval "$out"
    [ "$RLOCK_TOKEN" = "$(rlock status --json k | sed -n "s/.*\"token\":\"\([^\"]*\)\".*/\1/p")" ] &&
      echo same-token
    rlock release k && echo released-ok
    rlock status k >/dev/null && echo still-held'
  [ "$status" -eq 0 ]
  [[ $output == *same-token* ]]
  [[ $output == *released-ok* ]]
  [[ $output == *still-held* ]]
  grep -q "taking nothing and starting no keeper" "$T/err"
  is_free k
  [ -z "$(pgrep -f "acquire k --while-pid")" ]
}

@test "a nested acquire --while-pid of a process outside the holder is 64, with the reason" {
  sleeper
  run timeout 20 rlock run k -- rlock acquire k --while-pid "$SPID"
  [ "$status" -eq 64 ]
  [[ $output == *"does not run under it"* ]]
  is_free k
}

@test "another program's value where a holder's nested holds go does not break status or list" {
  tok=$("$RLOCK" acquire --ttl 30s nest-foreign)
  rcli SET "lock:{nest-foreign}:n:$tok" x >/dev/null
  run -0 "$RLOCK" status nest-foreign --json
  assert_equal "$(jq -c '[.held, .nested]' <<<"$output")" '[true,0]'
  run -0 "$RLOCK" list 'nest-foreign'
  assert_output --partial nest-foreign
  rcli DEL "lock:{nest-foreign}:n:$tok" >/dev/null
  "$RLOCK" release nest-foreign --token "$tok"
}

@test "a score another program wrote among a holder's nested holds (1e300, inf, a fraction) is not a script error" {
  local score
  for score in 1e300 inf frac; do
    tok=$("$RLOCK" acquire --ttl 30s nest-score)
    [[ $score == frac ]] && score="$(($(rcli TIME | head -1) * 1000 + 60000)).5"
    rcli ZADD "lock:{nest-score}:n:$tok" "$score" foreign >/dev/null
    # extend keeps the lease at least as long as the nested holds: a whole number of ms
    run -0 "$RLOCK" extend nest-score --token "$tok" --ttl 20s
    ttl=$(rcli PTTL 'lock:{nest-score}')
    ((ttl > 50000)) || fail "score $score: PTTL $ttl"
    # the release leaves the lock to the nested hold, marked as ended
    run -0 "$RLOCK" release nest-score --token "$tok"
    "$RLOCK" break nest-score --yes >/dev/null
  done
}
