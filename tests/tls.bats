#!/usr/bin/env bats
# ctest-labels: fast topology
# TLS: rediss:// against redis-servers started with a CA generated here. Verification is
# on by default; CA file or directory, client certificates, SNI / verification name and
# --tls-insecure.
# shellcheck disable=SC2154 # $stderr and $stderr_lines come from `run --separate-stderr`

bats_require_minimum_version 1.5.0

load helpers/redis

setup_file() {
  # TLS (tls_setup): TLS only, certificate for localhost + 127.0.0.1, client certs optional.
  tls_setup
  # The server named TLS exports TLS_DIR as its own directory, clobbering the certificate
  # directory that tls_setup exported (each test gets the certificate one back).
  export TLS_DIR="$BATS_FILE_TMPDIR/tls"
  # MTLS: demands a client certificate signed by the test CA.
  tls_start_named MTLS server yes
  # NAMED: a certificate for DNS:localhost only (no IP), so 127.0.0.1 needs
  # --tls-server-name localhost.
  _rlock_gen_cert named ca localhost serverAuth "DNS:localhost" ||
    fail "openssl failed: $(tail -n 20 "$TLS_DIR/openssl.log")"
  tls_start_named NAMED named no
  # PLAIN: no TLS at all.
  redis_start_named PLAIN
}

@test "rediss:// with --tls-ca-cert works" {
  rl --url "$TLS_URL" --tls-ca-cert "$TLS_DIR/ca.crt" acquire tls-ok --ttl 10s
  assert_success
  assert_output --regexp '^[0-9a-f]{32}$'
  tok=$output
  run rcli_to TLS get 'lock:{tls-ok}'
  assert_output "$tok"
  rl status tls-ok --url "$TLS_URL" --tls-ca-cert "$TLS_DIR/ca.crt"
  assert_success
  rl release tls-ok --token "$tok" --url "$TLS_URL" --tls-ca-cert "$TLS_DIR/ca.crt"
  assert_success
}

@test "rediss://localhost verifies the certificate's DNS name" {
  rl --url "rediss://localhost:$TLS_PORT/0" --tls-ca-cert "$TLS_DIR/ca.crt" status tls-dns
  assert_equal "$status" 1
}

@test "the wrong CA exits 69" {
  rl --url "$TLS_URL" --tls-ca-cert "$TLS_DIR/wrong-ca.crt" acquire tls-wrong-ca
  assert_error 69
  run rcli_to TLS exists 'lock:{tls-wrong-ca}'
  assert_output 0
}

@test "verification is on by default: no CA given, the test CA is not trusted (69)" {
  rl --url "$TLS_URL" status tls-default
  assert_error 69
}

@test "a server certificate signed by another CA exits 69" {
  tls_start_named WRONGSRV wrong-server no
  rl --url "$WRONGSRV_URL" --tls-ca-cert "$TLS_DIR/ca.crt" status tls-wrong-srv
  assert_error 69
  redis_stop WRONGSRV
}

@test "--tls-insecure works without a CA" {
  rl --url "$TLS_URL" --tls-insecure acquire tls-insecure --ttl 10s
  assert_success
  run rcli_to TLS exists 'lock:{tls-insecure}'
  assert_output 1
}

@test "--tls-insecure also accepts a certificate from an unknown CA" {
  rl --url "$TLS_URL" --tls-insecure --tls-ca-cert "$TLS_DIR/wrong-ca.crt" status tls-insecure2
  assert_equal "$status" 1
}

@test "--tls-ca-dir with a hashed CA directory works" {
  dir=$BATS_TEST_TMPDIR/cadir
  mkdir -p "$dir"
  cp "$TLS_DIR/ca.crt" "$dir/"
  if openssl rehash "$dir" 2>/dev/null; then
    :
  elif command -v c_rehash >/dev/null; then
    c_rehash "$dir" >/dev/null 2>&1 || skip "c_rehash failed"
  else
    skip "neither 'openssl rehash' nor c_rehash is available"
  fi
  rl --url "$TLS_URL" --tls-ca-dir "$dir" acquire tls-cadir --ttl 10s
  assert_success
  run rcli_to TLS exists 'lock:{tls-cadir}'
  assert_output 1
}

@test "--tls-ca-dir holding only the wrong CA exits 69" {
  dir=$BATS_TEST_TMPDIR/cadir-wrong
  mkdir -p "$dir"
  cp "$TLS_DIR/wrong-ca.crt" "$dir/"
  openssl rehash "$dir" 2>/dev/null || c_rehash "$dir" >/dev/null 2>&1 ||
    skip "cannot hash a CA directory"
  rl --url "$TLS_URL" --tls-ca-dir "$dir" status tls-cadir-wrong
  assert_error 69
}

