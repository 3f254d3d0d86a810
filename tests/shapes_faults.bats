#!/usr/bin/env bats
# ctest-labels: fast faults
# Fault injection against the lock shapes (shared locks, run --done-for,
# --and): each test states a promise of docs/GUIDE.md ("Shared locks", "Cron: once per
# period", "Several keys, all or nothing") and fails while the
# code breaks it (each was found by a fault-injection review and fixed).

# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell
load helpers/redis

bats_require_minimum_version 1.5.0

setup_file() { redis_start; }

setup() {
  T=$BATS_TEST_TMPDIR
  write_gate "$T/gate.sh"
}

# --- --done-for with --and ----------------------------------------------------------------

@test "--done-for --and: a run that lost one of its keys (76) marks none of them done" {
  # the command succeeds, but one key was deleted under it (no renewal noticed it yet):
  # the run reports the loss, so the period must not count as done on the other key
  run -76 "$RLOCK" run --done-for 1h dfa --and dfb -- sh -c 'redis-cli -p "$0" del "lock:{dfb}" >/dev/null' "$REDIS_PORT"
  run -0 "$RLOCK" run -n dfa -- true
}

# --- nesting under --and ------------------------------------------------------------------

@test "a nested release --and never releases an outer key, whichever key it names first" {
  # inside `run na --and nb`, a release naming a key the run does not hold first and one
  # it holds second must not free the held one while the run goes on
  run -0 "$RLOCK" run na --and nb -- sh -c '
    "$0" release --token "$RLOCK_TOKEN" nc --and na
    "$0" status na >/dev/null || echo "na freed under its run"' "$RLOCK"
  refute_output --partial "freed under its run"
}

@test "many --and keys: a nested run of one of them runs at once instead of waiting for itself" {
  # 260 keys: RLOCK_HELD keeps only 256 entries, dropping the first keys given
  args=()
  for i in $(seq 1 260); do args+=(--and "mk$i"); done
  run "$RLOCK" run mk0 "${args[@]}" -- sh -c '"$0" run --wait "$1" mk0 -- echo nested-ran' "$RLOCK" "$(slack 10)s"
  # refusing that many keys up front (64) keeps the promise too
  if ((status != 64)); then
    assert_equal "$status" 0
    assert_output --partial nested-ran
  fi
}

@test "long --and keys: RLOCK_HELD past 64 KiB still lets a nested release leave the outer lock held" {
  # 126 keys of ~500 bytes make RLOCK_HELD larger than 64 KiB, and the child ignores all of it
  p=$(printf 'k%.0s' $(seq 1 500))
  args=()
  for i in $(seq 1 125); do args+=(--and "$p$i"); done
  run "$RLOCK" run "$p" "${args[@]}" -- sh -c '
    "$0" release --token "$RLOCK_TOKEN" "$RLOCK_KEY"
    "$0" status "$RLOCK_KEY" >/dev/null || echo "outer key freed under its run"' "$RLOCK"
  # refusing that many keys up front (64) keeps the promise too
  if ((status != 64)); then
    assert_equal "$status" 0
    refute_output --partial "freed under its run"
  fi
}

@test "--and: a key lost while the next key's first contact is retried is taken again before the command runs" {
  # the second key's first acquire is cut (RST); while rlock retries it (--wait), the
  # server loses the first key (a restart without data, here a DEL): the command must
  # not start until it holds the first key again
  redis_stop PROXY # one fault proxy per test
  proxy_start "$REDIS_PORT"
  printf '%s\n' '{gz2}' >"$PROXY_DIR/reset"
  proxy_arm_cut
  bg_start g "$RLOCK" --url "$PROXY_URL" --command-timeout 1s run --wait 30s gz1 --and gz2 -- sh -c '
    [ "$(redis-cli -p "$0" get "lock:{gz1}")" = "$RLOCK_TOKEN" ] || echo "ran without gz1"' "$REDIS_PORT"
  g=$BG_PID
  wait_until '[ "$(proxy_state armed)" = 0 ]' 20
  proxy_partition
  rcli del 'lock:{gz1}' >/dev/null
  sleep 1
  proxy_heal
  bg_wait "$g" "$(slack 30)"
  run cat "$T/g.out"
  refute_output --partial "ran without gz1"
}

