#!/usr/bin/env bats
# ctest-labels: faults
# Fault injection against the CI policies and the flight recorder (docs/GUIDE.md "CI
# policies", "What happened: the history"): each test names a promise they make, and
# failed on the code it was written against (c479d3a). Real servers, real faults: foreign
# values and ACL users in Redis, SIGSTOP of a waiter (an outage), a closed pipe, a quorum
# master paused during a release, a reply lost by fault_proxy.

# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell
load helpers/redis
load helpers/topology

bats_require_minimum_version 1.5.0

setup_file() {
  redis_start
  scripts_setup
}

setup() {
  T=$BATS_TEST_TMPDIR
  write_gate "$T/gate.sh"
}

# events KEY: the event names of KEY's history, oldest first, on one line.
events() { "$RLOCK" history "$1" --json | jq -r '[.[].event] | join(" ")'; }

n_waiters() {
  local j
  j=$(status_json "$1") || return 1
  j=${j#*\"waiters\":}
  grep -o '"token":' <<<"$j" | grep -c . || true
}
waiter_labels() { status_json "$1" | jq -r '[.waiters[].label] | join(" ")'; }
alive() { kill -0 "$1" 2>/dev/null && [[ $(ps -o stat= -p "$1") != Z* ]]; }

# ev SCRIPT KEY ARGS...: EVAL of a script as rlock sends it, with the six KEYS of lock KEY.
ev() {
  local file=$SCRIPTS/$1.lua k=$2
  shift 2
  rcli --raw eval "$(<"$file")" 6 "lock:{$k}" "lock:{$k}:fence" "lock:{$k}:holders" \
    "lock:{$k}:limit" "lock:{$k}:queue" "lock:{$k}:qseq" "$@"
}

# redis_commands: how many commands the server ran (scripts' own commands included),
# apart from EVAL/EVALSHA and the stats commands themselves, since CONFIG RESETSTAT.
redis_commands() {
  rcli info commandstats | tr -d '\r' |
    awk -F'[=,:]' '$1 ~ /^cmdstat_/ && $1 !~ /^cmdstat_(eval|evalsha|config|info)$/ {n += $3}
      END {print n + 0}'
}

# --- history must never break locking -----------------------------------------------------

@test "a foreign value at PREFIX{KEY}:log or :live never breaks run, release, status or list" {
  # Anybody may write a key under the prefix (another tool, an old script, a typo). The
  # history is a record, not the lock: the lock must keep working without it.
  rcli set 'lock:{wt}:log' 'not a stream' >/dev/null
  run -0 "$RLOCK" run wt -- true
  assert_equal "$(rcli exists 'lock:{wt}')" 0 # no holder left behind by a failed grant
  t=$("$RLOCK" acquire --ttl 60s wt)
  run -0 "$RLOCK" status wt
  run -0 "$RLOCK" list --prometheus
  assert_line 'rlock_held{key="wt"} 1'
  run -0 "$RLOCK" release wt --token "$t"
  assert_equal "$(rcli exists 'lock:{wt}')" 0
  rcli set 'lock:{wt2}:live' 'not a hash' >/dev/null
  run -0 "$RLOCK" run wt2 -- true
}

@test "an acquire the ACL refuses midway (a user without XADD) leaves no holder behind" {
  # A least-privilege user written for 0.4.0 (no stream commands) meets the new scripts:
  # whatever rlock answers, the lock must not stay taken by a token nobody holds.
  acl_lock_user nostream pw -@stream
  run "$RLOCK" --url "redis://nostream:pw@127.0.0.1:$REDIS_PORT/0" run --ttl 60s ns -- true
  echo "# exit $status: $output" >&3
  assert_equal "$(rcli exists 'lock:{ns}')" 0
  run -0 "$RLOCK" run --wait 0 ns -- true
}

# --- CI: supersede ---------------------------------------------------------------------------

@test "--supersede: an older waiter back from an outage never replaces a newer superseding waiter" {
  # "a newer waiter replaces the older ones; the line keeps the newest: deploy only the
  # latest". Job A waits; its runner stalls longer than A's place lease (6s); job B, newer,
  # joins with --supersede. When A comes back it must not throw B out and deploy the older
  # build: A leaves (superseded), B stays.
  t=$("$RLOCK" acquire --ttl 120s sup-out)
  rlock_bg a run --wait 120s --supersede --label A sup-out -- touch "$T/a.ran"
  a=$BG_PID
  wait_until '[ "$(n_waiters sup-out)" -eq 1 ]' 30
  kill -STOP "$a"
  wait_until '[ "$(n_waiters sup-out)" -eq 0 ]' "$(slack 15)" # A's place lapsed
  rlock_bg b run --wait 120s --supersede --label B sup-out -- touch "$T/b.ran"
  b=$BG_PID
  wait_until '[ "$(waiter_labels sup-out)" = B ]' 30
  kill -CONT "$a"
  # one of the two leaves the line: it must be the older one
  wait_until "! alive $a || ! alive $b" "$(slack 20)"
  alive "$b" || fail "the newer waiter B was thrown out: $(cat "$T/b.err")"
  bg_wait "$a" 10
  assert_equal "$BG_STATUS" 75
  assert_equal "$(waiter_labels sup-out)" B
  "$RLOCK" release sup-out --token "$t"
  bg_wait "$b" 20
  assert [ -e "$T/b.ran" ]
  assert [ ! -e "$T/a.ran" ]
}

@test "--supersede: a newcomer that replaces the only waiter of a free lock takes it at once" {
  # The old superseding waiter is at the head of a free lock (woken, not yet back). The
  # newcomer replaces it: nobody is ahead any more and the lock is free, so it is
  # granted in the same call, not queued behind nobody, told "taken" and left idle.
  t=$("$RLOCK" acquire --ttl 60s sup-free)
  rlock_bg a run --wait 60s --supersede --label old sup-free -- true
  a=$BG_PID
  wait_until '[ "$(n_waiters sup-free)" -eq 1 ]' 30
  kill -STOP "$a"
  "$RLOCK" release sup-free --token "$t"
  run --separate-stderr -0 "$RLOCK" run --wait 30s --supersede --label new sup-free -- echo ran
  assert_output ran
  assert_equal "$stderr" "" # not "waiting for 'sup-free', 1st in line; taken"
  kill -CONT "$a"
  bg_wait "$a" 20
  assert_equal "$BG_STATUS" 75
}

# --- history: exactly one ending per acquisition ----------------------------------------------

@test "a release the ACL refuses (no channel) is not recorded as released: the lock stayed held" {
  # Documented: without the channels, releasing is refused (77) and the lock stays held
  # until its TTL. The history must then say the lease expired, not that it was released.
  rcli acl setuser nochan on '>pw' '~lock:*' resetchannels +@all >/dev/null
  run -77 "$RLOCK" --url "redis://nochan:pw@127.0.0.1:$REDIS_PORT/0" run --ttl 2s nch -- true
  assert_equal "$(rcli exists 'lock:{nch}')" 1 # still held, as documented
  assert_equal "$(events nch)" "acquired"
  wait_until '[ "$(rcli exists "lock:{nch}")" = 0 ]' 10
  run -0 "$RLOCK" run nch -- true
  assert_equal "$(events nch)" "acquired expired acquired released"
}

@test "a lease deleted under its holder is recorded as lost with the holder's reason, not as expired" {
  # Every loss is recorded, as "lost" with why when rlock knows (docs/GUIDE.md "What
  # happened: the history"). The
  # holder's renewal finds the lease gone 1s into a 30s lease: it did not "run out".
  run -0 "$RLOCK" run --ttl 3s --on-lost warn lz -- \
    sh -c 'sleep 0.3; redis-cli -h 127.0.0.1 -p "$0" del "lock:{lz}" >/dev/null; sleep 2' "$REDIS_PORT"
  run -0 "$RLOCK" history lz --json
  assert_equal "$(jq -r '[.[].event] | join(" ")' <<<"$output")" "acquired lost"
  assert_equal "$(jq -r '.[1].why | length > 0' <<<"$output")" true
}

@test "a retried release of a kept lease (its reply lost) records 'kept' once" {
  # a retry of one release (same release id) is one release: one ending event
  proxy_start "$REDIS_PORT"
  sha=$(<"$SCRIPTS/release.sha1")
  assert_equal "$(rcli -x script load <"$SCRIPTS/release.lua")" "$sha"
  rlock_bg holder --url "$PROXY_URL" run --ttl 30s --min-hold 20s kr -- sh "$T/gate.sh" "$T" h
  holder=$BG_PID
  wait_for_file "$T/h.started" 20
  cuts=$(proxy_state cuts)
  proxy_arm_lose_reply "$sha"
  touch "$T/h.go"
  bg_wait "$holder" 30
  assert_equal "$BG_STATUS" 0
  assert_equal "$(proxy_state cuts)" $((cuts + 1)) # the first try's reply really was lost
  assert_equal "$(events kr)" "acquired kept"
}

@test "quorum: one acquisition has one ending in history, also when a master missed the release" {
  local i
  masters_start Q 3
  export RLOCK_URL=$Q_URLS
  rlock_bg holder --command-timeout 1s run --ttl 2s qe -- sh "$T/gate.sh" "$T" h
  holder=$BG_PID
  wait_for_file "$T/h.started" 20
  redis_pause Q3
  touch "$T/h.go"
  bg_wait "$holder" 20
  assert_equal "$BG_STATUS" 0 # released on a majority
  redis_resume Q3
  wait_until '[ "$(rcli_to Q3 exists "lock:{qe}")" = 0 ]' 10 # ran out on the one that missed it
  run -0 "$RLOCK" run --ttl 2s qe -- true
  run -0 "$RLOCK" history qe --json
  echo "$output" | jq -c '.[] | [.event, .masters, .of]' >&3
  tok=$(jq -r '.[0].tok' <<<"$output")
  endings=$(jq -r --arg t "$tok" '[.[] | select(.tok == $t and .event != "acquired") | .event] | join(" ")' <<<"$output")
  assert_equal "$endings" "released"
  for i in 1 2 3; do redis_stop "Q$i"; done
}

@test "a host with --history 0 records nothing, and erases nothing the others recorded" {
  # "0 turns recording off" on that host: its scripts must not consume the pending end of
  # another host's acquisition (the expiry it would have recorded), leaving it with none.
  "$RLOCK" acquire --ttl 1s h0 >/dev/null # recorded; nobody releases it
  wait_until '[ "$(rcli exists "lock:{h0}")" = 0 ]' 10
  run -0 "$RLOCK" --history 0 run h0 -- true
  run -0 "$RLOCK" run h0 -- true
  assert_equal "$(events h0)" "acquired expired acquired released"
}

# --- history: reading it ------------------------------------------------------------------------

@test "history --follow ends when its reader goes away (| head -1, a full disk) instead of looping" {
  "$RLOCK" run fh -- true
  bg_start f sh -c '"$0" history fh --follow -n 1 | head -1 >/dev/null; echo ended' "$RLOCK"
  # (it ends as soon as head leaves; events written to a closed pipe end it too)
  for i in 1 2 3; do "$RLOCK" run fh -- true; done
  wait_until "grep -q ended '$T/f.out'" "$(slack 10)"
  # and a write error is an error (not a read failure retried for ever)
  bg_start g sh -c '"$0" history fh --follow -n 1 >/dev/full; echo "exit $?"' "$RLOCK"
  wait_until "grep -q exit '$T/g.out'" "$(slack 10)"
  run cat "$T/g.out"
  refute_output --partial "exit 0"
}

@test "history is readable when a foreign writer added one huge event (fields are cut, not fatal)" {
  "$RLOCK" run huge -- true
  head -c $((9 * 1024 * 1024)) /dev/zero | tr '\0' A | rcli -x xadd 'lock:{huge}:log' '*' ev note who >/dev/null
  "$RLOCK" run --label after huge -- true
  run -0 "$RLOCK" history huge
  assert_line --partial "acquired    fence 1"
  assert_line --partial "released    fence 2, after"
}

@test "list --prometheus: two keys never give the same series (a duplicate voids the textfile)" {
  # node_exporter rejects a textfile with a repeated name+labels; label values must be
  # an injective escape of the key: backslash escaped before \x escapes are added.
  t=$("$RLOCK" acquire --ttl 60s 'pdup\x0ab')
  rcli set "$(printf 'lock:{pdup\nb}')" foreign-token px 60000 >/dev/null
  run -0 "$RLOCK" list --prometheus 'pdup*'
  assert_equal "$(grep -c '^rlock_held{' <<<"$output")" 2
  assert_equal "$(grep -v '^#' <<<"$output" | awk '{print $1}' | sort | uniq -d)" ""
  "$RLOCK" release 'pdup\x0ab' --token "$t"
}

# --- costs ------------------------------------------------------------------------------------

@test "a renewal's Redis work does not grow with the number of holders (history on)" {
  # Every script looks for expired holders: that must cost the expired ones, not every
  # live holder on every call (each of N shared readers renews every TTL/3: N² work).
  sha=$(rcli -x script load <"$SCRIPTS/acquire.lua")
  for i in $(seq 1 200); do
    echo "EVALSHA $sha 6 lock:{many} lock:{many}:fence lock:{many}:holders lock:{many}:limit lock:{many}:queue lock:{many}:qseq t$i 600000 0 try 6000 ch h 1 u c 0 shared '' 0 0 0 100"
  done >"$T/cmds"
  ev acquire one t1 600000 0 try 6000 ch h 1 u c 0 shared '' 0 0 0 100 >/dev/null
  rcli <"$T/cmds" >/dev/null
  assert_equal "$(rcli zcard 'lock:{many}:holders')" 200
  rcli config resetstat >/dev/null
  ev extend one t1 600000 100 >/dev/null
  base=$(redis_commands)
  rcli config resetstat >/dev/null
  ev extend many t1 600000 100 >/dev/null
  many=$(redis_commands)
  echo "# one renewal: $base commands with 1 holder, $many with 200" >&3
  assert [ "$many" -le $((base + 10)) ]
}

# --- docs ----------------------------------------------------------------------------------------

@test "the guide, the man page and the completions describe history, --history and list --prometheus" {
  # The guide (docs/GUIDE.md), the man page, --help and the completions describe them.
  local root=$BATS_TEST_DIRNAME/..
  for f in docs/GUIDE.md man/rlock.1 completions/rlock.bash completions/_rlock completions/rlock.fish; do
    grep -q 'history' "$root/$f" || fail "$f says nothing of history"
  done
  grep -q 'prometheus' "$root/docs/GUIDE.md" || fail "the guide says nothing of list --prometheus"
  grep -q 'prometheus' "$root/man/rlock.1" || fail "the man page says nothing of list --prometheus"
  grep -q ':log' "$root/docs/PROTOCOL.md" || fail "PROTOCOL.md has no field table for PREFIX{KEY}:log"
}
