#!/usr/bin/env bats
# ctest-labels: topology slow
# ctest-timeout: 600
# Redis Sentinel: redis-sentinel://h1,h2,h3/MASTER. rlock asks the sentinels in turn for
# the master, confirms it with ROLE, follows a failover (SENTINEL FAILOVER) while it holds
# and while it waits, and --sync-replicas counts a lease only once replicas confirm it.
# A real master, a replica and three sentinels; the failovers are real.

bats_require_minimum_version 1.5.0

load helpers/redis
load helpers/topology

setup_file() {
  sentinel_setup rlmaster
}

setup() {
  T=$BATS_TEST_TMPDIR
  export RLOCK_URL=$SENTINEL_URL
  write_gate "$T/gate"
}

# fake_sentinel_reply PORT: a garbage_server mode, a sentinel that names a master at
# 127.0.0.1:PORT with no config-epoch in its SENTINEL MASTER reply (the same pair answers
# every command).
fake_sentinel_reply() {
  printf 'reply=*2\\r\\n$9\\r\\n127.0.0.1\\r\\n$%s\\r\\n%s\\r\\n' "${#1}" "$1"
}

# master / replica: the registry names of the two servers, as the sentinels see them now.
master() { sentinel_node_at "$(sentinel_master_port)"; }
replica() { if [[ $(master) == SMASTER ]]; then echo SREPLICA; else echo SMASTER; fi; }

# How many clients are subscribed to something on the sentinels (rlock's failover watch;
# sentinels subscribe to each other's hello channel on the masters, not on sentinels).
_watchers() {
  local i n=0
  for i in 1 2 3; do
    n=$((n + $(rcli_to "SENT$i" client list | grep -c ' sub=[1-9]' || true)))
  done
  echo "$n"
}

@test "the lock is taken on the master the sentinels name" {
  tok=$("$RLOCK" acquire --ttl 60s s-master)
  assert_equal "$(rcli_to "$(master)" get 'lock:{s-master}')" "$tok"
  run "$RLOCK" status s-master
  assert_success
  run "$RLOCK" run s-master-run -- sh -c 'echo "fence=$RLOCK_FENCE"'
  assert_success
  assert_output "fence=1"
  run "$RLOCK" release s-master --token "$tok"
  assert_success
}

@test "a sentinel that does not answer is skipped" {
  run "$RLOCK" --url "redis-sentinel://127.0.0.1:1,127.0.0.1:$SENT2_PORT/rlmaster" \
    run s-skip -- true
  assert_success
}

@test "a failover during a run: the holder keeps its lease on the new master" {
  rlock_bg holder -v run --ttl 4s s-run -- sh "$T/gate" "$T" h
  holder=$BG_PID
  wait_for_file "$T/h.started"
  old=$(master)
  tok=$(rcli_to "$old" get 'lock:{s-run}')
  [[ -n $tok ]] || fail "no lock on the master"
  # The holder watches for failovers once its command runs.
  wait_until "(( \$(_watchers) >= 1 ))"
  sentinel_failover
  new=$(master)
  [[ $new != "$old" ]] || fail "no failover"
  assert_equal "$(rcli_to "$new" get 'lock:{s-run}')" "$tok"
  # It renews on the new master...
  wait_until "(( \$(rcli_to $new pttl 'lock:{s-run}') > 3500 ))" 5
  wait_until "grep -q 'failover' '$T/holder.err'" 5
  touch "$T/h.go"
  bg_wait "$holder"
  assert_equal "$BG_STATUS" 0
  ! grep -q lost "$T/holder.err" || fail "$(cat "$T/holder.err")"
  # ...and releases there.
  assert_equal "$(rcli_to "$new" exists 'lock:{s-run}')" 0
}

@test "--layout plain and redisson: a failover during a run keeps the lease on the new master" {
  local layout key
  for layout in plain redisson; do
    key="lock:s-lay-$layout"
    [[ $layout == redisson ]] && key="s-lay-$layout"
    rm -f "$T/h.started" "$T/h.go"
    rlock_bg holder -v --layout "$layout" run --ttl 4s "s-lay-$layout" -- sh "$T/gate" "$T" h
    holder=$BG_PID
    wait_for_file "$T/h.started"
    old=$(master)
    [[ $(rcli_to "$old" exists "$key") == 1 ]] || fail "$layout: no lock on the master"
    wait_until "(( \$(_watchers) >= 1 ))"
    sentinel_failover
    new=$(master)
    [[ $new != "$old" ]] || fail "$layout: no failover"
    wait_until "(( \$(rcli_to $new pttl '$key') > 3500 ))" 5
    touch "$T/h.go"
    bg_wait "$holder"
    assert_equal "$BG_STATUS" 0
    ! grep -q lost "$T/holder.err" || fail "$layout: $(cat "$T/holder.err")"
    assert_equal "$(rcli_to "$new" exists "$key")" 0
  done
}

