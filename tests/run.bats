#!/usr/bin/env bats
# ctest-labels: fast
# rlock run: what the child sees (status, arguments, environment, descriptors, stdio)
# and when the lock is free again. Signals are in signals.bats, the lease watchdog in
# lease.bats, waiting in waiting.bats.

# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell
load helpers/redis

bats_require_minimum_version 1.5.0

setup_file() { redis_start; }

setup() {
  T=$BATS_TEST_TMPDIR
}

# --- local helpers ----------------------------------------------------------------------

# no_fds CMD...: runs CMD (foreground) with every descriptor above 2 closed.
no_fds() {
  (
    _rlock_close_fds
    exec "$@"
  )
}

# has_waiter KEY: true when status --json lists at least one waiter.
has_waiter() { "$RLOCK" status "$1" --json | grep -q '"waiters":\[{'; }

# token_of KEY: the token that holds KEY in Redis (empty when free).
token_of() { rcli get "lock:{$1}"; }

# --- exit status ------------------------------------------------------------------------

@test "run passes the child's exit status through: 0, 3, 125" {
  run -0 "$RLOCK" run st0 -- true
  run -3 "$RLOCK" run st3 -- sh -c 'exit 3'
  run -125 "$RLOCK" run st125 -- sh -c 'exit 125'
  # 64 and 75 and 76 are rlock's own codes too, but a child's 64 still passes through
  run -64 "$RLOCK" run st64 -- sh -c 'exit 64'
}

@test "a child killed by signal N gives 128+N" {
  run -137 "$RLOCK" run sig -- sh -c 'kill -KILL $$'
  run -143 "$RLOCK" run sig -- sh -c 'kill -TERM $$'
  run -138 "$RLOCK" run sig -- sh -c 'kill -USR1 $$'
  # and the lock is free right away
  run -1 "$RLOCK" status sig
}

@test "a command that is not found exits 127 and frees the lock" {
  run -127 "$RLOCK" run nf -- /nonexistent/rlock-no-such-command
  assert_output --partial "rlock-no-such-command"
  run -127 "$RLOCK" run nf -- rlock-no-such-command-in-path
  run -1 "$RLOCK" status nf
  assert_equal "$(rcli exists 'lock:{nf}')" 0
}

@test "a command that cannot be executed exits 126 and frees the lock" {
  printf '#!/bin/sh\necho ran\n' >"$T/not-executable"
  chmod 644 "$T/not-executable"
  run -126 "$RLOCK" run nx -- "$T/not-executable"
  refute_output --partial ran
  run -126 "$RLOCK" run nx -- "$T" # a directory
  run -1 "$RLOCK" status nx
}

# --- arguments --------------------------------------------------------------------------

