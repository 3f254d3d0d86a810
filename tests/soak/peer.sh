#!/usr/bin/env bash
# One soak peer: the real client of another tool's layout (tests/interop/, the clients
# tests/layout_interop.bats drives), taking the same lock as the soak's `rlock --layout`
# runs; tests/soak/soak.sh starts it in a session of its own.
#
#   peer.sh DIR LAYOUT SEED KEY NODE_ARGS…
#
# LAYOUT is plain (seed_service.js, the NestJS service's SET NX lock:KEY) or redisson
# (redisson.js, node-redisson's hash at KEY); NODE_ARGS are the client's connection
# (--port P…, --cluster). Until DIR/stop exists, it runs the client's worker for 10
# critical sections at a time (`worker KEY --ttl 2000 --iterations 10 --work-ms M
# --max-wait 3000`, M drawn in 2-40ms from a stream seeded by SEED: a section far
# shorter than the lease, which the client's watchdog renews every third of it: these
# clients have no way to learn of a loss), then turns each section of its log (start and
# end, in ms) into the soak's history lines, in DIR/hist/p-LAYOUT:
#
#   E RUN ENTER_US none - - - KEY peer-LAYOUT -    ENTER_US: the start's ms + 999 µs
#   L RUN LEAVE_US ok                              LEAVE_US: the end's ms (a section
#                                                  without an end has no L line)
#   R RUN START_US END_US STATUS 2000 3000 direct WORK_MS file peer-LAYOUT
#
# (the interval is the one the lock surely covered: the client logs its start after it
# took the lock and its end before it releases). STATUS is the client's exit status (0,
# 75 when it did not get the lock in time, 1 on any error: a fault may cause one), the
# same for the sections of one worker; the checker counts them apart.
set -u
dir=$1 layout=$2 seed=$3 key=$4
shift 4
here=$(dirname "${BASH_SOURCE[0]}")
case $layout in
  plain) driver=$here/../interop/seed_service.js ;;
  redisson) driver=$here/../interop/redisson.js ;;
  *) exit 64 ;;
esac
hist=$dir/hist/p-$layout
mkdir -p "$dir/peer"
RANDOM=$((seed * 1009 + ${#layout} * 7919))
trap 'stopping=1' TERM INT HUP
stopping=0
for ((i = 0; ; i++)); do
  [[ -e $dir/stop ]] && break
  ((stopping)) && break
  work=$((2 + (RANDOM % 39)))
  log=$dir/peer/$layout.$i.log
  t0=${EPOCHREALTIME/./}
  node "$driver" "$@" worker "$key" --ttl 2000 --iterations 10 --work-ms "$work" \
    --max-wait 3000 --log "$log" --who "p$layout.$i" </dev/null >/dev/null 2>>"$dir/peer/$layout.err"
  st=$?
  t1=${EPOCHREALTIME/./}
  [[ -e $log ]] || : >"$log"
  awk -v run="p$layout.$i" -v key="$key" -v shape="peer-$layout" -v t0="$t0" -v t1="$t1" \
    -v st="$st" -v work="$work" '
    $1 == "start" { j++; printf "E %s.%d %.0f none - - - %s %s -\n", run, j, $3 * 1000 + 999, key, shape; open = 1 }
    $1 == "end" && open { printf "L %s.%d %.0f ok\n", run, j, $3 * 1000; open = 0 }
    END {
      for (q = 1; q <= j; q++)
        printf "R %s.%d %s %s %s 2000 3000 direct %s file %s\n", run, q, t0, t1, st, work, shape
    }' "$log" >>"$hist"
  # a pause between workers (node's start is the costly part), longer when the lock was
  # busy or Redis refused (a fault)
  if ((st == 0)); then sleep 1; else sleep 1.5; fi
done