@test "a failover during a wait: the waiter follows the new master and gets the lock" {
  rlock_bg holder run --ttl 4s s-wait -- sh "$T/gate" "$T" h
  holder=$BG_PID
  wait_for_file "$T/h.started"
  rlock_bg waiter -v run --wait 60s s-wait -- sh -c 'echo "$RLOCK_FENCE" >"$0"' "$T/w.fence"
  waiter=$BG_PID
  wait_until "[[ \$(rcli_to $(master) zcard 'lock:{s-wait}:queue') == 1 ]]"
  sentinel_failover
  new=$(master)
  # The place in the line came over with the replica, and is kept.
  wait_until "[[ \$(rcli_to $new zcard 'lock:{s-wait}:queue') == 1 ]]"
  touch "$T/h.go"
  bg_wait "$holder"
  assert_equal "$BG_STATUS" 0
  bg_wait "$waiter"
  assert_equal "$BG_STATUS" 0
  assert_equal "$(cat "$T/w.fence")" 2
  assert_equal "$(rcli_to "$new" get 'lock:{s-wait}:fence')" 2
}

@test "after a failover, a new lock is taken on the new master" {
  sentinel_failover
  new=$(master)
  tok=$("$RLOCK" acquire --ttl 60s s-after)
  assert_equal "$(rcli_to "$new" get 'lock:{s-after}')" "$tok"
  [[ $(rcli_to "$new" role | head -n 1) == master ]]
}

@test "a hung sentinel does not keep a holder on a deposed master (no second holder)" {
  rlock_bg holder -v run --ttl 4s s-hung -- sh "$T/gate" "$T" h
  holder=$BG_PID
  wait_for_file "$T/h.started"
  wait_until "(( \$(_watchers) >= 1 ))"
  old=$(master) new=$(replica)
  new_port=$(rcli_to "$new" config get port | sed -n 2p)
  # The sentinel the holder asked (and watches) hangs; the others fail over.
  redis_pause SENT1
  wait_until "[[ \$(timeout 2 redis-cli -s $SENT2_SOCK sentinel failover $SENTINEL_MASTER) == OK ]]" 20
  wait_until "[[ \$(rcli_to SENT2 sentinel get-master-addr-by-name $SENTINEL_MASTER | sed -n 2p) == $new_port && \$(rcli_to $new role | head -n 1) == master ]]" 30
  # The holder follows: it renews on the new master (TTL 4s: a fresh lease is > 3.5s)...
  wait_until "(( \$(rcli_to $new pttl 'lock:{s-hung}') > 3500 ))" 10
  # ...so a newcomer asking the other sentinels finds the lock held, for longer than a TTL.
  url2="redis-sentinel://127.0.0.1:$SENT2_PORT,127.0.0.1:$SENT3_PORT/$SENTINEL_MASTER"
  for i in 1 2 3 4 5; do
    run -75 "$RLOCK" --url "$url2" acquire -n s-hung
    wait_until "(( \$(rcli_to $new pttl 'lock:{s-hung}') > 3500 ))" 5
  done
  redis_resume SENT1
  touch "$T/h.go"
  bg_wait "$holder"
  assert_equal "$BG_STATUS" 0
  ! grep -q lost "$T/holder.err" || fail "$(cat "$T/holder.err")"
  # Back to a steady state for the next tests: every sentinel names the new master, and
  # the old one replicates it.
  _rlock_poll "the sentinels to agree" 30 _rlock_all_sentinels_name "$new_port"
  _rlock_poll "the former master to replicate the new one" 30 _rlock_is_replica_of "$old" "$new_port"
  _rlock_poll "the replica to have every write" 20 _rlock_replicated "$new"
}

