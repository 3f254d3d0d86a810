#!/usr/bin/env bats
# ctest-labels: fast
# Inspection is read-only (docs/GUIDE.md "Connecting"): `status` and `list` work for an ACL user that may only
# read, subscribe and run read-only scripts, against a replica, and against a server
# without EVAL_RO/EVALSHA_RO (Redis 6, simulated with rename-command). Purging dead
# waiters is left to the commands that write.
# shellcheck disable=SC2154 # $stderr and $stderr_lines come from `run --separate-stderr`

bats_require_minimum_version 1.5.0

load helpers/redis
load helpers/topology

setup_file() {
  redis_start
  acl_readonly_user ro ropw
  replica_start REPLICA REDIS
  # ACL users are not replicated: the replica gets its own.
  acl_readonly_user --on REPLICA ro ropw
  redis_start_named OLD --rename-command EVAL_RO '' --rename-command EVALSHA_RO ''
}

# ro_url PORT: the read-only user's URL.
ro_url() { echo "redis://ro:ropw@127.0.0.1:$1/0"; }

replica_has() { [[ $(rcli_to REPLICA exists "$1") == 1 ]]; }

@test "the read-only user may not write (what the tests think it is)" {
  run rcli --user ro --pass ropw set x 1
  assert_output --partial NOPERM
}

@test "status works for a read-only ACL user: holder, waiter, exit 0" {
  tok=$("$RLOCK" acquire rok --ttl 60s)
  rlock_bg waiter acquire rok --wait 30s --ttl 5s
  wait_until "[[ \$(rcli zcard 'lock:{rok}:queue') == 1 ]]"
  rl --url "$(ro_url "$REDIS_PORT")" status rok
  assert_success
  assert_output --partial "rok: held"
  assert_output --partial "waiter 1."
  rl --url "$(ro_url "$REDIS_PORT")" status rok --json
  assert_success
  run jq -r '.holders[0].token, .waiter_count' <<<"$output"
  assert_equal "${lines[*]}" "$tok 1"
  rl --url "$(ro_url "$REDIS_PORT")" status ro-free
  assert_equal "$status" 1
}

@test "list works for a read-only ACL user" {
  "$RLOCK" acquire rol --ttl 60s >/dev/null
  rl --url "$(ro_url "$REDIS_PORT")" list 'ro*'
  assert_success
  assert_line --regexp $'^rol\t'
  rl --url "$(ro_url "$REDIS_PORT")" list --json
  assert_success
}

@test "a read-only user's acquire and break are refused with 77" {
  rl --url "$(ro_url "$REDIS_PORT")" acquire ro-write
  assert_error 77
  "$RLOCK" acquire ro-brk --ttl 60s >/dev/null
  rl --url "$(ro_url "$REDIS_PORT")" break ro-brk --yes
  assert_error 77
}

@test "status and list work against a replica" {
  tok=$("$RLOCK" acquire rep --ttl 60s)
  wait_until "replica_has 'lock:{rep}'"
  rl --url "$REPLICA_URL" status rep --json
  assert_success
  run jq -r '.holders[0].token' <<<"$output"
  assert_output "$tok"
  rl --url "$REPLICA_URL" list 'rep*'
  assert_success
  assert_line --regexp $'^rep\t'
  rl --url "$(ro_url "$REPLICA_PORT")" status rep
  assert_success
}

@test "a write against a replica is 69 (READONLY), not a crash" {
  # Retried within --command-timeout (a failover may be under way), then given up.
  rl --command-timeout 1s --url "$REPLICA_URL" acquire rep-write
  assert_error 69
  [[ $stderr == *READONLY* ]] || fail "$stderr"
}

@test "without EVAL_RO/EVALSHA_RO (as on Redis 6) status falls back to EVALSHA" {
  "$RLOCK" --url "$OLD_URL" acquire old --ttl 60s >/dev/null
  rl -v --url "$OLD_URL" status old
  assert_success
  assert_output --partial "old: held"
  assert_regex "$stderr" 'EVALSHA [0-9.]+ms'
  rcli_to OLD script flush >/dev/null
  rl --url "$OLD_URL" status old
  assert_success
}
