#!/usr/bin/env bash
# One soak contender; tests/soak/soak.sh starts it in a session of its own (setsid), so a
# fault can freeze "the whole job" (this loop, rlock and rlock's guard) with one kill.
#
#   contender.sh DIR C SEED RLOCK URL KEY TTL_MS VIA
#
# Loops `rlock --url URL run --ttl TTL_MS --wait W KEY -- bash cs.sh …` until DIR/stop
# exists. W and the critical section's work come from a random stream seeded by SEED and
# C, so a seed always asks for the same runs. After each run it appends to DIR/hist/C
#
#   R RUN START_US END_US STATUS TTL_MS WAIT_MS VIA WORK_MS
#
# and rlock's stderr (-v: every round trip, and "no longer held at release") goes to
# DIR/err/C, each run's lines after a "== RUN" marker.
set -u
dir=$1 c=$2 seed=$3 rlock=$4 url=$5 key=$6 ttl=$7 via=$8
cs="$(dirname "${BASH_SOURCE[0]}")/cs.sh"
hist=$dir/hist/$c err=$dir/err/$c
RANDOM=$((seed * 1009 + c * 7919))
stopping=0
# SIGTERM (the soak's shutdown) reaches rlock too; the loop records the run, then ends.
trap 'stopping=1' TERM INT HUP

# rnd LO HI: a number in [LO, HI] from the seeded stream (30 bits).
rnd() { _r=$(($1 + (RANDOM * 32768 + RANDOM) % ($2 - $1 + 1))); }

# The critical section's work: mostly a few ms; sometimes longer than TTL/3 (a renewal
# happens), rarely longer than the TTL (several renewals).
pick_work() {
  rnd 0 99
  if ((_r < 93)); then
    rnd 2 20
  elif ((_r < 99)); then
    rnd $((ttl * 40 / 100)) $((ttl * 70 / 100))
  else
    rnd $((ttl * 120 / 100)) $((ttl * 180 / 100))
  fi
  work_ms=$_r
}

for ((i = 0; ; i++)); do
  [[ -e $dir/stop ]] && break
  ((stopping)) && break
  run=$c.$i
  pick_work
  rnd 1500 6000
  wait_ms=$_r
  printf -v work_s '%d.%03d' $((work_ms / 1000)) $((work_ms % 1000))
  printf '== %s\n' "$run" >>"$err"
  t0=${EPOCHREALTIME/./}
  "$rlock" -v --url "$url" run --ttl "${ttl}ms" --wait "${wait_ms}ms" "$key" -- \
    bash "$cs" "$dir" "$c" "$run" "$work_s" "$ttl" </dev/null >/dev/null 2>>"$err"
  st=$?
  t1=${EPOCHREALTIME/./}
  printf 'R %s %s %s %s %s %s %s %s\n' "$run" "$t0" "$t1" "$st" "$ttl" "$wait_ms" "$via" \
    "$work_ms" >>"$hist"
  # Redis is down (a restart): do not spin.
  if ((st == 69)); then sleep 0.1; fi
done
