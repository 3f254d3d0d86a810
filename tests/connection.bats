#!/usr/bin/env bats
# ctest-labels: fast faults
# Connecting: URL sources and forms (unix sockets, db numbers, IPv6), timeouts,
# servers that misbehave, passwords and their precedence, a restarted server.
# shellcheck disable=SC2154 # $stderr and $stderr_lines come from `run --separate-stderr`
# shellcheck disable=SC2016 # wait_until conditions are expanded when evaluated

bats_require_minimum_version 1.5.0

load helpers/redis

setup_file() {
  # Tests restart, pause and stop servers of the file: one test at a time.
  export BATS_NO_PARALLELIZE_WITHIN_FILE=true
  redis_start
  redis_start_named AUTH --requirepass 's3cret'
}

suite_teardown() {
  redis_stop GARBAGE
  redis_stop PROXY
  redis_stop V6
}

# "69 or 70", no signal death, one "rlock: " line.
assert_unavailable_or_protocol() {
  [[ $status == 69 || $status == 70 ]] || fail "exit $status, expected 69 or 70; stderr: $stderr"
  assert_equal "${#stderr_lines[@]}" 1
  [[ ${stderr_lines[0]} == "rlock: "* ]] || fail "stderr does not start with 'rlock: ': $stderr"
}

# A URL where nothing listens.
dead_url() {
  echo "redis://127.0.0.1:$(free_port)/0"
}

# on_own_6379 KEY [RLOCK ARGS...]: runs `rlock -v ARGS` with no URL in its environment
# where 127.0.0.1:6379 can only be a redis-server of this test: in a network namespace of
# its own (unshare -rn: a user namespace, so no privilege is needed), where the machine's
# servers are out of reach. Sets P_RC, P_OUT, P_ERR (rlock's), P_LOCK (GET lock:{KEY} in
# database 0 of that server afterwards) and P_DBS (its databases that hold keys, e.g.
# "db0"). Returns 1 where no such namespace can be made (a container may forbid it).
on_own_6379() {
  local key=$1 d=$BATS_TEST_TMPDIR/own6379 rc=0
  shift
  mkdir -p "$d"
  cat >"$d/run.sh" <<'EOF'
d=$1 key=$2 rlock=$3
shift 3
ip link set lo up || exit 90
redis-server --port 6379 --bind 127.0.0.1 --save '' --appendonly no --dir "$d" \
  >"$d/redis.log" 2>&1 &
srv=$!
trap 'kill -9 "$srv" 2>/dev/null' EXIT
trap 'exit 1' HUP INT TERM
i=0
until redis-cli ping >/dev/null 2>&1; do
  i=$((i + 1))
  [ "$i" -le 200 ] || exit 91
  sleep 0.05
done
pid=$(redis-cli info server | tr -d '\r' | sed -n 's/^process_id://p')
[ "$pid" = "$srv" ] || exit 92
rc=0
env -u RLOCK_URL -u REDIS_URL "$rlock" -v "$@" >"$d/out" 2>"$d/err" || rc=$?
echo "$rc" >"$d/rc"
redis-cli -n 0 get "lock:{$key}" >"$d/lock"
redis-cli info keyspace | tr -d '\r' | sed -n 's/^\(db[0-9]*\):.*/\1/p' >"$d/dbs"
EOF
  unshare -rn true 2>/dev/null || return 1
  timeout 30 unshare -rn sh "$d/run.sh" "$d" "$key" "$RLOCK" "$@" || rc=$?
  if ((rc == 90)); then return 1; fi # no loopback to bring up (no `ip` here)
  ((rc == 0)) || fail "the private redis-server on 6379 failed (exit $rc): $(cat "$d/redis.log")"
  P_RC=$(<"$d/rc") P_OUT=$(<"$d/out") P_ERR=$(<"$d/err") P_LOCK=$(<"$d/lock")
  P_DBS=$(<"$d/dbs")
}

