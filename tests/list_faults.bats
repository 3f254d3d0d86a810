#!/usr/bin/env bats
# ctest-labels: faults
# `rlock list` and `list --json` under faults: the server killed or stopped part way
# through a listing of thousands of locks, standard output that cannot be written,
# and (quorum mode) one master lost part way.
#
# "Part way" is made exact, not timed: rlock writes a batch's output (512 locks) before
# it reads the next, and its standard output is a FIFO that the test has opened but not
# yet read, larger batches than a pipe holds. Once the server has answered three list
# calls (rlock keeps two in flight: the third is sent when the first is printed), rlock
# is blocked writing the first batch, the fault is made, and the test then reads.

# shellcheck disable=SC2154 # $stderr and $lines come from bats's `run`
# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell

bats_require_minimum_version 1.5.0

load helpers/redis
load helpers/topology

setup_file() {
  redis_start || return 1
  masters_start M 3
  scripts_setup
}

setup() { T=$BATS_TEST_TMPDIR; }

# make_locks NAME PREFIX N: N plain locks PREFIX0 … PREFIX(N-1) on server NAME (REDIS:
# the file's), taken by rlock's own acquire script sent through redis-cli --pipe (as
# bench/run.sh part 10 makes them: N rlock processes would take minutes), each with
# token tokI and a command of 300 bytes, so that 512 lines (or JSON objects) are more
# than a pipe holds.
make_locks() {
  local name=$1 pfx=$2 n=$3 sha
  sha=$(rcli_to "$name" script load "$(<"$SCRIPTS/acquire.lua")")
  awk -v n="$n" -v sha="$sha" -v pfx="$pfx" '
    function bulk(s) { printf "$%d\r\n%s\r\n", length(s), s }
    BEGIN {
      cmd = "cmd"; while (length(cmd) < 300) cmd = cmd "x"
      for (i = 0; i < n; i++) {
        k = pfx i; b = "lock:{" k "}"
        printf "*26\r\n"; bulk("EVALSHA"); bulk(sha); bulk("6")
        bulk(b); bulk(b ":fence"); bulk(b ":holders"); bulk(b ":limit"); bulk(b ":queue")
        bulk(b ":qseq"); bulk("tok" i); bulk("3600000"); bulk("0"); bulk("try"); bulk("6000")
        bulk("lock:release:{" k "}"); bulk("host"); bulk("1"); bulk("user"); bulk(cmd); bulk("1")
        bulk(""); bulk(""); bulk("0"); bulk(""); bulk("0"); bulk("0")
      }
    }' | rcli_to "$name" --pipe >/dev/null
}

# script_calls NAME [ro]: how many script calls (EVALSHA_RO and EVALSHA; with ro, the
# read-only ones alone: list's and status's) server NAME ran since its last CONFIG
# RESETSTAT.
script_calls() {
  local pattern='^cmdstat_evalsha(_ro)?$'
  [[ ${2:-} == ro ]] && pattern='^cmdstat_evalsha_ro$'
  rcli_to "$1" info commandstats | tr -d '\r' |
    awk -F'[=,:]' -v p="$pattern" '$1 ~ p { n += $3 } END { print n + 0 }'
}

_calls_at_least() { (($(script_calls "$1") >= $2)); }

# list_into_fifo NAME CALLS [RLOCK ARGS...]: starts `rlock ARGS` in the background
# (bg_start NAME) with stdout into a FIFO that this shell opens for reading (fd in
# $FIFO_FD) but does not read, then waits until server SERVER (default REDIS) has run
# CALLS script calls: rlock is then blocked writing its first batch.
list_into_fifo() {
  local name=$1 calls=$2 server=${SERVER:-REDIS}
  shift 2
  local fifo=$T/$name.fifo rw
  mkfifo "$fifo"
  # opened read-write first, so that opening it for reading never blocks (and never
  # hangs the test if rlock does not start); the read end alone is kept
  exec {rw}<>"$fifo"
  exec {FIFO_FD}<"$fifo"
  bg_start "$name" sh -c 'exec "$@" >"$0"' "$fifo" "$RLOCK" "$@"
  exec {rw}<&-
  _rlock_poll "$calls script calls on $server" 20 _calls_at_least "$server" "$calls"
}

