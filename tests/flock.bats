#!/usr/bin/env bats
# ctest-labels: fast
# flock(1)'s options mean in rlock what they mean in flock, side by side on the same
# scenario (flock on a file, rlock on a key, each held by a background holder):
# -w/--timeout bounds the wait (a bare number is seconds), -n/--nonblock does not wait,
# -s shares, -x/-e/--exclusive is the default, -o/--close releases when the command
# exits though what it left runs on. The limit for one Redis command is
# --command-timeout; --timeout given to a command that never waits names it. An
# unknown subcommand gets a "did you mean".
# Exit statuses: flock gives up with 1 (its -E default), rlock with 75.
# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell
# shellcheck disable=SC2154 # $stderr and $stderr_lines come from `run --separate-stderr`

bats_require_minimum_version 1.5.0

load helpers/redis

setup_file() {
  command -v flock >/dev/null || skip "flock(1) is not installed (util-linux)"
  redis_start
}

setup() {
  export T=$BATS_TEST_TMPDIR # -c strings read it from the environment
  F=$T/lockfile              # flock's lock
  write_gate "$T/gate"
}

# hold_both [FLOCK-OPT] [RLOCK-OPT]: a background holder of $F (flock) and one of key
# fl (rlock), each until $T/fh.go / $T/rh.go; returns once both hold.
hold_both() {
  bg_start fholder flock ${1:+"$1"} "$F" sh "$T/gate" "$T" fh
  rlock_bg rholder run ${2:+"$2"} fl -- sh "$T/gate" "$T" rh
  wait_for_file "$T/fh.started"
  wait_for_file "$T/rh.started"
}

# elapsed_since START_MS: milliseconds since START_MS.
elapsed_since() { echo $(($(now_ms) - $1)); }

# A usage error: exit 64, nothing on stdout, exactly one stderr line "rlock: …".
assert_usage_error() {
  assert_error 64
}

@test "-w 1 gives up after about a second in both: flock exits 1, rlock 75" {
  hold_both
  start=$(now_ms)
  run -1 flock -w 1 "$F" touch "$T/flock-ran"
  flock_ms=$(elapsed_since "$start")
  start=$(now_ms)
  run -75 "$RLOCK" -q run fl -w 1 -- touch "$T/rlock-ran"
  rlock_ms=$(elapsed_since "$start")
  # The promise: not before the second is up, and not much after it.
  for ms in "$flock_ms" "$rlock_ms"; do
    assert [ "$ms" -ge 950 ]
    assert [ "$ms" -lt "$(slack 4000)" ]
  done
  [[ ! -e $T/flock-ran && ! -e $T/rlock-ran ]] || fail "a command ran without the lock"
  touch "$T/fh.go" "$T/rh.go"
}

@test "--timeout is the wait wherever it is written, fractions of a second too; acquire takes it" {
  hold_both
  start=$(now_ms)
  run -1 flock --timeout 0.5 "$F" true
  assert [ "$(elapsed_since "$start")" -ge 450 ]
  start=$(now_ms)
  run -75 "$RLOCK" -q --timeout 0.5 run fl -- true
  assert [ "$(elapsed_since "$start")" -ge 450 ]
  assert [ "$(elapsed_since "$start")" -lt "$(slack 4000)" ]
  run -75 "$RLOCK" -q acquire fl --timeout 0.3
  run -75 "$RLOCK" -q acquire fl -w0.3
  touch "$T/fh.go" "$T/rh.go"
  bg_wait "$BG_PID"
  # Free: --timeout waits no longer than it must.
  run -0 "$RLOCK" run fl --timeout 5 -- true
}

@test "-n and --nonblock: not acquired at once, as flock -n (flock 1, rlock 75)" {
  hold_both
  for opt in -n --nonblock; do
    start=$(now_ms)
    run -1 flock "$opt" "$F" true
    run -75 "$RLOCK" -q run fl "$opt" -- true
    # at once: far less than any wait (the bound measures nothing finer)
    assert [ "$(elapsed_since "$start")" -lt "$(slack 3000)" ]
  done
  touch "$T/fh.go" "$T/rh.go"
}

