#!/usr/bin/env bats
# ctest-labels: fast
# The operators' flight recorder (docs/GUIDE.md "What happened: the history"): every acquisition, release (with the
# command's exit status and how long it held), lease kept on purpose, expiry without a
# release, loss, break, supersede and give-up is recorded in a capped stream per key by
# the scripts that change the state; `rlock history KEY [-n N] [--json] [--follow]` shows
# it; `status` of a free key shows its last events; `list --prometheus` prints metrics.

# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell
load helpers/redis

bats_require_minimum_version 1.5.0

setup_file() { redis_start; }

setup() {
  T=$BATS_TEST_TMPDIR
  write_gate "$T/gate.sh"
}

# events KEY: the event names of KEY's history, oldest first, on one line.
events() { "$RLOCK" history "$1" --json | jq -r '[.[].event] | join(" ")'; }

@test "a run is recorded: acquired (who, fence, command) and released (exit status, time held)" {
  run -0 "$RLOCK" run --label job-42 h1 -- sh -c 'exit 0'
  run -3 "$RLOCK" run h1 -- sh -c 'exit 3'
  run -0 "$RLOCK" history h1 --json
  assert_equal "$(jq -r '[.[].event] | join(" ")' <<<"$output")" "acquired released acquired released"
  assert_equal "$(jq -r '.[0] | "\(.who) \(.fence) \(.cmd) \(.mode) \(.waited)"' <<<"$output")" \
    "job-42 1 sh -c 'exit 0' exclusive 0"
  assert_equal "$(jq -r '.[3] | "\(.fence) \(.exit)"' <<<"$output")" "2 3"
  held=$(jq -r '.[3].held' <<<"$output")
  assert [ "$held" -ge 0 ]
  assert [ "$held" -lt 60000 ]
  # for people: newest last, times in UTC, human units
  run -0 "$RLOCK" history h1
  assert_equal "${#lines[@]}" 4
  assert_line --index 0 --regexp '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}Z  acquired    fence 1, job-42, \[sh -c .exit 0.\]$'
  assert_line --index 3 --regexp '^[0-9-]{10} [0-9:]{8}Z  released    fence 2, .+ pid [0-9]+, held [0-9.]+m?s, exit 3$'
}

@test "-n shows the newest N events; a key without history is exit 0 and prints nothing" {
  for i in 1 2 3; do "$RLOCK" run nn -- true; done
  run -0 "$RLOCK" history nn -n 2
  assert_equal "${#lines[@]}" 2
  assert_line --index 0 --partial "acquired    fence 3"
  assert_line --index 1 --partial "released    fence 3"
  run --separate-stderr -0 "$RLOCK" history never-used
  assert_output ""
  run -0 "$RLOCK" history never-used --json
  assert_output "[]"
  run -64 "$RLOCK" history nn -n 0
  run -64 "$RLOCK" history nn -n x
  run -64 "$RLOCK" history 'bad{key}'
}

@test "semaphore and shared holders are each recorded as themselves: no holder's release or grant ends another" {
  t1=$("$RLOCK" acquire --limit 2 hs)
  t2=$("$RLOCK" acquire --limit 2 hs)
  run -0 "$RLOCK" release hs --token "$t1"
  run -0 "$RLOCK" release hs --token "$t2"
  assert_equal "$(events hs)" "acquired acquired released released"
  run -0 "$RLOCK" history hs --json
  assert_equal "$(jq -r '[.[].tok] | join(" ")' <<<"$output")" "$t1 $t2 $t1 $t2"
  s1=$("$RLOCK" acquire --shared hsh)
  s2=$("$RLOCK" acquire --shared hsh)
  run -0 "$RLOCK" release hsh --token "$s1"
  run -0 "$RLOCK" release hsh --token "$s2"
  assert_equal "$(events hsh)" "acquired acquired released released"
  run -0 "$RLOCK" history hsh --json
  assert_equal "$(jq -r '[.[].mode | values] | join(" ")' <<<"$output")" "shared shared"
}

