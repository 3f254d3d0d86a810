#!/usr/bin/env bats
# ctest-labels: slow
# CI policies (docs/GUIDE.md "CI policies"): a label that says which job holds or waits (by default the CI
# job's own URL), "deploy only the latest" (--supersede), a capped line (--max-waiters),
# priorities (--priority: only a higher priority overtakes) and pools (--limit N gives
# each holder RLOCK_SLOT, the lowest slot no live holder has).
#
# Ordering events are awaited, never slept for: a child marks itself with a file
# (wait_for_file), a waiter's arrival is the waiter count in `rlock status --json`.

# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell
load helpers/redis

bats_require_minimum_version 1.5.0

setup_file() { redis_start; }

setup() {
  T=$BATS_TEST_TMPDIR
  write_gate "$T/gate.sh"
  # no CI of the machine running the tests may label anything here
  unset GITHUB_ACTIONS GITLAB_CI JENKINS_URL BUILDKITE RLOCK_LABEL
}
# waiter_labels KEY: the waiters' labels in line order, one per line.
waiter_labels() {
  status_json "$1" | jq -r '.waiters[].label'
}
order_is() { assert_equal "$(tr '\n' ' ' <"$T/order")" "$* "; }

# --- labels -------------------------------------------------------------------------------

@test "a label is stored with the holder and shown by status, list, --json and the waiting line" {
  url=https://ci.example/acme/shop/-/jobs/4711
  bg_start h "$RLOCK" run --label "$url" lb -- sh "$T/gate.sh" "$T" h
  h=$BG_PID
  wait_for_file "$T/h.started" 20
  run -0 "$RLOCK" status lb
  assert_line "          label $url"
  run -0 "$RLOCK" status lb --json
  assert_equal "$(jq -r '.holders[0].label' <<<"$output")" "$url"
  run -0 "$RLOCK" list lb
  assert_output --regexp $'\t'"$url"'$'
  run -75 "$RLOCK" run -n lb -- true
  assert_output --partial "is held by $url since"
  bg_start w "$RLOCK" run --wait 60s --label waiter-job lb -- true
  w=$BG_PID
  wait_until '[ "$(n_waiters lb)" -eq 1 ]' 30
  assert_equal "$(waiter_labels lb)" waiter-job
  wait_until "grep -q 'held by $url since' '$T/w.err'" 10
  touch "$T/h.go"
  bg_wait "$h" 20
  bg_wait "$w" 20
  assert_equal "$BG_STATUS" 0
}

@test "the label comes from RLOCK_LABEL, else the CI job's URL (GitHub Actions, GitLab CI, Jenkins, Buildkite)" {
  label_of() { # ENV...: the label of a holder acquired with that environment
    local tok l
    tok=$(env "$@" "$RLOCK" acquire --ttl 60s ci-env)
    l=$(status_json ci-env | jq -r '.holders[0].label')
    "$RLOCK" release ci-env --token "$tok"
    echo "$l"
  }
  run -0 label_of RLOCK_LABEL=mine GITLAB_CI=true CI_JOB_URL=https://gitlab.example/j/1
  assert_output mine
  run -0 label_of GITHUB_ACTIONS=true GITHUB_SERVER_URL=https://github.com \
    GITHUB_REPOSITORY=acme/shop GITHUB_RUN_ID=123
  assert_output https://github.com/acme/shop/actions/runs/123
  run -0 label_of GITLAB_CI=true CI_JOB_URL=https://gitlab.example/acme/shop/-/jobs/9
  assert_output https://gitlab.example/acme/shop/-/jobs/9
  run -0 label_of JENKINS_URL=https://jenkins.example/ BUILD_URL=https://jenkins.example/job/deploy/7/
  assert_output https://jenkins.example/job/deploy/7/
  run -0 label_of BUILDKITE=true BUILDKITE_BUILD_URL=https://buildkite.com/acme/shop/builds/5 \
    BUILDKITE_JOB_ID=abc-1
  assert_output "https://buildkite.com/acme/shop/builds/5#abc-1"
  run -0 label_of
  assert_output null
}