# drain NAME: reads what rlock wrote into NAME.fifo into $T/NAME.out, then waits for it.
drain() {
  cat <&"$FIFO_FD" >"$T/$1.out"
  exec {FIFO_FD}<&-
  bg_wait "$BG_PID" 30
}

# one_error_line NAME: NAME.err (stderr of a bg_start) is one line "rlock: …" matching $2.
one_error_line() {
  run -0 cat "$T/$1.err"
  assert_equal "${#lines[@]}" 1
  assert_line --index 0 --regexp "^rlock: $2"
}

# whole_batches_of_lines FILE: every line of FILE is a whole line of the listing, in KEY
# order, as many as whole batches of 512 (at least one, fewer than all 3000).
whole_batches_of_lines() {
  local n
  n=$(wc -l <"$1")
  ((n >= 512 && n < 3000 && n % 512 == 0)) || fail "$n lines were printed"
  run -1 grep -v -E $'^fk:[0-9]+\thost:1\t[0-9]+\t1\t0\tcmdx{297}\t$' "$1"
  [[ -z $(tail -c 1 "$1") ]] || fail "the last line is cut"
  assert_equal "$(cut -f1 "$1")" "$(cut -f1 "$1" | LC_ALL=C sort)"
}

# partial_json_array FILE: FILE is the start of a JSON array cut after a whole batch:
# not valid JSON (no closing bracket, so that no reader takes it for the whole list),
# and with "]" added, an array of whole objects, as many as whole batches of 512.
partial_json_array() {
  run -0 head -c 1 "$1"
  assert_output '['
  run ! jq -e . "$1"
  local n
  n=$({ cat "$1"; echo ']'; } | jq '[.[] | select(.held and .holder_count == 1)] | length') ||
    fail "what was printed is not a JSON array cut between objects"
  ((n >= 512 && n < 3000 && n % 512 == 0)) || fail "$n objects were printed"
}

@test "the server killed part way through list: what was printed is whole lines, then one error line and 69" {
  make_locks REDIS fk: 3000
  "$RLOCK" list 'fk:0' >/dev/null # the list script loaded, its first call not counted
  rcli config resetstat >/dev/null
  list_into_fifo kl 3 list 'fk:*'
  redis_kill
  drain kl
  assert_equal "$BG_STATUS" 69
  one_error_line kl "(cannot read from|connection to|cannot write to) 127.0.0.1:$REDIS_PORT"
  whole_batches_of_lines "$T/kl.out"
}

@test "the server killed part way through list --json: an array without its end, then one error line and 69" {
  make_locks REDIS fk: 3000
  "$RLOCK" list 'fk:0' >/dev/null
  rcli config resetstat >/dev/null
  list_into_fifo kj 3 list --json 'fk:*'
  redis_kill
  drain kj
  assert_equal "$BG_STATUS" 69
  one_error_line kj "(cannot read from|connection to|cannot write to) 127.0.0.1:$REDIS_PORT"
  partial_json_array "$T/kj.out"
}

@test "the server stopped part way through list and list --json: 69 after about one --command-timeout, one error line" {
  make_locks REDIS fk: 3000
  "$RLOCK" list 'fk:0' >/dev/null
  local mode t0 elapsed
  for mode in line json; do
    rcli config resetstat >/dev/null
    if [[ $mode == json ]]; then
      list_into_fifo "st$mode" 3 --command-timeout 2s list --json 'fk:*'
    else
      list_into_fifo "st$mode" 3 --command-timeout 2s list 'fk:*'
    fi
    redis_pause
    t0=$(now_ms)
    drain "st$mode"
    elapsed=$(($(now_ms) - t0))
    redis_resume
    assert_equal "$mode $BG_STATUS" "$mode 69"
    one_error_line "st$mode" "Redis at redis://127.0.0.1:$REDIS_PORT/0 did not answer EVALSHA(_RO)? within 2000ms \\(--command-timeout\\)"
    # the promise: one --command-timeout (2s), not one per batch left (4 of them); the rest is
    # reading and printing two batches
    ((elapsed >= 1900 && elapsed < 6000)) || fail "$mode: rlock ended ${elapsed}ms after the server stopped"
    if [[ $mode == json ]]; then
      partial_json_array "$T/st$mode.out"
    else
      whole_batches_of_lines "$T/st$mode.out"
    fi
  done
}