@test "--and: a confirmation of the held keys that fails does not start the command" {
  # holding ck1 while waiting for ck2, ck1 is lost (deleted behind its back); when ck2
  # comes, the held keys are renewed once more before the command may start, and that
  # renewal's connection is cut: the command must not start on an unconfirmed ck1
  t=$("$RLOCK" acquire --ttl 60s ck2)
  redis_stop PROXY # one fault proxy per test
  proxy_start "$REDIS_PORT"
  bg_start c "$RLOCK" --url "$PROXY_URL" run --wait 30s ck1 --and ck2 -- sh -c '
    [ "$(redis-cli -p "$0" get "lock:{$RLOCK_KEY}")" = "$RLOCK_TOKEN" ] || echo "ran without $RLOCK_KEY"' "$REDIS_PORT"
  c=$BG_PID
  wait_until '[ "$(rcli zcard "lock:{ck2}:queue")" = 1 ]' 20
  rcli del 'lock:{ck1}' >/dev/null
  printf '%s\n' '{ck1}' >"$PROXY_DIR/reset"
  proxy_arm_cut
  "$RLOCK" release ck2 --token "$t"
  bg_wait "$c" "$(slack 30)"
  [ "$(proxy_state armed)" = 0 ] || fail "the confirmation was never sent"
  run cat "$T/c.out"
  refute_output --partial "ran without ck1"
}

# --- the marker and --limit keys ------------------------------------------------------------

# p3_acquire KEY TOKEN TTL_MS LIMIT: rlock 0.4.0's acquire script (protocol 3), try mode.
p3_acquire() {
  local k=$1
  rcli --raw eval "$(<"$BATS_TEST_DIRNAME/fixtures/protocol-v3/acquire.lua")" 6 "lock:{$k}" \
    "lock:{$k}:fence" "lock:{$k}:holders" "lock:{$k}:limit" "lock:{$k}:queue" "lock:{$k}:qseq" \
    "$2" "$3" "$4" try 6000 "lock:release:{$k}" host 42 user cmd 1
}

@test "a --limit key never keeps the shared marker: 0.4.0 semaphore hosts are not refused" {
  # a shared holder shortens its lease (extend --ttl 1s) and lets it run out: the marker,
  # made for its first 60s lease, outlives it; a semaphore then takes the key
  t=$("$RLOCK" acquire -s --ttl 60s lm)
  "$RLOCK" extend lm --token "$t" --ttl 1s
  sleep 1.2
  s=$("$RLOCK" acquire --limit 2 --ttl 30s lm)
  "$RLOCK" extend lm --token "$s" --ttl 30s
  # A marker on a --limit key makes 0.4.0 hosts refuse it during a rolling upgrade
  # (docs/PROTOCOL.md "Versions")
  assert_equal "$(rcli get 'lock:{lm}')" ""
  run -0 p3_acquire lm old 30000 2
  assert_line --index 0 OK
}

# --- the done mark and a refused PUBLISH ----------------------------------------------------

@test "--done-for: a release the ACL refuses (77, 'expires by itself within 30s') records nothing as done" {
  # an ACL user without rlock's channels: the release's PUBLISH is refused. Every other
  # release publishes first, so that a refusal changes nothing; the done path writes first
  rcli acl setuser dfnochan on '>pw' '~lock:*' resetchannels '&other:*' '+@all' >/dev/null
  run -77 "$RLOCK" --url "redis://dfnochan:pw@127.0.0.1:$REDIS_PORT/0" run --done-for 1h dacl -- true
  assert_output --partial "expires by itself within 30s"
  run "$RLOCK" status dacl --json
  refute_output --partial '"done":true'
}

@test "--done-for in a nested run is not silently dropped: refused (64), or the period counts as done" {
  run "$RLOCK" run ndf -- "$RLOCK" run --done-for 1h ndf -- true
  if ((status != 64)); then
    assert_equal "$status" 0
    run -75 "$RLOCK" run -n ndf -- true
  fi
}

@test "acquire --and --while-pid: releasing one of the keys leaves the other held (or is refused)" {
  # the script releases wka only; its keeper must not give wkb back behind its back
  run -0 bash -c '
    eval "$("$0" acquire --export --while-pid $$ wka --and wkb)" || exit 9
    "$0" release --token "$RLOCK_TOKEN" wka && rel=0 || rel=$?
    sleep 0.5
    "$0" status wkb >/dev/null && echo "wkb held (release $rel)" || echo "wkb free (release $rel)"' "$RLOCK"
  # a refusal (non-zero) that leaves both held keeps the promise too
  [[ $output == *"wkb held"* ]] || fail "$output" # (a refusal says why on stderr first)
}

@test "--done-for: extend with the done holder's token (status shows it) does not cut the period short" {
  run -0 "$RLOCK" run --done-for 1h --ttl 5s dext -- true
  tok=$("$RLOCK" status dext --json | grep -o '"token":"[0-9a-f]*"' | head -n 1 | cut -d'"' -f4)
  [[ -n $tok ]] || fail "no token in status"
  "$RLOCK" extend dext --token "$tok" || true # refusing it is fine too
  pttl=$(rcli pttl 'lock:{dext}')
  ((pttl > 3000000)) || fail "the done lease now ends in ${pttl}ms instead of about 1h"
}
