#!/usr/bin/env bats
# ctest-labels: slow
# Waiting for a taken lock: event-driven handoff on the waiter's release channel,
# --wait / -n / -E, cancelling with SIGTERM or SIGINT (nothing left behind in Redis), the
# "waiting for" and "acquired" lines off a terminal, first come first served.

# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell
load helpers/redis

bats_require_minimum_version 1.5.0

setup_file() { redis_start; }

setup() {
  T=$BATS_TEST_TMPDIR
  # holder.sh DIR: runs until DIR/done exists.
  cat >"$T/holder.sh" <<'EOF'
touch "$1/ready"
while [ ! -e "$1/done" ]; do sleep 0.05; done
EOF
}

# --- local helpers ----------------------------------------------------------------------

# waiters KEY: how many waiters status --json lists.
waiters() {
  "$RLOCK" status "$1" --json | sed 's/.*"waiters":\[//' | grep -o '"token"' | wc -l
}
has_waiters() { (($(waiters "$1") >= ${2:-1})); }

# waiter_tokens KEY: the waiters' tokens, in queue order.
waiter_tokens() {
  "$RLOCK" status "$1" --json | sed 's/.*"waiters":\[//' | grep -o '"token":"[0-9a-f]*"' |
    cut -d'"' -f4
}

token_of() { rcli get "lock:{$1}"; }

# nothing_left KEY: Redis has no key of KEY but the fence counter, and no release channel.
nothing_left() {
  assert_only_fence_left "$1"
  run -0 rcli --raw pubsub channels "lock:release:{$1}*"
  assert_output ""
}

# --- handoff ----------------------------------------------------------------------------

@test "a waiter acquires right after the holder exits, long before the holder's TTL" {
  bg_start holder "$RLOCK" run --ttl 30s hand -- sh "$T/holder.sh" "$T"
  holder=$BG_PID
  wait_for_file "$T/ready"
  bg_start waiter "$RLOCK" run --ttl 30s hand -- sh -c 'date +%s%3N > "$1/acquired"' x "$T"
  waiter=$BG_PID
  wait_until "has_waiters hand"
  t0=$(now_ms)
  touch "$T/done"
  bg_wait "$holder"
  bg_wait "$waiter"
  assert_equal "$BG_STATUS" 0
  acquired=$(cat "$T/acquired")
  assert [ $((acquired - t0)) -lt 2500 ]
  run -1 "$RLOCK" status hand
  nothing_left hand
}

@test "a waiter waits on its own list (BLPOP), subscribes to nothing, and status lists it" {
  tok=$("$RLOCK" acquire --ttl 30s chan)
  bg_start waiter "$RLOCK" run --ttl 30s chan -- true
  waiter=$BG_PID
  wait_until "has_waiters chan"
  wait_until "[[ \$(blocked_in_blpop) == 1 ]]"
  assert_equal "$(rcli --raw pubsub channels 'lock:release:{chan}*')" ""
  run -0 "$RLOCK" status chan
  assert_output --partial "waiter 1."
  run -0 "$RLOCK" release chan --token "$tok"
  bg_wait "$waiter"
  assert_equal "$BG_STATUS" 0
  nothing_left chan
}

# calls NAME CMD: how many CMD calls the server NAME has counted (INFO commandstats).
calls() {
  rcli_to "$1" info commandstats | tr -d '\r' | sed -n "s/^cmdstat_$2:calls=\([0-9]*\),.*/\1/p" |
    grep . || echo 0
}

@test "a contended acquisition costs the waiter four commands: the try that joins, BLPOP, the grant, the release" {
  redis_start_named FOUR
  "$RLOCK" --url "$FOUR_URL" run warm -- true # the scripts loaded: no NOSCRIPT counted
  tok=$("$RLOCK" --url "$FOUR_URL" acquire --ttl 30s four)
  rcli_to FOUR config resetstat >/dev/null
  bg_start waiter "$RLOCK" --url "$FOUR_URL" run --ttl 30s four -- true
  waiter=$BG_PID
  wait_until "[[ \$(blocked_in_blpop FOUR) == 1 ]]"
  "$RLOCK" --url "$FOUR_URL" release four --token "$tok"
  bg_wait "$waiter"
  assert_equal "$BG_STATUS" 0
  # The waiter's try, grant and release, and the holder's release: four scripts; one BLPOP;
  # no subscription (0.4.0: a try, SUBSCRIBE, a try after subscribing, the grant, the release).
  assert_equal "$(($(calls FOUR evalsha) + $(calls FOUR eval)))" 4
  assert_equal "$(calls FOUR blpop)" 1
  assert_equal "$(calls FOUR subscribe)" 0
  assert_equal "$(calls FOUR ssubscribe)" 0
  redis_stop FOUR
}