@test "a client certificate is accepted by a server that requires one" {
  rl --url "$MTLS_URL" --tls-ca-cert "$TLS_DIR/ca.crt" \
    --tls-cert "$TLS_DIR/client.crt" --tls-key "$TLS_DIR/client.key" acquire mtls --ttl 10s
  assert_success
  run rcli_to MTLS exists 'lock:{mtls}'
  assert_output 1
}

@test "without a client certificate a server that requires one refuses (69)" {
  rl --url "$MTLS_URL" --tls-ca-cert "$TLS_DIR/ca.crt" acquire mtls-none --ttl 10s
  assert_error 69
  run rcli_to MTLS exists 'lock:{mtls-none}'
  assert_output 0
}

@test "a client certificate from another CA is refused (69)" {
  rl --url "$MTLS_URL" --tls-ca-cert "$TLS_DIR/ca.crt" \
    --tls-cert "$TLS_DIR/wrong-client.crt" --tls-key "$TLS_DIR/wrong-client.key" status mtls-wrong
  assert_error 69
}

@test "--tls-server-name localhost verifies a localhost-only certificate at 127.0.0.1" {
  rl --url "$NAMED_URL" --tls-ca-cert "$TLS_DIR/ca.crt" --tls-server-name localhost \
    acquire tls-sni --ttl 10s
  assert_success
  run rcli_to NAMED exists 'lock:{tls-sni}'
  assert_output 1
}

@test "without --tls-server-name a localhost-only certificate fails at 127.0.0.1 (69)" {
  rl --url "$NAMED_URL" --tls-ca-cert "$TLS_DIR/ca.crt" status tls-sni-none
  assert_error 69
}

@test "--tls-server-name that the certificate does not name fails (69)" {
  rl --url "$TLS_URL" --tls-ca-cert "$TLS_DIR/ca.crt" --tls-server-name other.example \
    status tls-sni-wrong
  assert_error 69
}