@test "a label is bounded and escaped: control characters or over 256 bytes are refused (64)" {
  run -64 "$RLOCK" run --label $'two\nlines' bad -- true
  assert_output --partial "invalid --label"
  run -64 "$RLOCK" run --label "$(printf 'x%.0s' {1..257})" bad -- true
  RLOCK_LABEL=$'\e[31mred' run -64 "$RLOCK" acquire bad
  assert_output --partial "invalid RLOCK_LABEL"
  run -0 "$RLOCK" run --label "$(printf 'x%.0s' {1..256})" bad -- true
  # a CI's own variable with control characters is no label, not an error
  GITLAB_CI=true CI_JOB_URL=$'https://x\n' run -0 "$RLOCK" run bad -- true
  # a label written by another client is escaped when shown
  rcli set 'lock:{esc}' foreign px 60000 >/dev/null
  rcli hset 'lock:{esc}:h:foreign' host h pid 1 label $'\e[31mred\nline' >/dev/null
  run -0 "$RLOCK" status esc
  assert_output --partial 'label \x1b[31mred\x0aline'
}

# --- deploy only the latest ------------------------------------------------------------------

@test "--supersede: a newer superseding waiter replaces the older one, which exits 75 saying by whom" {
  bg_start h "$RLOCK" run sup -- sh "$T/gate.sh" "$T" h
  h=$BG_PID
  wait_for_file "$T/h.started" 20
  bg_start plain "$RLOCK" run --wait 60s sup -- sh -c 'echo plain >>"$0"' "$T/order"
  plain=$BG_PID
  wait_until '[ "$(n_waiters sup)" -eq 1 ]' 30
  bg_start d1 "$RLOCK" run --wait 60s --supersede --label deploy-1 sup -- sh -c 'echo d1 >>"$0"' "$T/order"
  d1=$BG_PID
  wait_until '[ "$(n_waiters sup)" -eq 2 ]' 30
  bg_start d2 "$RLOCK" run --wait 60s --supersede --label deploy-2 sup -- sh -c 'echo d2 >>"$0"' "$T/order"
  d2=$BG_PID
  bg_wait "$d1" 10
  assert_equal "$BG_STATUS" 75
  grep -q "superseded by deploy-2" "$T/d1.err"
  # the holder and the plain waiter are untouched; the newcomer is at the end
  assert_equal "$(waiter_labels sup | tr '\n' ' ')" "null deploy-2 "
  kill -0 "$h"
  touch "$T/h.go"
  for p in "$h" "$plain" "$d2"; do
    bg_wait "$p" 30
    assert_equal "$BG_STATUS" 0
  done
  order_is plain d2
}

@test "--supersede: a superseded job exits --superseded-exit-code, not -E; without a label the message names host and pid" {
  t=$("$RLOCK" acquire --ttl 60s sup2)
  bg_start d1 "$RLOCK" run --wait 60s -E 0 --superseded-exit-code 3 --supersede sup2 -- true
  d1=$BG_PID
  wait_until '[ "$(n_waiters sup2)" -eq 1 ]' 30
  bg_start d2 "$RLOCK" run --wait 60s -E 0 --supersede sup2 -- true
  d2=$BG_PID
  bg_wait "$d1" 10
  assert_equal "$BG_STATUS" 3
  grep -Eq "superseded by .+ pid [0-9]+" "$T/d1.err"
  # -E alone leaves a superseded job at 75; acquire takes the flag too
  bg_start d3 "$RLOCK" acquire --wait 60s -E 0 --superseded-exit-code 4 --supersede sup2
  d3=$BG_PID
  bg_wait "$d2" 20
  assert_equal "$BG_STATUS" 75
  "$RLOCK" release sup2 --token "$t"
  bg_wait "$d3" 20
  assert_equal "$BG_STATUS" 0
}

@test "--superseded-exit-code: a wait that runs out is -E's, not the superseded status" {
  t=$("$RLOCK" acquire --ttl 60s sup3)
  run "$RLOCK" run --wait 300ms -E 0 --superseded-exit-code 3 --supersede sup3 -- true
  assert_equal "$status" 0
  run "$RLOCK" run -n --superseded-exit-code 3 sup3 -- true
  assert_equal "$status" 75
  for bad in 256 -1 x ''; do
    run "$RLOCK" run --superseded-exit-code "$bad" sup3 -- true
    assert_equal "$status" 64
  done
  "$RLOCK" release sup3 --token "$t"
}