# port_6379_free: nothing listens on 127.0.0.1:6379 of this machine.
port_6379_free() {
  ! { true <>/dev/tcp/127.0.0.1/6379; } 2>/dev/null
}

# --- where the URL comes from ----------------------------------------------------------

@test "--url wins over RLOCK_URL and REDIS_URL" {
  good=$RLOCK_URL
  RLOCK_URL=$(dead_url) REDIS_URL=$(dead_url) run --separate-stderr \
    "$RLOCK" --url "$good" acquire url-flag --ttl 5s
  assert_success
  run rcli exists 'lock:{url-flag}'
  assert_output 1
}

@test "RLOCK_URL wins over REDIS_URL" {
  good=$RLOCK_URL
  RLOCK_URL=$good REDIS_URL=$(dead_url) run --separate-stderr "$RLOCK" acquire url-rlock --ttl 5s
  assert_success
  RLOCK_URL=$(dead_url) REDIS_URL=$good run --separate-stderr "$RLOCK" status url-rlock
  assert_error 69
}

@test "REDIS_URL is used when RLOCK_URL is not set" {
  good=$RLOCK_URL
  unset RLOCK_URL
  REDIS_URL=$good run --separate-stderr "$RLOCK" acquire url-redis --ttl 5s
  assert_success
  run rcli exists 'lock:{url-redis}'
  assert_output 1
}

@test "without any URL the default is redis://127.0.0.1:6379/0" {
  unset RLOCK_URL REDIS_URL
  if on_own_6379 url-default acquire --ttl 30s url-default; then
    assert_equal "$P_RC" 0
    assert_regex "$P_ERR" 'connected to redis://127\.0\.0\.1:6379/0'
    # the lock is in database 0 of the server on 127.0.0.1:6379, and nothing elsewhere
    assert_regex "$P_OUT" '^[0-9a-f]{32}$'
    assert_equal "$P_LOCK" "$P_OUT"
    assert_equal "$P_DBS" db0
  else
    # Without a namespace, only where 127.0.0.1:6379 is free (no server of the machine
    # is ever touched): rlock tries that address, and finds nobody.
    port_6379_free || skip "127.0.0.1:6379 is in use here, and no network namespace of its own can be made"
    rl --connect-timeout 1s status url-default
    assert_error 69
    assert_regex "$stderr" '127\.0\.0\.1:6379'
  fi
}

@test "an empty RLOCK_URL counts as unset" {
  good=$RLOCK_URL
  RLOCK_URL='' REDIS_URL=$good run --separate-stderr "$RLOCK" status url-empty
  assert_equal "$status" 1
}

# --- URL forms -------------------------------------------------------------------------

@test "a unix:// socket URL with ?db=N uses that database" {
  rl --url "unix://$REDIS_SOCK?db=3" acquire unix-db --ttl 10s
  assert_success
  tok=$output
  run rcli -n 3 get 'lock:{unix-db}'
  assert_output "$tok"
  run rcli -n 0 exists 'lock:{unix-db}'
  assert_output 0
  rl --url "unix://$REDIS_SOCK?db=3" status unix-db
  assert_success
}

@test "a unix:// socket URL without db uses database 0" {
  rl --url "unix://$REDIS_SOCK" acquire unix-0 --ttl 10s
  assert_success
  run rcli -n 0 exists 'lock:{unix-0}'
  assert_output 1
}

@test "the db number in a redis:// URL selects the database" {
  rl --url "redis://127.0.0.1:$REDIS_PORT/5" acquire db-url --ttl 10s
  assert_success
  run rcli -n 5 exists 'lock:{db-url}'
  assert_output 1
  run rcli -n 0 exists 'lock:{db-url}'
  assert_output 0
  rl --url "redis://127.0.0.1:$REDIS_PORT/0" status db-url
  assert_equal "$status" 1
}

