#!/usr/bin/env bats
# ctest-labels: fast
# Holding by hand and watching the holder (the man page's HOLDING BY HAND; etcdctl's
# `lock NAME` and `elect -l`): `rlock run KEY` without a command holds KEY until SIGINT,
# SIGTERM or SIGHUP (exit 0; 76 when the lease is lost), printing one line with its
# fence; `rlock status KEY --follow` prints the holder now and one line per change.
#
# Every wait is for a line or a file, bounded (tests/helpers/redis.bash); teardown ends
# whatever a test started (bg_cleanup) and its tmux server (suite_teardown).

# shellcheck disable=SC2016 # single-quoted conditions are expanded by wait_until
load helpers/redis

bats_require_minimum_version 1.5.0

setup_file() { redis_start; }

setup() {
  T=$BATS_TEST_TMPDIR
  TMUX_SOCK=""
}

suite_teardown() {
  tmux_kill "${TMUX_SOCK:-}"
}

# pane: what the test's tmux pane shows now.
pane() { tmux -L "$TMUX_SOCK" capture-pane -p -t rl 2>/dev/null; }

# hold_bg NAME KEY [OPTIONS...]: `rlock run KEY OPTIONS` (no command) in the background,
# every signal at its default; returns once it printed that it holds.
hold_bg() {
  local name=$1
  shift
  rlock_bg "$name" run "$@"
  wait_until "grep -q '^holding ' '$T/$name.out'" 10
}

@test "run KEY without a command holds it on a terminal until Ctrl-C: the line, others refused, exit 0, free" {
  command -v tmux >/dev/null || skip "tmux is not installed (apt-get install tmux)"
  TMUX_SOCK="rlock-hold-$$-$BATS_TEST_NUMBER"
  local cmd
  # marked like a bg_start command, so that teardown finds it however the test ends
  cmd=$(printf 'env RLOCK_URL=%q RLOCK_TEST_MARK=%q %q run --ttl 3s hand-tty; echo $? > %q' \
    "$RLOCK_URL" "$T" "$RLOCK" "$T/exit")
  unset TMUX
  tmux -L "$TMUX_SOCK" -f /dev/null new-session -d -s rl -x 80 -y 24 "$cmd" \
    </dev/null >/dev/null 2>&1 3>&-
  wait_until 'pane | grep -q "^holding "' 10
  run -0 pane
  assert_line --regexp "^holding 'hand-tty' \(fence [0-9]+\); Ctrl-C or kill [0-9]+ releases it$"
  run -0 "$RLOCK" status hand-tty
  assert_output --partial 'rlock run (held by hand)'
  # held past its TTL: renewed
  wait_renewal REDIS 'lock:{hand-tty}'
  run -75 "$RLOCK" run -n hand-tty -- true
  tmux -L "$TMUX_SOCK" send-keys -t rl C-c
  wait_for_content "$T/exit"
  assert_equal "$(cat "$T/exit")" 0
  run -1 "$RLOCK" status hand-tty
}

@test "SIGTERM, SIGHUP, SIGQUIT and SIGALRM release a hand hold (exit 0); the line goes to stdout, with the fence" {
  local sig
  for sig in TERM HUP QUIT ALRM; do
    hold_bg "h$sig" "hand-$sig"
    run -0 cat "$T/h$sig.out"
    # not a terminal: no Ctrl-C in the line
    assert_output --regexp "^holding 'hand-$sig' \(fence [0-9]+\); kill $BG_PID releases it$"
    run -75 "$RLOCK" run -n "hand-$sig" -- true
    kill "-$sig" "$BG_PID"
    bg_wait "$BG_PID" 10
    assert_equal "$BG_STATUS" 0
    run -1 "$RLOCK" status "hand-$sig"
    assert_equal "$(rcli exists "lock:{hand-$sig}")" 0
  done
}