@test "--supersede: a superseded waiter that missed the message never rejoins" {
  t=$("$RLOCK" acquire --ttl 60s miss)
  bg_start d1 "$RLOCK" run --wait 60s --supersede miss -- touch "$T/d1.ran"
  d1=$BG_PID
  wait_until '[ "$(n_waiters miss)" -eq 1 ]' 30
  kill -STOP "$d1" # it hears nothing and its place's lease runs on
  bg_start d2 "$RLOCK" run --wait 60s --supersede --label d2 miss -- touch "$T/d2.ran"
  d2=$BG_PID
  wait_until "[ \"\$(waiter_labels miss)\" = d2 ]" 30
  "$RLOCK" release miss --token "$t"
  bg_wait "$d2" 20
  assert_equal "$BG_STATUS" 0
  kill -CONT "$d1"
  bg_wait "$d1" 20
  assert_equal "$BG_STATUS" 75
  assert [ ! -e "$T/d1.ran" ]
  grep -q "superseded by d2" "$T/d1.err"
}

@test "--supersede: latest wins: an older job stopped past its place's lease is superseded when it comes back while the newer one holds" {
  t=$("$RLOCK" acquire --ttl 60s late)
  bg_start d1 "$RLOCK" run --wait 60s --supersede --label d1 late -- touch "$T/d1.ran"
  d1=$BG_PID
  wait_until '[ "$(n_waiters late)" -eq 1 ]' 30
  kill -STOP "$d1"
  # its place's lease runs out: it is no longer in line, and nothing marks it
  wait_until '[ "$(n_waiters late)" -eq 0 ]' 30
  bg_start d2 "$RLOCK" run --wait 60s --supersede --label d2 late -- sh "$T/gate.sh" "$T" d2
  d2=$BG_PID
  wait_until '[ "$(n_waiters late)" -eq 1 ]' 30
  "$RLOCK" release late --token "$t"
  wait_for_file "$T/d2.started" 20 # the newer job was granted: the line is empty again
  kill -CONT "$d1"
  bg_wait "$d1" 20
  assert_equal "$BG_STATUS" 75
  grep -q "superseded by d2" "$T/d1.err"
  touch "$T/d2.go"
  bg_wait "$d2" 20
  assert_equal "$BG_STATUS" 0
  assert [ ! -e "$T/d1.ran" ]
}

@test "--supersede: latest wins after the newer job finished, and the mark outlives the place leases by far" {
  t=$("$RLOCK" acquire --ttl 60s after)
  bg_start d1 "$RLOCK" run --wait 60s --supersede --label d1 after -- touch "$T/d1.ran"
  d1=$BG_PID
  wait_until '[ "$(n_waiters after)" -eq 1 ]' 30
  kill -STOP "$d1"
  wait_until '[ "$(n_waiters after)" -eq 0 ]' 30
  "$RLOCK" release after --token "$t"
  run -0 "$RLOCK" run --supersede --label d2 after -- true
  kill -CONT "$d1"
  bg_wait "$d1" 20
  assert_equal "$BG_STATUS" 75
  grep -q "superseded by d2" "$T/d1.err"
  assert [ ! -e "$T/d1.ran" ]
  # what says a newer superseding job exists lives as long as the key's history (7 days)
  pttl=$(rcli pttl "lock:{after}:sups")
  ((pttl > 86400000))
}

@test "--supersede: a newcomer without --supersede leaves the superseding waiter in line" {
  t=$("$RLOCK" acquire --ttl 60s keep)
  bg_start d1 "$RLOCK" run --wait 60s --supersede --label d1 keep -- sh -c 'echo d1 >>"$0"' "$T/order"
  d1=$BG_PID
  wait_until '[ "$(n_waiters keep)" -eq 1 ]' 30
  bg_start p "$RLOCK" run --wait 60s --label p keep -- sh -c 'echo p >>"$0"' "$T/order"
  p=$BG_PID
  wait_until 'waiter_labels keep | grep -qx p' 30
  assert_equal "$(waiter_labels keep | tr '\n' ' ')" "d1 p "
  "$RLOCK" release keep --token "$t"
  for q in "$d1" "$p"; do
    bg_wait "$q" 20
    assert_equal "$BG_STATUS" 0
  done
  order_is d1 p
}

