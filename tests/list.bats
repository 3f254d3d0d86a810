#!/usr/bin/env bats
# `rlock list` over many locks (issue 27): on one server that is no Cluster node, one
# read-only `list` script call per 512 locks (one prelude each, not one per lock), with
# the same lines as before; where a call cannot hold keys of several slots (a Cluster of
# one node) it falls back to each lock's status.

load helpers/redis
load helpers/topology

bats_require_minimum_version 1.5.0

setup_file() { redis_start; }

@test "600 held locks: two list script calls, every lock listed once with its holder, semaphores and shared locks as before" {
  local i
  for ((i = 0; i < 600; i++)); do echo "$i"; done |
    xargs -P 4 -I{} "$RLOCK" acquire --ttl 5m "many:{}" >/dev/null
  "$RLOCK" acquire --limit 3 many:sem >/dev/null
  "$RLOCK" acquire -s many:shr >/dev/null
  rcli config resetstat >/dev/null
  run -0 "$RLOCK" list 'many:*'
  assert_equal "${#lines[@]}" 602
  assert_line --regexp $'^many:599\t[^\t]+:[0-9]+\t[0-9]+\t[0-9]+\t0\trlock acquire\t$'
  assert_line --regexp $'^many:sem\t1/3\t'
  assert_line --regexp $'^many:shr\t1 shared\t'
  run -0 bash -c "redis-cli -p $REDIS_PORT info commandstats | tr -d '\r' | grep '^cmdstat_evalsha_ro:' | sed 's/^cmdstat_evalsha_ro:calls=\([0-9]*\),.*/\1/'"
  assert_output 2
  # --json still gives each lock's whole status
  run -0 "$RLOCK" list --json 'many:sem'
  assert_output --partial '"limit":3'
  assert_output --partial '"waiters":[]'
}

@test "a Cluster of one node refuses several slots in one call: list asks each lock instead" {
  redis_start_named ONE --cluster-enabled yes --cluster-config-file nodes.conf
  rcli_to ONE cluster addslotsrange 0 16383 >/dev/null
  wait_until "rcli_to ONE cluster info | grep -q cluster_state:ok"
  local url="redis://127.0.0.1:$ONE_PORT/0" i
  for i in 1 2 3; do "$RLOCK" -u "$url" acquire "one:$i" >/dev/null; done
  run -0 "$RLOCK" -u "$url" -v list 'one:*'
  assert_line --regexp $'^one:1\t'
  assert_line --regexp $'^one:3\t'
  assert_output --partial "asking each lock"
}
