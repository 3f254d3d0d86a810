#!/usr/bin/env bash
# Tests of the soak checker (tests/soak/check.sh) on small hand-written histories: each
# case must get the verdict (PASS/FAIL) and, for a FAIL, the rule it names. A checker
# that never fails proves nothing, so most cases are violations.
#
#   tests/soak/check_test.sh        prints one line per case, exits 1 if any is wrong
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(mktemp -d "${TMPDIR:-/tmp}/rlock-check-test.XXXXXX") || exit 2
trap '[[ -n ${KEEP_CASES:-} ]] || rm -rf "$root"' EXIT
B=1700000000000000 # µs; every time below is in ms after it
failed=0 n=0

us() { echo $((B + $1 * 1000)); }

# new_case: a fresh history directory D with a meta (stop at 100s, end at 101s).
new_case() {
  D=$root/case$((++n))
  mkdir -p "$D"/{hist,err,res}
  : >"$D/res/log"
  : >"$D/faults.log"
  cat >"$D/meta" <<EOF
seed=1
target=1
contenders=2
direct=0
persistence=1
t0=$(us 0)
grace_ms=1000
break_grace_ms=2000
t_stop=$(us 100000)
t_end=$(us 101000)
reached=1
final_free=yes
leftovers=0
EOF
}

# run C.I FENCE START ENTER LEAVE END STATUS [WRITE=A|R|none [HOW=ok]]: one run of
# contender C with its E, L, R lines; WRITE appends its write to the resource log (the
# caller lists runs in write order); LEAVE "-" means no L line.
run() {
  local id=$1 fence=$2 start=$3 enter=$4 leave=$5 end=$6 st=$7 write=${8:-A} how=${9:-ok}
  local c=${id%%.*}
  printf 'E %s %s %s 1 1 tok%s\n' "$id" "$(us "$enter")" "$fence" "$id" >>"$D/hist/$c"
  [[ $leave == - ]] || printf 'L %s %s %s\n' "$id" "$(us "$leave")" "$how" >>"$D/hist/$c"
  printf 'R %s %s %s %s 1000 3000 proxy 5\n' "$id" "$(us "$start")" "$(us "$end")" "$st" \
    >>"$D/hist/$c"
  printf '== %s\n' "$id" >>"$D/err/$c"
  if [[ $write != none ]]; then
    local max
    max=$(awk '$5 == "A" { m = $4 } END { print (m == "" ? 0 : m) }' "$D/res/log")
    printf 'W %s %s %s %s %s\n' "$(us "$leave")" "$id" "$fence" "$write" "$max" >>"$D/res/log"
  fi
}

# srun SHAPE KEY SLOT C.I FENCE START ENTER LEAVE END STATUS: a run of another shape
# (shared, pool, done, priority: contender.sh), KEY and SLOT as its critical section saw
# them; it writes nothing to the resource. shapes_meta gives D the pool's and the
# once-per-period key's definitions (soak.sh).
srun() {
  local shape=$1 key=$2 slot=$3 id=$4 fence=$5 start=$6 enter=$7 leave=$8 end=$9 st=${10}
  local c=${id%%.*}
  {
    printf 'E %s %s %s 1 1 tok%s %s %s %s\n' "$id" "$(us "$enter")" "$fence" "$id" "$key" "$shape" \
      "$slot"
    printf 'L %s %s ok\n' "$id" "$(us "$leave")"
    printf 'R %s %s %s %s 1000 3000 proxy 5 file %s\n' "$id" "$(us "$start")" "$(us "$end")" "$st" \
      "$shape"
  } >>"$D/hist/$c"
  printf '== %s\n' "$id" >>"$D/err/$c"
}
shapes_meta() {
  printf '%s\n' pool_pct=10 pool_key=pool pool_n=3 done_pct=5 done_key=once done_ms=1000 \
    npool_key=names npool_names=db-a,db-b,db-c layout_pct=10 plain_key=pl redisson_key=rd \
    peers=yes >>"$D/meta"
}

# norun C.I START END STATUS: a run that never got the lock.
norun() {
  printf 'R %s %s %s %s 1000 3000 proxy 5\n' "$1" "$(us "$2")" "$(us "$3")" "$4" \
    >>"$D/hist/${1%%.*}"
}

fault() { echo "F $1 $(us "$2") $(us "$3") ${*:4}" >>"$D/faults.log"; }

# sups C.I JOIN: run C.I is a superseding job that first joined at JOIN (ms after B).
sups() { echo "tok$1 $(($(us "$2") / 1000))" >>"$D/sups"; }