@test "a lease that runs out without a release is recorded as expired, by the next command that looks" {
  "$RLOCK" acquire --ttl 1s ex >/dev/null # nothing releases it
  wait_until '! "$RLOCK" status ex >/dev/null' 10
  assert_equal "$(events ex)" "acquired"
  run -0 "$RLOCK" run ex -- true
  assert_equal "$(events ex)" "acquired expired acquired released"
  run -0 "$RLOCK" history ex
  assert_line --index 1 --partial "expired     fence 1"
  assert_line --index 1 --partial "its lease ran out without a release"
}

@test "leases kept on purpose are kept or done, not expired; a later break is recorded with who broke it" {
  "$RLOCK" run --min-hold 1s kp -- true
  wait_until '! "$RLOCK" status kp >/dev/null' 10
  "$RLOCK" run --done-for 1h kp -- true
  assert_equal "$(events kp)" "acquired kept acquired done"
  run -0 "$RLOCK" break --yes kp
  assert_equal "$(events kp)" "acquired kept acquired done broken"
  run -0 "$RLOCK" history kp --json
  assert_equal "$(jq -r '.[4].by' <<<"$output")" "$(id -un)@$(hostname) pid $(jq -r '.[4].by' <<<"$output" | sed 's/.* pid //')"
  assert_equal "$(jq -r '.[3].until | tonumber > 0' <<<"$output")" true
}

@test "a lost lease is recorded with the reason its holder knows" {
  bg_start l "$RLOCK" run --ttl 2s --on-lost warn lo -- sh "$T/gate.sh" "$T" l
  l=$BG_PID
  wait_for_file "$T/l.started" 20
  rcli del 'lock:{lo}' >/dev/null
  touch "$T/l.go"
  bg_wait "$l" 20
  run -0 "$RLOCK" history lo --json
  # its own renewal leaves it to its release, which knows why
  assert_equal "$(jq -r '.[-1].event' <<<"$output")" lost
  assert_equal "$(jq -r '.[-1].why' <<<"$output" | grep -c .)" 1
}

@test "a waiter that gives up is recorded, with how long it waited" {
  t=$("$RLOCK" acquire --ttl 60s gu)
  run -75 "$RLOCK" run --wait 1s gu -- true
  run -0 "$RLOCK" history gu --json
  assert_equal "$(jq -r '.[-1].event' <<<"$output")" gave-up
  waited=$(jq -r '.[-1].waited' <<<"$output")
  assert [ "$waited" -ge 900 ]
  "$RLOCK" release gu --token "$t"
}

@test "a superseded waiter is recorded with the label of the one that replaced it" {
  t=$("$RLOCK" acquire --ttl 60s sp)
  bg_start a "$RLOCK" run --wait 60s --supersede sp -- true
  a=$BG_PID
  wait_until '[ "$(n_waiters sp)" -eq 1 ]' 30
  bg_start b "$RLOCK" run --wait 60s --supersede --label newer sp -- true
  bg_wait "$a" 10
  run -0 "$RLOCK" history sp --json
  assert_equal "$(jq -r '[.[] | select(.event == "superseded") | .by] | join(" ")' <<<"$output")" newer
  "$RLOCK" release sp --token "$t"
}

@test "status of a free key shows its last events: the last holder and how it ended" {
  "$RLOCK" run --label deploy-7 fr -- sh -c 'exit 2' || true
  run -1 "$RLOCK" status fr
  assert_line --index 0 --partial "fr: free (last fence 1)"
  assert_line --index 1 --partial "  last    "
  assert_line --index 2 --regexp "  last    .*released    fence 1, deploy-7, held .*, exit 2$"
  run -1 "$RLOCK" status fr --json
  assert_equal "$(jq -r '.last_events[-1].event' <<<"$output")" released
}

