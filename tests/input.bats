#!/usr/bin/env bats
# ctest-labels: fast
# Hostile input gets one clear line and exit 64 (or the documented status), never a
# crash, a hang, a raw library error or a secret on the screen: durations past the
# 366-day cap, URL edge cases, passwords in URL errors, --password-file that is a device,
# a directory, a FIFO nobody writes to or an endless stream, authentication against a
# server without a password.
# shellcheck disable=SC2154 # $stderr and $stderr_lines come from `run --separate-stderr`

bats_require_minimum_version 1.5.0

load helpers/redis

setup_file() {
  redis_start
  redis_start_named AUTH --requirepass 's3cret'
}

setup() { T=$BATS_TEST_TMPDIR; }

# --- durations -------------------------------------------------------------------------------

@test "durations longer than 366 days are usage errors (64) that say the limit" {
  for flag in --ttl --wait --min-hold --kill-after; do
    for d in 3000000h 367d 4000000000000000000ms 1e400; do
      rl run "$flag" "$d" dur -- true
      assert_error 64
      [[ $d == 1e400 || $stderr == *"at most 366 days"* ]] || fail "$flag $d: $stderr"
    done
  done
  rl --command-timeout 9999999999999d status dur
  assert_error 64
  rl acquire dur --ttl "$(printf '9%.0s' {1..400})"
  assert_error 64
  assert_equal "$(rcli exists 'lock:{dur}')" 0
}

@test "366 days is accepted: --ttl 366d leaves a 366-day PTTL, --wait 366d waits" {
  rl acquire dur366 --ttl 366d
  assert_success
  pttl=$(rcli pttl 'lock:{dur366}')
  assert [ "$pttl" -gt $((366 * 86400000 - 60000)) ]
  rl acquire dur366 --wait 366d --ttl 1s --command-timeout 1s -n
  assert_error 64 # --wait and -n contradict: checked before any waiting
  run -75 "$RLOCK" acquire dur366 --wait 1s
}

# --- URLs and secrets ------------------------------------------------------------------------

@test "a URL error never shows the password, whatever is wrong with the URL" {
  for url in 'redis://:topsecret@h:99999/0' 'redis://u:topsecret@h/xx' \
    'redis://u:topsecret@h?bogus=1' 'redis://u:top%zzsecret@h' 'redis://u:topsecret@[::1' \
    'redis://u:topsecret@h:1:2' 'redis://:topsecret@' 'redis-sentinel://:topsecret@h/' \
    'redis://u:top@secret@h:0'; do
    rl --url "$url" status k
    assert_error 64
    [[ $stderr != *topsecret* && $stderr != *secret@h* ]] || fail "password shown: $stderr"
    [[ $stderr == *'***'* ]] || fail "no redaction mark in: $stderr"
  done
}

@test "redis:// with no host is a usage error, not a silent 127.0.0.1" {
  for url in 'redis://' 'redis://:6379' 'redis:///0' 'redis://u:pw@/0'; do
    rl --url "$url" status k
    assert_error 64
    [[ $stderr == *"no host"* ]] || fail "$url: $stderr"
  done
}

@test "an empty password after ':' in the URL is a usage error, not an empty AUTH" {
  rl --url "redis://:@127.0.0.1:$AUTH_PORT/0" status k
  assert_error 64
  rl --url "redis://default:@127.0.0.1:$AUTH_PORT/0" status k
  assert_error 64
}

@test "%00 and control characters in the URL are usage errors on one escaped line" {
  rl --url "redis://us%00er:pw@127.0.0.1:$REDIS_PORT/0" status k
  assert_error 64
  rl --url $'redis://ho\nst:6379/0' status k
  assert_error 64
  [[ $stderr == *'ho\x0ast'* ]] || fail "not escaped: $stderr"
  rl --url "redis://us%0Aer:pw@127.0.0.1:$REDIS_PORT/0" status k
  assert_error 64
}

@test "a user name without any password is a usage error naming where a password goes" {
  rl --url "redis://app@127.0.0.1:$AUTH_PORT/0" status k
  assert_error 64
  [[ $stderr == *"needs a password"* ]] || fail "$stderr"
  rl --url "$AUTH_URL" --user app status k
  assert_error 64
}