# expect PASS|RULE WHAT: runs the checker on D; RULE is the [rule] a FAIL must name.
expect() {
  local want=$1 what=$2 out rc=0
  out=$(bash "$here/check.sh" "$D" 2>&1) || rc=$?
  if [[ $want == PASS ]]; then
    if ((rc == 0)) && grep -q '^PASS$' <<<"$out"; then
      echo "ok   $what"
      return
    fi
  elif ((rc == 1)) && grep -q "^VIOLATION \[$want\]" <<<"$out"; then
    echo "ok   $what"
    return
  fi
  echo "FAIL $what: expected $want, exit $rc:"
  printf '     %s\n' "${out//$'\n'/$'\n'     }"
  failed=$((failed + 1))
}

new_case
run 0.0 1 0 10 20 25 0
run 1.0 2 5 30 40 45 0
norun 0.1 26 3026 75
norun 1.1 50 60 69
expect PASS "sequential holders, a wait that ran out, Redis unavailable"

new_case
run 0.0 1 0 10 50 55 0
run 1.0 2 5 30 60 65 0
expect overlap "two holders inside at once with no fault"

# Quorum fences are server times: 13 digits, beyond mawk's %d and its number-to-text.
new_case
run 0.0 1795599213183 0 10 20 25 0
run 1.0 1795599213200 5 30 40 45 0
run 0.1 1795599213201 26 50 60 65 0
expect PASS "quorum: sequential holders with 13-digit fences"

new_case
run 0.0 1795599213183 0 10 20 25 0
run 1.0 1795599213183 5 30 40 45 0 R
expect overlap "quorum: one 13-digit fence granted twice"

new_case
run 1.0 2 5 1500 1510 1515 0
run 0.0 1 0 10 1900 1950 76 R term
fault stop 100 1800 run=0.0 ttl=1000 stop_ms=1700
expect PASS "a frozen holder overlaps the next one, its write is rejected, it exits 76"

new_case
run 1.0 2 5 1500 1510 1515 0
run 0.0 1 0 10 1900 1950 0 R
fault stop 100 1800 run=0.0 ttl=1000 stop_ms=1700
expect hidden-loss "a frozen holder whose write was rejected exits 0"

new_case
run 1.0 2 5 1500 1510 1515 0
run 0.0 1 0 10 4000 4050 76 R
fault stop 100 1800 run=0.0 ttl=1000 stop_ms=1700
expect overlap "a frozen holder still inside 2.2s after SIGCONT is not explained by the freeze"

new_case
run 0.0 1 0 10 20 2100 0
run 1.0 2 5 2110 2120 2125 0
fault stop 22 2000 run=0.0 ttl=1000 stop_ms=1978
expect PASS "a job frozen only after its command ended (while releasing) may exit 0"

new_case
run 0.0 1 0 10 20 25 0
run 1.0 2 5 30 40 45 0
sups 0.0 3
sups 1.0 8
expect PASS "two superseding jobs entered in the order they joined"

new_case
run 1.0 1 5 10 20 25 0
run 0.0 2 0 30 40 45 0
sups 0.0 3
sups 1.0 8
run 2.0 3 50 60 70 75 0
expect supersede "a superseding job ran after a newer one had entered"

# stop_waiter: a superseding job frozen while it waits, past its place's lease; newer jobs
# join meanwhile. Back, it must be superseded (80), never run after them.
new_case
run 1.0 2 2000 2010 2020 2025 0
run 0.0 1 0 7100 7110 7115 0
sups 0.0 3
sups 1.0 2001
fault stop_waiter 5 6505 run=0.0 stop_ms=6500 rlock_pid=1
expect supersede "a superseding job frozen while it waited ran after a newer one had entered"

new_case
run 1.0 2 2000 2010 2020 2025 0
printf 'R 0.0 %s %s 80 1000 3000 proxy 5 file supersede\n' "$(us 0)" "$(us 6600)" >>"$D/hist/0"
sups 0.0 3
sups 1.0 2001
fault stop_waiter 5 6505 run=0.0 stop_ms=6500 rlock_pid=1
expect PASS "a superseding job frozen while it waited comes back superseded (80)"

# A job granted just before stop_waiter froze it holds the lock frozen: a stop as any other.
new_case
run 1.0 2 1500 1510 1520 1525 0
run 0.0 1 0 10 6600 6650 76 R term
fault stop_waiter 5 6505 run=0.0 stop_ms=6500 rlock_pid=1
expect PASS "a job granted just before stop_waiter froze it overlaps the next one and exits 76"

new_case
run 1.0 2 1500 1510 1520 1525 0
run 0.0 1 0 10 6600 6650 0 R
fault stop_waiter 5 6505 run=0.0 stop_ms=6500 rlock_pid=1
expect hidden-loss "a job granted just before stop_waiter froze it for 6.5s exits 0"