@test "a turn pushed before the waiter's BLPOP reaches the server is not missed" {
  # Everything the waiter says reaches Redis 300 ms late (and every reply comes back as
  # late): its BLPOP is still on its way when the release pushes the turn, which a channel
  # would have lost. Its head re-check comes 1 s after it joined, its BLPOP's reply about
  # 600 ms: a waiter that missed the turn would be granted by the re-check, unwoken.
  # The release must come while the BLPOP is on its way (the try's reply is one delay on
  # its way back): a machine so busy that the test saw the waiter in line only after its
  # BLPOP arrived tries again (a new key), up to five times. Under the sanitizers (slack 3)
  # the delay is 900 ms: checking the line and releasing took longer than 300 ms there,
  # three times in a row. BLPOP's answer (two delays after the try) still comes before the
  # head re-check, which is sent a second after the try's reply.
  proxy_start_named SLOWW "$REDIS_PORT" 127.0.0.1 "$(slack 300)"
  local attempt key
  for attempt in 1 2 3 4 5; do
    key=early$attempt
    tok=$("$RLOCK" acquire --ttl 30s "$key")
    bg_start waiter "$RLOCK" --url "$SLOWW_URL" -v run --ttl 30s "$key" -- true
    waiter=$BG_PID
    wait_until "has_waiters $key"
    if [[ $(blocked_in_blpop) != 0 ]]; then
      "$RLOCK" release "$key" --token "$tok"
      bg_wait "$waiter" "$(slack 20)"
      continue
    fi
    run -0 "$RLOCK" release "$key" --token "$tok"
    bg_wait "$waiter" "$(slack 20)"
    assert_equal "$BG_STATUS" 0
    # Woken by the turn it found on its list, not by a re-check.
    grep -q "woken (turn)" "$T/waiter.err" || fail "$(cat "$T/waiter.err")"
    nothing_left "$key"
    redis_stop SLOWW
    return
  done
  fail "in five tries the waiter's BLPOP had always reached Redis before the test saw it in line"
}

@test "a release wakes the next waiter with exactly one 'turn' on its own channel, well within its 1s re-check" {
  tok=$("$RLOCK" acquire --ttl 30s wake)
  bg_start waiter "$RLOCK" run --ttl 30s --wait 30s wake -- sh -c 'date +%s%3N > "$1/acquired"' x "$T"
  waiter=$BG_PID
  wait_until "has_waiters wake"
  wtok=$(waiter_tokens wake)
  # everything published for the lock: its own channel and every waiter's
  bg_start sub redis-cli -h 127.0.0.1 -p "$REDIS_PORT" psubscribe 'lock:release:{wake}*'
  wait_until "grep -q psubscribe '$T/sub.out'" 10
  # The head of the line also re-checks once a second, which would hide a release that
  # wakes nobody. Release within 150ms of one of those re-checks (each renews the waiter's
  # 6s place lease, so its PTTL is then >= 5850): without the wake-up the waiter would
  # start only at the next re-check, 850ms or more after t0, taken just before the PTTL
  # that showed the fresh place (a slow machine only makes re-checks later).
  fresh_place() {
    t0=$(now_ms)
    [ "$(rcli pttl "lock:{wake}:w:$wtok")" -ge 5850 ]
  }
  wait_until fresh_place 5
  run -0 "$RLOCK" release wake --token "$tok"
  bg_wait "$waiter"
  assert_equal "$BG_STATUS" 0
  elapsed=$(($(cat "$T/acquired") - t0))
  echo "# the waiter's command started ${elapsed}ms after the release began" >&3
  # A promise, not scaled: woken by the release, not by the re-check (>= 850ms).
  assert [ "$elapsed" -lt 800 ]
  # Messages reach a subscriber in the order they are published: once this marker is in,
  # so is everything the release (and the waiter's own release) published before it.
  rcli publish 'lock:release:{wake}:end' end >/dev/null
  wait_until "grep -qx end '$T/sub.out'" 10
  turns=$(grep -cx turn "$T/sub.out" || true)
  assert_equal "$turns" 1
  # and that one 'turn' went to the waiter's own channel, the only waiter channel used
  run -0 grep -x 'lock:release:{wake}:[0-9a-f]*' "$T/sub.out"
  assert_output "lock:release:{wake}:$wtok"
  nothing_left wake
}

