#!/usr/bin/env bats
# ctest-labels: faults slow
# rlock run's lease watchdog: renewal every TTL/3 keeps a short lease for as long as the
# child runs, survives SCRIPT FLUSH and a killed connection, and declares the lease lost
# (signalling the child per --on-lost, exit 76) when the key is gone or cannot be renewed
# before it expires. Every test uses the key "lk" and appends the child's RLOCK_FENCE to
# one file; the last test checks that the fences strictly increase across all of them.
#
# Every child loop has a cap (about a minute), and teardown kills whatever a test
# started, grandchildren included (bg_cleanup, tests/helpers/redis.bash): a test that
# fails midway leaves nothing running.

# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell
load helpers/redis

bats_require_minimum_version 1.5.0

setup_file() { redis_start; }

setup() {
  T=$BATS_TEST_TMPDIR
  export FENCES=$BATS_FILE_TMPDIR/fences
  # child.sh DIR [MODE=exit] [CODE=0]: records its fence and pid, and on SIGTERM the time
  # in ms (DIR/term); MODE exit: exits 0 on SIGTERM, MODE ignore: runs on. Ends with CODE
  # once DIR/done exists (or with 124 after about a minute). DIR/exited is written on any
  # exit but death by SIGKILL.
  cat >"$T/child.sh" <<'EOF'
dir=$1 mode=${2:-exit} code=${3:-0}
echo "$RLOCK_FENCE" >> "$FENCES"
echo $$ > "$dir/childpid"
trap 'echo exit >> "$dir/exited"' EXIT
trap 'date +%s%3N >> "$dir/term"; [ "$mode" = ignore ] || exit 0' TERM
touch "$dir/ready"
i=0
while [ ! -e "$dir/done" ]; do
  i=$((i + 1))
  [ "$i" -le 600 ] || exit 124
  sleep 0.1
done
exit "$code"
EOF
}

suite_teardown() {
  "$RLOCK" break --yes lk >/dev/null 2>&1 || true
}

# --- local helpers ----------------------------------------------------------------------

has_waiter() { "$RLOCK" status "$1" --json | grep -q '"waiters":\[{'; }

token_of() { rcli get "lock:{$1}"; }

# expiry_of KEY: wall-clock ms at which KEY expires (now + PTTL).
expiry_of() {
  local pttl
  pttl=$(rcli pttl "lock:{$1}")
  ((pttl > 0)) || {
    echo "lock:{$1} has no expiry (PTTL $pttl)" >&2
    return 1
  }
  echo $(($(now_ms) + pttl))
}

# held_for MS KEY TOKEN: for MS milliseconds, checks every 50ms that TOKEN holds KEY.
held_for() {
  local end=$(($(now_ms) + $1)) got
  while (($(now_ms) < end)); do
    got=$(token_of "$2")
    if [[ $got != "$3" ]]; then
      fail "lock:{$2} is '$got', expected the holder's token '$3'"
      return 1
    fi
    sleep 0.05
  done
}

cached_scripts() { rcli info memory | tr -d '\r' | sed -n 's/^number_of_cached_scripts://p'; }

# start_holder ARGS...: rlock run ARGS lk -- sh child.sh $T MODE CODE in the background
# (MODE and CODE from $MODE/$CODE); waits until the child is ready. Sets HOLDER.
start_holder() {
  bg_start holder "$RLOCK" run "$@" lk -- sh "$T/child.sh" "$T" "${MODE:-exit}" "${CODE:-0}"
  HOLDER=$BG_PID
  wait_for_file "$T/ready"
}

# --- the lease is kept ------------------------------------------------------------------