@test "--supersede: latest wins across a break: an older job stopped past its place's lease is still superseded" {
  t=$("$RLOCK" acquire --ttl 60s brk)
  bg_start d1 "$RLOCK" run --wait 60s --supersede --label d1 brk -- touch "$T/d1.ran"
  d1=$BG_PID
  wait_until '[ "$(n_waiters brk)" -eq 1 ]' 30
  kill -STOP "$d1"
  wait_until '[ "$(n_waiters brk)" -eq 0 ]' 30
  bg_start d2 "$RLOCK" run --wait 60s --supersede --label d2 brk -- touch "$T/d2.ran"
  d2=$BG_PID
  wait_until '[ "$(n_waiters brk)" -eq 1 ]' 30
  # the operator frees the lock: the newer job runs, and what says it is the newest stays
  run -0 "$RLOCK" break --yes brk
  bg_wait "$d2" 20
  assert_equal "$BG_STATUS" 0
  kill -CONT "$d1"
  bg_wait "$d1" 20
  assert_equal "$BG_STATUS" 75
  grep -q "superseded by d2" "$T/d1.err"
  assert [ ! -e "$T/d1.ran" ]
}

@test "--supersede: a value of another type at :sups costs a superseding holder's renewals nothing" {
  bg_start h "$RLOCK" run --ttl 1s --supersede --label h fsups -- sh "$T/gate.sh" "$T" h
  h=$BG_PID
  wait_for_file "$T/h.started" 20
  rcli set 'lock:{fsups}:sups' 'not a hash' >/dev/null
  # timing is the point: the 1 s lease must be renewed for well over its TTL
  sleep 3
  _rlock_alive "$h"
  run ! grep -q lost "$T/h.err"
  touch "$T/h.go"
  bg_wait "$h" 20
  assert_equal "$BG_STATUS" 0
}

@test "--supersede: who supersedes is at most 1 KiB, whatever another program wrote at :sups" {
  t=$("$RLOCK" acquire --ttl 60s bigby)
  bg_start d1 "$RLOCK" run --wait 60s --supersede --label d1 bigby -- touch "$T/d1.ran"
  d1=$BG_PID
  wait_until '[ "$(n_waiters bigby)" -eq 1 ]' 30
  # a newest job named by 9 MiB (a reply over 8 MiB is refused); d1 hears of it at its
  # next attempt (every 2 s)
  head -c 9437184 /dev/zero | tr '\0' x | rcli -x hset 'lock:{bigby}:sups' ' by' >/dev/null
  rcli hset 'lock:{bigby}:sups' ' newest' another-job >/dev/null
  bg_wait "$d1" 20
  assert_equal "$BG_STATUS" 75
  grep -q "superseded by xxxxxxxx" "$T/d1.err"
  mark=$(rcli --scan --pattern 'lock:{bigby}:x:*')
  (($(rcli strlen "$mark") <= 1024))
  "$RLOCK" release bigby --token "$t"
}

@test "--supersede under an ACL refusal: nothing it wrote outlives it, and the waiter before keeps its place" {
  acl_lock_user sups-nohlen pw -hlen
  rcli acl setuser sups-nochan on '>pw' '~lock:*' resetchannels '+@all' >/dev/null
  # HLEN refused: 77, and :sups is not written (Redis 7 asks the ACL first) or expires
  run -77 "$RLOCK" -u "redis://sups-nohlen:pw@127.0.0.1:$REDIS_PORT/0" run --supersede acl-sups -- true
  assert_output --partial HLEN
  pttl=$(rcli pttl 'lock:{acl-sups}:sups')
  ((pttl > 0 || pttl == -2))
  # PUBLISH refused: the newer job fails (77) before it supersedes anyone
  t=$("$RLOCK" acquire --ttl 60s acl-sups)
  bg_start d1 "$RLOCK" run --wait 60s --supersede --label d1 acl-sups -- touch "$T/d1.ran"
  d1=$BG_PID
  wait_until '[ "$(n_waiters acl-sups)" -eq 1 ]' 30
  run -77 "$RLOCK" -u "redis://sups-nochan:pw@127.0.0.1:$REDIS_PORT/0" run --wait 10s --supersede \
    --label d2 acl-sups -- true
  assert_equal "$(waiter_labels acl-sups)" d1
  "$RLOCK" release acl-sups --token "$t"
  bg_wait "$d1" 20
  assert_equal "$BG_STATUS" 0
  assert [ -e "$T/d1.ran" ]
}

