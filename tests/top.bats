#!/usr/bin/env bats
# ctest-labels: medium
# `rlock top` (the man page's "top"): the locks that need attention first and what just
# happened to them. -b (or stdout not a terminal): plain snapshots, as top -b; on a
# terminal: a full screen (driven here in tmux at 80x24 and 200x50) that gives the
# terminal back as it found it on every way out.

load helpers/redis

bats_require_minimum_version 1.5.0

setup_file() { redis_start; }

setup() {
  T=$BATS_TEST_TMPDIR
  write_gate "$T/gate.sh"
}

suite_teardown() {
  tmux_kill "${TMUX_SOCK:-}"
}

# hold NAME KEY [RLOCK RUN OPTIONS...]: a background run of KEY that holds it until
# the test touches $T/NAME.go; returns once its command started.
hold() {
  local name=$1 key=$2
  shift 2
  rlock_bg "$name" run "$@" "$key" -- sh "$T/gate.sh" "$T" "$name"
  wait_for_file "$T/$name.started"
}

@test "top -b: a snapshot of the held and waited-for locks, what needs attention first" {
  hold h1 tb-old --label 'ci job 1'
  hold h2 tb-waited --label 'deploy-for-the-job-number-4711-of-the-pipeline-x'
  rlock_bg w1 run --label waiter-1 --priority 5 tb-waited -- true
  wait_until '[[ $(n_waiters tb-waited) == 1 ]]'
  run -0 "$RLOCK" top -b --count 1 'tb-*'
  assert_line --index 0 --regexp '^rlock top  [0-9-]{10} [0-9:]{8}Z  redis://127\.0\.0\.1:[0-9]+/0  locks: 2 shown, 0 hidden  sort: attention$'
  assert_line --index 1 --regexp '^  KEY +SHAPE +HOLDER +HELD +LEFT +WAITING +OLDEST +FENCE$'
  # the waited-for lock first, its holder's label cut at the front (its end shows)
  assert_line --index 2 --regexp '^  tb-waited +exclusive +…[a-z0-9-]*pipeline-x +[0-9ms]+ +[0-9ms]+ +1 +[0-9ms]+ +1$'
  assert_line --index 3 --regexp '^  tb-old +exclusive +ci job 1 +[0-9ms]+ +[0-9ms]+ +0 +- +1$'
  assert_line --index 4 'LATEST EVENTS'
  assert_line --index 5 --regexp '^[0-9:]{8}Z  tb-(old|waited)  acquired +fence 1, '
  touch "$T/h1.go" "$T/h2.go"
}

@test "top -b: a foreign key without an expiry says so in LEFT, not '-' (no holder)" {
  rcli set 'lock:{tb-noexp}' tok >/dev/null
  run -0 "$RLOCK" top -b --count 1 'tb-noexp'
  assert_line --index 2 --regexp '^  tb-noexp +exclusive +\? +.* no expiry +0 +- +'
  rcli del 'lock:{tb-noexp}' >/dev/null
}

@test "top -b: a release shows among the latest events with its exit status" {
  rlock_bg h3 run tb-rel -- sh -c 'sh "$1" "$2" h3; exit 3' sh "$T/gate.sh" "$T"
  wait_for_file "$T/h3.started"
  bg_start top "$RLOCK" top -b --interval 200ms 'tb-rel'
  wait_until "grep -q '^  tb-rel ' '$T/top.out'"
  touch "$T/h3.go"
  wait_until "grep -qE '^[0-9:]{8}Z  tb-rel  released +fence 1, .*, exit 3$' '$T/top.out'"
  # the snapshot after it shows no row for the free lock
  wait_until "grep '^rlock top ' '$T/top.out' | tail -n 1 | grep -q ' locks: 0 shown, 0 hidden '"
}

@test "top -b: a lease that runs out without a release shows as expired at once, and only once" {
  "$RLOCK" acquire --ttl 1s --label short-lease tb-exp >/dev/null
  bg_start top "$RLOCK" top -b --interval 200ms 'tb-exp'
  wait_until "grep -q '^  tb-exp ' '$T/top.out'"
  # nothing touches the key after its lease: no script records the expiry, top sees it go
  wait_until "grep -qE '^[0-9:]{8}Z  tb-exp  expired +fence 1, short-lease' '$T/top.out'" 10
  # a script that touches the key now records the expiry in the history: not shown twice
  "$RLOCK" acquire --ttl 30s tb-exp >/dev/null
  wait_until "grep -qE '^[0-9:]{8}Z  tb-exp  acquired +fence 2' '$T/top.out'" 10
  kill -TERM "$BG_PID"
  bg_wait "$BG_PID" 10
  run -0 "$RLOCK" history tb-exp
  assert_output --partial expired
  last=$(awk '/^LATEST EVENTS/{n=NR} END{print n}' "$T/top.out")
  run -0 sh -c "tail -n +$last '$T/top.out' | grep -c ' tb-exp  expired '"
  assert_output 1
}