@test "list and list --json to a full disk: one error line and 70; to a pipe closed early: quiet, SIGPIPE" {
  make_locks REDIS fd: 1000
  local mode
  for mode in "" --json; do
    run -70 --separate-stderr bash -c '"$0" list $1 "fd:*" >/dev/full' "$RLOCK" "$mode"
    assert_equal "$output" ""
    assert_equal "${#stderr_lines[@]}" 1
    assert_equal "${stderr_lines[0]}" "rlock: cannot write to standard output: No space left on device"
    # a reader that has read enough (head) is no error: no line, killed by SIGPIPE as
    # coreutils are (the write after head left fails with EPIPE; rlock ignores SIGPIPE
    # while it runs)
    if [[ -z $mode ]]; then # (--json is one line: head -n 1 reads it all)
      run -0 --separate-stderr bash -c 'set -o pipefail
        "$0" list "fd:*" | head -n 1 >/dev/null; echo "${PIPESTATUS[0]}"' "$RLOCK"
      assert_equal "$output" 141
      assert_equal "$stderr" ""
    fi
    run -0 --separate-stderr bash -c '"$0" list $1 "fd:*" | head -c 100 >/dev/null; echo "${PIPESTATUS[0]}"' \
      "$RLOCK" "$mode"
    assert_equal "$output" 141
    assert_equal "$stderr" ""
  done
}

@test "list, list --json and acquire with stdout closed: 70, and acquire gives back the lease it could not hand over" {
  # Before, the closed descriptor was opened on /dev/null for writing: the listing (and
  # acquire's token) went nowhere with exit 0.
  make_locks REDIS fc: 600
  local mode
  for mode in "" --json; do
    run -0 --separate-stderr bash -c '"$0" list $1 "fc:*" >&-; echo "$?"' "$RLOCK" "$mode"
    assert_equal "$output" 70
    assert_equal "$stderr" "rlock: cannot write to standard output: Bad file descriptor"
  done
  run -0 --separate-stderr bash -c '"$0" acquire --ttl 5m fc:new >&-; echo "$?"' "$RLOCK"
  assert_equal "$output" 70
  assert_equal "$(rcli exists 'lock:{fc:new}')" 0
}

# quorum_listing NAME PREFIX [RLOCK ARGS...]: 3000 locks on the three masters (the same
# token on each: what a quorum acquire leaves), then `rlock ARGS list --json 'PREFIX*'`
# over the three, blocked writing its first batch once master M3 has answered its 512
# status calls.
quorum_listing() {
  local name=$1 pfx=$2 i
  shift 2
  for i in 1 2 3; do make_locks "M$i" "$pfx" 3000; done
  export RLOCK_URL=$M_URLS
  "$RLOCK" list "${pfx}0" >/dev/null # the status script loaded on each
  for i in 1 2 3; do rcli_to "M$i" config resetstat >/dev/null; done
  SERVER=M3 list_into_fifo "$name" 512 "$@" list --json "$pfx*"
}

@test "quorum: a master killed part way through list --json: every lock from the majority, one warning" {
  quorum_listing qk qk:
  redis_kill M3
  drain qk
  assert_equal "$BG_STATUS" 0
  run -0 jq '[.[] | select(.held)] | length' "$T/qk.out"
  assert_output 3000
  # Before, the listing went on from the other two without a word.
  one_error_line qk "warning: .*127.0.0.1:$M3_PORT.*; listing the rest from the 2 masters that answered"
}