@test "waiting is first come, first served" {
  tok=$("$RLOCK" acquire --ttl 30s fifo)
  for w in 1 2 3; do
    bg_start "w$w" "$RLOCK" run --ttl 30s fifo -- sh -c 'echo "$2" >> "$1/order"' x "$T" "$w"
    pids[w]=$BG_PID
    wait_until "has_waiters fifo $w"
  done
  run -0 "$RLOCK" release fifo --token "$tok"
  for w in 1 2 3; do
    bg_wait "${pids[w]}"
    assert_equal "$BG_STATUS" 0
  done
  assert_equal "$(cat "$T/order")" "1
2
3"
  nothing_left fifo
}

@test "acquire --wait is event-driven too: it wakes when the lock is released" {
  tok=$("$RLOCK" acquire --ttl 30s acq)
  bg_start waiter "$RLOCK" acquire --ttl 30s --wait 10s acq
  waiter=$BG_PID
  wait_until "has_waiters acq"
  wait_until "[[ \$(blocked_in_blpop) == 1 ]]"
  t0=$(now_ms)
  run -0 "$RLOCK" release acq --token "$tok"
  bg_wait "$waiter"
  t1=$(now_ms)
  assert_equal "$BG_STATUS" 0
  assert [ $((t1 - t0)) -lt 1500 ]
  newtok=$(cat "$T/waiter.out")
  assert_equal "$(token_of acq)" "$newtok"
  run -0 "$RLOCK" release acq --token "$newtok"
  nothing_left acq
}

# --- not acquired -----------------------------------------------------------------------

@test "--wait 500ms on a held key exits 75 after about that long" {
  tok=$("$RLOCK" acquire --ttl 30s tw)
  t0=$(now_ms)
  run -75 "$RLOCK" run --wait 500ms tw -- touch "$T/ran"
  t1=$(now_ms)
  assert [ $((t1 - t0)) -ge 450 ]
  assert [ $((t1 - t0)) -lt 3000 ]
  assert [ ! -e "$T/ran" ]
  assert_equal "$(token_of tw)" "$tok"
  assert_equal "$(waiters tw)" 0
  run -0 "$RLOCK" release tw --token "$tok"
  nothing_left tw
}

@test "-n on a held key exits 75 at once" {
  tok=$("$RLOCK" acquire --ttl 30s nw)
  t0=$(now_ms)
  run -75 "$RLOCK" run -n nw -- touch "$T/ran"
  t1=$(now_ms)
  assert [ $((t1 - t0)) -lt 1500 ]
  assert [ ! -e "$T/ran" ]
  run -75 "$RLOCK" acquire -n nw
  run -0 "$RLOCK" release nw --token "$tok"
}

@test "-E 9 with --wait exits 9 when the wait runs out" {
  tok=$("$RLOCK" acquire --ttl 30s ew)
  run -9 "$RLOCK" run -E 9 --wait 300ms ew -- touch "$T/ran"
  run -9 "$RLOCK" acquire -E 9 --wait 300ms ew
  assert [ ! -e "$T/ran" ]
  run -0 "$RLOCK" release ew --token "$tok"
}

# --- cancelled --------------------------------------------------------------------------

# cancel_wait SIGNAL STATUS: a waiter that gets SIGNAL exits STATUS, leaves the queue and
# takes nothing.
cancel_wait() {
  local sig=$1 want=$2 key="cancel$1" tok
  tok=$("$RLOCK" acquire --ttl 30s "$key")
  bg_start waiter env --default-signal=INT,QUIT "$RLOCK" run --ttl 30s "$key" -- touch "$T/ran"
  local waiter=$BG_PID
  wait_until "has_waiters $key"
  kill "-$sig" "$waiter"
  bg_wait "$waiter"
  assert_equal "$BG_STATUS" "$want"
  assert [ ! -e "$T/ran" ]
  assert_equal "$(waiters "$key")" 0
  assert_equal "$(token_of "$key")" "$tok"
  run -0 "$RLOCK" release "$key" --token "$tok"
  run -1 "$RLOCK" status "$key"
  nothing_left "$key"
}