# A stop fault logs the real freeze of rlock (frozen_min_ms..frozen_ms, the soak polled its
# state): the kernel continues an orphaned process group with a stopped member at once.
new_case
run 0.0 1 0 10 1850 1860 0
fault stop 100 1800 run=0.0 ttl=1000 stop_ms=1700 frozen_min_ms=5 frozen_ms=13 cs_frozen_min_ms=1690 cs_frozen_ms=1700 continued=ran cs_continued=soak
expect PASS "a holder whose rlock the kernel continued after 13ms of a 1.7s stop may exit 0"

new_case
run 1.0 2 5 1500 1510 1515 0
run 0.0 1 0 10 1900 1950 76 R term
fault stop 100 1800 run=0.0 ttl=1000 stop_ms=1700 frozen_min_ms=5 frozen_ms=13 cs_frozen_min_ms=1690 cs_frozen_ms=1700 continued=ran cs_continued=soak
expect overlap "a 13ms real freeze (of a 1.7s stop) does not explain an overlap"

new_case
run 1.0 2 5 1500 1510 1515 0
run 0.0 1 0 10 1900 1950 0 R
fault stop 100 1800 run=0.0 ttl=1000 stop_ms=1700 frozen_min_ms=1690 frozen_ms=1701 cs_frozen_min_ms=1690 cs_frozen_ms=1701 continued=soak cs_continued=soak
expect hidden-loss "a holder whose rlock was really frozen 1.69s exits 0"

new_case
run 0.0 5 0 10 20 25 0
fault restart 30 40 tok=- pttl=-2 fence=5 "at=$(us 30)" "tok1=LOADING Redis" pttl1=- fence1=- "at1=$(us 40)"
run 1.0 6 45 50 60 65 0
expect PASS "a restart whose state could not be read afterwards is not judged"

new_case
run 0.0 1 0 10 500 505 76 none term
run 1.0 2 5 300 310 315 0
fault break 200 210 status=0 tok=tok0.0 fence=1 fence1=1
expect PASS "a broken holder overlaps the next one and exits 76"

new_case
run 0.0 1 0 10 4000 4005 76 none term
run 1.0 2 5 300 310 315 0
fault break 200 210 status=0 tok=tok0.0 fence=1 fence1=1
fault stop 700 3800 run=0.0 ttl=1000 stop_ms=3100
expect PASS "a broken holder frozen before it could hear the break: the freeze does not count"

new_case
run 0.0 1 0 10 4000 4005 76 none term
run 1.0 2 5 300 310 315 0
fault break 200 210 status=0 tok=tok0.0 fence=1 fence1=1
fault stop 700 3800 run=0.0 ttl=1000 stop_ms=3100 frozen_min_ms=2 frozen_ms=12 cs_frozen_min_ms=2 cs_frozen_ms=12 continued=ran cs_continued=ran
expect break "a broken holder whose rlock the kernel continued after 12ms of a stop: only the real freeze counts"

new_case
run 0.0 1 0 10 2500 2505 76 none term
run 1.0 2 5 300 310 315 0
fault break 200 210 status=0 tok=tok0.0 fence=1 fence1=1
expect break "a broken holder still inside 2.3s after the break"

new_case
run 0.0 1 0 10 500 505 0 none
run 1.0 2 5 300 310 315 0
fault break 200 210 status=0 tok=tok0.0 fence=1 fence1=1
expect hidden-loss "a broken holder exits 0"

new_case
run 0.0 1 0 10 20 25 0
run 1.0 1 30 40 50 55 0 R
expect overlap "one fence granted twice"

new_case
run 0.0 2 0 10 20 25 0
printf 'W %s 1.0 1 A 2\n' "$(us 40)" >>"$D/res/log"
expect resource "the resource accepted a fence below its maximum"

new_case
run 0.0 1 0 10 20 25 134
expect status "rlock crashed (134)"

new_case
run 0.0 1 0 10 20 25 143 A term
expect status "128+15 before the soak was stopping"

new_case
run 0.0 1 0 10 20 100500 143 A term
expect PASS "128+15 during the shutdown"

new_case
run 0.0 1 0 10 20 25 75
expect status "the command ran yet rlock exited 75"

# A superseding job exits --superseded-exit-code 80 when superseded (contender.sh).
new_case
run 0.0 1 0 10 20 25 0
printf 'R 1.0 %s %s 80 1000 3000 proxy 5 file supersede\n' "$(us 5)" "$(us 30)" >>"$D/hist/1"
expect PASS "a superseding job that never ran exits 80 (superseded)"

