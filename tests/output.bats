#!/usr/bin/env bats
# ctest-labels: fast
# What rlock writes can neither kill it nor be forged: a stderr that fails (full disk,
# closed pipe) or stalls (a reader that stopped reading) never stops the command, the
# renewals or the release; text that comes from Redis (holder details, key names, server
# errors) is escaped in human output and stays valid JSON with --json.

# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell
load helpers/redis

bats_require_minimum_version 1.5.0

setup_file() { redis_start; }

setup() { T=$BATS_TEST_TMPDIR; }

# fake_holder KEY TOKEN HOST CMD: a lock held by TOKEN with holder details of our choice,
# as a hostile or broken client could write them.
fake_holder() {
  rcli set "lock:{$1}" "$2" px 60000 >/dev/null
  rcli hset "lock:{$1}:h:$2" host "$3" pid 42 user "$3" cmd "$4" since 1700000000000 \
    fence 7 ttl 60000 >/dev/null
  rcli pexpire "lock:{$1}:h:$2" 60000 >/dev/null
}

# no_raw_controls FILE [tab]: fails if FILE holds an ESC, a CR, a C1 CSI or any C0 byte
# but newline (and tab, with "tab": list's field separator).
no_raw_controls() {
  local c0=$'[\x01-\x09\x0b-\x1f\x7f]'
  if [[ ${2:-} == tab ]]; then c0=$'[\x01-\x08\x0b-\x1f\x7f]'; fi
  if LC_ALL=C grep -q "$c0" "$1" || LC_ALL=C grep -q $'\xc2\x9b' "$1"; then
    fail "raw control characters in $1: $(od -c "$1" | head -20)"
  fi
}

# --- a stderr that fails or stalls ---------------------------------------------------------

@test "stderr on a full disk: the command runs, the lease is renewed and released, its status passes" {
  # (inside bash -c: bats's `run` would capture a redirection of its own stderr)
  run bash -c '"$1" -v run --ttl 600ms full -- sh -c "sleep 1.5; touch \"\$0/done\"; exit 3" "$2" \
    2>/dev/full' x "$RLOCK" "$T"
  assert_equal "$status" 3
  assert [ -e "$T/done" ]
  assert_equal "$(rcli exists 'lock:{full}')" 0
}

@test "stderr to a pipe that closes (2>&1 | head -1): the command finishes and the lock is released" {
  run bash -c '"$1" -v run --ttl 600ms closed -- sh -c "sleep 1.5; touch \"\$0/done\"" "$2" 2>&1 |
    head -1 >/dev/null; exit "${PIPESTATUS[0]}"' x "$RLOCK" "$T"
  assert_equal "$status" 0
  assert [ -e "$T/done" ]
  assert_equal "$(rcli exists 'lock:{closed}')" 0
}

@test "a waiting job whose stderr pipe closes still acquires, runs its command and releases" {
  rlock_bg holder run held -- sh -c 'touch "$1/held"; while [ ! -e "$1/go" ]; do sleep 0.05; done' x "$T"
  wait_for_file "$T/held"
  # The waiter's first line ("waiting for …") is read, then the reader is gone.
  bg_start waiter bash -c '"$1" -v run --wait 20s held -- touch "$2/ran" 2>&1 | head -1 >/dev/null
    exit "${PIPESTATUS[0]}"' x "$RLOCK" "$T"
  waiter=$BG_PID
  wait_until "[[ \$(rcli zcard 'lock:{held}:queue') == 1 ]]"
  touch "$T/go"
  bg_wait "$waiter"
  assert_equal "$BG_STATUS" 0
  assert [ -e "$T/ran" ]
  assert_equal "$(rcli exists 'lock:{held}')" 0
}