@test "SIGTERM while waiting exits 143, leaves the queue and takes nothing" {
  cancel_wait TERM 143
}

@test "SIGINT while waiting exits 130, leaves the queue and takes nothing" {
  cancel_wait INT 130
}

@test "a waiter killed with SIGKILL leaves the queue when its short queue lease runs out" {
  tok=$("$RLOCK" acquire --ttl 60s dead)
  bg_start waiter "$RLOCK" run --ttl 30s dead -- touch "$T/ran"
  waiter=$BG_PID
  wait_until "has_waiters dead"
  kill -KILL "$waiter"
  wait_until "! has_waiters dead" 15
  # and the next waiter gets the lock at the release, not stuck behind the dead one
  bg_start next "$RLOCK" run --ttl 30s dead -- true
  next=$BG_PID
  wait_until "has_waiters dead"
  run -0 "$RLOCK" release dead --token "$tok"
  bg_wait "$next" 5
  assert_equal "$BG_STATUS" 0
  assert [ ! -e "$T/ran" ]
}

# --- what the waiter says ---------------------------------------------------------------

@test "off a terminal: one 'waiting for' line, then one 'acquired' line on stderr" {
  bg_start holder "$RLOCK" run --ttl 30s say -- sh "$T/holder.sh" "$T"
  holder=$BG_PID
  wait_for_file "$T/ready"
  bg_start waiter "$RLOCK" run --ttl 30s say -- echo child-output
  waiter=$BG_PID
  wait_until "has_waiters say"
  wait_until "grep -q 'waiting for' '$T/waiter.err'" 5
  touch "$T/done"
  bg_wait "$holder"
  bg_wait "$waiter"
  assert_equal "$BG_STATUS" 0
  assert_equal "$(cat "$T/waiter.out")" child-output
  run cat "$T/waiter.err"
  assert_equal "${#lines[@]}" 2
  assert_line --index 0 --regexp "^rlock: waiting for 'say', 1st in line; held by .*pid $holder"
  assert_line --index 1 --regexp "^rlock: acquired 'say' after "
}

@test "off a terminal, a waiter says it still waits every 30s (CI watchdogs see it alive); -q silences it" {
  tok=$("$RLOCK" acquire --ttl 60s alive)
  bg_start waiter "$RLOCK" run --wait 33s alive -- true
  waiter=$BG_PID
  bg_start quiet "$RLOCK" -q run --wait 33s alive -- true
  quiet=$BG_PID
  bg_wait "$waiter" 45
  assert_equal "$BG_STATUS" 75
  bg_wait "$quiet" 45
  assert_equal "$BG_STATUS" 75
  run cat "$T/waiter.err"
  assert_equal "${#lines[@]}" 3
  assert_line --index 0 --regexp "^rlock: waiting for 'alive', (1st|2nd) in line; held by .*, lease runs out in [0-9ms]+ unless renewed$"
  assert_line --index 1 --regexp "^rlock: still waiting for 'alive' after 30s, (1st|2nd) in line; held by .*, lease runs out in [0-9ms]+ unless renewed$"
  assert_line --index 2 --regexp "^rlock: gave up waiting for 'alive' after 33s"
  assert_equal "$(cat "$T/quiet.err")" ""
  "$RLOCK" release alive --token "$tok"
}

# fake_holder KEY HOST CMD: KEY held for 60s by a holder (pid 42, taken at 22:13:20Z) with
# the host and command of our choice, so that line lengths are known.
fake_holder() {
  rcli set "lock:{$1}" faketok px 60000 >/dev/null
  rcli hset "lock:{$1}:h:faketok" host "$2" pid 42 user ci cmd "$3" since 1700000000000 \
    fence 7 ttl 60000 >/dev/null
  rcli pexpire "lock:{$1}:h:faketok" 60000 >/dev/null
}

# live_lines COLS KEY: the waiting lines a 1.5s wait for KEY draws on a COLS-column
# terminal, one a line, in $T/lines.COLS (script(1) must be installed).
live_lines() {
  local out rc=0
  out=$(script -qec "stty cols $1; \"$RLOCK\" run --wait 1500ms $2 -- true" /dev/null) || rc=$?
  assert_equal "$rc" 75
  printf '%s' "$out" | tr '\r' '\n' | sed 's/\x1b\[K//g' | grep '^rlock: waiting' >"$T/lines.$1"
}