@test "--supersede: of several superseding waiters joining at the same moment exactly one stays" {
  t=$("$RLOCK" acquire --ttl 60s race)
  pids=()
  for i in 1 2 3 4 5 6; do
    bg_start "r$i" "$RLOCK" run --wait 60s --supersede --label "r$i" race -- touch "$T/r$i.ran"
    pids+=("$BG_PID")
  done
  # five of them leave (75); one stays in line
  wait_until '[ "$(grep -l superseded "$T"/r*.err 2>/dev/null | wc -l)" -eq 5 ]' 30
  assert_equal "$(n_waiters race)" 1
  "$RLOCK" release race --token "$t"
  ok=0
  for p in "${pids[@]}"; do
    bg_wait "$p" 20
    case $BG_STATUS in 0) ok=$((ok + 1)) ;; 75) ;; *) fail "exit $BG_STATUS" ;; esac
  done
  assert_equal "$ok" 1
  assert_equal "$(find "$T" -name 'r*.ran' | wc -l)" 1
}

# --- a capped line -----------------------------------------------------------------------------

# --- cancel in progress --------------------------------------------------------------------------

# write_trapping FILE: a job that says when it starts (NAME.started) and, on SIGTERM, says so
# in the log, takes a moment and exits 3. Arguments: DIR NAME.
write_trapping() {
  cat >"$1" <<'EOF'
d=$1 n=$2
trap 'echo "$n stopping" >>"$d/log"; sleep 0.3; echo "$n stopped" >>"$d/log"; exit 3' TERM
echo $$ >"$d/$n.pid"
touch "$d/$n.started"
while :; do sleep 0.05; done
EOF
}

@test "--cancel-in-progress: a newer job stops the superseding holder's command, which exits superseded (75); the newer one then runs" {
  write_trapping "$T/job.sh"
  bg_start d1 "$RLOCK" run --supersede --label d1 cip -- sh "$T/job.sh" "$T" d1
  d1=$BG_PID
  wait_for_file "$T/d1.started" 20
  run -0 "$RLOCK" run --wait 60s --supersede --cancel-in-progress --label d2 cip -- \
    sh -c 'echo "d2 ran" >>"$0/log"' "$T"
  bg_wait "$d1" 20
  assert_equal "$BG_STATUS" 75
  grep -q "superseded by d2 (--cancel-in-progress)" "$T/d1.err"
  # the holder's command heard SIGTERM and finished its trap before the newer job ran
  assert_equal "$(tr '\n' ' ' <"$T/log")" "d1 stopping d1 stopped d2 ran "
  # nothing is left behind: no holder, no waiter, no process of the stopped job
  run -1 "$RLOCK" status cip
  run ! kill -0 "$(cat "$T/d1.pid")"
  run -0 "$RLOCK" history cip
  assert_output --partial "asked to stop by d2 (--cancel-in-progress)"
  assert_output --partial "released"
}

@test "--cancel-in-progress: a command that ignores SIGTERM is killed after the holder's own --kill-after; the holder exits its --superseded-exit-code" {
  bg_start d1 "$RLOCK" run --supersede --superseded-exit-code 9 --kill-after 1s --label d1 cik -- \
    sh -c 'trap "" TERM; touch "$0/d1.started"; while :; do sleep 0.05; done' "$T"
  d1=$BG_PID
  wait_for_file "$T/d1.started" 20
  run -0 "$RLOCK" run --wait 60s --supersede --cancel-in-progress --label d2 cik -- true
  bg_wait "$d1" 20
  assert_equal "$BG_STATUS" 9
  grep -q "SIGKILL in 1s" "$T/d1.err"
  run -1 "$RLOCK" status cik
}