@test "SENTINEL FAILOVER half done: no second holder, whichever sentinel is asked first" {
  # The leader (PASENT1) has promoted PAREPLICA and waits for PASLOW: its SENTINEL MASTER
  # still names PAMASTER, which still answers ROLE with master; every sentinel's
  # get-master-addr-by-name names PAREPLICA (man page, CHOOSING A TOPOLOGY: Sentinel).
  slow_failover_setup PA plannedA
  run "$RLOCK" --url "$PA_URL1" run s-planned -- sh -c 'echo "$RLOCK_FENCE"'
  assert_success
  assert_output 1
  slow_failover_start PA plannedA
  rlock_bg a -v --url "$PA_URL1" run s-planned -- \
    sh -c 'echo "$RLOCK_FENCE" >"$0/a.fence"; exec sh "$0/gate" "$0" a' "$T"
  wait_for_file "$T/a.started"
  # Another client, asking another sentinel first, finds the lock held.
  run "$RLOCK" --url "$PA_URL2" run -n s-planned -- touch "$T/b.ran"
  [[ ! -e $T/b.ran ]] || fail "two holders: $(cat "$T/a.err")"
  assert_equal "$status" 75
  touch "$T/a.go"
  bg_wait "$BG_PID"
  assert_equal "$BG_STATUS" 0
  assert_equal "$(cat "$T/a.fence")" 2
  assert_equal "$(rcli_to PAREPLICA get 'lock:{s-planned}:fence')" 2
  # The fences go on growing, whichever sentinel is listed first.
  run "$RLOCK" --url "$PA_URL2" run s-planned -- sh -c 'echo "$RLOCK_FENCE"'
  assert_output 3
  run "$RLOCK" --url "$PA_URL1" run s-planned -- sh -c 'echo "$RLOCK_FENCE"'
  assert_output 4
  planned_window_open PA plannedA || fail "the failover ended too early: the window was not tested"
  redis_resume PASLOW
}

@test "a holder granted on a deposed master learns it from the sentinels before it renews (76)" {
  slow_failover_setup PB plannedB
  garbage_start_named PBFAKE "$(fake_sentinel_reply "$PBMASTER_PORT")"
  slow_failover_start PB plannedB
  # Its sentinels: one that names the deposed master (no epoch), and PBSENT2, which knows
  # better but hangs while the holder asks.
  redis_pause PBSENT2
  rlock_bg h -v --url "redis-sentinel://127.0.0.1:$PBFAKE_PORT,127.0.0.1:$PBSENT2_PORT/plannedB" \
    run --ttl 30s s-deposed -- sh "$T/gate" "$T" h
  holder=$BG_PID
  wait_for_file "$T/h.started"
  [[ -n $(rcli_to PBMASTER get 'lock:{s-deposed}') ]] || fail "not granted on the deposed master"
  assert_equal "$(rcli_to PBREPLICA exists 'lock:{s-deposed}')" 0
  start=$(now_ms)
  redis_resume PBSENT2
  # PBSENT2 names the new master with a newer epoch: the holder moves, finds no lease there.
  bg_wait "$holder" 30
  took=$(($(now_ms) - start))
  assert_equal "$BG_STATUS" 76
  grep -q "failover: the master of 'plannedB' is now 127.0.0.1:$PBREPLICA_PORT" "$T/h.err" ||
    fail "$(cat "$T/h.err")"
  grep -q "lost the lock 's-deposed'" "$T/h.err" || fail "$(cat "$T/h.err")"
  # Long before its first renewal (TTL/3 = 10s).
  ((took < 9000)) || fail "took ${took}ms"
  redis_resume PBSLOW
}

@test "sentinels that disagree: the highest configuration epoch wins" {
  # A sentinel listed first names another master (a standalone server, ROLE master) without
  # an epoch; the real sentinels name SMASTER's successor with theirs.
  redis_start_named OTHERM
  garbage_start_named OTHERSENT "$(fake_sentinel_reply "$OTHERM_PORT")"
  url="redis-sentinel://127.0.0.1:$OTHERSENT_PORT,127.0.0.1:$SENT2_PORT,127.0.0.1:$SENT3_PORT/rlmaster"
  tok=$("$RLOCK" --url "$url" acquire --ttl 60s s-epoch)
  assert_equal "$(rcli_to "$(master)" get 'lock:{s-epoch}')" "$tok"
  assert_equal "$(rcli_to OTHERM exists 'lock:{s-epoch}')" 0
}

@test "a sentinel that hangs costs 100 ms more, not its share of --command-timeout" {
  redis_pause SENT1
  start=$(now_ms)
  # A hung sentinel may take three quarters of --command-timeout (7.5s): the others answer, and
  # it gets only 100 ms more.
  run --separate-stderr "$RLOCK" --command-timeout 10s status s-share
  took=$(($(now_ms) - start))
  redis_resume SENT1
  assert_equal "$status" 1 # free: the other sentinels answered
  # A promise, not scaled: about 100 ms more, not 7.5s; the rest is room for a slow
  # machine to start and end rlock.
  ((took < 4000)) || fail "took ${took}ms"
}