@test "quorum: a master stopped part way through list --json: one --command-timeout in all, not one per batch, one warning" {
  quorum_listing qs qs: --command-timeout 3s
  redis_pause M3
  local t0 elapsed
  t0=$(now_ms)
  drain qs
  elapsed=$(($(now_ms) - t0))
  redis_resume M3
  assert_equal "$BG_STATUS" 0
  run -0 jq '[.[] | select(.held)] | length' "$T/qs.out"
  assert_output 3000
  one_error_line qs "warning: Redis at redis://127.0.0.1:$M3_PORT/0 did not answer .*; listing the rest from the 2 masters that answered"
  # The promise: a stalled master costs one --command-timeout (3s). Before, each of the five
  # batches left waited for it (15s and more). The rest is reading the locks, which takes
  # as long as a whole listing with every master up, timed here (seconds under the
  # sanitizers on a slow machine): the stall's cost is what is over it, 6s at most.
  local base
  t0=$(now_ms)
  "$RLOCK" list --json 'qs:*' >/dev/null
  base=$(($(now_ms) - t0))
  ((elapsed < base + 9000)) ||
    fail "the listing took ${elapsed}ms after the master stopped (${base}ms with none stopped)"
}

@test "quorum: a master down before list: the majority's locks, one warning naming it" {
  local i
  for i in 1 2 3; do make_locks "M$i" qd: 10; done
  redis_kill M3
  run -0 --separate-stderr "$RLOCK" -u "$M1_URL" -u "$M2_URL" -u "$M3_URL" list 'qd:*'
  assert_equal "${#lines[@]}" 10
  assert_equal "${#stderr_lines[@]}" 1
  assert_line --index 0 --regexp $'^qd:0\thost:1\t'
  [[ ${stderr_lines[0]} == "rlock: warning: "*"127.0.0.1:$M3_PORT"*"; listing from the 2 masters that answered" ]] ||
    fail "$stderr"
}

@test "list --json across a batch's end and a cut reply: mixed records come out as status --json has them" {
  # 505 plain locks alone (flat records), then, sorted after them, a semaphore of 600
  # holders (its status record brings the first call past 1000 records: the call stops
  # after it and the client asks again for the rest of the batch), then locks of every
  # shape on both sides of the end of the first batch (512 locks).
  make_locks REDIS bb: 505
  local now i
  now=$(now_ms)
  rcli set 'lock:{bb:x0}:limit' 1000 >/dev/null
  for ((i = 0; i < 600; i++)); do
    printf 'ZADD lock:{bb:x0}:holders %s t%s\n' $((now + 300000)) "$i"
    printf 'HSET lock:{bb:x0}:h:t%s host h pid %s cmd c since %s fence %s ttl 300000\n' \
      "$i" "$i" "$now" "$i"
  done | rcli >/dev/null
  "$RLOCK" acquire --ttl 5m bb:x1 >/dev/null
  rlock_bg w run --wait 60s --ttl 5m bb:x1 -- true
  "$RLOCK" acquire --limit 2 --ttl 5m bb:x2 >/dev/null
  "$RLOCK" acquire --limit 2 --ttl 5m bb:x2 >/dev/null
  "$RLOCK" acquire -s --ttl 5m bb:x3 >/dev/null
  "$RLOCK" acquire -s --ttl 5m bb:x3 >/dev/null
  "$RLOCK" run --ttl 5m --min-hold 2m bb:x4 -- true
  "$RLOCK" run --ttl 5m --done-for 2m bb:x5 -- true
  "$RLOCK" acquire --ttl 5m bb:x6 >/dev/null # the first batch's last lock
  "$RLOCK" acquire -s --ttl 5m bb:x7 >/dev/null
  "$RLOCK" acquire --label 'ci job' --ttl 5m bb:x8 >/dev/null
  "$RLOCK" acquire --limit 3 --ttl 5m bb:x9 >/dev/null
  wait_until "[ \"\$(n_waiters bb:x1)\" = 1 ]"
  "$RLOCK" list 'bb:0' >/dev/null
  rcli config resetstat >/dev/null
  run -0 "$RLOCK" list --json 'bb:*'
  local listed=$output key
  # two batches, the first asked in two calls (read-only calls: the waiter's place
  # refreshes, every 2 s, are EVALSHA)
  assert_equal "$(script_calls REDIS ro)" 3
  run -0 jq -r '.[512].key, length' <<<"$listed"
  assert_equal "$output" $'bb:x7\n515'
  for key in bb:504 bb:x0 bb:x1 bb:x2 bb:x3 bb:x4 bb:x5 bb:x6 bb:x7 bb:x8 bb:x9; do
    assert_equal "$(jq -c --arg k "$key" '[.[] | select(.key == $k)]' <<<"$listed" | json_without_times)" \
      "$(status_json "$key" | json_without_times)"
  done
  "$RLOCK" break --yes bb:x1 >/dev/null
  bg_wait "$BG_PID"
}

