#!/usr/bin/env bats
# ctest-labels: fast
# Once per period (`run --done-for D`, docs/GUIDE.md "Cron: once per period"): after the command exits 0, KEY stays
# taken for D from the command's end and status shows it as done (by whom, when); every
# later run within D, and every waiter already in line when the success is recorded, is
# "not acquired" (75, -E applies) with a line that says it was already done; after a
# failure KEY is released at once so that another host may retry (--min-hold still
# applies); a lease lost during the run is never recorded as done.

# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell
load helpers/redis

bats_require_minimum_version 1.5.0

setup_file() { redis_start; }

setup() {
  T=$BATS_TEST_TMPDIR
  write_gate "$T/gate.sh"
}

@test "after a success, a later run within the period is not acquired and says who did it, and when" {
  run -0 "$RLOCK" run --done-for 1h report -- true
  run -75 "$RLOCK" run --done-for 1h report -- touch "$T/twice"
  assert [ ! -e "$T/twice" ]
  assert_output --regexp "'report' was already done for this period: done by .* pid [0-9]+ \[true\] at [0-9:]{8}Z, free again in (59m|1h)"
  # -E applies, -q silences it, and a run without --done-for is refused alike
  run -3 "$RLOCK" run -E 3 --done-for 1h report -- true
  run -75 "$RLOCK" run -q report -- true
  assert_output ""
  run -75 "$RLOCK" acquire -n report
  assert_output --partial "already done"
}

@test "status shows a done lock: done, when, by whom, until when; --json has done: true; exit 0" {
  run -0 "$RLOCK" run --done-for 10m st -- true
  run -0 "$RLOCK" status st
  assert_line --index 0 --regexp "^st: done \(fence [0-9]+\)"
  assert_output --regexp "done at [0-9:]{8}Z; taken until [0-9:]{8}Z \(--done-for\)"
  assert_output --partial "ran as"
  run -0 "$RLOCK" status st --json
  assert_output --partial '"done":true'
  assert_output --regexp '"done_at":"[0-9T:.-]+Z"'
  assert_output --partial '"exit_status":0'
  run -0 "$RLOCK" list st --json
  assert_output --partial '"done":true'
}

@test "a done lock whose key lost its expiry (PERSIST) says it stays until broken, never 'free again in 0ms'" {
  run -0 "$RLOCK" run --done-for 1h pdone -- true
  assert_equal "$(rcli persist 'lock:{pdone}')" 1
  run -75 "$RLOCK" run pdone -- true
  assert_output --regexp "'pdone' was already done for this period: done by .* \[true\] at [0-9:]{8}Z, no expiry: it stays done until broken \(rlock break\)$"
  run -75 "$RLOCK" acquire -n pdone
  assert_output --partial "no expiry: it stays done until broken"
  refute_output --partial "free again"
  run -0 "$RLOCK" status pdone
  assert_output --regexp "done at [0-9:]{8}Z; taken with no expiry: it stays until broken \(rlock break\)"
  refute_output --partial "taken until"
  run -0 "$RLOCK" status --json pdone
  assert_output --partial '"ttl_left_ms":-1'
  refute_output --partial '"kept_until"'
  run -0 "$RLOCK" list --prometheus pdone
  assert_line 'rlock_lease_left_seconds{key="pdone"} +Inf'
  refute_output --partial rlock_done_until_timestamp_seconds'{'
  run -0 "$RLOCK" break --yes pdone
  run -0 "$RLOCK" run pdone -- true
}

@test "after a failure the lock is free at once, so another host may retry" {
  run -7 "$RLOCK" run --done-for 1h retry -- sh -c 'exit 7'
  run -1 "$RLOCK" status retry
  run -0 "$RLOCK" run --done-for 1h retry -- true
  run -75 "$RLOCK" run --done-for 1h retry -- true
}

@test "a command killed by a signal is a failure too: not done" {
  run -137 "$RLOCK" run --done-for 1h sig -- sh -c 'kill -9 $$'
  run -0 "$RLOCK" run --done-for 1h sig -- true
}

@test "--min-hold still applies after a failure: kept, but not done" {
  run -1 "$RLOCK" run --min-hold 1h --done-for 1h mh -- false
  run -0 "$RLOCK" status mh
  assert_output --partial "kept by --min-hold"
  refute_output --partial "done at"
  run -75 "$RLOCK" run -n mh -- true
  refute_output --partial "already done"
}