@test "a sentinel that answers garbage, or nothing useful, is outvoted by one that answers" {
  garbage_start_named JUNKSENT garbage
  garbage_start_named BADTYPESENT badtype
  url="redis-sentinel://127.0.0.1:$JUNKSENT_PORT,127.0.0.1:$BADTYPESENT_PORT,127.0.0.1:$SENT3_PORT/rlmaster"
  run "$RLOCK" --command-timeout 3s --url "$url" run s-junk -- true
  assert_success
}

@test "a sentinel naming a replica with a newer epoch: refuted by ROLE, then ranked last" {
  # A sentinel that claims epoch 1000 for the replica: the first answer wins, ROLE refutes
  # it, and from then on the real sentinels' master is used, also by a holder's polls.
  port=$(rcli_to "$(replica)" config get port | sed -n 2p)
  garbage_start_named LIARSENT "sentinel=127.0.0.1:$port:1000"
  url="redis-sentinel://127.0.0.1:$LIARSENT_PORT,127.0.0.1:$SENT2_PORT/rlmaster"
  rlock_bg liar -v --url "$url" --command-timeout 5s run s-liar -- sh "$T/gate" "$T" l
  holder=$BG_PID
  wait_for_file "$T/l.started"
  grep -q "answers ROLE with 'slave'" "$T/liar.err" || fail "$(cat "$T/liar.err")"
  # Three polls later it still holds, on the master.
  wait_until "(( \$(grep -c 'epoch 1000' '$T/liar.err') >= 4 ))" 20
  assert_equal "$(rcli_to "$(master)" exists 'lock:{s-liar}')" 1
  touch "$T/l.go"
  bg_wait "$holder"
  assert_equal "$BG_STATUS" 0
  ! grep -q "failover:" "$T/liar.err" || fail "$(cat "$T/liar.err")"
}

@test "a sentinel that names a replica is passed over for the next one" {
  port=$(rcli_to "$(replica)" config get port | sed -n 2p)
  garbage_start_named STALESENT "$(fake_sentinel_reply "$port")"
  run "$RLOCK" --command-timeout 3s \
    --url "redis-sentinel://127.0.0.1:$STALESENT_PORT,127.0.0.1:$SENT2_PORT/rlmaster" \
    run s-stale -- true
  assert_success
}

@test "a master that refuses the URL's password: 77 at once, not after --command-timeout" {
  start=$(now_ms)
  rl --url "redis-sentinel://:wrongpw@127.0.0.1:$SENT1_PORT/rlmaster" status k
  took=$(($(now_ms) - start))
  assert_error 77
  [[ $stderr == *"has no password set"* && $stderr != *wrongpw* ]] || fail "$stderr"
  ((took < 2000)) || fail "took ${took}ms"
}

@test "a sentinel's answer rlock cannot use: one line, 70" {
  garbage_start_named OKSENT 'reply=+OK\r\n'
  rl --url "redis-sentinel://127.0.0.1:$OKSENT_PORT/rlmaster" status k
  assert_error 70
  [[ $stderr == *"no sentinel named a master of 'rlmaster'"* ]] || fail "$stderr"
}

@test "--sync-replicas 1 with the replica running: acquired, renewed and extended" {
  run "$RLOCK" run --ttl 1500ms --sync-replicas 1 s-sync -- sleep 1.2
  assert_success
  tok=$("$RLOCK" acquire --sync-replicas 1 --ttl 60s s-sync2)
  run "$RLOCK" extend s-sync2 --token "$tok" --sync-replicas 1
  assert_success
  assert_equal "$(rcli_to "$(replica)" get 'lock:{s-sync2}')" "$tok"
}

@test "--sync-replicas 1 with the replica stopped: not acquired, one line, 69, released again" {
  redis_pause "$(replica)"
  rl --command-timeout 1s acquire --sync-replicas 1 s-nosync
  assert_error 69
  [[ $stderr == *"only 0 of 1 replicas confirmed"*"--sync-replicas"* ]] || fail "$stderr"
  assert_equal "$(rcli_to "$(master)" exists 'lock:{s-nosync}')" 0
  # An availability failure: -E does not turn it into "someone else has it".
  rl --command-timeout 1s run -E 0 --sync-replicas 1 s-nosync -- touch "$T/ran"
  assert_equal "$status" 69
  [[ ! -e $T/ran ]] || fail "the command ran"
  redis_resume "$(replica)"
}

