#!/usr/bin/env bats
# ctest-labels: topology
# Redis Sentinel, a planned failover (SENTINEL FAILOVER) that stays half done: the
# sentinels name the promoted replica while the old master still takes writes (issue 20
# item 1). A grant counts only if the sentinels, asked after it was made, still name the
# master that made it; a void one is released there and the waiter goes on, on the master
# they name. Real servers and sentinels (tests/helpers/topology.bash, slow_failover_setup).

bats_require_minimum_version 1.5.0

load helpers/redis
load helpers/topology

setup() {
  T=$BATS_TEST_TMPDIR
  write_gate "$T/gate"
}

@test "a waiter granted on a master the sentinels no longer name does not run there: it gets the lock on the new one" {
  slow_failover_setup PC plannedC
  # The waiter's sentinel user may only ask for the address: answers without an epoch,
  # which never move a process that stays (only a newer epoch or +switch-master do), so
  # it stays on the old master however often it asks.
  sentinel_address_only_user PCSENT1 PCSENT2 PCSENT3
  tok=$("$RLOCK" --url "$PC_URL1" acquire --ttl 60s s-void)
  RLOCK_SENTINEL_PASSWORD=pw rlock_bg w -v --sentinel-user getaddr --url "$PC_URL1" \
    run --wait 60s s-void -- sh -c 'echo "$RLOCK_FENCE" >>"$0/w.fences"' "$T"
  waiter=$BG_PID
  wait_until "[[ \$(rcli_to PCMASTER zcard 'lock:{s-void}:queue') == 1 ]]"
  slow_failover_start PC plannedC
  # Released on the old master, which still answers ROLE with master: the waiter, first
  # in its line there, is granted there, after every sentinel named the new master.
  "$RLOCK" --url "redis://127.0.0.1:$PCMASTER_PORT" release s-void --token "$tok"
  "$RLOCK" --url "redis://127.0.0.1:$PCREPLICA_PORT" release s-void --token "$tok"
  bg_wait "$waiter" 30
  assert_equal "$BG_STATUS" 0
  # It ran once, with the new master's fence.
  assert_equal "$(cat "$T/w.fences")" 2
  assert_equal "$(rcli_to PCREPLICA get 'lock:{s-void}:fence')" 2
  grep -q "which the sentinels no longer name as the master: released there" "$T/w.err" ||
    fail "$(cat "$T/w.err")"
  # Released on the old master too.
  assert_equal "$(rcli_to PCMASTER exists 'lock:{s-void}')" 0
  planned_window_open PC plannedC || fail "the failover ended too early: the window was not tested"
  redis_resume PCSLOW
}

@test "a renewal made on a master the sentinels no longer name does not count: the holder renews on the new one" {
  slow_failover_setup PD plannedD
  # As above: answers without an epoch, so only a survey after a renewal moves the holder.
  sentinel_address_only_user PDSENT1 PDSENT2 PDSENT3
  RLOCK_SENTINEL_PASSWORD=pw rlock_bg h -v --sentinel-user getaddr --url "$PD_URL1" \
    run --ttl 3s s-renew -- sh "$T/gate" "$T" h
  holder=$BG_PID
  wait_for_file "$T/h.started"
  tok=$(rcli_to PDMASTER get 'lock:{s-renew}')
  [[ -n $tok ]] || fail "not granted on the master"
  slow_failover_start PD plannedD
  # The promoted replica has the grant (replicated before the failover) and nothing the old
  # master takes from now on. The holder's renewals there do not count: it must renew on
  # the new master before the lease it has there (3s) runs out.
  assert_equal "$(rcli_to PDREPLICA get 'lock:{s-renew}')" "$tok"
  # Timing is the point here: the new master's lease must outlive the 3s it had at the
  # promotion, so it is watched for 4.5s (every 100ms) and must never be gone.
  local end=$(($(now_ms) + 4500))
  while (($(now_ms) < end)); do
    [[ $(rcli_to PDREPLICA get 'lock:{s-renew}') == "$tok" ]] ||
      fail "the new master's lease ran out: $(cat "$T/h.err")"
    sleep 0.1
  done
  grep -q "which the sentinels no longer name as the master (failover): the renewal does not count" \
    "$T/h.err" || fail "$(cat "$T/h.err")"
  # Still held there, by the same token: nobody else gets it.
  run "$RLOCK" --url "redis://127.0.0.1:$PDREPLICA_PORT" acquire --no-wait s-renew
  assert_equal "$status" 75
  touch "$T/h.go"
  bg_wait "$holder" 30
  assert_equal "$BG_STATUS" 0
  assert_equal "$(rcli_to PDREPLICA exists 'lock:{s-renew}')" 0
  planned_window_open PD plannedD || fail "the failover ended too early: the window was not tested"
  redis_resume PDSLOW
}