@test "--cancel-in-progress: a holder that did not ask for --supersede is never stopped" {
  bg_start h "$RLOCK" run cin -- sh "$T/gate.sh" "$T" h
  h=$BG_PID
  wait_for_file "$T/h.started" 20
  bg_start d "$RLOCK" run --wait 60s --supersede --cancel-in-progress --label d cin -- touch "$T/d.ran"
  d=$BG_PID
  wait_until '[ "$(n_waiters cin)" -eq 1 ]' 30
  # the newer job joined the line without marking the holder (the script that lets it
  # join writes the mark), and no stop was recorded
  tok=$(status_json cin | jq -r '.holders[0].token')
  assert_equal "$(rcli hexists "lock:{cin}:h:$tok" cancel)" 0
  run -0 "$RLOCK" history cin
  refute_output --partial "asked to stop"
  kill -0 "$h"
  touch "$T/h.go"
  bg_wait "$h" 20
  assert_equal "$BG_STATUS" 0
  bg_wait "$d" 20
  assert_equal "$BG_STATUS" 0
  assert [ -e "$T/d.ran" ]
}

@test "--cancel-in-progress needs --supersede (64), and is run's alone" {
  run -64 "$RLOCK" run --cancel-in-progress cix -- touch "$T/ran"
  assert_output --partial "needs --supersede"
  run -64 "$RLOCK" acquire --supersede --cancel-in-progress cix
  assert [ ! -e "$T/ran" ]
  run -1 "$RLOCK" status cix
}

@test "--max-waiters N: joining a line of N waiters is not acquired at once (75); fewer may join" {
  t=$("$RLOCK" acquire --ttl 60s cap)
  bg_start w1 "$RLOCK" run --wait 60s cap -- true
  w1=$BG_PID
  wait_until '[ "$(n_waiters cap)" -eq 1 ]' 30
  start=$(now_ms)
  run -75 "$RLOCK" run --wait 60s --max-waiters 1 cap -- touch "$T/ran"
  assert [ $(($(now_ms) - start)) -lt "$(slack 3000)" ]
  assert_output --partial "--max-waiters 1"
  assert [ ! -e "$T/ran" ]
  bg_start w2 "$RLOCK" run --wait 60s --max-waiters 2 cap -- true
  w2=$BG_PID
  wait_until '[ "$(n_waiters cap)" -eq 2 ]' 30
  "$RLOCK" release cap --token "$t"
  for p in "$w1" "$w2"; do
    bg_wait "$p" 20
    assert_equal "$BG_STATUS" 0
  done
  run -64 "$RLOCK" run --max-waiters 0 cap -- true
  run -64 "$RLOCK" run --max-waiters many cap -- true
}

@test "--supersede and --max-waiters 1 together: the newest replaces the older, the line stays one" {
  t=$("$RLOCK" acquire --ttl 60s supcap)
  bg_start d1 "$RLOCK" run --wait 60s --supersede --max-waiters 1 supcap -- true
  d1=$BG_PID
  wait_until '[ "$(n_waiters supcap)" -eq 1 ]' 30
  bg_start d2 "$RLOCK" run --wait 60s --supersede --max-waiters 1 --label d2 supcap -- true
  d2=$BG_PID
  bg_wait "$d1" 10
  assert_equal "$BG_STATUS" 75
  assert_equal "$(waiter_labels supcap)" d2
  "$RLOCK" release supcap --token "$t"
  bg_wait "$d2" 20
  assert_equal "$BG_STATUS" 0
}

# --- priorities ---------------------------------------------------------------------------------

@test "--priority: a higher priority is served first, equal ones in arrival order; status shows it" {
  t=$("$RLOCK" acquire --ttl 60s pr)
  pids=()
  for w in "a 0" "b 5" "c 0" "d 5" "e -3"; do
    set -- $w
    bg_start "$1" "$RLOCK" run --wait 60s --priority "$2" pr -- sh -c 'echo "$0" >>"$1"' "$1" "$T/order"
    pids+=("$BG_PID")
    wait_until "[ \"\$(n_waiters pr)\" -eq ${#pids[@]} ]" 30
  done
  run -0 "$RLOCK" status pr
  assert_line --partial "waiter 1. (priority 5) "
  assert_line --partial "waiter 5. (priority -3) "
  run -0 "$RLOCK" status pr --json
  assert_equal "$(jq -c '[.waiters[].priority]' <<<"$output")" "[5,5,0,0,-3]"
  "$RLOCK" release pr --token "$t"
  for p in "${pids[@]}"; do
    bg_wait "$p" 30
    assert_equal "$BG_STATUS" 0
  done
  order_is b d a c e
}