# A --while-pid script (nested whilepid) whose lock is broken while it lives gets SIGTERM
# from its keeper: its 143 is the keeper's doing, never anyone else's.
nested_whilepid() { # C.I STATUS [HOW=whilepid]: a nested run, fence 1, its token tokC.I
  {
    printf 'E %s %s 1 1 1 tok%s\n' "$1" "$(us 10)" "$1"
    printf 'L %s %s ok\n' "$1" "$(us 30)"
    printf 'R %s %s %s %s 1000 3000 proxy 5 file nested %s\n' "$1" "$(us 0)" "$(us 25)" "$2" \
      "${3:-whilepid}"
  } >>"$D/hist/${1%%.*}"
  printf '== %s\n' "$1" >>"$D/err/${1%%.*}"
  printf 'W %s %s 1 A 0\n' "$(us 30)" "$1" >>"$D/res/log"
}
new_case
nested_whilepid 0.0 143
fault break 20 22 status=0 tok=tok0.0 fence=1 fence1=1
expect PASS "a --while-pid script broken while it lived exits 143 (its keeper's SIGTERM)"

new_case
nested_whilepid 0.0 143
expect status "a --while-pid script that nobody broke exits 143"

new_case
nested_whilepid 0.0 143 setm
fault break 20 22 status=0 tok=tok0.0 fence=1 fence1=1
expect status "a set -m nested run's 143 after a break: no keeper signals it"

# A nested run whose outer hold was lost before its command's first line exits 76
# without running; any other run that never ran may not exit 76.
new_case
run 0.0 1 0 10 20 25 0
printf 'R 1.0 %s %s 76 1000 3000 proxy 5 file nested setm\n' "$(us 30)" "$(us 40)" >>"$D/hist/1"
expect PASS "a nested run that lost its outer hold before running exits 76"

new_case
run 0.0 1 0 10 20 25 0
norun 1.0 30 40 76
expect status "a run that never ran exits 76"

new_case
run 0.0 1 0 10 20 25 0
norun 1.0 5 30 80
expect status "a run that is no superseding job exits 80"

new_case
run 0.0 1 0 10 20 25 80
expect status "the command ran yet rlock exited 80"

new_case
norun 0.0 0 25 0
expect status "exit 0 without running the command"

new_case
run 0.0 5 0 10 20 25 0
fault restart 30 40 tok=- pttl=-2 fence=5 "at=$(us 30)" tok1=- pttl1=-2 fence1=0 "at1=$(us 40)"
run 1.0 1 45 50 60 65 0 R
expect persistence "a restart set the fence counter back"

new_case
run 0.0 5 0 10 2000 2005 76 none term
fault restart 30 40 tok=tok0.0 pttl=1500 fence=5 "at=$(us 30)" tok1=- pttl1=-2 fence1=5 "at1=$(us 40)"
expect persistence "a held lock (PTTL 1.5s, holder inside) gone after a 10ms restart"

new_case
run 0.0 1 0 10 20 25 0
echo "rlock: could not release 'soak': connection reset; it expires by itself" >>"$D/err/0"
expect release "a release that failed after a cut was not retried"

new_case
run 0.0 1 0 10 20 25 0
echo "rlock: could not release 'soak': Redis at redis://127.0.0.1:1/0 did not answer EVALSHA within 698ms; it expires by itself within 1.5s" >>"$D/err/0"
fault pause 15 1015 node=M ms=1000 reply=OK
expect PASS "a release that met a CLIENT PAUSE WRITE longer than its lease's rest gave up, as it said"

new_case
run 0.0 1 0 10 20 25 0
echo "rlock: [00:00:00.000] 'soak' was no longer held at release" >>"$D/err/0"
expect hidden-loss "rlock found its lock gone at release and exited 0"

new_case
run 0.0 1 0 10 20 25 0
sed -i 's/^final_free=yes/final_free=no/' "$D/meta"
expect shutdown "the lock still held after the soak"

# Quorum mode (soak.sh --masters 3): the same rules; a fault on one master explains nothing.
quorum_case() {
  new_case
  printf 'masters=3\nquorum=2\n' >>"$D/meta"
}

quorum_case
run 0.0 1 0 10 20 25 0
fault master_stop 30 1500 master=1 pid=1 stop_ms=1470
fault restart 1600 1700 master=2 pid=2 sleep_ms=50 tok=- pttl=-2 fence=1 "at=$(us 1600)" tok1=- pttl1=-2 fence1=1 "at1=$(us 1700)"
fault client_kill 1710 1720 master=0 killed=3
run 1.0 3 1000 1800 1900 1905 0
expect PASS "quorum mode: sequential holders across master_stop, restart and CLIENT KILL"

quorum_case
run 0.0 1 0 10 900 905 0
run 1.0 2 5 300 310 315 0 R
fault master_stop 100 800 master=0 pid=1 stop_ms=700
expect overlap "quorum mode: two holders inside at once; a frozen master explains nothing"