@test "a stalled stderr (a pipe nobody reads, filled by the command) never delays renewal" {
  mkfifo "$T/err"
  # A reader that opens the pipe and never reads from it.
  bg_start reader sh -c 'exec 3<"$1"; sleep 30' x "$T/err"
  start=$(now_ms)
  # (--kill-leftovers: the writer blocked on the pipe would otherwise keep the lock)
  run bash -c '"$1" -v run --ttl 600ms --kill-leftovers stalled -- sh -c "
    head -c 200000 /dev/zero >&2 &
    sleep 2.5
    exit 4" 2>"$2/err"' x "$RLOCK" "$T"
  elapsed=$(($(now_ms) - start))
  assert_equal "$status" 4
  assert_equal "$(rcli exists 'lock:{stalled}')" 0
  # 2.5s of command, renewed every 200ms: it was never declared lost (exit 76), and the
  # exit did not wait for stderr beyond its short bound.
  assert [ "$elapsed" -lt 6000 ]
}

# --- a stdout whose reader goes away ----------------------------------------------------------

# to_gone_reader CMD...: runs CMD with stdout a pipe whose reader has already closed it
# (every write then fails with EPIPE, no race with a `head`), SIGPIPE at its default, as
# a shell gives it; prints "signal N" or "exit N", then CMD's stderr.
to_gone_reader() {
  python3 -c '
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
p = subprocess.run(sys.argv[1:], stdout=w, stderr=subprocess.PIPE)
rc = p.returncode
print("signal %d" % -rc if rc < 0 else "exit %d" % rc)
sys.stdout.write(p.stderr.decode(errors="replace"))' "$@"
}

@test "a reader that closed stdout ends every command quietly, killed by SIGPIPE; acquire gives the lease back" {
  "$RLOCK" run gr -- true
  local tok
  tok=$("$RLOCK" acquire --ttl 5m gh)
  for args in "status gh" "status gh --json" "list gh" "list --json gh" "list --names gh" \
    "history gr" "history gr --json" "extend gh --token $tok --json" "--help" "--version" \
    "run --help" "acquire --ttl 5m ga"; do
    # shellcheck disable=SC2086 # the words of $args
    run -0 to_gone_reader "$RLOCK" $args
    assert_equal "$output" "signal 13" || fail "rlock $args: $output"
  done
  # acquire could not hand its token over: nobody could release it, so it did
  assert_equal "$(rcli exists 'lock:{ga}')" 0
  # with --while-pid too (its keeper gives the lease back)
  sleep 1000 3>&- &
  local spid=$!
  run -0 to_gone_reader "$RLOCK" acquire --ttl 5m gw --while-pid "$spid"
  kill "$spid"
  assert_equal "$output" "signal 13"
  wait_until "[ \"\$(rcli exists 'lock:{gw}')\" = 0 ]" 10
  # a full disk stays an error: one line, 70
  for args in "status gh" "history gr" "--help"; do
    # shellcheck disable=SC2086 # the words of $args
    run -70 --separate-stderr bash -c '"$0" "$@" >/dev/full' "$RLOCK" $args
    assert_equal "$stderr" "rlock: cannot write to standard output: No space left on device"
  done
  # and so does a stdout closed at start
  run -70 --separate-stderr bash -c '"$0" --version >&-' "$RLOCK"
  assert_equal "$stderr" "rlock: cannot write to standard output: Bad file descriptor"
}

@test "history --follow | head -1 ends quietly once head has its line, killed by SIGPIPE, with no other event" {
  "$RLOCK" run gf -- true
  # head leaves after the first of the two events; no event comes after that
  bg_start f bash -c 'set -o pipefail; "$0" history gf --follow | head -1 >/dev/null
    echo "exit ${PIPESTATUS[0]}"' "$RLOCK"
  wait_until "grep -q exit '$T/f.out'" "$(slack 10)"
  assert_equal "$(cat "$T/f.out")" "exit 141"
  assert_equal "$(cat "$T/f.err")" ""
  # a reader that stays keeps it following
  bg_start g bash -c '"$0" history gf --follow | cat >/dev/null; echo "exit ${PIPESTATUS[0]}"' "$RLOCK"
  wait_until "[ -n \"\$(ps -o pid= --ppid $BG_PID)\" ]" 10
  sleep 1 # (time for a wrong end to show)
  run -1 grep -q exit "$T/g.out"
}