@test "the watchdog holds a 1s lease for 4s while contenders are refused every time" {
  start_holder --ttl 1s
  tok=$(token_of lk)
  assert [ -n "$tok" ]
  t0=$(now_ms)
  n=0
  # at least 4 contenders over at least 4s (four leases): on a slow machine one contender
  # may take most of a second, so the loop goes on until both are true
  while (($(now_ms) - t0 < 4000 || n < 4)); do
    run -75 "$RLOCK" acquire -n lk
    assert_equal "$(token_of lk)" "$tok"
    n=$((n + 1))
  done
  pttl=$(rcli pttl 'lock:{lk}')
  assert [ "$pttl" -le 1000 ] # still the 1s lease, renewed, not a longer one
  touch "$T/done"
  bg_wait "$HOLDER"
  assert_equal "$BG_STATUS" 0
  assert [ "$n" -ge 4 ]
  run -1 "$RLOCK" status lk
}

@test "the watchdog renews at a third of the TTL: a 2s lease never runs below two thirds of it" {
  start_holder --ttl 2s
  # PTTL every 50ms for 3s, from one redis-cli so that the samples are evenly spaced.
  # Renewing every TTL/3 (667ms) puts the lease back to 2000ms each time: PTTL stays above
  # 1333ms less a renewal's round trip. Renewing at 2/3 of the TTL would let it fall to
  # about 667ms twice in 3s. The threshold halfway, 1000ms, leaves a third of a second
  # for a slow (ASan) build on a busy machine.
  mapfile -t pttls < <(rcli -r 60 -i 0.05 pttl 'lock:{lk}')
  touch "$T/done"
  bg_wait "$HOLDER"
  assert_equal "$BG_STATUS" 0
  assert_equal "${#pttls[@]}" 60
  min=${pttls[0]} max=${pttls[0]}
  for p in "${pttls[@]}"; do
    [[ $p =~ ^-?[0-9]+$ ]] || fail "not a PTTL: '$p' (all: ${pttls[*]})"
    if ((p < min)); then min=$p; fi
    if ((p > max)); then max=$p; fi
  done
  echo "# PTTL of the 2s lease over 3s: from ${min}ms to ${max}ms" >&3
  [[ $min -ge 1000 ]] || fail "PTTL fell to ${min}ms (samples: ${pttls[*]})"
  assert [ "$max" -le 2000 ] # renewed by the TTL, never by more
}

@test "SCRIPT FLUSH during a run: renewals go on, the lease is kept, exit 0" {
  start_holder --ttl 1s
  tok=$(token_of lk)
  for _ in 1 2 3; do
    run -0 rcli script flush
    # the next renewal loads its script again (NOSCRIPT fallback)
    wait_until '(( $(cached_scripts) > 0 ))' 3
    held_for 400 lk "$tok"
  done
  held_for 1500 lk "$tok"
  touch "$T/done"
  bg_wait "$HOLDER"
  assert_equal "$BG_STATUS" 0
  refute [ -e "$T/term" ]
  run -1 "$RLOCK" status lk
}

@test "CLIENT KILL of rlock's connection during a run: it reconnects and keeps the lease" {
  start_holder --ttl 1s
  tok=$(token_of lk)
  for _ in 1 2 3; do
    # every normal client but the caller: rlock's connection
    killed=$(rcli client kill type normal)
    assert [ "$killed" -ge 1 ]
    held_for 700 lk "$tok"
  done
  held_for 1500 lk "$tok" # more than the TTL after the last kill
  touch "$T/done"
  bg_wait "$HOLDER"
  assert_equal "$BG_STATUS" 0
  refute [ -e "$T/term" ]
  run -1 "$RLOCK" status lk
}

@test "a CPU-bound child and CPU-bound neighbours do not starve the watchdog" {
  n=$(nproc 2>/dev/null || echo 2)
  for ((i = 0; i <= n; i++)); do
    bg_start "burn$i" timeout 8 sh -c 'while :; do :; done'
  done
  run "$RLOCK" run --ttl 1s lk -- sh -c '
    echo "$RLOCK_FENCE" >> "$FENCES"
    timeout 3 sh -c "while :; do :; done"
    exit 0'
  assert_equal "$status" 0
  refute_output --partial lost
  run -1 "$RLOCK" status lk
}