@test "top -b: more events between two refreshes than a status carries are all shown" {
  hold h1 tb-many --label first-holder
  bg_start top "$RLOCK" top -b --interval 1s 'tb-many'
  wait_until "grep -q '^  tb-many ' '$T/top.out'"
  # seven events before the next refresh, where a status carries the newest three
  touch "$T/h1.go"
  for i in 1 2 3; do "$RLOCK" run --wait 10s tb-many -- sh -c "exit 1$i" || true; done
  wait_until "grep -qE '^[0-9:]{8}Z  tb-many  released .*, exit 13$' '$T/top.out'"
  kill -TERM "$BG_PID"
  bg_wait "$BG_PID" 10
  run -0 grep -E '^[0-9:]{8}Z  tb-many  ' "$T/top.out"
  assert_line --regexp '  released +fence 1, first-holder'
  assert_line --regexp '  released .*, exit 11$'
  assert_line --regexp '  released .*, exit 12$'
}

@test "top off a terminal is top -b; a header says how many locks are hidden" {
  for i in $(seq 1 55); do
    "$RLOCK" acquire --ttl 1h "many-$i" >/dev/null
  done
  "$RLOCK" top --count 2 --interval 100ms 'many-*' | tee "$T/out" >/dev/null
  assert_equal "$(grep -c '^rlock top .* locks: 50 shown, 5 hidden' "$T/out")" 2
  assert_equal "$(grep -c '^  many-' "$T/out")" 100
}

@test "top: bad input is 64, an unreachable server 69, each one line" {
  run -64 "$RLOCK" top --interval 1ms
  assert_output 'rlock: --interval must be at least 100ms'
  run -64 "$RLOCK" top --count 0
  run -64 "$RLOCK" top --json
  run -64 "$RLOCK" top 'a{b'
  run -69 "$RLOCK" --url "redis://127.0.0.1:$(free_port)" top -b --count 1
  assert_equal "${#lines[@]}" 1
}

# --- on a terminal, in tmux ----------------------------------------------------------

# top_tmux COLS ROWS [TOP ARGS...]: rlock top in a detached tmux pane of COLS x ROWS
# (with the environment assignments in $TOP_ENV, if any),
# between two `stty -g` of its terminal (in $T/before and $T/after); its exit status
# goes to $T/exit.
top_tmux() {
  command -v tmux >/dev/null || skip "tmux is not installed (apt-get install tmux)"
  local cols=$1 rows=$2 cmd
  shift 2
  TMUX_SOCK="rlock-top-$$-$BATS_TEST_NUMBER"
  cmd=$(printf 'stty -g > %q; env RLOCK_URL=%q RLOCK_TEST_MARK=%q TERM=xterm %s %q top --interval 200ms' \
    "$T/before" "$RLOCK_URL" "$BATS_TEST_TMPDIR" "${TOP_ENV:-}" "$RLOCK")
  for a in "$@"; do cmd+=$(printf ' %q' "$a"); done
  cmd+=$(printf '; echo $? > %q; stty -g > %q; sleep 60' "$T/exit" "$T/after")
  unset TMUX
  tmux -L "$TMUX_SOCK" -f /dev/null new-session -d -s top -x "$cols" -y "$rows" "$cmd" \
    </dev/null >/dev/null 2>&1 3>&-
  wait_screen 'rlock top  '
}

# top_pid: the pid of the rlock top of this test (its environment has the test's mark).
top_pid() { _rlock_marked | head -n 1; }

screen_text() { tmux -L "$TMUX_SOCK" capture-pane -p -t top; }
# wait_screen REGEX: until the pane shows a line matching REGEX (extended).
wait_screen() { wait_until "screen_text | grep -qE -- $(printf %q "$1")"; }

# the terminal given back: top exited 0 and the terminal's settings are as before
assert_restored() {
  wait_for_content "$T/after"
  assert_equal "$(cat "$T/exit")" 0
  assert_equal "$(cat "$T/after")" "$(cat "$T/before")"
  # the alternate screen is left: the pane no longer shows top
  run screen_text
  refute_output --partial 'LATEST EVENTS'
}

@test "full screen at 80x24: a new holder and a waiter appear, a release shows, q restores the terminal" {
  top_tmux 80 24 'ts-*'
  wait_screen 'locks: 0 shown'
  hold h1 ts-one --label first-holder
  wait_screen '^[ >] ts-one +exclusive +first-holder '
  rlock_bg w1 run --label the-waiter ts-one -- true
  wait_screen '^[ >] ts-one +exclusive +first-holder +[0-9ms]+ +[0-9ms]+ +1 '
  touch "$T/h1.go"
  wait_screen '^[0-9:]{8}Z  ts-one  released +fence 1, first-holder'
  tmux -L "$TMUX_SOCK" send-keys -t top q
  assert_restored
}