quorum_case
run 0.0 4 0 10 2000 2005 76 none term
fault restart 30 40 master=1 pid=2 sleep_ms=5 tok=tok0.0 pttl=1500 fence=4 "at=$(us 30)" tok1=- pttl1=-2 fence1=4 "at1=$(us 40)"
expect persistence "quorum mode: a held lock gone from a master after its 10ms restart"

quorum_case
run 0.0 5 0 10 500 505 76 none term
run 1.0 7 5 300 310 315 0
fault break 200 210 status=0 tok=tok0.0 fence=5 fences=6,5,5 fence1=7
expect PASS "quorum mode: a broken holder (its own fence below a master's counter) overlaps the next one"

# Sentinel and Cluster (soak.sh --sentinel/--cluster): a kill -9 of the master explains a
# grant lost with it (the asynchronous-replication window of docs/GUIDE.md and the man page), counted as explained;
# a planned failover or a slot migration explains nothing; --sync-replicas covering every
# replica lets no failover explain anything.
replicated_case() {
  new_case
  printf 'topology=%s\nreplicas=%s\nsync_replicas=%s\n' "$1" "$2" "${3:-0}" >>"$D/meta"
}

# expect_explained N WHAT: PASS, and the "explained" line counts N superseded runs.
expect_explained() {
  local out rc=0
  out=$(bash "$here/check.sh" "$D" 2>&1) || rc=$?
  if ((rc == 0)) && grep -q '^PASS$' <<<"$out" &&
    grep -q "^  explained .*: $1 superseded runs, $2 fences granted twice, $3 refused" <<<"$out"; then
    echo "ok   $4"
    return
  fi
  echo "FAIL $4: expected PASS with $1/$2/$3 explained, exit $rc:"
  printf '     %s\n' "${out//$'\n'/$'\n'     }"
  failed=$((failed + 1))
}

# The grants of 0.0 (fence 5) and 1.0 (fence 6) never reached the promoted replica; after
# the failover 2.0 and 3.0 get fences 5 and 6 again and their writes are refused.
lost_grants() {
  run 0.0 5 0 10 20 25 0
  run 1.0 6 5 30 40 45 0
  fault master_kill 50 2500 planned=0 old=SMASTER:1 new=SREPLICA:2 offset=900 replica_offsets=800,700
  run 2.0 5 2400 2600 2610 2615 0 R
  run 3.0 6 2500 2620 2630 2635 0 R
}

replicated_case sentinel 2
lost_grants
expect_explained 1 2 2 "sentinel: grants lost by a kill -9 of the master are explained, not failures"

replicated_case cluster 1
lost_grants
expect_explained 1 2 2 "cluster: grants lost by a kill -9 of the master are explained, not failures"

replicated_case sentinel 2
run 0.0 5 0 10 20 25 0
run 1.0 6 5 30 40 45 0
fault failover 50 1500 planned=1 old=SMASTER:1 new=SREPLICA:2 settled_ms=8000
run 2.0 5 1400 1600 1610 1615 0 R
expect overlap "sentinel: a planned SENTINEL FAILOVER that lost a grant is a failure"

replicated_case cluster 1
run 0.0 5 0 10 20 25 0
fault migrate 30 800 slot=1 from=CLUSTER1 to=CLUSTER2 pause_ms=300
run 1.0 5 700 900 910 915 0 R
expect overlap "cluster: a fence granted twice across a slot migration is a failure"

replicated_case sentinel 2 2
lost_grants
expect overlap "sentinel --sync-replicas 2: a kill -9 explains no lost grant"

replicated_case sentinel 2
run 0.0 5 0 10 20 25 0
fault master_kill 50 2500 planned=0 old=SMASTER:1 new=SREPLICA:2
run 1.0 5 2400 2600 2610 2615 0 R
run 2.0 6 5000 5010 5020 5025 0
fault master_kill 9000 11000 planned=0 old=SREPLICA:2 new=SMASTER:1
expect_explained 0 1 1 "sentinel: the same fence twice across a kill -9 is explained"

replicated_case sentinel 2
run 0.0 5 0 10 20 25 0
run 1.0 6 2000 2100 2110 2115 0
fault master_kill 5000 7000 planned=0 old=SMASTER:1 new=SREPLICA:2
run 2.0 6 6900 7100 7110 7115 0 R
expect overlap "sentinel: a grant made longer than its TTL before the kill is not explained by it"

replicated_case sentinel 2
run 0.0 5 0 10 20 25 0
run 1.0 4 30 40 50 55 0 R
fault master_kill 100 2500 planned=0 old=SMASTER:1 new=SREPLICA:2
expect overlap "sentinel: a kill -9 explains no stale fence granted before it"