@test "a redis:// URL without port and db means 6379 and 0" {
  if on_own_6379 url-short --url redis://127.0.0.1 acquire --ttl 30s url-short; then
    assert_equal "$P_RC" 0
    assert_regex "$P_ERR" 'connected to redis://127\.0\.0\.1:6379/0'
    assert_regex "$P_OUT" '^[0-9a-f]{32}$'
    assert_equal "$P_LOCK" "$P_OUT"
    assert_equal "$P_DBS" db0
  else
    port_6379_free || skip "127.0.0.1:6379 is in use here, and no network namespace of its own can be made"
    rl --connect-timeout 1s --url "redis://127.0.0.1" status url-short
    assert_error 69
    assert_regex "$stderr" '127\.0\.0\.1:6379'
  fi
}

@test "an IPv6 literal [::1] in the URL connects over IPv6" {
  grep -qi '^0\{31\}1 .* lo$' /proc/net/if_inet6 2>/dev/null ||
    skip "no IPv6 ::1 on the loopback interface"
  redis_start_named V6 --bind ::1
  # The server listens on ::1 only: reaching it proves IPv6.
  rl --url "redis://[::1]:$V6_PORT/0" acquire v6 --ttl 10s
  assert_success
  run rcli_to V6 exists 'lock:{v6}'
  assert_output 1
  rl --url "redis://[::1]:$V6_PORT/0" status v6
  assert_success
  redis_stop V6
}

# --- unreachable and slow servers ------------------------------------------------------

@test "an unreachable port exits 69 within --connect-timeout" {
  t0=$(now_ms)
  rl --url "$(dead_url)" --connect-timeout 1s acquire unreach
  elapsed=$(($(now_ms) - t0))
  assert_error 69
  assert [ "$elapsed" -lt 3000 ]
}

@test "an address that does not answer exits 69 within --connect-timeout" {
  # TEST-NET-1: either unroutable at once or silent until the connect timeout.
  t0=$(now_ms)
  rl --url "redis://192.0.2.1:6379/0" --connect-timeout 500ms status unreach2
  elapsed=$(($(now_ms) - t0))
  assert_error 69
  assert [ "$elapsed" -lt 3000 ]
}

@test "a blackholed connection exits 69 after --command-timeout" {
  proxy_start "$REDIS_PORT"
  proxy_partition
  t0=$(now_ms)
  rl --url "$PROXY_URL" --connect-timeout 20s --command-timeout 500ms status blackhole
  elapsed=$(($(now_ms) - t0))
  assert_error 69
  assert [ "$elapsed" -ge 400 ]
  assert [ "$elapsed" -lt 5000 ]
  redis_stop PROXY
}

@test "a stopped server (SIGSTOP) exits 69 after --command-timeout" {
  redis_pause
  t0=$(now_ms)
  rl --command-timeout 500ms --connect-timeout 500ms acquire paused
  elapsed=$(($(now_ms) - t0))
  redis_resume
  assert_error 69
  assert [ "$elapsed" -lt 5000 ]
}

@test "an acquire that timed out on a stopped server is undone there once it runs again" {
  # The scripts are cached, so the late acquire runs (EVALSHA) and then its undo (an
  # EVAL built only when the timeout fires), in that order, once the server continues.
  rl run undone-warm -- true
  assert_success
  redis_pause
  rl -v --command-timeout 300ms acquire undone
  redis_resume
  assert_equal "$status" 69
  assert_regex "$stderr" "timed out: compensating on the same connection"
  # Its history shows the grant, then the undo's release; the lock is free.
  wait_until '[[ $(rcli xrange "lock:{undone}:log" - +) == *acquired*released* ]]'
  assert_equal "$(rcli exists 'lock:{undone}')" 0
  rl status undone
  assert_equal "$status" 1
}

@test "the server restarted between two commands: the next command works" {
  rl acquire restart --ttl 30s
  assert_success
  redis_restart
  # The restarted server has no data and no scripts cached (NOSCRIPT, then EVAL).
  rl status restart
  assert_equal "$status" 1
  rl acquire restart --ttl 10s
  assert_success
  rl release restart --token "$output"
  assert_success
}