@test "a hand hold whose lease is lost exits 76 at once; with --on-lost warn it says so and waits for the signal" {
  hold_bg lost --ttl 1s hand-lost
  rcli del 'lock:{hand-lost}' >/dev/null
  bg_wait "$BG_PID" 10
  assert_equal "$BG_STATUS" 76
  run -0 cat "$T/lost.err"
  assert_output --partial "lost the lock 'hand-lost'"

  hold_bg warn --ttl 1s --on-lost warn hand-warn
  rcli del 'lock:{hand-warn}' >/dev/null
  wait_until "grep -q 'warning: lost the lock' '$T/warn.err'" 10
  _rlock_alive "$BG_PID"
  kill -TERM "$BG_PID"
  bg_wait "$BG_PID" 10
  assert_equal "$BG_STATUS" 0
}

@test "a hand hold waits in line as run does: -n is 75, a signal while waiting leaves the line (128+N)" {
  tok=$("$RLOCK" acquire --ttl 30s hand-wait)
  run -75 "$RLOCK" run -n hand-wait
  rlock_bg w run hand-wait --label by-hand
  wait_until '[ "$(n_waiters hand-wait)" = 1 ]' 10
  kill -TERM "$BG_PID"
  bg_wait "$BG_PID" 10
  assert_equal "$BG_STATUS" 143
  assert_equal "$(n_waiters hand-wait)" 0
  assert_equal "$(cat "$T/w.out")" ""
  # granted once the holder releases: then it holds
  rlock_bg w2 run hand-wait --label by-hand
  wait_until '[ "$(n_waiters hand-wait)" = 1 ]' 10
  "$RLOCK" release --token "$tok" hand-wait
  wait_until "grep -q '^holding ' '$T/w2.out'" 10
  run -0 "$RLOCK" status hand-wait --json
  assert_equal "$(jq -r '.holders[0].label' <<<"$output")" by-hand
}

@test "run KEY without a command: what needs a command is a usage error" {
  rl run hand-usage --
  assert_error 64
  [[ $stderr == *"needs a command after '--'"* ]]
  rl run hand-usage -c ''
  assert_error 64
  for opt in "--kill-after 1s" "--kill-leftovers" "--done-for 1m" "-o" "--close"; do
    # shellcheck disable=SC2086 # the option and its value
    rl run hand-usage $opt
    assert_error 64
    [[ $stderr == *" needs a command"* && $stderr == *"${opt%% *}"* ]] || fail "$opt: $stderr"
  done
  run -1 "$RLOCK" status hand-usage
}

@test "status --follow: the holder now, then one line per change (A, free, B), until SIGTERM (exit 0)" {
  bg_start f env --default-signal=TERM "$RLOCK" status hand-f --follow
  local f=$BG_PID
  wait_until "grep -c . '$T/f.out' | grep -qx 1" 10
  tok=$("$RLOCK" acquire --ttl 30s --label holder-a hand-f)
  wait_until "grep -c . '$T/f.out' | grep -qx 2" 10
  "$RLOCK" release --token "$tok" hand-f
  wait_until "grep -c . '$T/f.out' | grep -qx 3" 10
  tok=$("$RLOCK" acquire --ttl 30s --label holder-b hand-f)
  wait_until "grep -c . '$T/f.out' | grep -qx 4" 10
  kill -TERM "$f"
  bg_wait "$f" 10
  assert_equal "$BG_STATUS" 0
  run -0 cat "$T/f.out"
  assert_equal "${#lines[@]}" 4
  assert_line --index 0 --regexp '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}Z  hand-f: free \(last fence 0\)$'
  assert_line --index 1 --regexp '^[0-9-]{10} [0-9:]{8}Z  hand-f: held by .+ pid [0-9]+, label holder-a, fence 1$'
  assert_line --index 2 --regexp '^[0-9-]{10} [0-9:]{8}Z  hand-f: free \(last fence 1\)$'
  assert_line --index 3 --regexp '^[0-9-]{10} [0-9:]{8}Z  hand-f: held by .+ pid [0-9]+, label holder-b, fence 2$'
  "$RLOCK" release --token "$tok" hand-f
}