@test "-E '' and other malformed exit statuses are usage errors (64)" {
  for e in '' ' 3' '+3' '3x' '-1' '256' '0x10'; do
    rl run -E "$e" k -- true
    assert_error 64
  done
  run -0 "$RLOCK" run -E 0 k -- true
}

@test "--tls-ca-dir that is not a directory is a usage error (64)" {
  rl --url "rediss://127.0.0.1:$REDIS_PORT/0" --tls-ca-dir "$T/nonexistent" status k
  assert_error 64
  touch "$T/file"
  rl --url "rediss://127.0.0.1:$REDIS_PORT/0" --tls-ca-dir "$T/file" status k
  assert_error 64
}

# --- --password-file ---------------------------------------------------------------------------

@test "--password-file from process substitution works" {
  run --separate-stderr bash -c '"$1" --url "$2" --password-file <(echo s3cret) status pf-proc' \
    x "$RLOCK" "$AUTH_URL"
  assert_equal "$status" 1 # free: authenticated and answered
}

@test "--password-file that is empty, blank, a directory or /dev/null is a usage error (64)" {
  : >"$T/empty"
  printf '\nsecond-line\n' >"$T/blank"
  printf '\r\n' >"$T/crlf"
  for f in "$T/empty" "$T/blank" "$T/crlf" "$T" /dev/null; do
    rl --url "$AUTH_URL" --password-file "$f" status k
    assert_error 64
  done
}

@test "--password-file /dev/zero or /dev/urandom is refused at once, without reading it" {
  start=$(now_ms)
  for f in /dev/zero /dev/urandom; do
    rl --url "$AUTH_URL" --password-file "$f" status k
    assert_error 64
  done
  assert [ $(($(now_ms) - start)) -lt 3000 ]
}

@test "--password-file longer than 4 KiB on its first line is a usage error (64)" {
  head -c 5000 /dev/zero | tr '\0' 'a' >"$T/long"
  rl --url "$AUTH_URL" --password-file "$T/long" status k
  assert_error 64
  # an endless pipe is cut off too
  run --separate-stderr bash -c '"$1" --url "$2" --password-file <(yes | tr -d "\n") status k' \
    x "$RLOCK" "$AUTH_URL"
  assert_error 64
}

@test "--password-file: a FIFO that nobody writes to gives up after --connect-timeout (64)" {
  mkfifo "$T/fifo"
  start=$(now_ms)
  rl --url "$AUTH_URL" --connect-timeout 700ms --password-file "$T/fifo" status k
  elapsed=$(($(now_ms) - start))
  assert_error 64
  assert [ "$elapsed" -ge 600 ]
  assert [ "$elapsed" -lt 5000 ]
}

@test "--password-file: a FIFO whose writer comes a little later works" {
  mkfifo "$T/fifo2"
  bg_start writer sh -c 'sleep 0.3; echo s3cret >"$1"' x "$T/fifo2"
  rl --url "$AUTH_URL" --password-file "$T/fifo2" status pf-fifo
  assert_equal "$status" 1
}

# --- a password for a server without one ----------------------------------------------------------

@test "a password for a server that has none is a permission error (77) that says so" {
  rl --url "redis://:pw@127.0.0.1:$REDIS_PORT/0" status k
  assert_error 77
  [[ $stderr == *"no password set"* && $stderr == *"from the URL"* ]] || fail "$stderr"
  RLOCK_PASSWORD=pw run --separate-stderr "$RLOCK" status k
  assert_error 77
  [[ $stderr == *RLOCK_PASSWORD* ]] || fail "$stderr"
  echo pw >"$T/pw"
  rl --password-file "$T/pw" status k
  assert_error 77
}

@test "REDISCLI_AUTH exported for another server is ignored, as redis-cli does" {
  REDISCLI_AUTH=for-another-server run --separate-stderr "$RLOCK" acquire cli-auth --ttl 5s
  assert_success
  assert_equal "$(rcli exists 'lock:{cli-auth}')" 1
}