# --- servers that speak nonsense -------------------------------------------------------

@test "garbage_server garbage: 69 or 70 for every subcommand, no crash, no hang" {
  garbage_start garbage
  url="redis://127.0.0.1:$GARBAGE_PORT/0"
  for args in "acquire g" "acquire g -n" "status g" "list" "release g --token abc" \
    "extend g --token abc" "break g --yes" "status g --json"; do
    # shellcheck disable=SC2086 # word splitting wanted
    run --separate-stderr timeout 20 "$RLOCK" --url "$url" --command-timeout 2s $args
    assert_unavailable_or_protocol
  done
}

@test "garbage_server badtype: an unexpected reply type exits 70" {
  garbage_start badtype
  url="redis://127.0.0.1:$GARBAGE_PORT/0"
  for args in "acquire g" "status g" "list" "release g --token abc"; do
    # shellcheck disable=SC2086
    run --separate-stderr timeout 20 "$RLOCK" --url "$url" --command-timeout 2s $args
    assert_error 70
  done
}

@test "garbage_server reply with a wrong array shape exits 70" {
  garbage_start 'reply=*1\r\n$2\r\nhi\r\n'
  rl --url "redis://127.0.0.1:$GARBAGE_PORT/0" --command-timeout 2s status g
  assert_error 70
  rl --url "redis://127.0.0.1:$GARBAGE_PORT/0" --command-timeout 2s acquire g
  assert_error 70
}

@test "garbage_server close: a server that hangs up exits 69" {
  garbage_start close
  rl --url "redis://127.0.0.1:$GARBAGE_PORT/0" --command-timeout 2s status g
  assert_error 69
}

@test "a server that closes the connection gives 69, never death by SIGPIPE" {
  garbage_start close
  for i in 1 2 3 4 5 6 7 8; do
    run --separate-stderr "$RLOCK" --url "redis://127.0.0.1:$GARBAGE_PORT/0" \
      --command-timeout 2s acquire "pipe-$i" --ttl 5s
    assert_error 69
  done
}

@test "a connection cut by a proxy while waiting: 69 or a reconnect, never SIGPIPE" {
  proxy_start "$REDIS_PORT"
  tok=$("$RLOCK" acquire cut --ttl 30s)
  rlock_bg waiter --url "$PROXY_URL" --command-timeout 2s acquire cut --wait 20s
  waiter=$BG_PID
  wait_until '"$RLOCK" status cut --json | grep -q "\"position\":"'
  proxy_wait_active 1
  proxy_cut
  # Either it gave up (69) or it reconnected and gets the lock once it is released.
  "$RLOCK" release cut --token "$tok"
  bg_wait "$waiter" 25
  rc=$BG_STATUS
  [[ $rc == 0 || $rc == 69 ]] ||
    fail "exit $rc (a signal if > 128); stderr: $(<"$BATS_TEST_TMPDIR/waiter.err")"
  redis_stop PROXY
}

@test "garbage_server silent: exits 69 after --command-timeout" {
  garbage_start silent
  t0=$(now_ms)
  rl --url "redis://127.0.0.1:$GARBAGE_PORT/0" --command-timeout 500ms --connect-timeout 20s status g
  elapsed=$(($(now_ms) - t0))
  assert_error 69
  assert [ "$elapsed" -ge 400 ]
  assert [ "$elapsed" -lt 5000 ]
}

# --- passwords -------------------------------------------------------------------------

@test "a password in the URL authenticates" {
  rl --url "redis://:s3cret@127.0.0.1:$AUTH_PORT/0" acquire pw-url --ttl 10s
  assert_success
  run rcli_to AUTH exists 'lock:{pw-url}'
  assert_output 1
  rl --url "redis://default:s3cret@127.0.0.1:$AUTH_PORT/0" status pw-url
  assert_success
}