@test "status --follow --json: one typed object per line; an expiry (nothing published) is seen too" {
  bg_start f env --default-signal=INT "$RLOCK" status hand-j --follow --json
  local f=$BG_PID
  wait_until "grep -c . '$T/f.out' | grep -qx 1" 10
  # (a lease of a few readings: the acquisition publishes nothing, a reading every second sees it)
  "$RLOCK" acquire --ttl 4s --label short hand-j >/dev/null
  # held, then free once the lease ran out without a release
  wait_until "grep -c . '$T/f.out' | grep -qx 3" 10
  hold_bg h hand-j --label by-hand
  wait_until "grep -c . '$T/f.out' | grep -qx 4" 10
  kill -INT "$f"
  bg_wait "$f" 10
  assert_equal "$BG_STATUS" 0
  run -0 python3 "$BATS_TEST_DIRNAME/helpers/json_schema.py" validate change --lines "$T/f.out"
  run -0 jq -c '[.key, .held, .fence, (.holders | map(.label))]' "$T/f.out"
  assert_equal "${#lines[@]}" 4
  assert_equal "${lines[0]}" '["hand-j",false,0,[]]'
  assert_equal "${lines[1]}" '["hand-j",true,1,["short"]]'
  assert_equal "${lines[2]}" '["hand-j",false,1,[]]'
  assert_equal "${lines[3]}" '["hand-j",true,2,["by-hand"]]'
  run -0 jq -r '.holders[0] | [(.pid | type), (.fence | type), (.host | type)] | join(" ")' \
    <<<"$(sed -n 4p "$T/f.out")"
  assert_output "number number string"
}

@test "status --follow ends as soon as the reader of its pipe leaves (| head -1), on a key that never changes" {
  bg_start f sh -c '"$0" status hand-head --follow | head -1; echo ended' "$RLOCK"
  wait_until "grep -q ended '$T/f.out'" 10
  run -0 cat "$T/f.out"
  assert_line --index 0 --regexp 'Z  hand-head: free \(last fence 0\)$'
}

@test "inside a run that holds KEY there is nothing to hold by hand (64); RLOCK_HELD that Redis does not confirm is ignored" {
  rl run hand-nest -- "$RLOCK" run hand-nest
  assert_equal "$status" 64
  [[ $stderr == *"'hand-nest' is already held by an enclosing holder (pid "*"nothing to hold by hand"* ]] ||
    fail "$stderr"
  # an environment copied from a run that has ended: held by hand as usual
  held=$("$RLOCK" run hand-nest -- sh -c 'printf %s "$RLOCK_HELD"')
  [[ $held == *hand-nest* ]] || fail "RLOCK_HELD: $held"
  bg_start copied env --default-signal RLOCK_HELD="$held" "$RLOCK" -v run hand-nest
  wait_until "grep -q '^holding ' '$T/copied.out'" 10
  grep -q "RLOCK_HELD lists 'hand-nest', but" "$T/copied.err" || fail "$(cat "$T/copied.err")"
}

@test "status --follow rides out a server restart: a holder after it is shown" {
  bg_start f env --default-signal=TERM "$RLOCK" status hand-restart --follow
  local f=$BG_PID
  wait_until "grep -c . '$T/f.out' | grep -qx 1" 10
  redis_restart
  "$RLOCK" acquire --ttl 30s --label after-restart hand-restart >/dev/null
  wait_until "grep -q 'label after-restart' '$T/f.out'" "$(slack 20)"
  kill -TERM "$f"
  bg_wait "$f" 10
  assert_equal "$BG_STATUS" 0
}

@test "a hand hold in a named pool says which name it holds; a superseding hand hold is stopped by --cancel-in-progress and exits its --superseded-exit-code" {
  hold_bg hp hand-pool --limit db-a,db-b
  grep -q "^holding 'hand-pool' (fence 1, slot db-a)" "$T/hp.out" || fail "$(cat "$T/hp.out")"
  kill -TERM "$BG_PID"
  bg_wait "$BG_PID" 10
  hold_bg hs hand-sup --supersede --superseded-exit-code 9
  local hs=$BG_PID
  run -0 "$RLOCK" run --wait 60s --supersede --cancel-in-progress hand-sup -- true
  bg_wait "$hs" 10
  assert_equal "$BG_STATUS" 9
  grep -q "superseded by .* (--cancel-in-progress)" "$T/hs.err" || fail "$(cat "$T/hs.err")"
}