@test "run's command gets SIGPIPE at its default: yes | head ends yes, and run passes it on (141)" {
  run -0 --separate-stderr bash -c '"$0" run gy -- yes | head -1; echo "exit ${PIPESTATUS[0]}"' "$RLOCK"
  assert_equal "$output" $'y\nexit 141'
  assert_equal "$stderr" ""
}

# --- text from Redis -----------------------------------------------------------------------

@test "status escapes a holder's host and command: no forged line, no terminal escape" {
  fake_holder esc tok1 $'evil\nrlock: acquired' $'\e[2J\e]0;pwned\arm -rf \xc2\x9b31m\\'
  run --separate-stderr "$RLOCK" status esc
  assert_success
  printf '%s\n' "$output" >"$T/out"
  no_raw_controls "$T/out"
  assert_output --partial 'evil\x0arlock: acquired'
  assert_output --partial '\x1b[2J\x1b]0;pwned\x07rm -rf \xc2\x9b31m\\'
  refute_line --regexp '^rlock: acquired'
}

@test "status --json stays valid JSON whatever the bytes, invalid UTF-8 included" {
  fake_holder escj $'tok\x01' $'h\xff\xfe\n' $'c\e[0m\xc3'
  run --separate-stderr "$RLOCK" status escj --json
  assert_success
  printf '%s\n' "$output" >"$T/out"
  no_raw_controls "$T/out"
  iconv -f UTF-8 -t UTF-8 "$T/out" >/dev/null || fail "not valid UTF-8: $output"
  run jq -r '.holders[0].host, .holders[0].command' "$T/out"
  assert_success
  assert_line --index 0 $'h\ufffd\ufffd'
  assert_line --index 1 $'c\e[0m\ufffd'
}

@test "a forged --min-hold mark: a kept time that is no number is no mark, an exit status out of range is not shown" {
  fake_holder forged1 tok3 host cmd
  rcli hset 'lock:{forged1}:h:tok3' kept $'soon\e[31m' exit 0 >/dev/null
  run -0 "$RLOCK" status forged1
  assert_line --index 1 "  holder  host pid 42 user host: cmd"
  fake_holder forged2 tok4 host cmd
  rcli hset 'lock:{forged2}:h:tok4' kept 1700000001000 exit $'999\e[31m' >/dev/null
  run -0 "$RLOCK" status forged2
  assert_line --index 1 --regexp '^  holder  kept by --min-hold until .*Z; its command has ended$'
  run -0 "$RLOCK" status forged2 --json
  run -0 jq -r '.holders[0] | "\(.kept) \(.exit_status)"' <<<"$output"
  assert_output "true null"
}

@test "a waiter's 'held by' line escapes the holder's details" {
  fake_holder escw tok2 $'host\nrlock: forged' $'cmd\e[31m'
  run --separate-stderr "$RLOCK" acquire escw --wait 300ms
  assert_equal "$status" 75
  printf '%s\n' "$stderr" >"$T/err"
  no_raw_controls "$T/err"
  assert_equal "${#stderr_lines[@]}" 2 # "waiting for …" and "gave up …"
  [[ $stderr == *'host\x0arlock: forged'* ]] || fail "not escaped: $stderr"
}

@test "list escapes foreign key names, so every lock is one tab-separated line" {
  rcli set $'lock:{tab\tkey}' t1 px 60000 >/dev/null
  rcli set $'lock:{new\nline}' t2 px 60000 >/dev/null
  run --separate-stderr "$RLOCK" list
  assert_success
  printf '%s\n' "$output" >"$T/out"
  no_raw_controls "$T/out" tab
  assert_line --partial 'tab\x09key'
  assert_line --partial 'new\x0aline'
  for line in "${lines[@]}"; do
    n=$(awk -F'\t' '{print NF}' <<<"$line")
    assert_equal "$n" 7
  done
  run "$RLOCK" list --json
  assert_success
  run jq -r '.[].key' <<<"$output"
  assert_line $'tab\tkey'
}