@test "--password-file authenticates (trailing newline dropped)" {
  printf 's3cret\n' >"$BATS_TEST_TMPDIR/pw"
  rl --url "$AUTH_URL" --password-file "$BATS_TEST_TMPDIR/pw" acquire pw-file --ttl 10s
  assert_success
  printf 's3cret\r\n' >"$BATS_TEST_TMPDIR/pw-crlf"
  rl status pw-file --url "$AUTH_URL" --password-file "$BATS_TEST_TMPDIR/pw-crlf"
  assert_success
}

@test "an unreadable --password-file is a usage error (64)" {
  rl --url "$AUTH_URL" --password-file "$BATS_TEST_TMPDIR/does-not-exist" status pw-none
  assert_error 64
}

@test "RLOCK_PASSWORD authenticates" {
  RLOCK_PASSWORD=s3cret run --separate-stderr "$RLOCK" --url "$AUTH_URL" acquire pw-env --ttl 10s
  assert_success
  run rcli_to AUTH exists 'lock:{pw-env}'
  assert_output 1
}

@test "REDISCLI_AUTH authenticates" {
  REDISCLI_AUTH=s3cret run --separate-stderr "$RLOCK" --url "$AUTH_URL" acquire pw-cli --ttl 10s
  assert_success
}

@test "the URL's password wins over --password-file, RLOCK_PASSWORD and REDISCLI_AUTH" {
  echo wrong >"$BATS_TEST_TMPDIR/pw"
  RLOCK_PASSWORD=wrong REDISCLI_AUTH=wrong run --separate-stderr "$RLOCK" \
    --url "redis://:s3cret@127.0.0.1:$AUTH_PORT/0" --password-file "$BATS_TEST_TMPDIR/pw" \
    status pw-prec1
  assert_equal "$status" 1
  RLOCK_PASSWORD=s3cret REDISCLI_AUTH=s3cret run --separate-stderr "$RLOCK" \
    --url "redis://:wrong@127.0.0.1:$AUTH_PORT/0" status pw-prec1
  assert_error 77
}

@test "--password-file wins over RLOCK_PASSWORD and REDISCLI_AUTH" {
  echo s3cret >"$BATS_TEST_TMPDIR/pw"
  echo wrong >"$BATS_TEST_TMPDIR/pw-wrong"
  RLOCK_PASSWORD=wrong REDISCLI_AUTH=wrong run --separate-stderr "$RLOCK" \
    --url "$AUTH_URL" --password-file "$BATS_TEST_TMPDIR/pw" status pw-prec2
  assert_equal "$status" 1
  RLOCK_PASSWORD=s3cret REDISCLI_AUTH=s3cret run --separate-stderr "$RLOCK" \
    --url "$AUTH_URL" --password-file "$BATS_TEST_TMPDIR/pw-wrong" status pw-prec2
  assert_error 77
}

@test "RLOCK_PASSWORD wins over REDISCLI_AUTH" {
  RLOCK_PASSWORD=s3cret REDISCLI_AUTH=wrong run --separate-stderr "$RLOCK" \
    --url "$AUTH_URL" status pw-prec3
  assert_equal "$status" 1
  RLOCK_PASSWORD=wrong REDISCLI_AUTH=s3cret run --separate-stderr "$RLOCK" \
    --url "$AUTH_URL" status pw-prec3
  assert_error 77
}

@test "a wrong password exits 77" {
  rl --url "redis://:nope@127.0.0.1:$AUTH_PORT/0" acquire pw-wrong
  assert_error 77
  RLOCK_PASSWORD=nope run --separate-stderr "$RLOCK" --url "$AUTH_URL" status pw-wrong
  assert_error 77
}

@test "no password for a server that requires one exits 77" {
  rl --url "$AUTH_URL" status pw-missing
  assert_error 77
  rl --url "$AUTH_URL" list
  assert_error 77
  rl --url "$AUTH_URL" break pw-missing --yes
  assert_error 77
}

