#!/usr/bin/env bats
# ctest-labels: topology
# `rlock top -b` (the man page's "top") on every topology: the header's status line names
# where it looks (the master Sentinel names, a Cluster's masters, a quorum's masters that
# are down or refuse) and the rows keep coming across the topology's faults: a planned Sentinel
# failover, locks in several Cluster slots, a quorum master killed. Each test starts the
# servers it needs.

bats_require_minimum_version 1.5.0

load helpers/redis
load helpers/topology

setup() {
  T=$BATS_TEST_TMPDIR
}

# last_snapshot FILE: the last whole snapshot of a `top -b` output (a header, ..., an
# empty line).
last_snapshot() {
  awk '/^rlock top /{s=""} {s=s $0 "\n"} /^$/{last=s} END{printf "%s", last}' "$1"
}

# wait_header REGEX [TIMEOUT_S=20]: waits until the header of top's last whole snapshot
# matches REGEX; on a timeout, the failure shows that snapshot and top's stderr, so that
# what top printed instead is in the log.
wait_header() {
  wait_until "last_snapshot '$T/top.out' | grep -q -- '$1'" "${2:-20}" && return 0
  echo "# top's last snapshot:" >&2
  last_snapshot "$T/top.out" | sed 's/^/#   /' >&2
  echo "# top's stderr:" >&2
  tail -n 20 "$T/top.err" | sed 's/^/#   /' >&2
  return 1
}

@test "Sentinel: the status line names the master, across a planned failover the new one, rows keep coming" {
  sentinel_setup rlmaster
  export RLOCK_URL=$SENTINEL_URL
  "$RLOCK" acquire --ttl 5m --label sen-holder tt-sen >/dev/null
  bg_start top "$RLOCK" top -b --interval 200ms 'tt-*'
  wait_header "^rlock top .*/rlmaster, master 127\.0\.0\.1:$SMASTER_PORT  locks: 1 shown"
  sentinel_failover
  wait_header "^rlock top .*/rlmaster, master 127\.0\.0\.1:$SREPLICA_PORT  locks: 1 shown" 30
  run last_snapshot "$T/top.out"
  assert_line --regexp '^  tt-sen +exclusive +sen-holder '
  # every snapshot, during the failover too, shows the lock (a refresh that failed keeps
  # the last rows, and says why); counted once top stopped appending, so that both counts
  # see the same snapshots
  kill -TERM "$BG_PID"
  bg_wait "$BG_PID" 10
  assert_equal "$(grep -c '^  tt-sen ' "$T/top.out")" "$(grep -c '^rlock top ' "$T/top.out")"
}

@test "Cluster: the status line counts the masters, the locks of every slot are shown" {
  cluster_start 3
  export RLOCK_URL=$CLUSTER_URL
  local i key
  for i in 1 2 3; do
    key=$(cluster_key_on "$i" tc)
    "$RLOCK" acquire --ttl 5m --label "on-node-$i" "$key" >/dev/null
  done
  run -0 "$RLOCK" top -b --count 1 'tc-*'
  assert_line --index 0 --regexp "^rlock top  .*  cluster of 3 masters via redis://127\.0\.0\.1:$CLUSTER1_PORT/0  locks: 3 shown, 0 hidden  "
  for i in 1 2 3; do assert_line --regexp "^  tc-[0-9]+ +exclusive +on-node-$i "; done
}

@test "quorum: a master down is named in the status line, the rows are still shown; back up, it is not; one that refuses is named apart" {
  masters_start M 3
  export RLOCK_URL=$M_URLS
  "$RLOCK" acquire --ttl 5m --label quorum-holder tq-one >/dev/null
  bg_start top "$RLOCK" top -b --interval 200ms 'tq-*'
  wait_header "^rlock top .*  quorum of 3 masters  locks: 1 shown"
  redis_kill M2
  wait_header "^rlock top .*  quorum of 3 masters, 1 down: redis://127\.0\.0\.1:$M2_PORT/0  locks: 1 shown"
  run last_snapshot "$T/top.out"
  assert_line --regexp '^  tq-one +exclusive +quorum-holder '
  refute_line --partial 'problem: '
  redis_restart M2
  wait_header "^rlock top .*  quorum of 3 masters  locks: 1 shown"
  # a master that answers but refuses (its ACL takes SCAN away) is named as such, not down
  rcli_to M3 acl setuser default -scan >/dev/null
  wait_header "^rlock top .*  quorum of 3 masters, 1 refused: redis://127\.0\.0\.1:$M3_PORT/0  locks: 1 shown"
  rcli_to M3 acl setuser default +@all >/dev/null
  wait_header "^rlock top .*  quorum of 3 masters  locks: 1 shown"
  # one that answers SCAN but refuses the scripts: the majority's rows, that master named.
  # tq-two is acquired while M3 refuses, so that it is on M1 and M2, the majority left
  # (acquired before, it could be granted by M1 and M3 alone, M2 never reached once
  # they had decided; tq-one is on M2 only if M2 kept it across its restart)
  rcli_to M3 acl setuser default -evalsha_ro -evalsha -eval_ro -eval >/dev/null
  "$RLOCK" acquire --ttl 5m --label on-two tq-two >/dev/null 2>"$T/acquire.err"
  wait_header "^rlock top .*  quorum of 3 masters, 1 refused: redis://127\.0\.0\.1:$M3_PORT/0  locks: [12] shown"
  run last_snapshot "$T/top.out"
  assert_line --regexp '^  tq-two +exclusive +on-two '
}