@test "-s: shared holders together; -x, -e and --exclusive (the default) wait for them, as in flock" {
  hold_both -s -s
  run -0 flock -s -n "$F" true
  run -0 "$RLOCK" run -s -n fl -- true
  for opt in -x -e --exclusive; do
    run -1 flock "$opt" -n "$F" true
    run -75 "$RLOCK" -q run fl "$opt" -n -- true
  done
  run -75 "$RLOCK" -q acquire fl -x -n
  touch "$T/fh.go" "$T/rh.go"
}

@test "-o: the lock is released when CMD exits while the sleep it left runs on; without -o the sleep holds it" {
  # (the sleeps keep none of bats's descriptors, so `run` does not wait for them)
  leave='sleep 30 </dev/null >/dev/null 2>&1 3>&- & echo $! >"$T/$0.sleep"'
  # Without -o: flock's descriptor, inherited by the sleep, keeps the file locked, and
  # the sleep left in rlock's process group keeps the key held.
  run -0 flock "$F" sh -c "$leave" f
  rlock_bg holder -q run fl -- sh -c "$leave; echo \$\$ >\"\$T/shell\"" r
  wait_for_content "$T/shell"
  wait_until "_rlock_dead $(<"$T/shell")" # the command itself has exited
  run -1 flock -n "$F" true
  run -75 "$RLOCK" -q run fl -n -- true
  kill "$(<"$T/f.sleep")" "$(<"$T/r.sleep")"
  bg_wait "$BG_PID"
  # With -o: the command exits, the lock is free, the sleep still runs.
  run -0 flock -o "$F" sh -c "$leave" fo
  run -0 "$RLOCK" run fl -o -- sh -c "$leave" ro
  for s in fo ro; do _rlock_alive "$(<"$T/$s.sleep")" || fail "the $s sleep is gone"; done
  run -0 flock -n "$F" true
  run -0 "$RLOCK" run fl -n -- true
  run -0 "$RLOCK" run fl --close -n -- true
  kill "$(<"$T/fo.sleep")" "$(<"$T/ro.sleep")"
}

@test "-o: a nested run left behind is a hold, not a leftover: it keeps the lock until it ends" {
  run -0 "$RLOCK" run fl -o -c '
    "$RLOCK" run fl -- sh "$T/gate" "$T" inner </dev/null >/dev/null 2>&1 3>&- &
    echo $! >"$T/inner.pid"
    i=0
    while [ ! -e "$T/inner.started" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done'
  _rlock_alive "$(<"$T/inner.pid")" || fail "the nested run is gone"
  run -75 "$RLOCK" -q run fl -n -- true
  touch "$T/inner.go"
  wait_until "_rlock_dead $(<"$T/inner.pid")"
  run -0 "$RLOCK" run fl -n -- true
}

@test "--timeout given to a command that never waits is 64 naming --command-timeout" {
  for args in "status fl --timeout 3" "--timeout 3 status fl" "-w 3 list" \
    "release fl --token x -w 3" "history fl --timeout 1"; do
    # shellcheck disable=SC2086 # the words of $args
    rl $args
    assert_usage_error
    [[ $stderr == *"--command-timeout"* ]] || fail "rlock $args: $stderr"
  done
  # The limit for one Redis command is --command-timeout, before or after the subcommand.
  run -1 "$RLOCK" --command-timeout 3s status fl
  run -1 "$RLOCK" status fl --command-timeout 3
}

@test "contradictions are 64: -o with --kill-leftovers, -x with -s or --limit, --timeout with --wait or -n" {
  for args in "-o --kill-leftovers" "-x -s" "--exclusive --shared" "--timeout 3 --wait 3s" \
    "-w 3 -n" "-x --limit 2"; do
    # shellcheck disable=SC2086 # the words of $args
    rl run fl $args -- touch "$T/ran"
    assert_usage_error
  done
  [[ ! -e $T/ran ]] || fail "the command ran"
}

@test "an unknown subcommand gets a did-you-mean, as an unknown option does" {
  rl statsu fl
  assert_usage_error
  assert_equal "${stderr_lines[0]}" "rlock: unknown command 'statsu': did you mean status?"
  rl -q aquire fl
  assert_usage_error
  assert_equal "${stderr_lines[0]}" "rlock: unknown command 'aquire': did you mean acquire?"
  rl frobnicate fl
  assert_usage_error
  assert_equal "${stderr_lines[0]}" "rlock: unknown command 'frobnicate' (see rlock --help)"
}