@test "--history 0 (or RLOCK_HISTORY=0) records nothing; --history N keeps the newest N and less than one stream node more" {
  "$RLOCK" --history 0 run off -- true
  RLOCK_HISTORY=0 "$RLOCK" run off -- true
  assert_equal "$(rcli exists 'lock:{off}:log')" 0
  # Redis trims whole stream nodes (MAXLEN ~): with nodes of at most 4
  # entries, 3 kept means 3 to 6 entries, whatever was written before.
  rcli config set stream-node-max-entries 4 >/dev/null
  local most=0
  for i in $(seq 12); do
    "$RLOCK" --history 3 run cap -- true
    n=$(rcli xlen 'lock:{cap}:log')
    ((n > most)) && most=$n
    ((n >= (i == 1 ? 2 : 3) && n <= 6)) || { rcli config set stream-node-max-entries 100; fail "after run $i: $n events kept"; }
  done
  ((most > 3)) # (whole nodes: not trimmed at every event)
  # Nodes without a bound (both settings 0) have no whole node to drop: one
  # append in eight (by the server's clock) trims exactly. 60 runs, 120
  # events: not trimmed at all would keep them all.
  rcli config set stream-node-max-entries 0 >/dev/null
  rcli config set stream-node-max-bytes 0 >/dev/null
  for i in $(seq 60); do "$RLOCK" --history 3 run unbounded -- true; done
  n=$(rcli xlen 'lock:{unbounded}:log')
  rcli config set stream-node-max-bytes 4096 >/dev/null
  rcli config set stream-node-max-entries 100 >/dev/null
  ((n >= 3 && n < 100)) || fail "$n events kept of 120"
  run -0 "$RLOCK" history cap -n 3 --json
  assert_equal "$(jq 'length' <<<"$output")" 3
  assert_equal "$(jq -r '.[-1].event' <<<"$output")" released
  run -64 "$RLOCK" --history -1 run cap -- true
  run -64 "$RLOCK" --history 10001 run cap -- true
  RLOCK_HISTORY=many run -64 "$RLOCK" run cap -- true
}

@test "the history is bounded: every field cut to 1 KiB, the stream expires 7 days after its last event" {
  "$RLOCK" run --label "$(printf 'x%.0s' {1..256})" bd -- true
  ttl=$(rcli pttl 'lock:{bd}:log')
  assert [ "$ttl" -gt 604000000 ]
  assert [ "$ttl" -le 604800000 ]
  # a foreign writer's event: huge and hostile fields, shown bounded and escaped
  rcli xadd 'lock:{bd}:log' '*' ev $'evil\e[2J' tok t who "$(printf 'y%.0s' {1..5000})" >/dev/null
  run -0 "$RLOCK" history bd -n 1
  assert_output --partial 'evil\x1b[2J'
  assert [ "${#output}" -lt 2500 ]
  run -0 "$RLOCK" history bd -n 1 --json
  who=$(jq -r '.[0].who' <<<"$output")
  assert [ "$(printf %s "$who" | wc -c)" -le 1024 ]
  assert [ "$(printf %s "$who" | wc -c)" -gt 1000 ]
}

@test "what a run leaves: the fence counter for ever, the log for 7 days, a tombstone for seconds" {
  "$RLOCK" run kl -- true
  "$RLOCK" acquire -s --ttl 60s kl-s >/dev/null
  # every key but the fence counter has an expiry within its documented bound
  # (docs/PROTOCOL.md "Keys and channels"); a shared lock's set of holders too
  local key ttl max n=0
  while read -r key; do
    ttl=$(rcli pttl "$key") max=60000
    case $key in
    'lock:{kl}:fence' | 'lock:{kl-s}:fence') max=-1 ;;
    'lock:{kl}:log' | 'lock:{kl}:live' | 'lock:{kl-s}:log' | 'lock:{kl-s}:live') max=604800000 ;;
    'lock:{kl}:r:'* | 'lock:{kl-s}' | 'lock:{kl-s}:holders' | 'lock:{kl-s}:h:'*) ;;
    *) fail "a key nobody documented: $key" ;;
    esac
    if ((max == -1)); then
      assert_equal "$ttl" -1
    else
      assert [ "$ttl" -gt 0 ]
      assert [ "$ttl" -le "$max" ]
    fi
    n=$((n + 1))
  done < <(rcli --scan --pattern 'lock:{kl*')
  assert [ "$n" -ge 8 ]
}

@test "forget removes the history with the rest" {
  "$RLOCK" run fg -- true
  assert_equal "$(rcli exists 'lock:{fg}:log')" 1
  run -0 "$RLOCK" forget --yes fg
  assert_equal "$(rcli exists 'lock:{fg}:log')" 0
}