replicated_case sentinel 2
run 1.0 6 2400 2600 2610 2615 0
run 0.0 5 0 10 4000 4005 76 R term
fault master_kill 50 2500 planned=0 old=SMASTER:1 new=SREPLICA:2
expect overlap "sentinel: a holder still inside 4s after the kill of its master (TTL 1s) is not explained"

# A planned SENTINEL FAILOVER issued at 1000, every sentinel naming the new master at 2000:
# 0.0 was granted fence 5 on the old master at 1500 (in the window, unreplicated), lost
# its lease when it learned at 2300; 1.0 got fence 5 again on the new master at 2100.
replicated_case sentinel 2
run 0.0 5 900 1500 2300 2305 76 none term
fault failover 1000 2000 planned=1 old=SMASTER:1 new=SREPLICA:2 named1_ms=800 named_ms=1000 settled_ms=3000
run 1.0 5 1200 2100 2110 2115 0
expect_explained 0 1 0 "sentinel: a grant on the old master before every sentinel named the new one is explained"

# A holder granted long before the failover renewed on the old master in its window (the
# renewal was lost with it): the new master's lease, from its last replicated renewal,
# ended at 2400 and 1.0 got the next fence there; 0.0 learned of the switch at 2600.
replicated_case sentinel 2
run 0.0 5 0 10 2600 2605 76 none term
fault failover 1000 2000 planned=1 old=SMASTER:1 new=SREPLICA:2 named1_ms=800 named_ms=1000 settled_ms=3000
run 1.0 6 1200 2400 2410 2415 0
expect_explained 1 0 0 "sentinel: a renewal lost on the old master in a planned failover's window is explained"

# The same holder still inside long after every sentinel named the new master (TTL 1s):
# a renewal lost in the window does not explain a holder that never noticed.
replicated_case sentinel 2
run 0.0 5 0 10 4500 4505 76 none term
fault failover 1000 2000 planned=1 old=SMASTER:1 new=SREPLICA:2 named1_ms=800 named_ms=1000 settled_ms=3000
run 1.0 6 1200 2400 2410 2415 0
expect overlap "sentinel: a holder inside 2.5s after the switch (TTL 1s) is not explained by a lost renewal"

# A holder that had left before the failover was issued explains nothing.
replicated_case sentinel 2
run 0.0 5 0 10 900 905 0 none
fault failover 1000 2000 planned=1 old=SMASTER:1 new=SREPLICA:2 named1_ms=800 named_ms=1000 settled_ms=3000
run 1.0 5 1200 2400 2410 2415 0
expect overlap "sentinel: a fence given twice to runs on either side of a failover, the first out before it, is a failure"

# The same, but both entered more than 300ms after every sentinel named the new master:
# neither can be a grant the sentinels still confirmed.
replicated_case sentinel 2
run 1.0 5 1200 2400 2700 2705 0
run 0.0 5 900 2600 2800 2805 76 none term
fault failover 1000 2000 planned=1 old=SMASTER:1 new=SREPLICA:2 named1_ms=800 named_ms=1000 settled_ms=3000
expect overlap "sentinel: a grant on the old master after every sentinel named the new one is a failure"

# 0.0 granted on the old master in the window (unreplicated), 1.0 granted again on the
# new one while 0.0 was inside; both released after every sentinel named the new master:
# the one whose hold the failover lost must end 76, not both 0.
replicated_case sentinel 2
run 0.0 5 900 1500 2600 2605 0 none
fault failover 1000 2000 planned=1 old=SMASTER:1 new=SREPLICA:2 named1_ms=800 named_ms=1000 settled_ms=3000
run 1.0 6 1200 2100 2700 2705 0
expect hidden-loss "sentinel: a hold a planned failover lost, released after the sentinels switched, does not exit 0"

# The same, 0.0 ending 76: explained.
replicated_case sentinel 2
run 0.0 5 900 1500 2600 2605 76 none
fault failover 1000 2000 planned=1 old=SMASTER:1 new=SREPLICA:2 named1_ms=800 named_ms=1000 settled_ms=3000
run 1.0 6 1200 2100 2700 2705 0
expect_explained 1 0 0 "sentinel: a hold a planned failover lost that ends 76 is explained"

# The acl fault: a command taken from the soak user. A refusal while it is on is 77; the
# same status with no such fault near is not a documented outcome.
new_case
run 0.0 1 0 10 20 25 0
norun 1.0 26 1300 77
fault acl 1000 1200 cmd=pexpire ms=200 taken=OK
expect PASS "a run refused while a command was taken from the soak user exits 77"

new_case
run 0.0 1 0 10 20 25 0
norun 1.0 5000 5300 77
fault acl 1000 1200 cmd=pexpire ms=200 taken=OK
expect status "77 long after the acl fault ended"