# --- the lease is lost ------------------------------------------------------------------

@test "key deleted behind its back: SIGTERM to the child, exit 76 within one renewal period" {
  start_holder --ttl 3s
  t0=$(now_ms)
  run -0 rcli del 'lock:{lk}'
  bg_wait "$HOLDER"
  t1=$(now_ms)
  assert_equal "$BG_STATUS" 76
  assert [ -e "$T/term" ]
  # renewal every 1s; the first renewal after the delete finds the token gone
  assert [ $((t1 - t0)) -lt 2500 ]
  run cat "$T/holder.err"
  assert_output --partial lost
  run -1 "$RLOCK" status lk
}

@test "--on-lost kill: the child's group is SIGKILLed, exit 76" {
  bg_start holder "$RLOCK" run --ttl 3s --on-lost kill lk -- sh -c '
    echo "$RLOCK_FENCE" >> "$FENCES"
    trap "echo TERM >> $1/term" TERM
    trap "echo exit >> $1/exited" EXIT
    sleep 300 & echo $! > "$1/sleeper"
    touch "$1/ready"
    i=0
    while [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done' x "$T"
  pid=$BG_PID
  wait_for_file "$T/ready"
  sleeper=$(cat "$T/sleeper")
  run -0 rcli del 'lock:{lk}'
  bg_wait "$pid"
  assert_equal "$BG_STATUS" 76
  wait_until "_rlock_dead $sleeper" 5 # the whole group
  refute [ -e "$T/term" ]             # no SIGTERM first
  refute [ -e "$T/exited" ]           # and no clean exit: SIGKILL
}

@test "--on-lost warn: the child runs on, its status passes through, a warning on stderr" {
  MODE=exit CODE=5 start_holder --ttl 3s --on-lost warn
  run -0 rcli del 'lock:{lk}'
  wait_until "grep -qi lost '$T/holder.err'" 5
  _rlock_alive "$HOLDER"
  _rlock_alive "$(cat "$T/childpid")"
  touch "$T/done"
  bg_wait "$HOLDER"
  assert_equal "$BG_STATUS" 5
  refute [ -e "$T/term" ]
  run cat "$T/holder.err"
  assert_output --partial warning
}

@test "a child that ignores SIGTERM is SIGKILLed after --kill-after" {
  MODE=ignore start_holder --ttl 3s --kill-after 1s
  run -0 rcli del 'lock:{lk}'
  wait_for_file "$T/term" 5
  t1=$(now_ms)
  bg_wait "$HOLDER"
  t2=$(now_ms)
  assert_equal "$BG_STATUS" 76
  refute [ -e "$T/exited" ] # killed, not exited
  assert [ $((t2 - t1)) -ge 800 ]
  assert [ $((t2 - t1)) -lt 4000 ]
}

@test "Redis paused longer than the TTL: the child is signalled before the key expires" {
  # default --command-timeout (5s) is longer than the lease: the renewal deadline must win
  start_holder --ttl 2s
  # pause right after a renewal, so that the expiry measured is the last one
  prev=$(expiry_of lk)
  give_up=$(($(now_ms) + 3000))
  while :; do
    e=$(expiry_of lk)
    ((e - prev > 300)) && break
    (($(now_ms) < give_up)) || fail "no renewal seen in 3s"
    prev=$e
  done
  redis_pause
  wait_for_content "$T/term" 10
  bg_wait "$HOLDER"
  redis_resume
  term=$(cat "$T/term")
  assert_equal "$BG_STATUS" 76
  # before the key expired, ...
  assert [ "$term" -lt "$e" ]
  # ... but not before the renewals had been retried for a while (margin is 400ms)
  assert [ "$term" -ge $((e - 1000)) ]
}

@test "holder killed with SIGKILL: its child dies, a waiter acquires after the TTL" {
  [[ $(uname -s) == Linux ]] || skip "the parent-death signal is Linux only"
  start_holder --ttl 2s
  child=$(cat "$T/childpid")
  bg_start waiter "$RLOCK" run --ttl 5s --wait 20s lk -- \
    sh -c 'date +%s%3N > "$1/acquired"; echo "$RLOCK_FENCE" >> "$FENCES"' x "$T"
  waiter=$BG_PID
  wait_until "has_waiter lk"
  kill -KILL "$HOLDER"
  e=$(expiry_of lk) # no renewal after the kill
  wait_until "_rlock_dead $child" 5
  bg_wait "$waiter"
  assert_equal "$BG_STATUS" 0
  acquired=$(cat "$T/acquired")
  assert [ "$acquired" -ge $((e - 50)) ]
  assert [ "$acquired" -lt $((e + 3000)) ]
  refute [ -e "$T/exited" ] # the holder's child was killed, it did not finish
}

@test "an acquire whose reply is lost to a timeout leaves no orphaned lock" {
  redis_pause
  run -69 "$RLOCK" acquire --ttl 30s lk --command-timeout 300ms
  redis_resume
  run -0 rcli ping
  run -1 "$RLOCK" status lk
  assert_equal "$(rcli exists 'lock:{lk}')" 0
  assert_only_fence_left lk
  run -0 "$RLOCK" run -n lk -- sh -c 'echo "$RLOCK_FENCE" >> "$FENCES"'
}

@test "a grant whose reply comes late is renewed before the command starts" {
  # The server is stopped before the request reaches it, and answers ~2.8s later: the
  # lease it grants runs from then, but rlock counts it from when it asked (3s TTL, renewal
  # deadline 2.4s): too little is left to renew it in time, so it is renewed first.
  redis_pause
  rlock_bg late -v --command-timeout 20s run --ttl 3s lk-late -- sh -c 'echo "$RLOCK_FENCE" >"$0/late.ran"' \
    "$T"
  late=$BG_PID
  sleep 2.8 # how late the reply is (the fault itself, not a wait for an event)
  redis_resume
  bg_wait "$late" 30
  assert_equal "$BG_STATUS" 0
  [[ -s $T/late.ran ]] || fail "the command did not run: $(cat "$T/late.err")"
  grep -q "'lk-late' was granted late" "$T/late.err" || fail "$(cat "$T/late.err")"
}

@test "a lease too short for the network's round trip: 69, the message names --ttl" {
  # every reply 300 ms late: a 500ms lease's grant comes with less than a third left, and its
  # renewal (bounded by half the lease, 250 ms) can never be answered in time
  proxy_start_named FAR "$REDIS_PORT" 127.0.0.1 300 || return 1
  run -69 --separate-stderr "$RLOCK" -u "$FAR_URL" run --ttl 500ms lk-far -- touch "$T/ran"
  [ ! -e "$T/ran" ]
  assert_equal "${#stderr_lines[@]}" 1
  [[ $stderr == *"the lease (--ttl 500ms) is too short for this network"* ]] || fail "$stderr"
  # a lease long enough for it works through the same proxy
  run -0 "$RLOCK" -u "$FAR_URL" run --ttl 5s lk-far -- true
  redis_stop FAR
}

@test "fencing numbers strictly increase across all runs and faults of this file" {
  for _ in 1 2 3; do
    run -0 "$RLOCK" run lk -- sh -c 'echo "$RLOCK_FENCE" >> "$FENCES"'
  done
  mapfile -t fences <"$FENCES"
  assert [ "${#fences[@]}" -ge 3 ]
  prev=0
  for f in "${fences[@]}"; do
    [[ $f =~ ^[0-9]+$ ]] || fail "not a fence: '$f' (all: ${fences[*]})"
    ((f > prev)) || fail "fence $f after $prev (all: ${fences[*]})"
    prev=$f
  done
}