@test "a server error with control characters is printed on one escaped line" {
  garbage_start $'reply=-ERR boom\x1b[31m\x9b red\\r\\n'
  run --separate-stderr "$RLOCK" --url "redis://127.0.0.1:$GARBAGE_PORT/0" status k
  assert_equal "$status" 70
  assert_equal "${#stderr_lines[@]}" 1
  printf '%s\n' "$stderr" >"$T/err"
  no_raw_controls "$T/err"
  [[ $stderr == *'boom\x1b[31m\x9b red'* ]] || fail "not escaped: $stderr"
}

@test "a key of another type under rlock's prefix: every command says which key, one line, 70" {
  # Before, each printed Redis's raw text ("status script: WRONGTYPE Operation against a
  # key holding the wrong kind of value script: <sha>, on @user_script:208.").
  rcli hset 'lock:{fk}' a b >/dev/null
  local cmd
  for cmd in "status fk" "status --json fk" "acquire -n fk" "run -n fk -- true" \
    "break --yes fk" "release fk --token abc" "extend fk --token abc"; do
    # shellcheck disable=SC2086 # the words of the command
    run --separate-stderr "$RLOCK" $cmd
    assert_equal "$status" 70
    assert_equal "${#stderr_lines[@]}" 1
    assert_equal "$stderr" "rlock: the Redis key 'lock:{fk}' holds a hash where rlock keeps a string: another program uses that name (rlock owns every key under its prefix; --prefix picks another)"
  done
  # one of the lock's other keys
  rcli set 'lock:{fk2}:holders' x >/dev/null
  run -70 "$RLOCK" run -n fk2 -- true
  assert_output --partial "the Redis key 'lock:{fk2}:holders' holds a string where rlock keeps a zset"
  # a holder's hash is not among the keys a script names: the message names the lock
  tok=$("$RLOCK" acquire -n fk3)
  rcli del "lock:{fk3}:h:$tok" >/dev/null
  rcli rpush "lock:{fk3}:h:$tok" x >/dev/null
  run -70 "$RLOCK" extend fk3 --token "$tok"
  refute_output --partial "Operation against"
  assert_output --partial "a Redis key of the lock 'lock:{fk3}' (or one named 'lock:{fk3}:...') holds another type"
  # nothing was changed
  run -0 rcli type 'lock:{fk}'
  assert_output hash
}

@test "a foreign value at :queue or :fence fails a release, a break or a grant before anything is written" {
  # release and break read the line's type before they delete the holder (they deleted it,
  # then failed in the line's walk: the lock was gone and nothing recorded)
  local tok
  tok=$("$RLOCK" acquire fq --ttl 30s)
  rcli set 'lock:{fq}:queue' foreign >/dev/null
  run --separate-stderr "$RLOCK" release fq --token "$tok"
  assert_equal "$status" 70
  [[ $stderr == *"'lock:{fq}:queue' holds a string"* ]] || fail "$stderr"
  assert_equal "$(rcli get 'lock:{fq}')" "$tok"
  run -70 "$RLOCK" break --yes fq
  assert_equal "$(rcli get 'lock:{fq}')" "$tok"
  rcli del 'lock:{fq}:queue' >/dev/null
  run -0 "$RLOCK" release fq --token "$tok"
  # a grant takes its fence before it writes the holder (it was held, then undone, leaving
  # a tombstone and a 'released' event without its 'acquired')
  rcli hset 'lock:{ff}:fence' a b >/dev/null
  run --separate-stderr "$RLOCK" acquire -n ff
  assert_equal "$status" 70
  [[ $stderr == *"'lock:{ff}:fence' holds a hash"* ]] || fail "$stderr"
  assert_equal "$(rcli --scan --pattern 'lock:{ff}*' | sort | tr '\n' ' ')" "lock:{ff}:fence "
}
