#!/usr/bin/env bats
# ctest-labels: fast
# rlock run and signals: the child runs in a process group of its own, signals sent to
# rlock reach that whole group, a signal ignored at start stays ignored, SIGKILL of rlock
# takes the child along, and on a terminal Ctrl-C reaches the child once.
#
# Background jobs of a script start with SIGINT and SIGQUIT ignored (and rlock keeps
# them ignored, like a shell), so rlock is started here with `env --default-signal`.
#
# Every child loop has a cap (about a minute), and teardown kills whatever a test
# started, grandchildren included (bg_cleanup, tests/helpers/redis.bash): a test that
# fails midway leaves nothing running.

# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell
load helpers/redis

bats_require_minimum_version 1.5.0

setup_file() { redis_start; }

setup() {
  T=$BATS_TEST_TMPDIR
  TMUX_SOCK=""
  # trap-child.sh DIR SIG: records SIG in DIR/got when it arrives, then exits 0; gives
  # up after about a minute (exit 124).
  cat >"$T/trap-child.sh" <<'EOF'
dir=$1 sig=$2
trap "echo $sig >> '$dir/got'; exit 0" "$sig"
touch "$dir/ready"
i=0
while [ "$i" -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
exit 124
EOF
}

suite_teardown() {
  tmux_kill "${TMUX_SOCK:-}"
}

# --- local helpers ----------------------------------------------------------------------

# ignores PID SIGNUM: true when PID's SigIgn mask has signal SIGNUM.
ignores() {
  local mask
  mask=$(sed -n 's/^SigIgn:[[:space:]]*//p' "/proc/$1/status")
  (((16#$mask >> ($2 - 1)) & 1))
}

# signal_reaches_child SIG: rlock forwards SIG to its child, which records it and exits 0.
signal_reaches_child() {
  local sig=$1 key="sig:$1"
  bg_start rlock env --default-signal=INT,QUIT "$RLOCK" run --ttl 30s "$key" -- \
    sh "$T/trap-child.sh" "$T" "$sig"
  local pid=$BG_PID
  wait_for_file "$T/ready"
  kill "-$sig" "$pid"
  bg_wait "$pid"
  assert_equal "$(cat "$T/got" 2>/dev/null)" "$sig"
  assert_equal "$BG_STATUS" 0
  run -1 "$RLOCK" status "$key"
}

# --- process group and forwarding -------------------------------------------------------

@test "the child runs in a process group of its own" {
  run -0 "$RLOCK" run pg -- sh -c '
    read -r me < /proc/$$/stat; read -r parent < /proc/$PPID/stat
    set -- ${me##*) }; echo "child $$ pgid $3"
    set -- ${parent##*) }; echo "rlock pgid $3"'
  child=$(sed -n 's/^child \([0-9]*\) .*/\1/p' <<<"$output")
  child_pgid=$(sed -n 's/^child [0-9]* pgid //p' <<<"$output")
  rlock_pgid=$(sed -n 's/^rlock pgid //p' <<<"$output")
  assert_equal "$child_pgid" "$child"
  assert [ "$rlock_pgid" != "$child_pgid" ]
}

@test "SIGINT sent to rlock reaches the child" { signal_reaches_child INT; }
@test "SIGTERM sent to rlock reaches the child" { signal_reaches_child TERM; }
@test "SIGHUP sent to rlock reaches the child" { signal_reaches_child HUP; }
@test "SIGQUIT sent to rlock reaches the child" { signal_reaches_child QUIT; }
@test "SIGUSR1 sent to rlock reaches the child" { signal_reaches_child USR1; }
@test "SIGUSR2 sent to rlock reaches the child" { signal_reaches_child USR2; }
@test "SIGWINCH sent to rlock reaches the child" { signal_reaches_child WINCH; }
@test "SIGCONT sent to rlock reaches the child" { signal_reaches_child CONT; }
# Signals whose default action would end rlock and leave the key held until its TTL.
@test "SIGALRM sent to rlock reaches the child (timeout -s ALRM)" { signal_reaches_child ALRM; }
@test "SIGVTALRM and SIGPROF sent to rlock reach the child" {
  signal_reaches_child VTALRM
  rm -f "$T/ready" "$T/got"
  signal_reaches_child PROF
}
@test "SIGPWR and SIGIO sent to rlock reach the child (Linux)" {
  [[ $(uname -s) == Linux ]] || skip "Linux signals"
  signal_reaches_child PWR
  rm -f "$T/ready" "$T/got"
  signal_reaches_child IO
}

# The grandchild's trap outlives the child: rlock, which has already sent the
# group its SIGTERM, must not send another to what the command left (the trap
# would run twice).
@test "SIGTERM reaches the whole group once: a sh -c wrapper and its children" {
  f=$T/heard
  bg_start rlock "$RLOCK" run --ttl 30s grp -- sh -c '
    f=$1
    sh -c "trap \"echo grandchild >> $f; sleep 1; exit 0\" TERM; touch $f.ready2; i=0
      while [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done" &
    trap "echo child >> $f; exit 0" TERM
    touch "$f.ready1"
    wait' x "$f"
  pid=$BG_PID
  wait_for_file "$f.ready1"
  wait_for_file "$f.ready2"
  kill -TERM "$pid"
  wait_until "[ \$(wc -l < '$f') -ge 2 ]"
  bg_wait "$pid"
  assert_equal "$BG_STATUS" 0
  assert_equal "$(sort "$f")" "child
grandchild"
  run -1 "$RLOCK" status grp
}

# A TERM trap that starts a cleanup job: the job was not in the group when rlock
# forwarded SIGTERM, so it gets its own when the command exits (not only the SIGKILL
# after --kill-after).
@test "what the command starts after the forwarded SIGTERM gets SIGTERM when the command exits" {
  cat >"$T/job.sh" <<'EOF'
f=$1
cleanup() {
  sh -c 'trap "echo late >> $0; exit 0" TERM; touch $0.ready2; while :; do sleep 0.1; done' "$f" &
  while [ ! -e "$f.ready2" ]; do sleep 0.05; done
  exit 0
}
trap cleanup TERM
touch "$f.ready1"
while :; do sleep 0.1; done
EOF
  bg_start rlock "$RLOCK" run --ttl 30s --kill-after 60s late -- sh "$T/job.sh" "$T/heard"
  pid=$BG_PID
  wait_for_file "$T/heard.ready1"
  kill -TERM "$pid"
  bg_wait "$pid" "$(slack 15)"
  assert_equal "$BG_STATUS" 0
  assert_equal "$(cat "$T/heard")" "late"
}

@test "a child killed by the forwarded signal gives 128+N and frees the lock at once" {
  for sig in TERM INT HUP USR2 ALRM; do
    rm -f "$T/ready"
    bg_start "rlock-$sig" env --default-signal=INT,QUIT "$RLOCK" run --ttl 30s "die:$sig" -- \
      sh -c 'touch "$1/ready"; exec sleep 300' x "$T"
    pid=$BG_PID
    wait_for_file "$T/ready"
    kill "-$sig" "$pid"
    bg_wait "$pid"
    assert_equal "$sig:$BG_STATUS" "$sig:$((128 + $(kill -l "$sig")))"
    run -1 "$RLOCK" status "die:$sig"
  done
}

@test "SIGALRM while waiting leaves the line at once and exits 142, as its default action would" {
  tok=$("$RLOCK" acquire --ttl 30s alrm-wait)
  bg_start waiter "$RLOCK" run alrm-wait -- true
  wait_until '[ "$(n_waiters alrm-wait)" = 1 ]' 20
  kill -ALRM "$BG_PID"
  bg_wait "$BG_PID" 20
  assert_equal "$BG_STATUS" 142
  assert_equal "$(n_waiters alrm-wait)" 0
  "$RLOCK" release --token "$tok" alrm-wait
}

@test "a signal ignored when rlock starts stays ignored for rlock and its child" {
  [[ -r /proc/self/status ]] || skip "needs /proc (Linux)"
  # ign-child.sh DIR: saves its SigIgn, starts a sleeper that would die of SIGHUP (and
  # ignores SIGUSR1), records SIGUSR1, runs as long as the sleeper lives.
  cat >"$T/ign-child.sh" <<'EOF'
dir=$1
echo $$ > "$dir/childpid"
trap 'echo USR1 >> "$dir/got"' USR1
env --default-signal=HUP --ignore-signal=USR1 sleep 300 &
sleeper=$!
echo "$sleeper" > "$dir/sleeper"
touch "$dir/ready"
while kill -0 "$sleeper" 2>/dev/null; do sleep 0.1; done
EOF
  # like nohup: SIGHUP is ignored when rlock starts
  bg_start rlock sh -c 'trap "" HUP; exec "$0" run --ttl 30s ign -- sh "$1" "$2"' \
    "$RLOCK" "$T/ign-child.sh" "$T"
  pid=$BG_PID
  wait_for_file "$T/ready"
  child=$(cat "$T/childpid")
  sleeper=$(cat "$T/sleeper")
  # env has set the sleeper's signals up and exec'd sleep
  wait_until "[ \"\$(cat /proc/$sleeper/comm 2>/dev/null)\" = sleep ]" 5
  ignores "$pid" 1   # rlock keeps SIGHUP ignored
  ignores "$child" 1 # and the child inherits that
  kill -HUP "$pid"
  # a forwarded signal sent after the HUP: once the child has it, a forwarded HUP
  # would have been delivered too
  kill -USR1 "$pid"
  wait_until "grep -q USR1 '$T/got'"
  _rlock_alive "$pid"
  _rlock_alive "$child"
  _rlock_alive "$sleeper"
  run -0 "$RLOCK" status ign
  kill -TERM "$pid"
  bg_wait "$pid"
  assert_equal "$BG_STATUS" 143
  wait_until "_rlock_dead $sleeper" 5
  run -1 "$RLOCK" status ign
}

@test "the command starts with the dispositions rlock inherited: nothing caught, SIGPIPE not ignored, SIGCHLD ignored only if it was" {
  [[ -r /proc/self/status ]] || skip "needs /proc (Linux)"
  # rlock catches 10 signals and ignores SIGPIPE; exec resets what it catches, and
  # rlock itself puts back only SIGPIPE (and a SIGCHLD that was ignored), so a mistake
  # there shows in the command's masks. sleep changes no disposition of its own.
  local t
  for t in default chld-ignored; do
    local ign=""
    [[ $t == chld-ignored ]] && ign="--ignore-signal=CHLD"
    # shellcheck disable=SC2086 # $ign is empty or one word
    bg_start rlock env --default-signal=INT,QUIT,PIPE $ign "$RLOCK" run "disp:$t" -- sleep 30
    local pid=$BG_PID sleeper=""
    wait_until "pgrep -P $pid -x sleep >/dev/null" 5
    sleeper=$(pgrep -P "$pid" -x sleep)
    assert_equal "$(sed -n 's/^SigCgt:[[:space:]]*//p' "/proc/$sleeper/status")" 0000000000000000
    assert_equal "$(sed -n 's/^SigBlk:[[:space:]]*//p' "/proc/$sleeper/status")" 0000000000000000
    ! ignores "$sleeper" 13 || fail "SIGPIPE ignored in the command ($t)"
    if [[ $t == chld-ignored ]]; then
      ignores "$sleeper" 17 || fail "SIGCHLD not ignored in the command, though it was in rlock"
    else
      ! ignores "$sleeper" 17 || fail "SIGCHLD ignored in the command ($t)"
    fi
    kill -TERM "$pid"
    bg_wait "$pid"
    assert_equal "$BG_STATUS" 143
  done
}

@test "the command starts with the signal mask rlock inherited, not an empty one" {
  [[ -r /proc/self/status ]] || skip "needs /proc (Linux)"
  # SIGUSR1 (10) blocked by rlock's parent: bit 9 of the command's SigBlk.
  run env --block-signal=USR1 "$RLOCK" run "mask:k" -- sed -n 's/^SigBlk:[[:space:]]*//p' /proc/self/status
  assert_success
  assert_output 0000000000000200
}

@test "SIGKILL of rlock kills its child; the lock frees after its TTL" {
  [[ $(uname -s) == Linux ]] || skip "the parent-death signal is Linux only"
  bg_start rlock "$RLOCK" run --ttl 2s kk -- \
    sh -c 'echo $$ > "$1/childpid"; touch "$1/ready"; exec sleep 300' x "$T"
  pid=$BG_PID
  wait_for_file "$T/ready"
  child=$(cat "$T/childpid")
  pttl=$(rcli pttl 'lock:{kk}')
  expiry=$(($(now_ms) + pttl))
  kill -KILL "$pid"
  wait_until "_rlock_dead $child" 5
  # rlock had no chance to release: the lease runs out by itself
  run -0 "$RLOCK" status kk
  wait_until "! \"\$RLOCK\" status kk >/dev/null" 5
  assert [ "$(now_ms)" -ge $((expiry - 50)) ]
  run -0 "$RLOCK" run -n kk -- true
}

@test "SIGKILL of rlock kills its command's whole process group: a background grandchild dies too" {
  # The parent-death signal reaches the command only (sh here); the rest of its group is
  # the guard's job. `sleep 300 & wait` stands for any job that forks.
  bg_start rlock "$RLOCK" run --ttl 30s kg -- \
    sh -c 'sleep 300 & echo $! > "$1/grandchild"; echo $$ > "$1/childpid"; touch "$1/ready"; wait' \
    x "$T"
  pid=$BG_PID
  wait_for_file "$T/ready"
  child=$(cat "$T/childpid")
  grandchild=$(cat "$T/grandchild")
  _rlock_alive "$grandchild"
  kill -KILL "$pid"
  wait_until "_rlock_dead $child" 5
  wait_until "_rlock_dead $grandchild" 5
  # rlock could not release: the lock is still held, by nothing that runs
  run -0 "$RLOCK" status kg
  run -0 "$RLOCK" break --yes kg
}

# --- on a terminal ----------------------------------------------------------------------

# tty_child.sh DIR: writes "pid pgid tpgid" of itself, counts SIGINTs, runs until DIR/done
# (or about a minute: exit 124).
make_tty_child() {
  cat >"$T/tty-child.sh" <<'EOF'
dir=$1
read -r stat < /proc/$$/stat
set -- ${stat##*) }
echo "$$ $3 $6" > "$dir/stat"
trap 'echo INT >> "$dir/ints"' INT
touch "$dir/ready"
i=0
while [ ! -e "$dir/done" ]; do
  i=$((i + 1))
  [ "$i" -le 600 ] || exit 124
  sleep 0.1
done
exit 0
EOF
}

# tmux_run: starts rlock with tty-child.sh in a detached tmux session on its own server.
tmux_run() {
  command -v tmux >/dev/null || skip "tmux is not installed (apt-get install tmux)"
  make_tty_child
  TMUX_SOCK="rlock-sig-$$-$BATS_TEST_NUMBER"
  local cmd
  # marked like a bg_start command, so that teardown finds it however the test ends
  cmd=$(printf 'env RLOCK_URL=%q RLOCK_TEST_MARK=%q %q run --ttl 30s tty -- sh %q %q; echo $? > %q' \
    "$RLOCK_URL" "$BATS_TEST_TMPDIR" "$RLOCK" "$T/tty-child.sh" "$T" "$T/exit")
  unset TMUX
  tmux -L "$TMUX_SOCK" -f /dev/null new-session -d -s rl -x 120 -y 30 "$cmd" \
    </dev/null >/dev/null 2>&1 3>&-
  wait_for_file "$T/ready"
}

@test "on a terminal, Ctrl-C reaches the child exactly once" {
  tmux_run
  tmux -L "$TMUX_SOCK" send-keys -t rl C-c
  wait_for_file "$T/ints"
  touch "$T/done"
  wait_for_content "$T/exit"
  assert_equal "$(cat "$T/exit")" 0
  assert_equal "$(cat "$T/ints")" INT
  run -1 "$RLOCK" status tty
}

@test "on a terminal, the child's process group is the foreground one" {
  tmux_run
  read -r cpid pgid tpgid <"$T/stat"
  touch "$T/done"
  wait_for_content "$T/exit"
  assert_equal "$pgid" "$cpid"
  assert_equal "$tpgid" "$pgid"
  assert_equal "$(cat "$T/exit")" 0
}
