#!/usr/bin/env bash
# The critical section of one soak run; tests/soak/soak.sh starts it as
#
#   rlock run … soak -- bash cs.sh DIR CONTENDER RUN WORK_S TTL_MS [SHAPE]
#
# It logs its enter and leave (wall clock in microseconds, EPOCHREALTIME: one clock for
# every process on the machine), works WORK_S seconds, then makes one write attempt to
# the fenced resource and leaves. History lines, appended to DIR/hist/CONTENDER:
#
#   E RUN ENTER_US FENCE CS_PID RLOCK_PID TOKEN KEY SHAPE SLOT
#   L RUN LEAVE_US HOW            HOW: ok, or term/int/hup when a signal ended it
#
# KEY is RLOCK_KEY (the first key of an --and run), SLOT RLOCK_SLOT ("-" outside a pool),
# SHAPE the run's (contender.sh; "excl" by default). Only an exclusive holder of the soak
# key writes to the resource: "shared" (run --shared), "pool" and "npool" (--limit N and
# --limit NAMES), "done" (--done-for, another key) and the layouts' runs ("plain",
# "redisson": another key, no fence) only log their enter and leave.
#
# The fenced resource (DIR/res) accepts a write only with a fence strictly above the
# highest it has accepted, like a storage service that checks fencing tokens. Each
# attempt is decided and logged under flock(1), so DIR/res/log is in decision order:
#
#   W TIME_US RUN FENCE RESULT MAX_BEFORE     RESULT: A accepted, R rejected, T flock timeout
#
# While the critical section runs, DIR/cur/CONTENDER says "RUN CS_PID RLOCK_PID TTL_MS", so
# the fault injector can find a holder to freeze.
set -u
dir=$1 c=$2 run=$3 work=$4 ttl=$5 shape=${6:-excl}
# Our own stderr: contender 0 gives rlock a broken one on purpose (that fault is rlock's),
# and bash would die of SIGPIPE reporting a killed `sleep`.
exec 2>>"$dir/err/$c"
hist=$dir/hist/$c
fence=${RLOCK_FENCE:-none}
pending=""

stamp() { _t=${EPOCHREALTIME/./}; }

leave() {
  stamp
  printf 'L %s %s %s\n' "$run" "$_t" "$1" >>"$hist"
  rm -f "$dir/cur/$c"
  # A signal after this (a SIGHUP the kernel sends a stopped orphaned process group on
  # SIGCONT: a nested run's group once its outer run has gone) ends nothing more.
  trap '' TERM INT HUP
}

# A signal ends the section (rlock's --on-lost term, or the soak's shutdown); inside the
# resource's decision it is only noted, so a decision is never half logged.
on_signal() {
  if [[ -n ${in_resource:-} ]]; then
    pending=$1
    return
  fi
  leave "$1"
  exit "$2"
}
trap 'on_signal term 143' TERM
trap 'on_signal int 130' INT
trap 'on_signal hup 129' HUP

stamp
printf 'E %s %s %s %s %s %s %s %s %s\n' "$run" "$_t" "$fence" "$$" "$PPID" "${RLOCK_TOKEN:-none}" \
  "${RLOCK_KEY:--}" "$shape" "${RLOCK_SLOT:--}" >>"$hist"
printf '%s %s %s %s\n' "$run" "$$" "$PPID" "$ttl" >"$dir/cur/$c"

sleep "$work"

case $shape in shared | pool | npool | done | plain | redisson)
  leave ok
  exit 0
  ;;
esac

# One write attempt to the fenced resource.
exec 9>>"$dir/res/lock"
in_resource=1
flock -w 30 9
got=$?
if ((got == 0)); then
  read -r max <"$dir/res/max"
  stamp
  if [[ $fence =~ ^[0-9]+$ ]] && ((fence > max)); then
    printf '%s\n' "$fence" >"$dir/res/max"
    result=A
  else
    result=R
  fi
  printf 'W %s %s %s %s %s\n' "$_t" "$run" "$fence" "$result" "$max" >>"$dir/res/log"
elif ((got == 1)); then
  stamp
  printf 'W %s %s %s T -\n' "$_t" "$run" "$fence" >>"$dir/res/log"
fi # else a signal killed flock(1): no attempt was made, the trap noted the signal
exec 9>&-
in_resource=""
case $pending in
  term) on_signal term 143 ;;
  int) on_signal int 130 ;;
  hup) on_signal hup 129 ;;
esac

leave ok
exit 0