@test "history --follow shows new events as they happen and ends on SIGTERM with 0" {
  "$RLOCK" run fo -- true
  bg_start f env --default-signal=TERM "$RLOCK" history fo --follow -n 1
  f=$BG_PID
  wait_until "grep -q 'released' '$T/f.out'" 10
  "$RLOCK" run --label second fo -- true
  wait_until "grep -c 'second' '$T/f.out' | grep -qx 2" 15
  kill -TERM "$f"
  bg_wait "$f" 10
  assert_equal "$BG_STATUS" 0
  assert_equal "$(grep -c . "$T/f.out")" 3
}

@test "history --follow rides out a server restart and goes on from the last event" {
  "$RLOCK" run fr2 -- true
  rcli save >/dev/null
  bg_start f env --default-signal=TERM "$RLOCK" history fr2 --follow --json
  f=$BG_PID
  wait_until "grep -q released '$T/f.out'" 10
  redis_restart
  "$RLOCK" run --label after-restart fr2 -- true
  wait_until "grep -q after-restart '$T/f.out'" "$(slack 20)"
  kill -TERM "$f"
  bg_wait "$f" 10
  assert_equal "$BG_STATUS" 0
  # one JSON object per line, none twice
  assert_equal "$(jq -r .id "$T/f.out" | sort | uniq -d)" ""
}

@test "list --prometheus: the text format, one family after another, label values escaped" {
  t1=$("$RLOCK" acquire --ttl 60s 'prom"a\b')
  t2=$("$RLOCK" acquire --limit 3 --ttl 60s prom-sem)
  run -0 "$RLOCK" list --prometheus 'prom*'
  assert_line '# TYPE rlock_held gauge'
  # the key itself, escaped once as the format wants (a parser reads back prom"a\b)
  assert_line 'rlock_held{key="prom\"a\\b"} 1'
  assert_line 'rlock_holders{key="prom-sem"} 1'
  assert_line 'rlock_fence{key="prom-sem"} 1'
  assert_line --regexp '^rlock_lease_left_seconds\{key="prom-sem"\} [0-9]+\.[0-9]{3}$'
  # every sample of a family right under its HELP and TYPE: six, and the times and the
  # holder's info (no lock is done for a period here: that family has no sample)
  assert_equal "$(grep -c '^# TYPE' <<<"$output")" 9
  run -64 "$RLOCK" list --prometheus --json
  "$RLOCK" release 'prom"a\b' --token "$t1"
  "$RLOCK" release prom-sem --token "$t2"
}