@test "on a terminal, the live line is redrawn in place and fits the terminal's width" {
  command -v script >/dev/null || skip "script(1) is not installed"
  fake_holder live ci-4 './deploy.sh --env production'
  for cols in 60 80 100 160; do
    live_lines "$cols" live
    assert [ "$(wc -l <"$T/lines.$cols")" -ge 2 ] # redrawn at least once a second
    while IFS= read -r l; do
      n=$(printf '%s' "$l" | wc -m)
      ((n < cols)) || fail "a line of $n columns on a $cols-column terminal: $l"
    done <"$T/lines.$cols"
    grep -q "^rlock: waiting [0-9]*s for 'live', 1st in line; held by ci-4 " "$T/lines.$cols" ||
      fail "$(cat "$T/lines.$cols")"
  done
}

@test "on a terminal, who holds the lock comes first: host and pid, then as much of the command as fits, then the time and the lease" {
  command -v script >/dev/null || skip "script(1) is not installed"
  fake_holder who ci-4 './deploy.sh --env production'
  for cols in 80 100 160; do live_lines "$cols" who; done
  held="^rlock: waiting [0-9]s for 'who', 1st in line; held by ci-4 pid 42"
  # 80 columns: the command, shortened; neither the time nor the lease.
  grep -q "$held \[\./deploy\.sh -*[a-z]*…\]$" "$T/lines.80" || fail "$(cat "$T/lines.80")"
  # 100: all of the command, still no time or lease.
  grep -q "$held \[\./deploy\.sh --env production\]$" "$T/lines.100" || fail "$(cat "$T/lines.100")"
  # 160: everything, the lease in words that say it is renewed (not when the lock frees).
  grep -q "$held \[\./deploy\.sh --env production\] since 22:13:20Z, lease runs out in [0-9]*s unless renewed$" \
    "$T/lines.160" || fail "$(cat "$T/lines.160")"
}

@test "on a terminal, a holder's label too long for 80 columns loses its middle, never the run's id" {
  command -v script >/dev/null || skip "script(1) is not installed"
  fake_holder lab ci-4 './deploy.sh'
  rcli hset 'lock:{lab}:h:faketok' label \
    https://github.com/acme/shop-with-a-long-name/actions/runs/4242424242 >/dev/null
  live_lines 80 lab
  while IFS= read -r l; do
    n=$(printf '%s' "$l" | wc -m)
    ((n < 80)) || fail "a line of $n columns on an 80-column terminal: $l"
  done <"$T/lines.80"
  grep -q "^rlock: waiting [0-9]s for 'lab', 1st in line; held by https://github[^ ]*…[^ ]*/4242424242$" \
    "$T/lines.80" || fail "$(cat "$T/lines.80")"
}

@test "-q silences the waiting and acquired lines" {
  tok=$("$RLOCK" acquire --ttl 30s quiet)
  bg_start waiter "$RLOCK" -q run --ttl 30s quiet -- echo child-output
  waiter=$BG_PID
  wait_until "has_waiters quiet"
  run -0 "$RLOCK" release quiet --token "$tok"
  bg_wait "$waiter"
  assert_equal "$BG_STATUS" 0
  assert_equal "$(cat "$T/waiter.out")" child-output
  assert_equal "$(cat "$T/waiter.err")" ""
}

# --- faults while waiting ---------------------------------------------------------------

@test "a waiter rides out a Redis restart and acquires the lock the restart freed" {
  tok=$("$RLOCK" acquire --ttl 30s rs)
  assert [ -n "$tok" ]
  bg_start waiter "$RLOCK" run --ttl 30s --wait 30s rs -- true
  waiter=$BG_PID
  wait_until "has_waiters rs"
  redis_kill
  # Redis stays down for 1s; the waiter (30s left to wait) keeps waiting meanwhile
  t0=$(now_ms)
  while (($(now_ms) - t0 < 1000)); do
    _rlock_alive "$waiter" ||
      fail "the waiter gave up while Redis was down: $(cat "$T/waiter.err")"
    sleep 0.05
  done
  redis_restart # no persistence: the lock is gone with the data
  bg_wait "$waiter" 15
  [[ $BG_STATUS == 0 ]] || fail "the waiter exited $BG_STATUS: $(cat "$T/waiter.err")"
  run -1 "$RLOCK" status rs
}

