#!/usr/bin/env bats
# ctest-labels: topology
# Redis Sentinel: the end of a hold confirms what its grant's start confirms (man page,
# EXIT STATUS and CHOOSING A TOPOLOGY: Sentinel). A release that a master the sentinels no
# longer name took is sent again to the master they name, whose answer decides: the hold
# survived there (released there too: 0), or a failover lost it (76, one line). A
# planned failover that stays half done (tests/helpers/topology.bash, slow_failover_setup):
# the sentinels name the promoted replica while the old master still takes writes.

bats_require_minimum_version 1.5.0

load helpers/redis
load helpers/topology

setup_file() {
  slow_failover_setup PL plannedL
  # The holders' sentinel user may only ask for the address: answers without an epoch and
  # no +switch-master watch, so a holder stays on the old master until its release (the
  # soak's short sections, which end before they hear of the failover).
  sentinel_address_only_user PLSENT1 PLSENT2 PLSENT3
}

setup() {
  T=$BATS_TEST_TMPDIR
  write_gate "$T/gate"
}

# holder NAME KEY [OPTIONS...]: a background run of KEY through the sentinels, gated.
holder() {
  local name=$1 key=$2
  shift 2
  RLOCK_SENTINEL_PASSWORD=pw rlock_bg "$name" -v --sentinel-user getaddr --url "$PL_URL1" \
    run "$@" "$key" -- sh "$T/gate" "$T" "$name"
}

# forget_on NODE KEY: every record of KEY gone from NODE: what a failover leaves on the
# promoted replica when the grant never reached it.
forget_on() {
  rcli_to "$1" eval "for _, k in ipairs(redis.call('keys', ARGV[1])) do redis.call('del', k) end" \
    0 "lock:{$2}*" >/dev/null
}

# The first test: the failover of the next one is not undone.
@test "no failover: the release is confirmed with the sentinels at the same time, 0" {
  RLOCK_SENTINEL_PASSWORD=pw run "$RLOCK" -v --sentinel-user getaddr --url "$PL_URL1" \
    run s-none -- true
  assert_success
  # One release script: the sentinels' answer came with it, nothing was sent again.
  assert_equal "$(grep -c 'releasing again' <<<"$output")" 0
  assert_equal "$(rcli_to PLMASTER exists 'lock:{s-none}')" 0
  ! grep -q 'could not confirm' <<<"$output" || fail "$output"
  # The release's tombstone outlives the longest confirmed release: two surveys and the
  # release sent again, each within --command-timeout (5s): 3 x 5s + 5s.
  tomb=$(rcli_to PLMASTER eval "local k = redis.call('keys', 'lock:{s-none}:r:*') return k[1] and redis.call('pttl', k[1]) or -3" 0)
  ((tomb > 15000 && tomb <= 20000)) || fail "tombstone PTTL $tomb"
}

@test "a failover during the hold: a hold the new master lost ends 76 (one line), one it kept is released there, 0" {
  holder lost s-lost
  lost=$BG_PID
  holder kept s-kept
  kept=$BG_PID
  holder warned s-warned --on-lost warn
  warned=$BG_PID
  # Held by hand (run without a command) until SIGTERM: the same at its release.
  RLOCK_SENTINEL_PASSWORD=pw rlock_bg hand -v --sentinel-user getaddr --url "$PL_URL1" run s-hand
  hand=$BG_PID
  wait_until "grep -q '^holding' '$T/hand.out'"
  wait_for_file "$T/lost.started"
  wait_for_file "$T/kept.started"
  wait_for_file "$T/warned.started"
  fence=$(rcli_to PLMASTER get 'lock:{s-lost}:fence')
  slow_failover_start PL plannedL
  # Every grant reached the promoted replica (slow_failover_start waits for that); the
  # grants of s-lost and s-warned did not, as far as it knows now.
  forget_on PLREPLICA s-lost
  forget_on PLREPLICA s-warned
  forget_on PLREPLICA s-hand
  touch "$T/lost.go" "$T/kept.go" "$T/warned.go"
  kill -TERM "$hand"
  bg_wait "$lost" 30
  assert_equal "$BG_STATUS" 76
  grep -q "lost the lock 's-lost': a failover lost this hold: the lock may have been held twice (fence $fence)$" \
    "$T/lost.err" || fail "$(cat "$T/lost.err")"
  assert_equal "$(grep -c "lost the lock" "$T/lost.err")" 1
  bg_wait "$kept" 30
  assert_equal "$BG_STATUS" 0
  ! grep -q 'lost the lock' "$T/kept.err" || fail "$(cat "$T/kept.err")"
  # Released on the master the sentinels name: free there at once, not after its TTL.
  assert_equal "$(rcli_to PLREPLICA exists 'lock:{s-kept}')" 0
  bg_wait "$warned" 30
  assert_equal "$BG_STATUS" 0
  grep -q "warning: lost the lock 's-warned': a failover lost this hold" "$T/warned.err" ||
    fail "$(cat "$T/warned.err")"
  bg_wait "$hand" 30
  assert_equal "$BG_STATUS" 76
  grep -q "lost the lock 's-hand': a failover lost this hold: the lock may have been held twice (fence [0-9]*)$" \
    "$T/hand.err" || fail "$(cat "$T/hand.err")"
  planned_window_open PL plannedL || fail "the failover ended too early: the window was not tested"
  redis_resume PLSLOW
}