@test "full screen at 200x50: Ctrl-C restores the terminal; a resize redraws" {
  top_tmux 200 50 'tw-*'
  hold h1 tw-wide --label "$(printf 'label-%.0s' {1..20})end"
  wait_screen '^[ >] tw-wide +exclusive +…[a-z-]*-end '
  # 200 columns: the header's line is whole
  wait_screen 'locks: 1 shown, 0 hidden  sort: attention$'
  # 50 rows: the events pane (10 lines) at the bottom, its title on line 39
  wait_until '[[ $(screen_text | sed -n 39p) == "LATEST EVENTS" ]]'
  tmux -L "$TMUX_SOCK" resize-window -t top -x 80 -y 24
  # redrawn for 24 rows: the pane (8 lines) and its title on line 15, every line within 80
  wait_until '[[ $(screen_text | sed -n 15p) == "LATEST EVENTS" ]]'
  assert [ "$(screen_text | LC_ALL=C.UTF-8 wc -L)" -le 80 ]
  run screen_text
  assert_line --index 0 --regexp '^rlock top .{60,71}$'
  tmux -L "$TMUX_SOCK" send-keys -t top C-c
  assert_restored
  touch "$T/h1.go"
}

@test "full screen: s cycles the sort, / filters, Enter shows a lock's holders, waiters and timeline" {
  top_tmux 100 30 'tk-*'
  hold h1 tk-a --label holder-a
  hold h2 tk-b --label holder-b
  rlock_bg w1 run --label waiter-b --priority 7 tk-b -- true
  wait_screen '^[ >] tk-b .* 1 +[0-9ms]+ +1$'
  tmux -L "$TMUX_SOCK" send-keys -t top s
  wait_screen 'sort: key$'
  tmux -L "$TMUX_SOCK" send-keys -t top / t k - a Enter
  wait_screen '^filter: tk-a$'
  wait_until '! screen_text | grep -q "^[ >] tk-b "'
  tmux -L "$TMUX_SOCK" send-keys -t top Escape / Escape
  wait_screen '^[ >] tk-b '
  tmux -L "$TMUX_SOCK" send-keys -t top Down Enter
  wait_screen '^tk-b  exclusive, fence 1, 1 holding, 1 waiting'
  wait_screen '^waiter +waiter-b +.* 7 '
  wait_screen '^holder-b +█+'
  tmux -L "$TMUX_SOCK" send-keys -t top Escape q
  assert_restored
  touch "$T/h1.go" "$T/h2.go"
}

@test "full screen: a Redis restart shows in the status line and top recovers" {
  top_tmux 80 24 'tr-*'
  hold h1 tr-one --label before-restart
  wait_screen '^[ >] tr-one '
  redis_kill
  wait_screen '^connection: '
  redis_restart
  "$RLOCK" acquire --ttl 1m --label after-restart tr-two >/dev/null
  wait_screen '^[ >] tr-two +exclusive +after-restart '
  wait_screen '^q quit'
  tmux -L "$TMUX_SOCK" send-keys -t top q
  assert_restored
  touch "$T/h1.go"
}

@test "full screen: a stalled server (SIGSTOP) is shown as waited for, keys work, q quits at once" {
  # a refresh would wait up to --command-timeout (60s here) for the stopped server
  top_tmux 100 30 --command-timeout 60s 'tp-*'
  hold h1 tp-one --label before-stall
  wait_screen '^[ >] tp-one '
  redis_pause
  wait_screen '^waiting for redis://127\.0\.0\.1:[0-9]+/0 \([0-9]+s\)…  q quit'
  # the last snapshot stays, and a key is still heard while the refresh waits
  tmux -L "$TMUX_SOCK" send-keys -t top s
  wait_screen 'sort: key$'
  screen_text | grep -qE '^[ >] tp-one '
  # Enter opens the detail without a read of its own (the refresh reads it when it ends),
  # so the keys after it are heard at once: Esc closes it, s sorts again, Enter opens it
  tmux -L "$TMUX_SOCK" send-keys -t top Enter Escape s Enter
  wait_screen 'sort: held$'
  wait_screen '^tp-one  exclusive, fence 1, 1 holding'
  tmux -L "$TMUX_SOCK" send-keys -t top Escape Enter Escape
  wait_screen '^[ >] tp-one '
  tmux -L "$TMUX_SOCK" send-keys -t top q
  wait_for_file "$T/after" 5
  assert_restored
  redis_resume
  touch "$T/h1.go"
}