@test "list --prometheus: promtool accepts it; times, not only ages; done leases are not held; who holds it" {
  command -v promtool >/dev/null || fail "promtool is not installed (scripts/setup.sh installs the prometheus package)"
  # Hostile names and labels: quotes, backslashes, a newline, control bytes, bytes that
  # are not UTF-8, a key that spells another's escaped form.
  t1=$("$RLOCK" acquire --ttl 60s --label $'ci "job"\\1' 'pt"a\b')
  t2=$("$RLOCK" acquire --ttl 60s 'pt\x0ab')
  rcli set "$(printf 'lock:{pt\nb}')" foreign px 60000 >/dev/null
  rcli set "$(printf 'lock:{pt\001\377}')" foreign px 60000 >/dev/null
  "$RLOCK" run --done-for 1h pt-done -- true
  before=$(date +%s)
  run -0 "$RLOCK" list --prometheus 'pt*'
  printf '%s\n' "$output" >"$T/m.prom"
  run promtool check metrics <"$T/m.prom"
  assert_success
  # Each series once: a key that had to be escaped carries key_escaped="1", so the
  # printable key pt\x0ab and the key with a newline never share a series.
  assert_equal "$(grep -v '^#' "$T/m.prom" | awk '{print $1}' | sort | uniq -d)" ""
  assert_equal "$(grep -c '^rlock_held{' "$T/m.prom")" 5
  grep -qF 'rlock_held{key="pt\\x0ab",key_escaped="1"} 1' "$T/m.prom"
  grep -qF 'rlock_held{key="pt\\x0ab"} 1' "$T/m.prom"
  # A --done-for lease holds nothing: 0, with the end of its period.
  grep -qF 'rlock_held{key="pt-done"} 0' "$T/m.prom"
  done_until=$(awk '/^rlock_done_until_timestamp_seconds\{key="pt-done"\}/ {print int($2)}' "$T/m.prom")
  ((done_until >= before + 3500 && done_until <= before + 3700)) || fail "done until $done_until, now $before"
  # Times (Unix seconds, the server's clock; the same clock as `date` here).
  acquired=$(awk '/^rlock_acquired_timestamp_seconds\{key="pt\\"a/ {print int($2)}' "$T/m.prom")
  ((acquired >= before - 60 && acquired <= before + 1)) || fail "acquired at $acquired, now $before"
  expiry=$(awk '/^rlock_lease_expiry_timestamp_seconds\{key="pt\\"a/ {print int($2)}' "$T/m.prom")
  ((expiry >= before && expiry <= before + 61)) || fail "lease expires at $expiry, now $before"
  # Who holds it: host, pid, user and the label, each escaped once.
  grep -F 'rlock_holder_info{key="pt\"a\\b",' "$T/m.prom" | grep -qF "host=\"$(hostname)\"" ||
    fail "no holder_info with this host: $(grep holder_info "$T/m.prom")"
  grep -qF 'label="ci \"job\"\\1"} 1' "$T/m.prom"
  grep -F 'rlock_holder_info{key="pt\"a\\b",' "$T/m.prom" | grep -qE 'user="[^"]+"'
  "$RLOCK" release 'pt"a\b' --token "$t1"
  "$RLOCK" release 'pt\x0ab' --token "$t2"
}

@test "recording adds no Redis command: an uncontended run is still two script calls" {
  rcli config resetstat >/dev/null
  "$RLOCK" run calls -- true
  calls=$(rcli info commandstats | tr -d '\r' |
    awk -F'[=,:]' '$1 ~ /^cmdstat_(evalsha|eval)$/ {n += $3} END {print n + 0}')
  assert_equal "$calls" 2
}

@test "a key's first release asks whether the server is a Cluster node, :live remembers it, the next ask nothing" {
  "$RLOCK" run topo -- true
  # the answer (p: no Cluster node) outlives the tenure, with the history's expiry
  assert_equal "$(rcli hget 'lock:{topo}:live' ' topo')" p
  ttl=$(rcli pttl 'lock:{topo}:live')
  assert [ "$ttl" -gt 604000000 ]
  assert [ "$ttl" -le 604800000 ]
  rcli config resetstat >/dev/null
  "$RLOCK" run topo -- true
  tok=$("$RLOCK" acquire --ttl 30s topo)
  "$RLOCK" release topo --token "$tok"
  stats=$(rcli info commandstats | tr -d '\r')
  [[ $stats != *cmdstat_cluster* ]] || fail "a release asked CLUSTER: $stats"
  [[ $stats == *cmdstat_publish:calls=2,* ]] || fail "not two PUBLISHes: $stats"
  # nor does an attempt that finds the key taken (run -n from cron: TAKEN)
  tok=$("$RLOCK" acquire --ttl 30s topo)
  rcli config resetstat >/dev/null
  run -75 "$RLOCK" run -n topo -- true
  [[ $(rcli info commandstats | tr -d '\r') != *cmdstat_cluster* ]] || fail "TAKEN asked CLUSTER"
  "$RLOCK" release topo --token "$tok"
  # the marker is neither a holder nor an event
  assert_equal "$(events topo)" "acquired released acquired released acquired released acquired released"
  run -1 "$RLOCK" status topo --json # free
  assert_equal "$(jq -c '[.holders, .holder_count]' <<<"$output")" '[[],0]'
  # Recording nothing, a release reads and writes no history: it asks, as before.
  rcli config resetstat >/dev/null
  "$RLOCK" --history 0 run topo-off -- true
  [[ $(rcli info commandstats) == *cmdstat_cluster* ]] || fail "no CLUSTER MYID without history"
  assert_equal "$(rcli exists 'lock:{topo-off}:live')" 0
}

