#!/usr/bin/env bash
# The suite's watchdog (started by tests/helpers/redis.bash, one per bats file):
#   watchdog.sh ROOT_PID MARK
# waits for ROOT_PID (bats itself) to be gone, then SIGKILLs every process whose
# environment holds RLOCK_SUITE_MARK=MARK or whose working directory is a directory of
# MARK's (a redis-server writes its title over its environment; the helpers start it with
# --dir MARK/redis-PORT). It repeats a few times, so that a process forked meanwhile is
# caught too, and ends by itself. Holds no descriptor of bats's: started with 0-2 on
# /dev/null and every other descriptor closed.
root=$1 mark=$2
[[ $root =~ ^[0-9]+$ && $mark == /* ]] || exit 64

alive() {
  local stat
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} != [ZX] ]]
}

# marked /proc/PID: its environment has the mark, or its working directory is a directory
# of the suite's own (redis-P). Builtins only: on a loaded machine a fork per process
# would make one pass over /proc take many seconds.
marked() {
  local d=$1 e
  local -a env=()
  [[ ${d#/proc/} != "$$" ]] || return 1
  [[ $d/cwd/.. -ef $mark ]] && return 0
  mapfile -d "" -t env 2>/dev/null <"$d/environ" || return 1
  for e in "${env[@]}"; do
    [[ $e == "RLOCK_SUITE_MARK=$mark" ]] && return 0
  done
  return 1
}

while alive "$root"; do sleep 1; done

for ((round = 0; round < 20; round++)); do
  pids=()
  for d in /proc/[0-9]*; do
    if marked "$d"; then pids+=("${d#/proc/}"); fi
  done
  ((${#pids[@]})) || exit 0
  kill -CONT "${pids[@]}" 2>/dev/null
  kill -KILL "${pids[@]}" 2>/dev/null
  sleep 0.2
done
exit 0