@test "full screen: drawn at once while a stalled server holds the first refresh; keys work, the rows come when it answers" {
  "$RLOCK" acquire --ttl 1m --label early-holder tf-one >/dev/null
  redis_pause
  # before the screen, the first refresh would wait up to --command-timeout (60s here)
  top_tmux 100 30 --command-timeout 60s 'tf-*'
  wait_screen '^connecting to redis://127\.0\.0\.1:[0-9]+/0.*q quit'
  tmux -L "$TMUX_SOCK" send-keys -t top s
  wait_screen 'sort: key$'
  # a resize redraws meanwhile: the events pane's title moves from line 19 to line 15
  tmux -L "$TMUX_SOCK" resize-window -t top -x 80 -y 24
  wait_until '[[ $(screen_text | sed -n 15p) == "LATEST EVENTS" ]]'
  redis_resume
  wait_screen '^[ >] tf-one +exclusive +early-holder '
  wait_screen '^q quit  s sort'
  tmux -L "$TMUX_SOCK" send-keys -t top q
  assert_restored
}

@test "full screen: Ctrl-C while the first refresh waits for a stalled server quits at once" {
  redis_pause
  top_tmux 80 24 --command-timeout 60s 'tf-*'
  wait_screen '^connecting to redis://'
  tmux -L "$TMUX_SOCK" send-keys -t top C-c
  wait_for_file "$T/after" 5
  redis_resume
  assert_restored
}

@test "full screen: a terminal that goes away during a stalled refresh ends top at once" {
  command -v tmux >/dev/null || skip "tmux is not installed (apt-get install tmux)"
  TMUX_SOCK="rlock-top-$$-$BATS_TEST_NUMBER"
  unset TMUX
  # SIGHUP ignored (as under nohup): top learns of the closed window from its stdin only
  tmux -L "$TMUX_SOCK" -f /dev/null new-session -d -s top -x 80 -y 24 \
    "$(printf "trap '' HUP; env RLOCK_URL=%q RLOCK_TEST_MARK=%q TERM=xterm %q top --interval 200ms --command-timeout 60s 'th-*'; echo \$? > %q" \
      "$RLOCK_URL" "$BATS_TEST_TMPDIR" "$RLOCK" "$T/exit")" </dev/null >/dev/null 2>&1 3>&-
  wait_screen 'rlock top  '
  redis_pause
  wait_screen '^waiting for redis://'
  local pid gone=0
  pid=$(top_pid)
  tmux_kill "$TMUX_SOCK"
  # at once, not when the refresh gives up on the stopped server (--command-timeout 60s)
  _rlock_poll "top (pid $pid) to exit" 10 _rlock_dead "$pid" || gone=1
  redis_resume
  ((gone == 0))
  wait_for_content "$T/exit"
  assert_equal "$(cat "$T/exit")" 0
}

@test "full screen: SIGTERM gives back the terminal, also one of 4 rows" {
  # 4 rows: the header, the status line, the table's header, the filter line
  top_tmux 40 4 'tt-*'
  wait_screen '^  KEY +SHAPE'
  kill -TERM "$(top_pid)"
  assert_restored
}

@test "full screen: NO_COLOR draws without attributes; SIGHUP gives back the terminal" {
  TOP_ENV='NO_COLOR=1' top_tmux 80 24 'tc-*'
  wait_screen '^LATEST EVENTS'
  run tmux -L "$TMUX_SOCK" capture-pane -e -p -t top
  refute_output --partial $'\e[7m'
  kill -HUP "$(top_pid)"
  assert_restored
}

@test "full screen: --count N quits by itself after the N-th refresh, as top -n, and restores the terminal" {
  top_tmux 80 24 --count 10 'tn-*'
  # ten refreshes 200ms apart: about 2s (it shows first), then gone without a key
  assert_restored
}

@test "TERM=dumb on a terminal: plain snapshots, as -b" {
  command -v tmux >/dev/null || skip "tmux is not installed (apt-get install tmux)"
  TMUX_SOCK="rlock-top-$$-$BATS_TEST_NUMBER"
  unset TMUX
  tmux -L "$TMUX_SOCK" -f /dev/null new-session -d -s top -x 80 -y 24 \
    "$(printf 'env RLOCK_URL=%q TERM=dumb %q top --count 2 --interval 100ms; echo $? > %q; sleep 60' \
      "$RLOCK_URL" "$RLOCK" "$T/exit")" </dev/null >/dev/null 2>&1 3>&-
  wait_for_content "$T/exit"
  assert_equal "$(cat "$T/exit")" 0
  # the whole pane with its scrollback: a first snapshot with many rows (events left on
  # the server by other tests) may scroll the other off the visible 24 lines
  assert_equal "$(tmux -L "$TMUX_SOCK" capture-pane -p -S - -t top | grep -c '^LATEST EVENTS$')" 2
}