@test "after -- every word reaches the child untouched, even rlock's own flags" {
  run -0 "$RLOCK" run dd -- sh -c 'echo "$@"' x --ttl 5s -n
  assert_output -- "--ttl 5s -n"
  run -0 "$RLOCK" run dd -- printf '[%s]\n' -- -c 'exit 9' --wait 1s -E 3 --url redis://nowhere:1 -q -v
  assert_output -- "[--]
[-c]
[exit 9]
[--wait]
[1s]
[-E]
[3]
[--url]
[redis://nowhere:1]
[-q]
[-v]"
  run -0 "$RLOCK" run dd -- printf '[%s]\n' '' 'a  b' '*' '$HOME'
  assert_output -- '[]
[a  b]
[*]
[$HOME]'
}

@test "without --, the command starts at the first word that is not an rlock option" {
  run -0 "$RLOCK" run nd --ttl 5s printf '[%s]\n' -n --ttl x
  assert_output -- "[-n]
[--ttl]
[x]"
}

@test "-c runs a shell string with /bin/sh" {
  run -4 "$RLOCK" run sc -c 'echo "a  b"; for i in 1 2; do echo $i; done; exit 4'
  assert_output "a  b
1
2"
}

@test "usage errors exit 64 and run nothing: an empty command, both -c and --, bad duration" {
  # (no command at all holds the key by hand: tests/hold.bats)
  run -64 "$RLOCK" run ue --
  assert_output --partial "command"
  run -64 "$RLOCK" run ue -c "touch '$T/ran'" -- touch "$T/ran"
  assert_output --partial -- "-c"
  run -64 "$RLOCK" run ue --ttl abc -- touch "$T/ran"
  run -64 "$RLOCK" run ue --min-hold 5x -- touch "$T/ran"
  run -64 "$RLOCK" run ue --on-lost sometimes -- touch "$T/ran"
  assert [ ! -e "$T/ran" ]
  run -1 "$RLOCK" status ue
}

# --- environment, descriptors, stdio ----------------------------------------------------

@test "the child sees RLOCK_KEY, RLOCK_TOKEN and RLOCK_FENCE of the lock it holds" {
  run -0 "$RLOCK" run env:k -- sh -c '
    echo "key=$RLOCK_KEY"
    echo "token=$RLOCK_TOKEN"
    echo "fence=$RLOCK_FENCE"
    echo "redis=$(redis-cli -p "$1" get "lock:{env:k}")"
    echo "redisfence=$(redis-cli -p "$1" get "lock:{env:k}:fence")"
    "$2" status env:k --json | tr -d "\n"; echo' x "$REDIS_PORT" "$RLOCK"
  assert_line "key=env:k"
  assert_line --regexp '^token=[0-9a-f]{32}$'
  assert_line --regexp '^fence=[1-9][0-9]*$'
  token=$(sed -n 's/^token=//p' <<<"$output")
  fence=$(sed -n 's/^fence=//p' <<<"$output")
  assert_line "redis=$token"
  assert_line "redisfence=$fence"
  # status shows the same holder token and fence
  assert_output --partial "\"token\":\"$token\""
  assert_output --partial "\"fence\":$fence"
  # a second run gets a new token and a larger fence
  run -0 "$RLOCK" run env:k -- sh -c 'echo "$RLOCK_TOKEN $RLOCK_FENCE"'
  read -r token2 fence2 <<<"$output"
  assert [ "$token2" != "$token" ]
  assert [ "$fence2" -gt "$fence" ]
}

@test "the lock is free as soon as the child exits, not after the TTL" {
  run -0 "$RLOCK" run --ttl 30s free -- sh -c 'test -n "$RLOCK_TOKEN"'
  run -1 "$RLOCK" status free
  assert_equal "$(rcli exists 'lock:{free}')" 0
  run -0 "$RLOCK" run --ttl 30s -n free -- true
}

@test "the lock is released once, at the child's end, while it is still held" {
  run -0 "$RLOCK" -v run --ttl 30s once -- true
  assert_output --partial "acquired 'once'"
  refute_output --partial "no longer held"
  # the same after renewals
  run -0 "$RLOCK" -v run --ttl 600ms once -- sleep 0.5
  refute_output --partial "no longer held"
  refute_output --partial "lost"
  run -1 "$RLOCK" status once
}

@test "--min-hold keeps the lock after a short child, then it expires by itself" {
  t0=$(now_ms)
  run -0 "$RLOCK" run --ttl 30s --min-hold 6s mh -- true
  t1=$(now_ms)
  # rlock did not linger until the min-hold was over (6s; 3s leaves room for a slow
  # machine to start and end rlock, and for the checks below within the 6s)
  assert [ $((t1 - t0)) -lt 3000 ]
  run -0 "$RLOCK" status mh
  pttl=$(rcli pttl 'lock:{mh}')
  assert [ "$pttl" -gt 0 ]
  assert [ "$pttl" -le 6000 ]
  run -75 "$RLOCK" run -n mh -- true
  wait_until "! \"\$RLOCK\" status mh >/dev/null" 10
  t2=$(now_ms)
  # not before acquisition + 6s (acquisition was after t0)
  assert [ $((t2 - t0)) -ge 5900 ]
  run -0 "$RLOCK" run -n mh -- true
}

@test "--min-hold that has already passed releases at once" {
  run -0 "$RLOCK" run --ttl 30s --min-hold 200ms mhp -- sh -c 'sleep 0.5'
  run -1 "$RLOCK" status mhp
  assert_equal "$(rcli exists 'lock:{mhp}')" 0
}

@test "stdin, stdout and stderr are the child's" {
  head -c 300000 /dev/urandom >"$T/in"
  "$RLOCK" run io -- sh -c 'cat; echo to-stderr >&2' <"$T/in" >"$T/out" 2>"$T/err"
  cmp "$T/in" "$T/out"
  assert_equal "$(cat "$T/err")" to-stderr
  # through pipes, too
  run -0 bash -c 'printf "one\ntwo\n" | "$1" run io -- tr a-z A-Z | sed "s/^/> /"' x "$RLOCK"
  assert_output "> ONE
> TWO"
  # stdin is the child's own: it can tell it is not a terminal and read all of it
  run -0 bash -c 'seq 1 1000 | "$1" run io -- sh -c "test ! -t 0 && wc -l"' x "$RLOCK"
  assert_output 1000
}

@test "no descriptor of rlock is visible in the child" {
  [[ -d /proc/self/fd ]] || skip "needs /proc/self/fd (Linux)"
  # the control: ls alone, with descriptors 3+ closed, sees 0 1 2 and its own 3
  run -0 no_fds ls /proc/self/fd
  assert_equal "${lines[*]}" "0 1 2 3"
  run -0 no_fds "$RLOCK" run fds -- ls /proc/self/fd
  assert_equal "${lines[*]}" "0 1 2 3"
  # the same while waiting first (subscriber connection and all)
  tok=$("$RLOCK" acquire --ttl 30s fds)
  bg_start waiter "$RLOCK" run -q --wait 20s fds -- ls /proc/self/fd # fds 3+ closed
  pid=$BG_PID
  wait_until "has_waiter fds"
  run -0 "$RLOCK" release fds --token "$tok"
  bg_wait "$pid"
  assert_equal "$BG_STATUS" 0
  mapfile -t fds <"$T/waiter.out"
  assert_equal "${fds[*]}" "0 1 2 3"
}

# --- not acquired -----------------------------------------------------------------------

@test "run -n on a held key exits 75 without running the command" {
  tok=$("$RLOCK" acquire --ttl 30s held)
  run -75 "$RLOCK" run -n held -- touch "$T/ran"
  assert [ ! -e "$T/ran" ]
  assert_equal "$(token_of held)" "$tok"
  run -0 "$RLOCK" release held --token "$tok"
}

@test "-E N changes the not-acquired status" {
  tok=$("$RLOCK" acquire --ttl 30s heldE)
  run -7 "$RLOCK" run -n -E 7 heldE -- touch "$T/ran"
  run -7 "$RLOCK" run -E 7 --wait 200ms heldE -- touch "$T/ran"
  assert [ ! -e "$T/ran" ]
  run -0 "$RLOCK" release heldE --token "$tok"
  # and does not touch the child's own status
  run -3 "$RLOCK" run -n -E 7 heldE -- sh -c 'exit 3'
}