@test "a lock with a key of another type among its keys: named and left out, the rest listed, 70 at the end" {
  # Before, the whole listing failed with Redis's raw text (the list script's WRONGTYPE,
  # then the same from that lock's status): everything from that batch on was lost.
  make_locks REDIS wt: 600
  # all three in the first batch of 512 (in KEY order: wt:0, wt:1, wt:10, wt:100 ...)
  # (a plain holder alone is read without its :holders: a foreign value there is not met)
  rcli hset 'lock:{wt:10}:queue' a b >/dev/null
  rcli set 'lock:{wt:100}:queue' junk >/dev/null
  rcli del 'lock:{wt:101}' >/dev/null
  rcli hset 'lock:{wt:101}' a b >/dev/null # another program's key at the lock's own: no lock
  run --separate-stderr "$RLOCK" list 'wt:*'
  assert_equal "$status" 70
  assert_equal "${#lines[@]}" 597
  run -1 grep -E '^wt:(10|100|101)'$'\t' <<<"$output"
  assert_equal "${#stderr_lines[@]}" 3
  assert_equal "${stderr_lines[0]}" "rlock: warning: lock 'wt:10' not listed: the Redis key 'lock:{wt:10}:queue' holds a hash where rlock keeps a zset: another program uses that name (rlock owns every key under its prefix; --prefix picks another)"
  [[ ${stderr_lines[1]} == "rlock: warning: lock 'wt:100' not listed: the Redis key 'lock:{wt:100}:queue' holds a string where rlock keeps a zset"* ]] ||
    fail "${stderr_lines[1]}"
  assert_equal "${stderr_lines[2]}" "rlock: 2 locks not listed (the first: 'wt:10'): a key of another type among its keys, named above"
  # --json: a whole array of the others
  run --separate-stderr "$RLOCK" list --json 'wt:*'
  assert_equal "$status" 70
  run -0 jq 'length' <<<"$output"
  assert_output 597
  # the batch with them was asked lock by lock; the next went by the script again
  rcli config resetstat >/dev/null
  run -70 "$RLOCK" list 'wt:*'
  assert_equal "$(script_calls REDIS)" $((2 + 512))
}

@test "many locks with keys of another type: the first ten named, the rest counted" {
  local i
  for i in $(seq 1 12); do
    "$RLOCK" acquire -n "wu:$i" >/dev/null
    rcli set "lock:{wu:$i}:queue" junk >/dev/null
  done
  run --separate-stderr "$RLOCK" list 'wu:*'
  assert_equal "$status" 70
  assert_equal "${#stderr_lines[@]}" 11
  assert_equal "${stderr_lines[10]}" "rlock: 12 locks not listed (the first: 'wu:1'): a key of another type among its keys; the first 10 are named above"
}

@test "quorum: a key of another type on a majority of masters: named, left out, 70; on a minority: listed" {
  local i
  for i in 1 2 3; do make_locks "M$i" qw: 3; done
  for i in 1 2; do
    rcli_to "M$i" set 'lock:{qw:1}:holders' junk >/dev/null
  done
  run --separate-stderr "$RLOCK" -u "$M1_URL" -u "$M2_URL" -u "$M3_URL" list 'qw:*'
  assert_equal "$status" 70
  assert_equal "${#lines[@]}" 2
  [[ ${stderr_lines[0]} == "rlock: warning: lock 'qw:1' not listed: the Redis key 'lock:{qw:1}:holders' holds a string"* ]] ||
    fail "$stderr"
  # a quorum run names it too (70, not 69 "only 0 of 3 masters answered")
  run -70 "$RLOCK" -u "$M1_URL" -u "$M2_URL" -u "$M3_URL" run -n qw:1 -- true
  assert_output --partial "the Redis key 'lock:{qw:1}:holders' holds a string where rlock keeps a zset"
  rcli_to M2 del 'lock:{qw:1}:holders' >/dev/null
  run -0 "$RLOCK" -u "$M1_URL" -u "$M2_URL" -u "$M3_URL" list 'qw:*'
  assert_equal "${#lines[@]}" 3
}