# After the soak: a dead waiter that blocks the lock, a key left without an expiry.
new_case
run 0.0 1 0 10 20 25 0
echo "final_unblocked=no (status 75)" >>"$D/meta"
expect shutdown "the lock free but blocked by a dead waiter after the soak"

new_case
run 0.0 1 0 10 20 25 0
echo "final_unblocked=yes" >>"$D/meta"
echo "final_noexpiry=lock:{soak}:queue" >>"$D/meta"
expect shutdown "a queue key left without an expiry after the soak"

new_case
run 0.0 1 0 10 20 25 0
echo "final_unblocked=yes" >>"$D/meta"
echo "final_noexpiry=" >>"$D/meta"
expect PASS "free, unblocked, every key expiring after the soak"

# A release refused by the ACL (the acl fault) is explained; away from it, it is not.
new_case
run 0.0 1 0 10 20 25 77
fault acl 15 30 cmd=del ms=15 taken=OK
printf 'rlock: could not release '"'"'soak'"'"': the ACL user '"'"'soak'"'"' may not run DEL\n' >>"$D/err/0"
expect PASS "a release refused while the acl fault took DEL"

# Shared holders of the soak key beside the exclusive ones.
new_case
srun shared soak - 0.0 1 0 10 50 55 0
srun shared soak - 1.0 2 0 20 40 45 0
run 2.0 3 30 60 70 75 0
expect PASS "two shared holders together, then an exclusive one"

new_case
srun shared soak - 0.0 2 0 10 50 55 0
srun shared soak - 1.0 1 0 20 40 45 0
expect PASS "shared holders granted together may enter in either order"

new_case
run 0.0 1 0 10 50 55 0
srun shared soak - 1.0 2 0 20 40 45 0
expect overlap "a shared holder entered while an exclusive one was inside"

new_case
srun shared soak - 0.0 1 0 10 50 55 0
run 1.0 2 0 20 40 45 0
expect overlap "an exclusive holder entered while a shared one was inside"

new_case
srun shared soak - 0.0 1 0 10 220 225 76
srun shared soak - 1.0 2 0 20 220 225 76
run 2.0 3 100 215 230 235 0
fault break 200 210 status=0 tok=shared lock pttl=900 fence=2 fence1=2
expect PASS "a break of shared holders explains every one of them, the one whose fence is below the counter too"

new_case
srun shared soak - 0.0 1 0 10 220 225 76
run 2.0 3 100 215 230 235 0
fault break 200 210 status=0 tok=tok9.9 pttl=900 fence=2 fence1=2
expect overlap "a break of another holder does not explain a shared holder with a lower fence"

new_case
run 0.0 1 0 10 20 25 0
srun priority soak - 1.0 2 5 30 40 45 0
expect PASS "a run with --priority is an exclusive run"

# The pool (--limit 3 on a key of its own).
new_case
shapes_meta
srun pool pool 1 0.0 1 0 10 100 105 0
srun pool pool 2 1.0 2 0 20 100 105 0
srun pool pool 3 2.0 3 0 30 100 105 0
srun pool pool 1 0.1 4 0 110 120 125 0
run 3.0 1 0 10 20 25 0
expect PASS "three pool holders at once on slots 1-3, then slot 1 again; fences per key"

new_case
shapes_meta
srun pool pool 1 0.0 1 0 10 100 105 0
srun pool pool 1 1.0 2 0 20 100 105 0
expect pool "two live pool holders given slot 1"

new_case
shapes_meta
srun pool pool 1 0.0 1 0 10 100 105 0
srun pool pool 2 1.0 2 0 20 100 105 0
srun pool pool 3 2.0 3 0 30 100 105 0
srun pool pool 4 3.0 4 0 40 100 105 0
expect pool "four holders inside a pool of three"

new_case
shapes_meta
srun pool pool 1 0.0 1 0 10 2600 2605 76
srun pool pool 1 1.0 2 1500 2000 2100 2105 0
fault stop 100 2300 run=0.0 stop_ms=2200
expect PASS "a slot handed again while its frozen holder's lease ran out, that one exits 76"

new_case
shapes_meta
srun pool pool 1 0.0 1 0 10 2600 2605 0
srun pool pool 1 1.0 2 1500 2000 2100 2105 0
fault stop 100 2300 run=0.0 stop_ms=2200
expect hidden-loss "a pool holder whose slot was handed again while it was frozen exits 0"

# The once-per-period key (--done-for 1s on a key of its own).
new_case
shapes_meta
srun 'done' once - 0.0 1 0 10 20 25 0
norun 1.0 30 40 75
srun 'done' once - 1.0 2 900 1100 1110 1115 0
expect PASS "done for 1s: the next run enters 1.08s after a success"