@test "--sync-replicas during a run: renewals the replica cannot confirm lose the lease (76)" {
  rlock_bg holder run --ttl 2s --sync-replicas 1 --command-timeout 500ms s-syncrun -- sleep 30
  holder=$BG_PID
  wait_until "[[ \$(rcli_to $(master) exists 'lock:{s-syncrun}') == 1 ]]"
  redis_pause "$(replica)"
  bg_wait "$holder" 20
  redis_resume "$(replica)"
  assert_equal "$BG_STATUS" 76
  grep -q "lost the lock 's-syncrun'" "$T/holder.err" || fail "$(cat "$T/holder.err")"
}

@test "no sentinel answering during a run: renewals do not count, the lease is lost (76)" {
  # Its only sentinel is behind a proxy that goes silent: a failover could happen unseen.
  proxy_start_named SPX "$SENT1_PORT"
  rlock_bg holder -v --url "redis-sentinel://127.0.0.1:$SPX_PORT/rlmaster" \
    run --ttl 2s --command-timeout 500ms s-nosent -- sleep 30
  holder=$BG_PID
  wait_until "[[ \$(rcli_to $(master) exists 'lock:{s-nosent}') == 1 ]]"
  proxy_partition SPX
  bg_wait "$holder" 20
  proxy_heal SPX
  assert_equal "$BG_STATUS" 76
  grep -q "but no sentinel confirmed it is still the master" "$T/holder.err" ||
    fail "$(cat "$T/holder.err")"
  grep -q "lost the lock 's-nosent'" "$T/holder.err" || fail "$(cat "$T/holder.err")"
}

@test "--sync-replicas more than there are replicas: 69" {
  rl --command-timeout 500ms acquire --sync-replicas 2 s-two
  assert_error 69
  [[ $stderr == *"only 1 of 2 replicas"* ]] || fail "$stderr"
}

# --- bad input ----------------------------------------------------------------------------

@test "a master name no sentinel knows: one line, 69" {
  rl --url "redis-sentinel://127.0.0.1:$SENT1_PORT,127.0.0.1:$SENT2_PORT/nosuch" status k
  assert_error 69
  [[ $stderr == *"no sentinel knows a master named 'nosuch'"* ]] || fail "$stderr"
}

@test "no sentinel reachable: one line, 69" {
  port=$(free_port)
  rl --url "redis-sentinel://127.0.0.1:$port/rlmaster" acquire k
  assert_error 69
  [[ $stderr == *"no sentinel answered"*"127.0.0.1:$port"* ]] || fail "$stderr"
}

@test "a sentinel that names a node that is not a master: one line, 69" {
  port=$(rcli_to "$(replica)" config get port | sed -n 2p)
  garbage_start_named FAKESENT "$(fake_sentinel_reply "$port")"
  start=$(now_ms)
  rl --command-timeout 1s --url "redis-sentinel://127.0.0.1:$FAKESENT_PORT/rlmaster" acquire k
  assert_error 69
  [[ $stderr == *"name 127.0.0.1:$port as the master"*"answers ROLE with 'slave'"* ]] ||
    fail "$stderr"
}

@test "a master whose ACL refuses ROLE: the sentinels' word is taken, the lock works" {
  m=$(master)
  rcli_to "$m" acl setuser norole on '>pw' '~*' '&*' +@all -role >/dev/null
  url="redis-sentinel://norole:pw@127.0.0.1:$SENT1_PORT,127.0.0.1:$SENT2_PORT/rlmaster"
  run "$RLOCK" --url "$url" run s-norole -- sh -c 'echo "$RLOCK_FENCE"'
  rcli_to "$m" acl deluser norole >/dev/null
  assert_success
  assert_output 1
}

@test "a sentinel naming a server that answers ROLE with garbage: one line, 69" {
  garbage_start_named BADROLE badtype
  garbage_start_named BADROLESENT "sentinel=127.0.0.1:$BADROLE_PORT:7"
  rl --command-timeout 1s --url "redis-sentinel://127.0.0.1:$BADROLESENT_PORT/rlmaster" acquire k
  assert_error 69
  [[ $stderr == *"name 127.0.0.1:$BADROLE_PORT as the master"*"answers ROLE with ''"* ]] ||
    fail "$stderr"
}

