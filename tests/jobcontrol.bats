#!/usr/bin/env bats
# ctest-labels: fast
# Job control in an interactive shell on a terminal (bash in tmux): Ctrl-Z stops rlock and
# the command's whole process group (even a member that ignores SIGTSTP), `fg` continues
# them with the terminal back to the command, `bg` and `kill %1` leave the terminal with
# the shell.
# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell

bats_require_minimum_version 1.5.0

load helpers/redis

setup_file() {
  export BATS_NO_PARALLELIZE_WITHIN_FILE=true
  redis_start
}

setup() {
  command -v tmux >/dev/null || skip "tmux is not installed (apt-get install tmux)"
  T=$BATS_TEST_TMPDIR
  TMUX_SOCK="rlock-jc-$$-$BATS_TEST_NUMBER"
  mkfifo "$T/idle" # for the scripts' sleeps (tty.sh)
  # worker.sh DIR (run by bash): ignores SIGTSTP (as some programs do) and counts every
  # 50ms, a line "N ." appended to DIR/n each time (see last_line). It never forks (see
  # tty.sh), so that once stopped it is seen stopped (state T).
  cat >"$T/worker.sh" <<'EOF2'
trap '' TSTP
exec 9<>"$1/idle"
n=0
while [[ ! -e $1/done ]] && ((n < 1200)); do
  n=$((n + 1))
  echo "$n ." >>"$1/n"
  read -r -t 0.05 -u 9 || :
done
EOF2
  # tty.sh DIR (run by bash): records its pid in DIR/cmd, then every 50ms a sample of the
  # terminal's foreground group, a line "N TPGID ." appended to DIR/tty (N counts the
  # samples; see last_line). It never forks. A script that runs `sleep` in a loop can be
  # caught by Ctrl-Z between dash's vfork() and the exec of sleep: then only the vfork
  # child stops, while the shell waits in the kernel for that child's exec (uninterruptible
  # but for SIGKILL), never stops, and so is never seen stopped by its parent, rlock or an
  # interactive shell alike: the job hangs (run `sh -c 'while :; do /bin/true; done'` under
  # bash, Ctrl-Z a few times). A loaded machine keeps the window open longer; the test
  # would flake. `read -t` on a FIFO that nobody writes to is a sleep with no child.
  cat >"$T/tty.sh" <<'EOF2'
exec 9<>"$1/idle"
echo $$ >"$1/cmd"
n=0
while [[ ! -e $1/done ]] && ((n < 1200)); do
  n=$((n + 1))
  read -r stat </proc/$$/stat; set -- "$1" ${stat##*) }; echo "$n $7 ." >>"$1/tty"
  read -r -t 0.05 -u 9 || :
done
EOF2
}

suite_teardown() {
  touch "$T/done"
  tmux_kill "${TMUX_SOCK:-}"
  "$RLOCK" break --yes jc >/dev/null 2>&1 || true
}

# shell: an interactive bash in a detached tmux session, marked for teardown.
shell() {
  unset TMUX
  tmux -L "$TMUX_SOCK" -f /dev/null new-session -d -s jc -x 150 -y 40 \
    "env RLOCK_URL=$RLOCK_URL RLOCK_TEST_MARK=$BATS_TEST_TMPDIR PS1='$ ' bash --norc --noprofile -i" \
    </dev/null >/dev/null 2>&1 3>&-
  echo "echo \$\$ >$T/shell" | keys
  # non-empty, not just created: the shell creates the file before echo writes to it
  wait_until "[[ -s $T/shell ]]"
  SHELL_PID=$(cat "$T/shell")
}

# keys: sends its stdin as typed lines, Enter after each.
keys() {
  local line
  while IFS= read -r line; do
    tmux -L "$TMUX_SOCK" send-keys -t jc -l "$line"
    tmux -L "$TMUX_SOCK" send-keys -t jc Enter
  done
}

ctrl_z() { tmux -L "$TMUX_SOCK" send-keys -t jc C-z; }

# rlock itself: the shell's child that runs "$RLOCK run". Not found by its command line
# alone: a forked guard (a sanitizer build's) has the same one, and so has any rlock of
# another run of the same build on the machine.
rlock_pid() {
  local pid args
  while read -r pid args; do
    if [[ $args == "$RLOCK run "* ]]; then
      echo "$pid"
      return
    fi
  done < <(ps -ww -o pid=,args= --ppid "$SHELL_PID")
}

# last_line FILE: sets LAST to the fields of FILE's last whole line. The scripts above
# append lines that end in " ." and a reader may come between a line's first bytes and its
# last, so a last line without the dot is not there yet. False while there is none.
last_line() {
  local line
  line=$(tail -n 1 "$1" 2>/dev/null) || return 1
  [[ $line == *" ." ]] || return 1
  read -r -a LAST <<<"${line% .}"
}

# sample: the command's latest sample (tty.sh): SAMPLE_N, its number, and SAMPLE_TPGID, the
# terminal's foreground group when it was taken.
sample() {
  last_line "$T/tty" || return 1
  SAMPLE_N=${LAST[0]} SAMPLE_TPGID=${LAST[1]}
}

# count: the worker's latest count (worker.sh).
count() {
  last_line "$T/n" || return 1
  COUNT=${LAST[0]}
}

# rlock_stopped: rlock is found, and stopped.
rlock_stopped() {
  local pid
  pid=$(rlock_pid)
  [[ -n $pid ]] && _rlock_stopped "$pid"
}

# group_stopped PGID: every process of process group PGID is stopped (and there is one).
group_stopped() {
  local pid any=
  for pid in $(pgrep -g "$1"); do
    any=1
    _rlock_stopped "$pid" || return 1
  done
  [[ -n $any ]]
}

# tty_command: types rlock with tty.sh on the shell's terminal; sets CMD to the command's
# pid and returns once a sample shows that the command has the terminal (a Ctrl-Z typed
# before the hand-over would go to rlock's group).
tty_command() {
  echo "$RLOCK run --ttl 30s jc -- bash $T/tty.sh $T" | keys
  wait_until "[[ -s $T/cmd ]]"
  CMD=$(cat "$T/cmd")
  wait_until 'sample && [[ $SAMPLE_TPGID == "$CMD" ]]'
}

# the shell answers: types a command that creates FILE, waits for it. A builtin: the
# shell runs it itself, with no job that would have the terminal for a moment.
shell_alive() {
  echo ": >$T/$1" | keys
  wait_for_file "$T/$1" 5
}

@test "Ctrl-Z stops rlock and the command's whole group, a member ignoring SIGTSTP too; fg continues" {
  shell
  echo "$RLOCK run --ttl 30s jc -- sh -c 'echo \$\$ >$T/cmd; bash $T/worker.sh $T & wait'" | keys
  wait_until count
  ctrl_z
  wait_until rlock_stopped
  wait_until 'group_stopped "$(cat $T/cmd)"'
  count
  n1=$COUNT
  sleep 0.5 # the point: nothing of the command may run now
  count
  assert_equal "$COUNT" "$n1"
  shell_alive alive1
  echo fg | keys
  wait_until "count && ((COUNT > $n1))"
  touch "$T/done"
  echo "echo \$? >$T/exit" | keys
  # non-empty, not just created: the shell creates the file before echo writes to it
  wait_until "[[ -s $T/exit ]]"
  assert_equal "$(cat "$T/exit")" 0
}

@test "after Ctrl-Z, bg leaves the terminal with the shell" {
  shell
  tty_command
  ctrl_z
  wait_until rlock_stopped
  wait_until 'group_stopped "$CMD"'
  sample
  n0=$SAMPLE_N
  echo bg | keys
  # The command runs again only when rlock, continued, has decided where the terminal goes
  # and sent the command SIGCONT (Child::resume): a sample taken after the stop shows
  # that decision.
  wait_until "sample && ((SAMPLE_N > $n0))"
  assert_equal "$SAMPLE_TPGID" "$SHELL_PID"
  # and the shell keeps it while it reads and runs what is typed
  shell_alive alive2
  sample
  n1=$SAMPLE_N
  wait_until "sample && ((SAMPLE_N > $n1))"
  assert_equal "$SAMPLE_TPGID" "$SHELL_PID"
}

@test "after Ctrl-Z, kill %1 ends the job and the shell keeps its terminal" {
  shell
  tty_command
  ctrl_z
  wait_until rlock_stopped
  rl=$(rlock_pid)
  echo 'kill %1' | keys
  wait_until "_rlock_dead $CMD"
  shell_alive alive3
  # rlock releases the lock before it exits
  wait_until "_rlock_dead $rl"
  run -1 "$RLOCK" status jc
}

@test "kill -TSTP to rlock on a terminal, then fg: the command has the terminal again" {
  shell
  tty_command
  kill -TSTP "$(rlock_pid)"
  wait_until rlock_stopped
  wait_until 'group_stopped "$CMD"'
  sample
  n0=$SAMPLE_N
  shell_alive alive4
  echo fg | keys
  # as after bg: a sample taken after the stop shows where rlock put the terminal
  wait_until "sample && ((SAMPLE_N > $n0))"
  assert_equal "$SAMPLE_TPGID" "$CMD"
  touch "$T/done"
}

# --- Ctrl-C stops the whole job (man page, PROCESS BEHAVIOUR OF RUN: "Stopping a job
# stops all of it") ---------------------------------------------------------------------

ctrl_c() { tmux -L "$TMUX_SOCK" send-keys -t jc C-c; }
screen() { tmux -L "$TMUX_SOCK" capture-pane -p -t jc; }

# job_with_leftover CODE: runs, on the shell's terminal, a command that leaves a
# background sleep (which ignores SIGINT, as a script's background jobs do) and exits
# CODE at Ctrl-C; waits until the command has the terminal.
job_with_leftover() {
  echo "$RLOCK run --ttl 30s jc -- bash -c 'echo \$\$ >$T/cmd; trap \"exit $1\" INT; sleep 100 & echo \$! >$T/sleep; wait'; echo \$? >$T/exit" | keys
  wait_until "[[ -s $T/sleep ]]"
  wait_until "[[ \$(ps -o tpgid= -p \$(cat $T/shell) | tr -d ' ') == \$(cat $T/cmd) ]]" 10
}

@test "Ctrl-C on a command that exits 130 ends what it left at once: prompt back, lock free" {
  shell
  job_with_leftover 130
  sleeper=$(cat "$T/sleep")
  ctrl_c
  # a stop request: the leftover gets SIGTERM now, not after its 100s
  wait_until "[[ -s $T/exit ]]" 10
  assert_equal "$(cat "$T/exit")" 130
  wait_until "_rlock_dead $sleeper" 5
  run -1 "$RLOCK" status jc
  shell_alive alive5
}

@test "Ctrl-C that the command traps and exits 0: the notice names the leftover, the next Ctrl-C ends it" {
  shell
  job_with_leftover 0
  sleeper=$(cat "$T/sleep")
  ctrl_c
  # not a stop request: the lock is held for the leftover, and rlock says so at once
  wait_until "screen | grep -q \"holding 'jc' for 1 process the command left: pid $sleeper (sleep); Ctrl-C ends it\"" 10
  _rlock_alive "$sleeper"
  run -0 "$RLOCK" status jc
  [[ ! -s $T/exit ]] || fail "rlock exited: $(cat "$T/exit")"
  # rlock has the terminal back: this Ctrl-C is rlock's, and ends the leftover
  ctrl_c
  wait_until "[[ -s $T/exit ]]" 10
  assert_equal "$(cat "$T/exit")" 0
  wait_until "_rlock_dead $sleeper" 5
  run -1 "$RLOCK" status jc
}

# `stty tostop`: a background process group that writes to the terminal gets SIGTTOU,
# which stops it. rlock is in the background whenever its command has the terminal (or
# when the whole run is a background job), and its own messages (a lost lock, -v, the
# leftovers notice) must never stop it: it ignores SIGTTOU (man page, "PROCESS BEHAVIOUR
# OF RUN"). The command keeps the terminal's usual rules.

@test "stty tostop: a run whose lock is broken still stops its command (rlock's message does not stop it)" {
  shell
  keys <<EOF2
stty tostop
$RLOCK run --ttl 30s jc -- bash $T/tty.sh $T
EOF2
  wait_until "[[ -s $T/cmd ]]"
  CMD=$(cat "$T/cmd")
  wait_until 'sample && [[ $SAMPLE_TPGID == "$CMD" ]]' # the command has the terminal
  run -0 "$RLOCK" break --yes jc
  wait_until "_rlock_dead $CMD" 10
  wait_until "[[ -z \$(rlock_pid) ]]" 10
}

@test "stty tostop: with -v, and as a background job holding the lock for leftovers, rlock keeps renewing" {
  shell
  keys <<EOF2
stty tostop
$RLOCK run -v --ttl 2s jc -- bash $T/tty.sh $T
EOF2
  wait_until "[[ -s $T/cmd ]]"
  CMD=$(cat "$T/cmd")
  sleep 3 # longer than the lease: only a holder that renews still has it
  run -75 "$RLOCK" run -n jc -- true
  assert [ ! "$(rlock_stopped && echo stopped)" ]
  touch "$T/done"
  wait_until "_rlock_dead $CMD" 10
  wait_until "[[ -z \$(rlock_pid) ]]" 10
  rm -f "$T/cmd" "$T/done"
  # a background job whose command left a process behind: the notice goes out, rlock goes on
  echo "$RLOCK run --ttl 2s jc -c 'sleep 60 & echo \$! >$T/cmd; exit 0' &" | keys
  wait_until "[[ -s $T/cmd ]]"
  left=$(cat "$T/cmd")
  # Ctrl-C does not reach a background job: the notice says what does
  wait_until "screen | grep -q 'sleep); SIGINT or SIGTERM to rlock (pid [0-9]*) ends it'" 10
  sleep 3
  run -75 "$RLOCK" run -n jc -- true
  kill "$left"
  wait_until "[[ -z \$(rlock_pid) ]]" 10
  run -0 "$RLOCK" run -n jc -- true
}

# SIGSTOP cannot be caught: rlock stopped by it stops renewing while its command has the
# terminal. Its guard stops the command's group at the lease's end; rlock on a terminal
# sees that stop (it waits with WUNTRACED for a Ctrl-Z) and must not take it for one.
@test "rlock stopped with SIGSTOP on a terminal: the guard stops the command at the lease's end; continued, rlock applies --on-lost, not a Ctrl-Z" {
  shell
  # (through bash -c: the interactive shell would see its job stop and take the terminal)
  echo "bash -c '\"\$0\" run --ttl 2s jc -- bash \"\$1\"/tty.sh \"\$1\"; echo \$? >\"\$1\"/rc' $RLOCK $T" | keys
  wait_until "[[ -s $T/cmd ]]"
  CMD=$(cat "$T/cmd")
  wait_until 'sample && [[ $SAMPLE_TPGID == "$CMD" ]]' # the command has the terminal
  holder=$(ps -o ppid= -p "$CMD" | tr -d ' ')
  kill -STOP "$holder"
  wait_until "group_stopped $CMD" 30
  wait_until "! \"\$RLOCK\" status jc >/dev/null" 30
  kill -CONT "$holder"
  wait_for_content "$T/rc" 30
  assert_equal "$(cat "$T/rc")" 76
  wait_until "_rlock_dead $CMD" 10
  shell_alive back
}

# pttl_at_most MS: the lock's lease on the server has at most MS left (or is gone).
pttl_at_most() { (($(rcli pttl 'lock:{jc}') <= $1)); }

# A renewal whose reply rlock reads only once it is continued past the lease its guard was
# told, but within the new lease's safety margin: rlock renews again before it believes
# that reply (hold/watchdog.cc, renewed), and the guard, told nothing yet, keeps the
# command stopped. A SIGCHLD meanwhile (an orphan of the command ends: rlock is its
# subreaper) must not make rlock take the guard's stop for a Ctrl-Z and stop itself: the
# renewal in flight decides, then the command runs on.
@test "rlock on a terminal continued with a late renewal's reply: a SIGCHLD meanwhile is still the guard's stop, not a Ctrl-Z" {
  # every reply 1.5s late (requests are not): rlock can be stopped while one is in flight
  proxy_start_named SLOW "$REDIS_PORT" 127.0.0.1 1500
  # start.sh DIR: leaves an orphan in a session of its own (DIR/orphan), then runs tty.sh
  cat >"$T/start.sh" <<'EOF2'
(setsid sleep 300 & echo $! >"$1/orphan")
exec bash "$1/tty.sh" "$1"
EOF2
  shell
  # (through bash -c, as above: the interactive shell would see its job stop)
  echo "RLOCK_URL=$SLOW_URL bash -c '\"\$0\" run --ttl 10s jc -- bash \"\$1\"/start.sh \"\$1\"; echo \$? >\"\$1\"/rc' $RLOCK $T" | keys
  wait_until "[[ -s $T/cmd ]]" 15
  CMD=$(cat "$T/cmd")
  wait_until 'sample && [[ $SAMPLE_TPGID == "$CMD" ]]' # the command has the terminal
  wait_for_content "$T/orphan"
  orphan=$(cat "$T/orphan")
  holder=$(ps -o ppid= -p "$CMD" | tr -d ' ')
  # Two renewals (the first may be the one the subscription asks for): the second is one
  # of the regular ones, TTL/3 after the last, whose reply is now on its way.
  wait_renewal REDIS 'lock:{jc}'
  wait_renewal REDIS 'lock:{jc}'
  kill -STOP "$holder"
  # the guard stops the command at the lease it was told (the renewal before), ...
  wait_until "group_stopped $CMD" 30
  # ... and rlock is continued within the safety margin (TTL/5: 2s) of the renewed lease
  wait_until "pttl_at_most 1000" 30
  (($(rcli pttl 'lock:{jc}') > 0)) || fail "the lease ran out before rlock was continued"
  sample
  n0=$SAMPLE_N
  kill -CONT "$holder"
  # rlock renews again at once, the reply 1.5s away: the orphan ends meanwhile
  wait_until "! pttl_at_most 5000" 10
  kill "$orphan"
  wait_until "sample && ((SAMPLE_N > $n0))" 15
  _rlock_not_stopped "$holder" || fail "rlock stopped itself: it took the guard's stop for a Ctrl-Z"
  run -0 "$RLOCK" status jc
  touch "$T/done"
  wait_for_content "$T/rc" 10
  assert_equal "$(cat "$T/rc")" 0
}
