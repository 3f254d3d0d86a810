#!/usr/bin/env bats
# ctest-labels: fast
# The test harness itself: private redis-servers, TLS, the garbage server and the fault
# proxy behave as the other suites rely on. No rlock binary is needed here.

load helpers/redis

setup_file() {
  redis_start
  tls_setup
}

teardown_file() {
  redis_stop_all
}

# Opens fd CONN to 127.0.0.1:$1 (bash /dev/tcp).
open_conn() {
  exec {CONN}<>"/dev/tcp/127.0.0.1/$1"
}

close_conn() {
  exec {CONN}>&-
}

# Reads one line (CR stripped) from CONN into LINE within TIMEOUT seconds.
read_line() {
  local timeout=$1
  IFS= read -r -t "$timeout" LINE <&"$CONN" || return
  LINE=${LINE%$'\r'}
}

@test "the suite's redis-server answers PING" {
  run rcli ping
  assert_success
  assert_output PONG
}

@test "the server on REDIS_PORT is the process the helper started" {
  run bash -c "redis-cli -p $REDIS_PORT info server | tr -d '\r'"
  assert_line "process_id:$REDIS_PID"
  assert_line "tcp_port:$REDIS_PORT"
}

@test "RLOCK_URL names the suite's server; the unix socket answers too" {
  assert_equal "$RLOCK_URL" "redis://127.0.0.1:$REDIS_PORT/0"
  assert [ -S "$REDIS_SOCK" ]
  run rcli_to REDIS ping
  assert_output PONG
}

@test "free_port gives a port nobody listens on" {
  port=$(free_port)
  assert [ "$port" -ge 20000 ]
  run bash -c "true <>/dev/tcp/127.0.0.1/$port"
  assert_failure
}

@test "the TLS server answers with the test CA and refuses the wrong one" {
  run tls_cli ping
  assert_success
  assert_output PONG
  run redis-cli --tls --cacert "$TLS_DIR/wrong-ca.crt" -h 127.0.0.1 -p "$TLS_PORT" ping
  refute_output PONG
}

@test "the TLS server accepts the test client certificate and refuses a foreign one" {
  run tls_cli --cert "$TLS_DIR/client.crt" --key "$TLS_DIR/client.key" ping
  assert_output PONG
  run tls_cli --cert "$TLS_DIR/wrong-client.crt" --key "$TLS_DIR/wrong-client.key" ping
  refute_output PONG
}

@test "the TLS server has no plain TCP port and is reachable by socket" {
  assert_equal "$TLS_URL" "rediss://127.0.0.1:$TLS_PORT/0"
  run rcli_to TLS ping
  assert_output PONG
  run bash -c "redis-cli --tls --insecure -p $TLS_PORT info server | tr -d '\r'"
  assert_line "process_id:$TLS_PID"
}

@test "a second named server runs beside the first and stops alone" {
  redis_start_named SECOND --requirepass s3cret
  assert [ "$SECOND_PORT" != "$REDIS_PORT" ]
  run rcli_to SECOND ping
  assert_output PONG
  run redis-cli -p "$SECOND_PORT" ping
  assert_output --partial NOAUTH
  pid=$SECOND_PID
  redis_stop SECOND
  assert [ -z "${SECOND_PORT:-}" ]
  assert [ ! -d "/proc/$pid" ] || [ "$(awk '{print $3}' "/proc/$pid/stat")" = Z ]
  run rcli ping
  assert_output PONG
}

@test "redis_restart: same port and dir, new pid, data gone" {
  rcli set harness:key 1
  old=$REDIS_PID
  redis_restart
  assert [ "$REDIS_PID" != "$old" ]
  run rcli get harness:key
  assert_output ""
  run bash -c "redis-cli -p $REDIS_PORT info server | tr -d '\r'"
  assert_line "process_id:$REDIS_PID"
}

@test "the restarted server's pid reaches the next test" {
  run bash -c "redis-cli -p $REDIS_PORT info server | tr -d '\r'"
  assert_line "process_id:$REDIS_PID"
}

@test "redis_pause silences the server, redis_resume brings it back" {
  redis_pause
  run timeout 1 redis-cli -p "$REDIS_PORT" ping
  refute_output PONG
  redis_resume
  run rcli ping
  assert_output PONG
}

@test "redis_recover restarts a killed server" {
  redis_kill
  run rcli ping
  refute_output PONG
  redis_recover
  run rcli ping
  assert_output PONG
}

@test "wait_for_file sees a file that a background job creates" {
  (exec 3>&- && touch "$BATS_TEST_TMPDIR/ready") &
  wait_for_file "$BATS_TEST_TMPDIR/ready" 5
}

