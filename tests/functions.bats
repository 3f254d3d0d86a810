#!/usr/bin/env bats
# ctest-labels: fast
# RLOCK_FUNCTIONS=on: rlock's scripts as one Redis 7 Functions library
# (cmake/functions_library.py), called by FCALL and loaded by rlock where it is missing;
# EVALSHA where the server or the ACL cannot (docs/PROTOCOL.md, "Functions").
# shellcheck disable=SC2154 # $stderr and $stderr_lines come from `run --separate-stderr`

bats_require_minimum_version 1.5.0

load helpers/redis

setup_file() {
  redis_start
  scripts_setup
  LIB=$(sed -n '1s/^#!lua name=//p' "$SCRIPTS/functions.lua")
  export LIB
}

# Functions came with Redis 7.
need_functions() {
  [[ $(rcli info server | tr -d '\r' | sed -n 's/^redis_version:\([0-9]*\).*/\1/p') -ge 7 ]] ||
    skip "Redis < 7 has no Functions"
}

@test "the build's library loads: FUNCTION LOAD accepts it, named for the protocol and its text" {
  need_functions
  [[ -s $SCRIPTS/functions.lua ]] || skip "this build has no Functions library (no Python)"
  [[ $LIB =~ ^rlock_4_[0-9a-f]{12}$ ]] || fail "library name: $LIB"
  rcli function flush >/dev/null
  run rcli -x function load <"$SCRIPTS/functions.lua"
  assert_output "$LIB"
  # Every script is a function carrying the same hash (versions coexist on one server),
  # the read-only ones no-writes.
  hash=${LIB##*_}
  run rcli function list libraryname "$LIB"
  for f in acquire extend release leave undo status break forget fence history nest nest_ro list; do
    assert_output --partial "${f}_$hash"
  done
  # Loaded again: refused as existing, never replaced.
  run rcli -x function load <"$SCRIPTS/functions.lua"
  assert_output --partial "already exists"
  rcli function flush >/dev/null
}