@test "no password: acquire, extend and release exit 77 too (the server hangs up on them)" {
  # Redis refuses long commands from unauthenticated clients with a protocol error and
  # closes the connection ("an unauthenticated connection closed by the server": 77).
  rl --url "$AUTH_URL" acquire pw-missing2
  assert_error 77
  rl --url "$AUTH_URL" extend pw-missing2 --token 0123456789abcdef0123456789abcdef
  assert_error 77
  rl --url "$AUTH_URL" release pw-missing2 --token 0123456789abcdef0123456789abcdef
  assert_error 77
}

@test "-v never shows the URL's password" {
  rl -v --url "redis://:s3cret@127.0.0.1:$AUTH_PORT/0" status pw-verbose
  assert_equal "$status" 1
  assert_regex "$stderr" 'EVALSHA'
  [[ $stderr != *s3cret* ]] || fail "the password leaked: $stderr"
}

@test "an error message never shows the URL's password" {
  rl --url "redis://:topsecret@127.0.0.1:$AUTH_PORT/0" status pw-hidden
  assert_error 77
  [[ $stderr != *topsecret* ]] || fail "the password leaked: $stderr"
  rl -v --url "redis://:topsecret@127.0.0.1:$(free_port)/0" status pw-hidden
  assert_equal "$status" 69
  [[ $stderr != *topsecret* ]] || fail "the password leaked: $stderr"
}

# --- errors that name the fix ----------------------------------------------------------------

@test "a server that wants a password: 77 naming --password-file, RLOCK_PASSWORD and the URL form" {
  want="rlock: Redis at redis://127.0.0.1:$AUTH_PORT/0 wants a password: give it with \
--password-file FILE or RLOCK_PASSWORD, or in the URL (redis://:PASSWORD@127.0.0.1:$AUTH_PORT/0)"
  for args in "status pw-fix" "list" "acquire pw-fix" "run pw-fix -- true" \
    "release pw-fix --token 0123456789abcdef0123456789abcdef"; do
    # shellcheck disable=SC2086 # word splitting wanted
    rl --url "$AUTH_URL" $args
    assert_error 77
    assert_equal "${stderr_lines[0]}" "$want"
  done
}

@test "a database the server does not have is a usage error (64) that says so" {
  rl --url "redis://127.0.0.1:$REDIS_PORT/99" status db-fix
  assert_error 64
  assert_equal "${stderr_lines[0]}" "rlock: redis://127.0.0.1:$REDIS_PORT/99 has no database 99: \
use a number below its 'databases' setting (16 by default) in the URL"
  rl --url "redis://127.0.0.1:$REDIS_PORT/99" run db-fix -- true
  assert_error 64
}

@test "an HTTP server on the port: 69, the endpoint does not speak Redis" {
  garbage_start 'reply=HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n'
  for args in "status http" "acquire http" "list"; do
    # shellcheck disable=SC2086 # word splitting wanted
    rl --url "redis://127.0.0.1:$GARBAGE_PORT/0" --command-timeout 5s $args
    assert_error 69
    assert_equal "${stderr_lines[0]}" "rlock: the endpoint at redis://127.0.0.1:$GARBAGE_PORT/0 \
does not speak Redis (it answered 'HTTP/1.1 400 Bad Request'): check the host and port in the URL"
  done
  redis_stop GARBAGE
}

@test "a server that stops making sense after a good reply is still a protocol error (70)" {
  garbage_start badtype
  rl --url "redis://127.0.0.1:$GARBAGE_PORT/0" --command-timeout 2s status g
  assert_error 70
  redis_stop GARBAGE
}

@test "a reply that starts like Redis's but breaks its rules stays a protocol error (70)" {
  garbage_start 'reply=*1\r\nxyz\r\n'
  rl --url "redis://127.0.0.1:$GARBAGE_PORT/0" --command-timeout 2s status g
  assert_error 70
  [[ $stderr != *"does not speak Redis"* ]] || fail "$stderr"
  redis_stop GARBAGE
}
