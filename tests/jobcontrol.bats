#!/usr/bin/env bats
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
  # worker.sh DIR: ignores SIGTSTP (as some programs do) and counts in DIR/n.
  cat >"$T/worker.sh" <<'EOF2'
trap '' TSTP
n=0
while [ ! -e "$1/done" ] && [ $n -lt 1200 ]; do n=$((n + 1)); echo $n >"$1/n"; sleep 0.05; done
EOF2
  # tty.sh DIR (run by bash): records its pid, then the terminal's foreground group every
  # 50ms. It never forks. A script that runs `sleep` in a loop can be caught by Ctrl-Z
  # between dash's vfork() and the exec of sleep: then only the vfork child stops, while
  # the shell waits in the kernel for that child's exec (uninterruptible but for SIGKILL),
  # never stops, and so is never seen stopped by its parent, rlock or an interactive shell
  # alike: the job hangs (run `sh -c 'while :; do /bin/true; done'` under bash, Ctrl-Z a
  # few times). A loaded machine keeps the window open longer; the test would flake.
  # `read -t` on a FIFO that nobody writes to is a sleep with no child.
  mkfifo "$T/idle"
  cat >"$T/tty.sh" <<'EOF2'
exec 9<>"$1/idle"
echo $$ >"$1/cmd"
n=0
while [[ ! -e $1/done ]] && ((n < 1200)); do
  n=$((n + 1))
  read -r stat </proc/$$/stat; set -- "$1" ${stat##*) }; echo "$7" >"$1/tpgid"
  read -r -t 0.05 -u 9 || :
done
EOF2
}

suite_teardown() {
  touch "$T/done"
  if [[ -n ${TMUX_SOCK:-} ]]; then tmux -L "$TMUX_SOCK" kill-server 2>/dev/null || true; fi
  "$RLOCK" break --yes jc >/dev/null 2>&1 || true
}

# shell: an interactive bash in a detached tmux session, marked for teardown.
shell() {
  unset TMUX
  tmux -L "$TMUX_SOCK" -f /dev/null new-session -d -s jc -x 150 -y 40 \
    "env RLOCK_URL=$RLOCK_URL RLOCK_TEST_MARK=$BATS_TEST_TMPDIR PS1='$ ' bash --norc --noprofile -i" \
    </dev/null >/dev/null 2>&1 3>&-
  echo "echo \$\$ >$T/shell" | keys
  wait_for_file "$T/shell"
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

# rlock itself, not its guard (a fork with the same command line, but the leader
# of a session of its own; pids wrap, so the lowest pid is not always rlock's).
rlock_pid() {
  local p
  for p in $(pgrep -f "$RLOCK run --ttl 30s jc"); do
    [[ $(ps -o sid= -p "$p" | tr -d ' ') != "$p" ]] && { echo "$p"; return; }
  done
}

# the shell answers: types a command that creates FILE, waits for it.
shell_alive() {
  echo "touch $T/$1" | keys
  wait_for_file "$T/$1" 5
}

@test "Ctrl-Z stops rlock and the command's whole group, a member ignoring SIGTSTP too; fg continues" {
  shell
  echo "$RLOCK run --ttl 30s jc -- sh -c 'sh $T/worker.sh $T & wait'" | keys
  wait_for_file "$T/n"
  ctrl_z
  wait_until '[[ -n $(rlock_pid) ]] && _rlock_stopped $(rlock_pid)' 10
  n1=$(cat "$T/n")
  sleep 0.5 # the point: nothing of the command may run now
  assert_equal "$(cat "$T/n")" "$n1"
  shell_alive alive1
  echo fg | keys
  wait_until "(( \$(cat $T/n) > $n1 ))" 5
  touch "$T/done"
  echo "echo \$? >$T/exit" | keys
  # non-empty, not just created: the shell creates the file before echo writes to it
  wait_until "[[ -s $T/exit ]]" 10
  assert_equal "$(cat "$T/exit")" 0
}

@test "after Ctrl-Z, bg leaves the terminal with the shell" {
  shell
  echo "$RLOCK run --ttl 30s jc -- bash $T/tty.sh $T" | keys
  wait_for_file "$T/cmd"
  cmd=$(cat "$T/cmd")
  # Ctrl-Z once the command has the terminal (it reads the terminal's group itself)
  wait_until "[[ \$(cat $T/tpgid 2>/dev/null) == $cmd ]]" 10
  ctrl_z
  wait_until '[[ -n $(rlock_pid) ]] && _rlock_stopped $(rlock_pid)' 10
  echo bg | keys
  wait_until '_rlock_not_stopped $(rlock_pid)' 5
  sleep 0.3 # let the continued rlock do whatever it does with the terminal
  shell_alive alive2
  # the terminal's foreground group is the shell's, not the command's
  wait_until "[[ \$(cat $T/tpgid) == \$(cat $T/shell) ]]" 5
}

@test "after Ctrl-Z, kill %1 ends the job and the shell keeps its terminal" {
  shell
  echo "$RLOCK run --ttl 30s jc -- bash $T/tty.sh $T" | keys
  wait_for_file "$T/cmd"
  cmd=$(cat "$T/cmd")
  wait_until "[[ \$(cat $T/tpgid 2>/dev/null) == $cmd ]]" 10
  ctrl_z
  wait_until '[[ -n $(rlock_pid) ]] && _rlock_stopped $(rlock_pid)' 10
  echo 'kill %1' | keys
  wait_until "_rlock_dead $cmd" 5
  shell_alive alive3
  run -1 "$RLOCK" status jc
}

@test "kill -TSTP to rlock on a terminal, then fg: the command has the terminal again" {
  shell
  echo "$RLOCK run --ttl 30s jc -- bash $T/tty.sh $T" | keys
  wait_for_file "$T/cmd"
  cmd=$(cat "$T/cmd")
  wait_until "[[ \$(cat $T/tpgid) == $cmd ]]" 5
  kill -TSTP "$(rlock_pid)"
  wait_until '_rlock_stopped $(rlock_pid)' 10
  shell_alive alive4
  echo fg | keys
  wait_until "[[ \$(cat $T/tpgid) == $cmd ]]" 5
  touch "$T/done"
}

# --- Ctrl-C stops the whole job (SPEC: "Stopping a job stops all of it") ---------------

ctrl_c() { tmux -L "$TMUX_SOCK" send-keys -t jc C-c; }
screen() { tmux -L "$TMUX_SOCK" capture-pane -p -t jc; }

# job_with_leftover CODE: runs, on the shell's terminal, a command that leaves a
# background sleep (which ignores SIGINT, as a script's background jobs do) and exits
# CODE at Ctrl-C; waits until the command has the terminal.
job_with_leftover() {
  echo "$RLOCK run --ttl 30s jc -- bash -c 'echo \$\$ >$T/cmd; trap \"exit $1\" INT; sleep 100 & echo \$! >$T/sleep; wait'; echo \$? >$T/exit" | keys
  wait_for_file "$T/sleep"
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