@test "a sentinel that names an older master at the release (an older epoch) is not a failover: 0 with a warning, by run and by a hand hold" {
  redis_start_named STALEM
  redis_start_named STALER
  # One sentinel, whose answer the test rewrites: STALEM at epoch 5 for the grant.
  echo "127.0.0.1 $STALEM_PORT 5" >"$T/sentinel.cfg"
  python3 "$BATS_TEST_DIRNAME/helpers/fake_sentinel.py" "$T/sentinel.port" "$T/sentinel.cfg" 3>&- &
  fake=$!
  wait_for_content "$T/sentinel.port"
  rlock_bg old --url "redis-sentinel://127.0.0.1:$(cat "$T/sentinel.port")/stalemaster" \
    run s-older -- sh "$T/gate" "$T" old
  old=$BG_PID
  wait_for_file "$T/old.started"
  assert_equal "$(rcli_to STALEM exists 'lock:{s-older}')" 1
  # A hand hold (run without a command) beside it.
  rlock_bg hand --url "redis-sentinel://127.0.0.1:$(cat "$T/sentinel.port")/stalemaster" \
    run s-older-hand
  hand=$BG_PID
  wait_until "grep -q '^holding' '$T/hand.out'"
  # Then it names STALER from an older configuration (epoch 3): a sentinel that has not
  # heard of the last failover. Nothing moved, nothing was lost.
  echo "127.0.0.1 $STALER_PORT 3" >"$T/sentinel.cfg"
  touch "$T/old.go"
  kill -TERM "$hand"
  bg_wait "$old" 30
  old_status=$BG_STATUS
  bg_wait "$hand" 30
  kill "$fake"
  assert_equal "$old_status" 0
  ! grep -q 'lost the lock' "$T/old.err" || fail "$(cat "$T/old.err")"
  grep -q 'warning: could not confirm .*older configuration (epoch 3, not 5)' "$T/old.err" ||
    fail "$(cat "$T/old.err")"
  assert_equal "$(rcli_to STALEM exists 'lock:{s-older}')" 0
  assert_equal "$BG_STATUS" 0
  grep -q "warning: could not confirm .*'s-older-hand'.*older configuration" "$T/hand.err" ||
    fail "$(cat "$T/hand.err")"
  redis_stop STALEM
  redis_stop STALER
}