new_case
shapes_meta
srun 'done' once - 0.0 1 0 10 20 25 0
srun 'done' once - 1.0 2 300 500 510 515 0
expect done-for "done for 1s: the next run entered 480ms after a success"

new_case
shapes_meta
srun 'done' once - 0.0 1 0 10 20 25 76
srun 'done' once - 1.0 2 300 500 510 515 0
expect PASS "done for 1s: a run that did not end 0 is no success"

new_case
shapes_meta
srun 'done' once - 0.0 1 0 10 20 25 0
srun 'done' once - 1.0 2 300 500 510 515 0
fault restart 100 200 "at=$(us 100)" "at1=$(us 200)" tok=- pttl=0 fence=- fence1=-
echo "persistence=0" >>"$D/meta"
expect PASS "done for 1s: a restart without persistence loses the period"

new_case
shapes_meta
srun 'done' once - 0.0 1 0 10 50 55 0
srun 'done' once - 1.0 2 0 20 40 45 76
expect overlap "two holders of the once-per-period key at once"

new_case
shapes_meta
srun 'done' once - 0.0 1 0 10 20 25 0
srun 'done' once - 1.0 1 1500 1600 1610 1615 0
expect overlap "one fence of the once-per-period key granted twice"

# maxmemory reached (the oom fault): Redis's OOM refusal is 70 while it holds, never else.
new_case
run 0.0 1 0 10 20 25 0
norun 1.0 1000 1100 70
fault oom 900 3000 ms=2100 used=1000000 maxmemory=1032768 set=OK restored=OK
expect PASS "70 while maxmemory was reached"

new_case
run 0.0 1 0 10 20 25 0
norun 1.0 5000 5100 70
fault oom 900 3000 ms=2100 used=1000000 maxmemory=1032768 set=OK restored=OK
expect status "70 long after the oom fault ended"

# The named pool (--limit db-a,db-b,db-c): RLOCK_SLOT a name, never one to two live holders.
new_case
shapes_meta
srun npool names db-a 0.0 1 0 10 300 305 0
srun npool names db-b 1.0 2 0 20 200 205 0
srun npool names db-a 2.0 3 0 310 400 405 0
expect PASS "the named pool: two names held together, a name taken again once free"

new_case
shapes_meta
srun npool names db-a 0.0 1 0 10 300 305 0
srun npool names db-a 1.0 2 0 20 200 205 0
expect pool "the named pool gave one name to two live holders"

new_case
shapes_meta
srun npool names 2 0.0 1 0 10 300 305 0
expect pool "a holder of the named pool saw a number, not one of its names"

# The other layouts: rlock --layout runs and their real clients' sections (peer.sh) on one
# name, one at a time; no fences (none is required), and a peer's exit is not judged.
new_case
shapes_meta
srun plain pl - 0.0 none 0 10 20 25 0
srun peer-plain pl - pplain.0.1 none 0 30 40 100 1
srun redisson rd - 1.0 none 0 35 45 50 0
srun peer-redisson rd - predisson.0.1 none 0 50 60 70 0
expect PASS "--layout plain and redisson: rlock and the real clients one after another"

new_case
shapes_meta
srun plain pl - 0.0 none 0 10 50 55 0
srun peer-plain pl - pplain.0.1 none 0 30 40 100 0
expect layout "--layout plain: rlock and the real client inside at once"

new_case
shapes_meta
srun peer-redisson rd - predisson.0.1 none 0 10 50 55 0
srun peer-redisson rd - predisson.1.1 none 0 30 40 100 0
expect layout "--layout redisson: two sections of the real clients at once"

new_case
shapes_meta
srun redisson rd - 0.0 none 0 10 1900 1950 76
srun peer-redisson rd - predisson.0.1 none 0 1500 1510 1600 0
fault stop 100 1800 run=0.0 ttl=1000 stop_ms=1700
expect PASS "--layout redisson: a frozen rlock holder overlaps the real client's section and exits 76"

new_case
shapes_meta
srun redisson rd - 0.0 none 0 10 1900 1950 0
srun peer-redisson rd - predisson.0.1 none 0 1500 1510 1600 0
fault stop 100 1800 run=0.0 ttl=1000 stop_ms=1700
expect hidden-loss "--layout redisson: a frozen rlock holder that lost the lock to the real client exits 0"

new_case
shapes_meta
run 0.0 1 0 10 20 25 0
srun peer-redisson rd - predisson.0.1 none 0 30 4000 4100 0
sed -i 's/ tokpredisson.0.1 / - /' "$D/hist/predisson" # a peer logs no token (peer.sh)
fault break 100 200 tok=- fence=1 fence1=1 status=0
expect PASS "a break that found no holder of the soak key says nothing of a peer's section"

echo "$((n - failed)) of $n checker cases ok"
((failed == 0))