@test "off a terminal, a waiter says within seconds that Redis is unreachable and what it does, and when it is back; -q silences both" {
  tok=$("$RLOCK" acquire --ttl 30s down)
  declare -A pid
  bg_start forever "$RLOCK" run --ttl 30s down -- true
  pid[forever]=$BG_PID
  bg_start bounded "$RLOCK" run --ttl 30s --wait 30s down -- true
  pid[bounded]=$BG_PID
  bg_start quiet "$RLOCK" -q run --ttl 30s --wait 30s down -- true
  pid[quiet]=$BG_PID
  wait_until "has_waiters down 3"
  redis_kill
  t0=$(now_ms)
  wait_until "grep -q 'unreachable' '$T/forever.err' && grep -q 'unreachable' '$T/bounded.err'" 5
  took=$(($(now_ms) - t0))
  ((took < $(slack 5000))) || fail "told after ${took}ms"
  addr="127\.0\.0\.1:$REDIS_PORT"
  run cat "$T/forever.err"
  assert_equal "${#lines[@]}" 2
  assert_line --index 1 --regexp "^rlock: Redis unreachable while waiting for 'down' \(.*$addr.*\); reconnecting for up to [0-9]+s more$"
  run cat "$T/bounded.err"
  assert_equal "${#lines[@]}" 2
  assert_line --index 1 --regexp "^rlock: Redis unreachable while waiting for 'down' \(.*$addr.*\); reconnecting until --wait runs out in [0-9]+s$"
  redis_restart # no persistence: the lock is gone with the data
  for w in forever bounded quiet; do
    bg_wait "${pid[$w]}" 15
    [[ $BG_STATUS == 0 ]] || fail "$w exited $BG_STATUS: $(cat "$T/$w.err")"
  done
  for w in forever bounded; do
    run cat "$T/$w.err"
    assert_equal "${#lines[@]}" 4 # once unreachable, once back: not a line per retry
    assert_line --index 2 --regexp "^rlock: reconnected to Redis \(unreachable for [0-9]+s\)$"
    assert_line --index 3 --regexp "^rlock: acquired 'down' after "
  done
  assert_equal "$(cat "$T/quiet.err")" ""
}

@test "on a terminal, the live line says that Redis is unreachable instead of the holder's stale lease" {
  command -v script >/dev/null || skip "script(1) is not installed"
  tok=$("$RLOCK" acquire --ttl 30s ttydown)
  bg_start tty script -qec "stty cols 200; \"$RLOCK\" run --wait 30s ttydown -- true" /dev/null
  tty=$BG_PID
  wait_until "has_waiters ttydown"
  redis_kill
  wait_until "grep -q 'unreachable' '$T/tty.out'" 5
  tr '\r' '\n' <"$T/tty.out" | sed 's/\x1b\[K//g' | grep 'unreachable' | tail -1 >"$T/line"
  grep -qE "^rlock: waiting [0-9]+s for 'ttydown'; Redis unreachable, reconnecting until --wait runs out in [0-9]+s \(.*127\.0\.0\.1:$REDIS_PORT.*\)$" \
    "$T/line" || fail "$(cat "$T/line")"
  redis_restart
  bg_wait "$tty" 15
  assert_equal "$BG_STATUS" 0
}

@test "a waiter whose connections are cut reconnects and still gets the lock" {
  proxy_start "$REDIS_PORT"
  tok=$("$RLOCK" acquire --ttl 30s cut)
  bg_start waiter "$RLOCK" --url "$PROXY_URL" run --ttl 30s --wait 30s cut -- true
  waiter=$BG_PID
  wait_until "has_waiters cut"
  proxy_wait_active 1
  proxy_cut
  _rlock_alive "$waiter"
  wait_until "has_waiters cut" 5
  run -0 "$RLOCK" release cut --token "$tok"
  bg_wait "$waiter" 10
  [[ $BG_STATUS == 0 ]] || fail "the waiter exited $BG_STATUS: $(cat "$T/waiter.err")"
  nothing_left cut
  # A connection cut and at once restored is no outage worth a line.
  run grep -c 'unreachable\|reconnected' "$T/waiter.err"
  assert_output 0
}