@test "one deadline for a release: a hanging sentinel or new master never makes it longer than --command-timeout" {
  redis_start_named DLM
  redis_start_named DLR
  echo "127.0.0.1 $DLM_PORT 5" >"$T/sentinel.cfg"
  python3 "$BATS_TEST_DIRNAME/helpers/fake_sentinel.py" "$T/sentinel.port" "$T/sentinel.cfg" 3>&- &
  fake=$!
  wait_for_content "$T/sentinel.port"
  local url="redis-sentinel://127.0.0.1:$(cat "$T/sentinel.port")/dlmaster" t took
  for t in sentinel master; do
    rlock_bg "$t" --command-timeout 2s --url "$url" run "s-deadline-$t" -- sh "$T/gate" "$T" "$t"
    local pid=$BG_PID
    wait_for_file "$T/$t.started"
    if [[ $t == sentinel ]]; then
      kill -STOP "$fake" # the only sentinel hangs
    else
      # A failover to DLR (a newer epoch), whose writes hang; the old master's release
      # answers only after 1.5 s: the release sent again to DLR had a window of its own.
      echo "127.0.0.1 $DLR_PORT 6" >"$T/sentinel.cfg"
      rcli_to DLR client pause 20000 write >/dev/null
      rcli_to DLM client pause 1500 write >/dev/null
    fi
    local start
    start=$(now_ms)
    touch "$T/$t.go"
    bg_wait "$pid" 30
    took=$(($(now_ms) - start))
    kill -CONT "$fake"
    [[ $t == master ]] && rcli_to DLR client unpause >/dev/null
    assert_equal "$BG_STATUS" 0
    # The master case has two honest endings. The release goes to the old master, and the
    # new one is asked after its answer ("could not confirm"); but a holder whose command
    # ran long enough for the sentinel watch to start (a loaded runner's 200 ms) hears of
    # the failover from the watch's poll (every second) while the old master is paused: that
    # release moves to the new master, which hangs ("could not release ... expires by
    # itself"). Either way within the one deadline, below.
    if [[ $t == master ]]; then
      grep -Eq "warning: could not confirm|could not release 's-deadline-master': .*expires by itself" \
        "$T/$t.err" || fail "$(cat "$T/$t.err")"
    else
      grep -q 'warning: could not confirm' "$T/$t.err" || fail "$(cat "$T/$t.err")"
    fi
    # A promise, not scaled: the 2 s window and room for rlock to start and end.
    ((took < 3000)) || fail "$t: the release took ${took}ms"
  done
  kill "$fake"
  redis_stop DLM
  redis_stop DLR
}

@test "acquire --while-pid: the keeper passes a failover's loss to the owner's release, 76 (one line)" {
  [ -d /proc/self ] || skip "no /proc"
  redis_start_named KPM
  redis_start_named KPR
  echo "127.0.0.1 $KPM_PORT 5" >"$T/sentinel.cfg"
  python3 "$BATS_TEST_DIRNAME/helpers/fake_sentinel.py" "$T/sentinel.port" "$T/sentinel.cfg" 3>&- &
  fake=$!
  wait_for_file "$T/sentinel.port"
  rlock_on_path "$T"
  # The keeper stopped until its owner's release has found the hold on the old master and
  # signalled it; then the failover: a master (a newer epoch) the grant never reached. The
  # keeper's release goes to the old master, then again to the one the sentinels name,
  # which lacks it. The verdict's private directory under the test's own: XDG_RUNTIME_DIR.
  cat >"$T/script.sh" <<'EOF2'
trap 'echo got-term; exit 143' TERM
usr1_pending() {
  p=$(sed -n 's/^ShdPnd:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null)
  [ -n "$p" ] && [ $((0x$p & 512)) -ne 0 ]
}
eval "$(rlock acquire s-keeper --ttl 60s --while-pid $$ --export)" || exit 9
echo "fence=$RLOCK_FENCE"
keeper=$(printf '%s\n' "$RLOCK_HELD" | sed -n 's/.*keeper=\([0-9]*\):.*/\1/p')
kill -STOP "$keeper"
rlock release s-keeper --token "$RLOCK_TOKEN" 2>"$T/release.err" &
rel=$!
i=0
while ! usr1_pending "$keeper" && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
echo "127.0.0.1 $KPR_PORT 6" >"$T/sentinel.cfg"
kill -CONT "$keeper"
wait "$rel"
echo "release=$?"
EOF2
  T=$T XDG_RUNTIME_DIR=$T KPR_PORT=$KPR_PORT \
    RLOCK_URL="redis-sentinel://127.0.0.1:$(cat "$T/sentinel.port")/kpmaster" \
    run timeout 30 sh "$T/script.sh"
  kill "$fake"
  fence=$(sed -n 's/^fence=//p' <<<"$output")
  [[ -n $fence ]] || fail "$output"
  grep -qx 'release=76' <<<"$output" || fail "$output / $(cat "$T/release.err")"
  [[ $output != *got-term* ]] || fail "$output"
  assert_equal "$(cat "$T/release.err")" "rlock: 's-keeper': a failover lost this hold: the lock may have been held twice (fence $fence) (the master the sentinels name does not hold it)"
  # Read and removed by the release.
  assert_equal "$(find "$T/rlock-$(id -u)" -type f | wc -l)" 0
  assert_equal "$(rcli_to KPM exists 'lock:{s-keeper}')" 0
  redis_stop KPM
  redis_stop KPR
}