@test "an event within a day of the history's last expiry leaves it; a log that went, a touch a day old or ahead set it again" {
  "$RLOCK" run tch -- true
  t0=$(rcli hget 'lock:{tch}:live' ' touch')
  [[ $t0 =~ ^[0-9]+$ ]] || fail "no touch in :live: '$t0'"
  # within a day of it: both expiries stay as they are (shortened here to see it)
  rcli pexpire 'lock:{tch}:log' 5000000 >/dev/null
  rcli pexpire 'lock:{tch}:live' 5000000 >/dev/null
  "$RLOCK" run tch -- true
  assert [ "$(rcli pttl 'lock:{tch}:log')" -le 5000000 ]
  assert [ "$(rcli pttl 'lock:{tch}:live')" -le 5000000 ]
  assert_equal "$(rcli hget 'lock:{tch}:live' ' touch')" "$t0"
  assert_equal "$(events tch)" "acquired released acquired released"
  # a log that went (deleted, evicted) is made again, with its expiry
  rcli del 'lock:{tch}:log' >/dev/null
  "$RLOCK" run tch -- true
  assert [ "$(rcli pttl 'lock:{tch}:log')" -gt 604000000 ]
  assert_equal "$(events tch)" "acquired released"
  # a touch a day old, one ahead of the server's clock (moved back), or no time: set again
  local stale
  for stale in $((t0 - 86400000)) $((t0 + 86400000)) junk; do
    rcli hset 'lock:{tch}:live' ' touch' "$stale" >/dev/null
    rcli pexpire 'lock:{tch}:log' 5000000 >/dev/null
    rcli pexpire 'lock:{tch}:live' 5000000 >/dev/null
    "$RLOCK" run tch -- true
    assert [ "$(rcli pttl 'lock:{tch}:log')" -gt 604000000 ]
    assert [ "$(rcli pttl 'lock:{tch}:live')" -gt 604000000 ]
    t1=$(rcli hget 'lock:{tch}:live' ' touch')
    [[ $t1 =~ ^[0-9]+$ ]] && ((t1 >= t0 && t1 < t0 + 86400000)) || fail "touch $t1 after $stale"
  done
  # a negative touch (a server that refused NOMKSTREAM, before Redis 6.2, within a day):
  # the old way (both expiries set at every event), the mark left as it is
  t0=$(rcli hget 'lock:{tch}:live' ' touch')
  rcli hset 'lock:{tch}:live' ' touch' "-$t0" >/dev/null
  rcli pexpire 'lock:{tch}:log' 5000000 >/dev/null
  "$RLOCK" run tch -- true
  assert [ "$(rcli pttl 'lock:{tch}:log')" -gt 604000000 ]
  assert_equal "$(rcli hget 'lock:{tch}:live' ' touch')" "-$t0"
  # a day after it: a positive touch again, and the next event tries NOMKSTREAM
  rcli hset 'lock:{tch}:live' ' touch' "-$((t0 - 86400000))" >/dev/null
  "$RLOCK" run tch -- true
  t1=$(rcli hget 'lock:{tch}:live' ' touch')
  [[ $t1 =~ ^[0-9]+$ ]] && ((t1 >= t0)) || fail "touch $t1 after a day-old negative one"
  # :live gone with the log kept: made again with both expiries
  rcli del 'lock:{tch}:live' >/dev/null
  rcli pexpire 'lock:{tch}:log' 5000000 >/dev/null
  "$RLOCK" run tch -- true
  assert [ "$(rcli pttl 'lock:{tch}:log')" -gt 604000000 ]
  assert [ "$(rcli pttl 'lock:{tch}:live')" -gt 604000000 ]
  # the touch is neither a holder nor an event
  run -1 "$RLOCK" status tch --json
  assert_equal "$(jq -c '[.holders, .holder_count]' <<<"$output")" '[[],0]'
}

@test "a read-only user sees the history" {
  rcli acl setuser histro on '>pw' '~*' '&*' +@read +@connection +@scripting +time >/dev/null
  "$RLOCK" run ro -- true
  run -0 "$RLOCK" --url "redis://histro:pw@127.0.0.1:$REDIS_PORT/0" history ro
  assert_equal "${#lines[@]}" 2
}