@test "wait_until fails with the condition in the message" {
  run wait_until '[ -e /nonexistent/rlock ]' 0.2
  assert_failure
  assert_output --partial "timed out after 0.2s"
  assert_output --partial "/nonexistent/rlock"
}

@test "garbage_server garbage: answers with bytes that are not RESP" {
  garbage_start_named JUNK garbage
  open_conn "$JUNK_PORT"
  printf 'PING\r\n' >&"$CONN"
  read_line 5
  assert_equal "$LINE" $'HELLO?? \x01\x02'
  close_conn
  redis_stop JUNK
}

@test "garbage_server badtype: every command, pipelined or not, gets :42" {
  garbage_start_named BAD badtype
  open_conn "$BAD_PORT"
  # shellcheck disable=SC2016 # RESP, not shell
  printf '*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n' >&"$CONN"
  for _ in 1 2 3; do
    read_line 5
    assert_equal "$LINE" ":42"
  done
  close_conn
}

@test "garbage_server sentinel=: names HOST:PORT with an epoch, like a sentinel" {
  garbage_start_named FAKESENT "sentinel=127.0.0.1:6390:42"
  assert_equal "$(redis-cli -p "$FAKESENT_PORT" sentinel get-master-addr-by-name m | tr '\n' ' ')" \
    "127.0.0.1 6390 "
  run redis-cli -p "$FAKESENT_PORT" SENTINEL MASTER m
  assert_output $'ip\n127.0.0.1\nport\n6390\nconfig-epoch\n42'
  assert_equal "$(redis-cli -p "$FAKESENT_PORT" ping)" OK
}

@test "garbage_server close: the connection ends at once" {
  garbage_start_named CLOSER close
  open_conn "$CLOSER_PORT"
  printf 'PING\r\n' >&"$CONN" || true
  run read_line 5
  assert_failure
  close_conn
}

@test "garbage_server silent: reads but never answers" {
  garbage_start_named QUIET silent
  open_conn "$QUIET_PORT"
  printf 'PING\r\n' >&"$CONN"
  run read_line 0.3
  assert [ "$status" -gt 128 ] # read timed out, the connection is still open
  close_conn
}

@test "fault_proxy forwards PING to redis and PONG back" {
  proxy_start "$REDIS_PORT"
  run redis-cli -p "$PROXY_PORT" ping
  assert_output PONG
  assert_equal "$(proxy_state accepted)" 1
}

@test "fault_proxy cut closes live connections; new ones work" {
  open_conn "$PROXY_PORT"
  printf 'PING\r\n' >&"$CONN"
  read_line 5
  assert_equal "$LINE" "+PONG"
  proxy_wait_active 1
  proxy_cut
  run read_line 5
  assert_failure
  close_conn
  assert_equal "$(proxy_state cuts)" 1
  run redis-cli -p "$PROXY_PORT" ping
  assert_output PONG
}

@test "fault_proxy blackhole drops traffic both ways; heal resumes" {
  open_conn "$PROXY_PORT"
  proxy_wait_active 1
  proxy_partition
  assert_equal "$(proxy_state mode)" blackhole
  printf 'PING\r\n' >&"$CONN"
  # read and dropped before the heal (on a starved machine the heal could come first, and
  # the PING would then be new data, forwarded)
  wait_until '(( $(proxy_state dropped) >= 6 ))'
  run read_line 0.3
  assert [ "$status" -gt 128 ]
  proxy_heal
  printf 'ECHO hi\r\n' >&"$CONN"
  read_line 5
  assert_equal "$LINE" "\$2"
  read_line 5
  assert_equal "$LINE" hi
  close_conn
}

@test "fault_proxy takes a decimal DELAY_MS; CONTROL_DIR/delay_ms sets it for new connections" {
  for bad in -1 1e3 0x10 inf . 1.2.3 600001; do
    run "$HELPERS/fault_proxy" 0 127.0.0.1 "$REDIS_PORT" "$BATS_TEST_TMPDIR/bad" "$bad"
    assert_equal "$status" 64
  done
  proxy_start_named HALF "$REDIS_PORT" 127.0.0.1 0.5
  assert_equal "$(proxy_state delay_ms HALF)" 0.5
  run redis-cli -p "$HALF_PORT" ping
  assert_output PONG
  # 20 replies on one connection, each 20 ms late at least: 400 ms (a lower bound only,
  # which a slow machine cannot break).
  printf '20\n' >"$HALF_DIR/delay_ms"
  t0=${EPOCHREALTIME/[.,]/}
  run redis-cli -p "$HALF_PORT" -r 20 ping
  t1=${EPOCHREALTIME/[.,]/}
  assert_equal "${#lines[@]}" 20
  assert [ $((t1 - t0)) -ge 400000 ]
  assert_equal "$(proxy_state delay_ms HALF)" 0.5 # the command line's, in the state
}