@test "a priority waiter killed with -9 at the head of the line leaves within its place's lease" {
  t=$("$RLOCK" acquire --ttl 60s pk)
  bg_start low "$RLOCK" run --wait 60s pk -- touch "$T/low.ran"
  low=$BG_PID
  wait_until '[ "$(n_waiters pk)" -eq 1 ]' 30
  bg_start high "$RLOCK" run --wait 60s --priority 100 pk -- touch "$T/high.ran"
  high=$BG_PID
  wait_until '[ "$(n_waiters pk)" -eq 2 ]' 30
  kill -9 "$high"
  "$RLOCK" release pk --token "$t"
  start=$(now_ms)
  bg_wait "$low" 30
  assert_equal "$BG_STATUS" 0
  elapsed=$(($(now_ms) - start))
  echo "# the next waiter got in ${elapsed}ms after the release" >&3
  # the dead head's place lease (6s) plus a re-check (2s), with slack
  assert [ "$elapsed" -lt "$(slack 10000)" ]
  assert [ ! -e "$T/high.ran" ]
}

@test "--priority takes -1000 to 1000" {
  run -64 "$RLOCK" run --priority 1001 p -- true
  run -64 "$RLOCK" run --priority=-1001 p -- true
  run -64 "$RLOCK" run --priority x p -- true
  run -0 "$RLOCK" run --priority -1000 p -- true
  run -0 "$RLOCK" run --priority=1000 p -- true
}

# --- pools --------------------------------------------------------------------------------------

@test "pools: every holder of --limit N has RLOCK_SLOT, the lowest free, unique among live holders" {
  for i in 1 2 3; do
    bg_start "p$i" "$RLOCK" run --limit 3 pool -- sh -c 'echo "$RLOCK_SLOT" >"$0.slot"; exec sh "$1" "$2" "$3"' \
      "$T/p$i" "$T/gate.sh" "$T" "p$i"
    pids[i]=$BG_PID
    wait_for_file "$T/p$i.started" 20
  done
  assert_equal "$(cat "$T"/p*.slot | sort | tr '\n' ' ')" "1 2 3 "
  run -0 "$RLOCK" status pool --json
  assert_equal "$(jq -c '[.holders[].slot] | sort' <<<"$output")" "[1,2,3]"
  run -0 "$RLOCK" status pool
  assert_output --partial "slot 2"
  # the holder of slot 2 leaves: the next one gets 2
  for i in 1 2 3; do [[ $(cat "$T/p$i.slot") == 2 ]] && two=$i; done
  touch "$T/p$two.go"
  bg_wait "${pids[two]}" 20
  run -0 "$RLOCK" run --limit 3 pool -- sh -c 'echo "$RLOCK_SLOT"'
  assert_output 2
  for i in 1 2 3; do touch "$T/p$i.go"; done
  run -0 "$RLOCK" acquire --limit 3 --json pool
  assert_output --partial '"slot":'
}

@test "pools: a holder killed with -9 keeps its slot until its lease runs out, then it is free again" {
  bg_start k "$RLOCK" run --limit 2 --ttl 2s kpool -- sh -c 'echo "$RLOCK_SLOT" >"$0"; exec sleep 60' "$T/k.slot"
  k=$BG_PID
  wait_for_content "$T/k.slot" 20
  assert_equal "$(cat "$T/k.slot")" 1
  kill -9 "$k"
  run -0 "$RLOCK" run --limit 2 kpool -- sh -c 'echo "$RLOCK_SLOT"'
  assert_output 2
  wait_until '[ "$("$RLOCK" run --limit 2 kpool -- sh -c "echo \$RLOCK_SLOT")" = 1 ]' "$(slack 10)"
}

@test "--and with a line policy: each key's line gets it" {
  t=$("$RLOCK" acquire --ttl 60s ap2)
  bg_start m "$RLOCK" run --wait 60s --priority 7 --label multi ap1 --and ap2 -- true
  m=$BG_PID
  wait_until '[ "$(n_waiters ap2)" -eq 1 ]' 30
  run -0 "$RLOCK" status ap2 --json
  assert_equal "$(jq -r '.waiters[0] | "\(.priority) \(.label)"' <<<"$output")" "7 multi"
  "$RLOCK" release ap2 --token "$t"
  bg_wait "$m" 20
  assert_equal "$BG_STATUS" 0
}