@test "sentinels with a password of their own: RLOCK_SENTINEL_PASSWORD or --sentinel-password-file" {
  sentinel_start_named SENTAUTH rlmaster "$(sentinel_master_port)" --requirepass s3cret
  url="redis-sentinel://127.0.0.1:$SENTAUTH_PORT/rlmaster"
  rl --url "$url" status k
  assert_error 77
  RLOCK_SENTINEL_PASSWORD=s3cret run "$RLOCK" --url "$url" run s-auth -- true
  assert_success
  printf 's3cret\n' >"$T/pw"
  run "$RLOCK" --url "$url" --sentinel-password-file "$T/pw" run s-auth -- true
  assert_success
  RLOCK_SENTINEL_PASSWORD=wrong rl --url "$url" status k
  assert_error 77
  [[ $stderr != *s3cret* && $stderr != *wrong* ]] || fail "a password is shown: $stderr"
}

@test "a sentinel ACL that allows only get-master-addr-by-name: the address without an epoch" {
  sentinel_start_named SENTACL rlmaster "$(sentinel_master_port)"
  sentinel_address_only_user SENTACL
  url="redis-sentinel://127.0.0.1:$SENTACL_PORT/rlmaster"
  RLOCK_SENTINEL_PASSWORD=pw run --separate-stderr "$RLOCK" -v --sentinel-user getaddr \
    --url "$url" run s-acl -- sh -c 'echo "$RLOCK_FENCE"'
  assert_success
  assert_output 1
  [[ $stderr == *"names 127.0.0.1:$(sentinel_master_port) as the master of 'rlmaster'"* &&
    $stderr != *"(epoch"* ]] || fail "$stderr"
}

@test "sentinel options without a Sentinel URL, or a user without a password: 64" {
  printf 'x\n' >"$T/pw"
  rl --url "redis://127.0.0.1:1/0" --sentinel-password-file "$T/pw" status k
  assert_error 64
  [[ $stderr == *"redis-sentinel://"* ]] || fail "$stderr"
  rl --sentinel-user bob status k
  assert_error 64
  [[ $stderr == *"sentinel user 'bob' needs a password"* ]] || fail "$stderr"
  rl --sentinel-password-file /dev/null status k
  assert_error 64
  [[ $stderr == *"--sentinel-password-file '/dev/null'"* ]] || fail "$stderr"
  # A password for sentinels that have none: said so, naming where it came from.
  RLOCK_SENTINEL_PASSWORD=x rl status k
  assert_error 77
  [[ $stderr == *"sentinel at "*"from RLOCK_SENTINEL_PASSWORD"* ]] || fail "$stderr"
}

@test "rediss-sentinel://: TLS to the sentinels and to the master" {
  tls_setup
  local -a tls_args
  tls_server_args tls_args server no
  sentinel_start_named STLS tlsm "$TLS_PORT" "${tls_args[@]}" --tls-replication yes
  url="rediss-sentinel://127.0.0.1:$STLS_PORT/tlsm"
  run "$RLOCK" --url "$url" --tls-ca-cert "$TLS_DIR/ca.crt" run s-tls -- sh -c 'echo "$RLOCK_FENCE"'
  assert_success
  assert_output 1
  assert_equal "$(tls_cli get 'lock:{s-tls}:fence')" 1
  # A plain URL to the same sentinel is not TLS: no answer that counts.
  rl --url "redis-sentinel://127.0.0.1:$STLS_PORT/tlsm" --connect-timeout 1s status k
  assert_error 69
}

@test "nesting and acquire --while-pid work through Sentinel" {
  assert_nesting_and_while_pid snest # renewed on the master the sentinels name
  assert_keeper_release_and_break snest
}

@test "shared locks and --done-for work through Sentinel" {
  t1=$("$RLOCK" acquire -s --ttl 60s sshared)
  t2=$("$RLOCK" acquire -s --ttl 60s sshared)
  run -75 "$RLOCK" acquire -n sshared
  run -0 "$RLOCK" status sshared
  [[ $output == *"held shared by 2 holders"* ]]
  "$RLOCK" release sshared --token "$t1"
  "$RLOCK" release sshared --token "$t2"
  run -0 "$RLOCK" run --done-for 1h sdone -- true
  run -75 "$RLOCK" run --done-for 1h sdone -- true
  [[ $output == *"already done"* ]]
}

@test "history works through Sentinel" {
  run -0 "$RLOCK" run shist -- true
  run -0 "$RLOCK" history shist
  [ "${#lines[@]}" -eq 2 ]
  [[ ${lines[1]} == *released* ]]
}