@test "rlock_bg starts with SIGINT at its default disposition; bg_wait gets the status" {
  # A stand-in for rlock: a shell can only trap SIGINT if it was not ignored at start.
  # shellcheck disable=SC2016 # the script is for the stand-in shell
  RLOCK="sh" rlock_bg FAKE -c 'trap "exit 7" INT; touch "$0"; while :; do sleep 0.05; done' \
    "$BATS_TEST_TMPDIR/ready"
  wait_for_file "$BATS_TEST_TMPDIR/ready"
  kill -INT "$BG_PID"
  bg_wait "$BG_PID"
  assert_equal "$BG_STATUS" 7
}

@test "bg_wait reports a signal death as 128+N" {
  # shellcheck disable=SC2016 # the script is for the stand-in shell
  RLOCK="sh" rlock_bg FAKE -c 'touch "$0"; exec sleep 30' "$BATS_TEST_TMPDIR/ready"
  wait_for_file "$BATS_TEST_TMPDIR/ready"
  kill -TERM "$BG_PID"
  bg_wait "$BG_PID"
  assert_equal "$BG_STATUS" 143
}

@test "bg_start output goes to NAME.out/.err; the default teardown ends it" {
  # shellcheck disable=SC2016 # the script is for sh
  bg_start LOOPER sh -c 'echo out; echo err >&2; touch "$0"; exec sleep 60' "$BATS_TEST_TMPDIR/ready"
  wait_for_file "$BATS_TEST_TMPDIR/ready"
  assert_equal "$(cat "$BATS_TEST_TMPDIR/LOOPER.out")" out
  assert_equal "$(cat "$BATS_TEST_TMPDIR/LOOPER.err")" err
  pid=$BG_PID
  teardown
  run _rlock_alive "$pid"
  assert_failure
}

@test "the default teardown resumes a server a failed test left paused" {
  redis_pause
  teardown
  run rcli ping
  assert_output PONG
}

@test "slack scales the waits by RLOCK_TEST_SLACK; the factor is a small whole number" {
  assert_equal "$(slack 1000)" $((1000 * RLOCK_TEST_SLACK))
  run env RLOCK_TEST_SLACK=0 bash -c 'BATS_FILE_TMPDIR=/tmp; source "$1"' x \
    "$BATS_TEST_DIRNAME/helpers/redis.bash"
  assert_failure
  assert_output --partial "RLOCK_TEST_SLACK must be a whole number"
}

# The watchdog: a suite killed before its teardown_file (ctest's limit, Ctrl-C, a CI
# cancel) leaves nothing running. An inner suite starts a redis-server, a background
# process and an rlock-like leftover in a session of its own, then hangs; it is SIGKILLed
# as ctest would; everything it started must die within a few seconds.
@test "a suite killed before its teardown leaves no server or helper behind" {
  d=$BATS_TEST_TMPDIR/inner
  mkdir -p "$d"
  # (the test's header is printed: bats would take one in this file's text for its own)
  {
    echo "load $BATS_TEST_DIRNAME/helpers/redis"
    echo "setup_file() { redis_start; }"
    printf '@%s "hangs" {\n' test
  } >"$d/inner.bats"
  cat >>"$d/inner.bats" <<INNER
  bg_start bg sleep 300
  setsid sleep 301 </dev/null >/dev/null 2>&1 &
  echo "\$REDIS_PID \$BG_PID \$!" >"$d/pids"
  sleep 300
}
INNER
  # (a clean environment: bats's own variables would make the inner bats a part of this one)
  _rlock_spawn "$d/out" "$d/err" env -i PATH="$PATH" HOME="$HOME" TMPDIR="${TMPDIR:-/tmp}" \
    RLOCK_SUITE_MARK="$RLOCK_SUITE_MARK" "$BATS_ROOT/bin/bats" "$d/inner.bats"
  inner=$_RLOCK_SPAWNED
  wait_until "[ -s '$d/pids' ]" 30 || fail "the inner suite: $(cat "$d/out" "$d/err")"
  read -r server bg setsid_pid <"$d/pids"
  for p in "$server" "$bg" "$setsid_pid"; do _rlock_alive "$p" || fail "pid $p is not running"; done
  kill -KILL "$inner"
  for p in "$server" "$bg" "$setsid_pid"; do wait_until "_rlock_dead $p" 15; done
}