@test "--tls-ca-cert with a redis:// URL is a usage error (64) that names rediss://" {
  rl --url "redis://127.0.0.1:$PLAIN_PORT/0" --tls-ca-cert "$TLS_DIR/ca.crt" status k
  assert_error 64
  [[ $stderr == *rediss://* ]] || fail "the message does not name rediss://: $stderr"
}

@test "every --tls-* flag with a redis:// or unix:// URL is a usage error (64)" {
  for flag in "--tls-insecure" "--tls-ca-dir $TLS_DIR" "--tls-server-name localhost" \
    "--tls-cert $TLS_DIR/client.crt --tls-key $TLS_DIR/client.key"; do
    # shellcheck disable=SC2086 # word splitting wanted
    rl --url "redis://127.0.0.1:$PLAIN_PORT/0" $flag status k
    assert_error 64
    # shellcheck disable=SC2086
    rl --url "unix://$PLAIN_SOCK" $flag status k
    assert_error 64
  done
}

@test "a CA file that cannot be read is a usage error (64)" {
  rl --url "$TLS_URL" --tls-ca-cert "$BATS_TEST_TMPDIR/nope.crt" status k
  assert_error 64
}

@test "--tls-cert without --tls-key is a usage error (64)" {
  rl --url "$MTLS_URL" --tls-ca-cert "$TLS_DIR/ca.crt" --tls-cert "$TLS_DIR/client.crt" status k
  assert_error 64
}

@test "a --tls-key that does not match --tls-cert is a usage error (64)" {
  rl --url "$MTLS_URL" --tls-ca-cert "$TLS_DIR/ca.crt" \
    --tls-cert "$TLS_DIR/client.crt" --tls-key "$TLS_DIR/wrong-client.key" status k
  assert_error 64
}

@test "rediss:// to a server without TLS exits 69" {
  rl --url "rediss://127.0.0.1:$PLAIN_PORT/0" --tls-insecure --connect-timeout 3s status k
  assert_error 69
}

@test "rediss:// to a plain-text server says it does not speak TLS within about a second (69)" {
  # Redis answers nothing to a ClientHello: without a plain-text probe this would wait
  # for the whole --connect-timeout.
  t0=$(now_ms)
  rl --url "rediss://127.0.0.1:$PLAIN_PORT/0" --tls-insecure --connect-timeout 30s status k
  elapsed=$(($(now_ms) - t0))
  assert_error 69
  assert_equal "${stderr_lines[0]}" "rlock: Redis at rediss://127.0.0.1:$PLAIN_PORT/0 does not \
speak TLS: it answers a plain-text PING; use redis:// instead of rediss:// (or the server's TLS port)"
  # The promise is about a second; the bound leaves room for a slow start, far below 30s.
  assert [ "$elapsed" -lt 5000 ]
  rl --url "rediss://127.0.0.1:$PLAIN_PORT/0" --tls-insecure --connect-timeout 30s run k -- true
  assert_error 69
}

@test "redis:// (no TLS) to a TLS-only port exits 69 or 70, without hanging" {
  run --separate-stderr timeout 20 "$RLOCK" --url "redis://127.0.0.1:$TLS_PORT/0" \
    --command-timeout 2s --connect-timeout 2s status k
  [[ $status == 69 || $status == 70 ]] || fail "exit $status; stderr: $stderr"
  assert_equal "${#stderr_lines[@]}" 1
}

@test "redis:// to a TLS port says so at once (69), even with --wait: a mismatch is no reset" {
  # A TLS port resets plain text, as a server going down does; rlock asks the port for a
  # TLS handshake before it counts the reset as one that may pass.
  start=$(now_ms)
  rl --url "redis://127.0.0.1:$TLS_PORT/0" run --wait 60s tls-mismatch -- true
  elapsed=$(($(now_ms) - start))
  assert_error 69
  assert_equal "$stderr" "rlock: Redis at redis://127.0.0.1:$TLS_PORT/0 speaks TLS: it resets \
plain-text connections; use rediss:// instead of redis:// (or the server's plain-text port)"
  assert [ "$elapsed" -lt "$(slack 3000)" ] # not the 60s of --wait
}

@test "-v over TLS shows the round trips" {
  rl -v --url "$TLS_URL" --tls-ca-cert "$TLS_DIR/ca.crt" status tls-verbose
  assert_equal "$status" 1
  assert_regex "$stderr" 'EVALSHA(_RO)? [0-9.]+ms'
}

# --- libssl is loaded only for TLS (docs/DESIGN.md, "Start-up cost") --------------------

@test "rlock links no TLS library: libssl is loaded only for rediss://" {
  command -v readelf >/dev/null || skip "readelf not installed"
  run -0 readelf -d "$RLOCK"
  refute_output --partial libssl
  refute_output --partial libcrypto
}

@test "a redis:// run never maps libssl; a rediss:// run does" {
  bg_start plain "$RLOCK" --url "redis://127.0.0.1:$PLAIN_PORT/0" run tls-maps -- \
    sh -c 'touch "$1/plain-up"; sleep 30' x "$BATS_TEST_TMPDIR"
  wait_for_file "$BATS_TEST_TMPDIR/plain-up"
  run -0 cat "/proc/$BG_PID/maps"
  refute_output --partial libssl
  kill -TERM "$BG_PID"
  bg_wait "$BG_PID"
  bg_start tls "$RLOCK" --url "$TLS_URL" --tls-ca-cert "$TLS_DIR/ca.crt" run tls-maps -- \
    sh -c 'touch "$1/tls-up"; sleep 30' x "$BATS_TEST_TMPDIR"
  wait_for_file "$BATS_TEST_TMPDIR/tls-up"
  run -0 cat "/proc/$BG_PID/maps"
  assert_output --partial libssl
  kill -TERM "$BG_PID"
  bg_wait "$BG_PID"
}

@test "a libssl that cannot be loaded: rediss:// exits 69 naming it, redis:// still works" {
  mkdir -p "$BATS_TEST_TMPDIR/badlib"
  # An empty file by every name the build could have chosen: dlopen searches
  # LD_LIBRARY_PATH first and fails on it ("file too short").
  for name in libssl.so.3 libssl.so.1.1 libssl.so; do : >"$BATS_TEST_TMPDIR/badlib/$name"; done
  LD_LIBRARY_PATH=$BATS_TEST_TMPDIR/badlib rl --url "$TLS_URL" --tls-ca-cert "$TLS_DIR/ca.crt" status tls-nolib
  assert_error 69
  assert_equal "${stderr_lines[0]:0:35}" "rlock: TLS needs OpenSSL's libssl.s"
  LD_LIBRARY_PATH=$BATS_TEST_TMPDIR/badlib rl --url "redis://127.0.0.1:$PLAIN_PORT/0" status tls-nolib
  assert_equal "$status" 1 # free
}