@test "after a success with --min-hold longer than --done-for, the lock is done until the later end" {
  run -0 "$RLOCK" run --min-hold 2h --done-for 1m both -- true
  run -0 "$RLOCK" status both --json
  assert_output --partial '"done":true'
  ttl=$(rcli pttl 'lock:{both}')
  assert [ "$ttl" -gt 3600000 ]
}

@test "waiters already in line when the success is recorded are not acquired, at once" {
  bg_start a "$RLOCK" run --done-for 1h wl -- sh "$T/gate.sh" "$T" a
  a=$BG_PID
  wait_for_file "$T/a.started" 20
  bg_start b "$RLOCK" run --wait 120s --done-for 1h wl -- touch "$T/b.ran"
  b=$BG_PID
  wait_until '[ "$(n_waiters wl)" -eq 1 ]' 30
  bg_start c "$RLOCK" run --wait 120s wl -- touch "$T/c.ran"
  c=$BG_PID
  wait_until '[ "$(n_waiters wl)" -eq 2 ]' 30
  touch "$T/a.go"
  bg_wait "$a" 20
  assert_equal "$BG_STATUS" 0
  # woken by the success, not by their re-checks or --wait
  bg_wait "$b" 10
  assert_equal "$BG_STATUS" 75
  bg_wait "$c" 10
  assert_equal "$BG_STATUS" 75
  assert [ ! -e "$T/b.ran" ]
  assert [ ! -e "$T/c.ran" ]
  grep -q "already done" "$T/b.err"
  assert_equal "$(n_waiters wl)" 0
}

@test "after the period it runs again; within it, even a run that would wait is not acquired at once" {
  run -0 "$RLOCK" run --done-for 2s again -- true
  start=$(now_ms)
  run -75 "$RLOCK" run --wait 30s again -- true
  assert [ $(($(now_ms) - start)) -lt "$(slack 1500)" ]
  wait_until '"$RLOCK" run -n -q again -- true' "$(slack 10)"
}

@test "a lease lost during the run is never recorded as done" {
  bg_start l "$RLOCK" run --on-lost warn --done-for 1h lost -- sh "$T/gate.sh" "$T" l
  l=$BG_PID
  wait_for_file "$T/l.started" 20
  rcli del 'lock:{lost}' >/dev/null
  touch "$T/l.go"
  bg_wait "$l" 20
  assert_equal "$BG_STATUS" 0 # --on-lost warn passes the status through
  grep -q "lost the lock 'lost'" "$T/l.err"
  run -0 "$RLOCK" run -n --done-for 1h lost -- true
}

@test "--and: a key lost during the run marks no key done, not even those still held" {
  bg_start l "$RLOCK" run --on-lost warn --done-for 1h da --and db -- sh "$T/gate.sh" "$T" l
  l=$BG_PID
  wait_for_file "$T/l.started" 20
  rcli del 'lock:{db}' >/dev/null
  touch "$T/l.go"
  bg_wait "$l" 20
  assert_equal "$BG_STATUS" 0 # --on-lost warn passes the status through
  run -0 "$RLOCK" run -n da -- true
  run -0 "$RLOCK" run -n db -- true
}

@test "--done-for takes a duration of at least 1s" {
  run -64 "$RLOCK" run --done-for 0 bad -- true
  run -64 "$RLOCK" run --done-for 500ms bad -- true
  run -64 "$RLOCK" run --done-for soon bad -- true
  run -64 "$RLOCK" run --done-for 400d bad -- true
  run -64 "$RLOCK" acquire --done-for 1h bad
}

@test "the done mark survives a restart with the data, and goes with a restart without it" {
  run -0 "$RLOCK" run --done-for 1h rs -- true
  rcli save >/dev/null
  redis_restart
  run -75 "$RLOCK" run -n rs -- true
  assert_output --partial "already done"
  rm -f "$BATS_FILE_TMPDIR"/redis-*/dump.rdb
  redis_restart
  run -0 "$RLOCK" run -n rs -- true
}

@test "a nested run inside a done lease is not inside it: RLOCK_HELD copied from it takes the lock as usual" {
  env_file=$T/env
  run -0 "$RLOCK" run --done-for 1h nd -- sh -c 'printf %s "$RLOCK_HELD" >"$1"' sh "$env_file"
  RLOCK_HELD=$(<"$env_file") run -75 "$RLOCK" run -n nd -- true
  assert_output --partial "already done"
}
