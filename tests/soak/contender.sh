#!/usr/bin/env bash
# shellcheck disable=SC2016 # the nested runs' scripts are expanded by their own bash
# One soak contender; tests/soak/soak.sh starts it in a session of its own (setsid), so a
# fault can freeze "the whole job" (this loop, rlock and rlock's guard) with one kill.
#
#   contender.sh DIR C SEED RLOCK URL KEY TTL_MS VIA STDERR_FAULTS [RUN_OPTIONS [NESTED_PCT
#                [SUPERSEDE_PCT [AND_KEY [SHAPES]]]]]
#
# URL may be several URLs separated by spaces (quorum mode: one --url each). RUN_OPTIONS
# (space-separated, e.g. "--sync-replicas 2") go to every `rlock run`.
# Loops `rlock -v --url URL run --ttl TTL_MS --wait W KEY -- bash cs.sh …` until DIR/stop
# exists. W and the critical section's work come from a random stream seeded by SEED and
# C, so a seed always asks for the same runs. After each run it appends to DIR/hist/C
#
#   R RUN START_US END_US STATUS TTL_MS WAIT_MS VIA WORK_MS STDERR [nested SHAPE | supersede | and]
#
# rlock's stderr (-v: every round trip, and "no longer held at release") goes to
# DIR/err/C, each run's lines after a "== RUN" marker: STDERR is "file". With
# STDERR_FAULTS=1, each run draws one of four: file; "full" (/dev/full: every write
# fails with ENOSPC); "epipe" (a FIFO without a reader: EPIPE); "stall" (a FIFO whose
# reader never reads: once its 64 KiB are full, a write would block). docs/GUIDE.md, "Nothing kills rlock but
# a signal": a failed or
# stalled stderr neither kills rlock nor delays renewal.
#
# Nested runs (NESTED_PCT, 0-100: that share of the runs): the run's critical section runs
# in a nested `rlock run KEY -- cs.sh …` that outlives what encloses it, in one of three
# shapes drawn from the seeded stream: "setm", the run's command starts it as a job of its
# own (`set -m`: a process group of its own) and exits after 0-50ms; "setsid", the same in
# a session of its own; "whilepid", instead of `rlock run` a script takes the lock with
# `acquire --while-pid $$ --export`, evals it, starts the nested run in the background
# and exits after 0-50ms (its keeper then releases its hold). The nested run is a hold
# under the enclosing one's token (docs/GUIDE.md "Nesting"), so the lock stays held until
# it ends. The R line then gives the nested run's status and end (the critical section is
# its), "nested SHAPE" after STDERR; for "whilepid", STATUS is the acquire's when it failed.
# In quorum mode (several URLs), which refuses the three, the one shape is "group": the
# run's command runs the nested run in its own process group and waits for it.
#
# Superseding jobs (SUPERSEDE_PCT, 0-100: that share of the runs that are not nested): the
# run is `rlock run --supersede` (a CI job: the newest of them wins, docs/GUIDE.md), whose
# wait is 9s longer (10.5-15s: it outlasts a stop_waiter freeze);
# "supersede" after STDERR. A superseded one exits 80 (--superseded-exit-code 80), so that
# the checker tells it from a wait that ran out (75).
#
# Several keys (AND_KEY, the 13th argument; soak.sh gives one in Cluster mode): a fifth of
# the other runs are `rlock run KEY --and AND_KEY`, "and" after STDERR.
#
# Other shapes (SHAPES, the 14th argument: words NAME=VALUE, each PCT a share of the runs
# that are neither nested nor superseding, drawn with them from the seeded stream; the
# shape follows STDERR):
#   shared=PCT     `run --shared KEY`: readers beside the exclusive holders; "shared"
#   pool=PCT       `run --limit 3 POOL_KEY` (pool_key=NAME, a key of its own): its critical
#                  section logs RLOCK_SLOT and works 50-400ms, so that holders meet; "pool".
#                  With npool_key=NAME and npool_names=A,B,C, half of them are the named
#                  pool `run --limit A,B,C NPOOL_KEY` instead (RLOCK_SLOT is a name); "npool"
#   done=PCT       `run --done-for DONE_MS DONE_KEY` (done_key=NAME, done_ms=MS): once per
#                  period; "done"
#   priority=PCT   `run --priority N KEY` (N -5..5), an exclusive run that waits; "priority"
#   layout=PCT     `--layout plain run PLAIN_KEY` or `--layout redisson run REDISSON_KEY`
#                  (plain_key=NAME, redisson_key=NAME; half each): another tool's lock,
#                  which soak.sh's peers (peer.sh, that tool's real client) take too;
#                  "plain" or "redisson"
# Shared, pool and done runs' critical sections do not write to the fenced resource (cs.sh).
set -u
dir=$1 c=$2 seed=$3 rlock=$4 url=$5 key=$6 ttl=$7 via=$8 stderr_faults=${9:-0}
read -r -a run_opts <<<"${10:-}"
nested_pct=${11:-0} supersede_pct=${12:-0} and_key=${13:-}
shared_pct=0 pool_pct=0 done_pct=0 priority_pct=0 pool_key="" done_key="" done_ms=1000
npool_key="" npool_names="" layout_pct=0 plain_key="" redisson_key=""
for w in ${14:-}; do
  case $w in
    shared=* | pool=* | done=* | priority=* | layout=*) printf -v "${w%%=*}_pct" '%d' "${w#*=}" ;;
    pool_key=* | done_key=* | done_ms=* | npool_key=* | npool_names=* | plain_key=* | redisson_key=*) printf -v "${w%%=*}" '%s' "${w#*=}" ;;
  esac
done
cs="$(dirname "${BASH_SOURCE[0]}")/cs.sh"
hist=$dir/hist/$c err=$dir/err/$c
read -r -a urls <<<"$url"
url_args=()
for u in "${urls[@]}"; do url_args+=(--url "$u"); done
RANDOM=$((seed * 1009 + c * 7919))
stopping=0
shapes=(setm setsid whilepid)
# Quorum mode (several URLs) accepts a nested run only in the holder's own process group.
((${#urls[@]} > 1)) && shapes=(group)
# SIGTERM (the soak's shutdown) reaches rlock too; the loop records the run, then ends.
trap 'stopping=1' TERM INT HUP

# shellcheck disable=SC2094 # each FIFO is opened for reading and writing on purpose
if ((stderr_faults)); then
  mkfifo "$dir/epipe.$c" "$dir/stall.$c" || exit 2
  exec {rd}<>"$dir/epipe.$c" {epipe}>"$dir/epipe.$c"
  exec {rd}<&-                                       # no reader left: writes get EPIPE
  exec {stall_rd}<>"$dir/stall.$c" {stall}>"$dir/stall.$c" # a reader that never reads
  : "$stall_rd"
fi

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
  mode="file"
  if ((stderr_faults)); then
    rnd 0 3
    modes=(file full epipe stall)
    mode=${modes[$_r]}
  fi
  printf -v work_s '%d.%03d' $((work_ms / 1000)) $((work_ms % 1000))
  # Half the runs send the scripts by FCALL of rlock's Functions library (RLOCK_FUNCTIONS=on,
  # docs/PROTOCOL.md "Functions"; a server before Redis 7, or one too full to load it, takes
  # EVALSHA), the others by EVALSHA: both ways on one key under the same faults (script_flush
  # flushes the library too). A nested run takes its outer run's way.
  rnd 0 1
  if ((_r)); then export RLOCK_FUNCTIONS=on; else export RLOCK_FUNCTIONS=off; fi
  nested=0 shape=""
  if ((nested_pct > 0)); then
    rnd 0 99
    ((_r < nested_pct)) && nested=1
  fi
  printf '== %s\n' "$run" >>"$err"
  [[ $mode == file ]] || printf 'stderr of this run: %s\n' "$mode" >>"$err"
  if ((nested)); then
    rnd 0 50
    printf -v outer_s '0.%03d' "$_r"
    rnd 0 $((${#shapes[@]} - 1))
    shape=${shapes[$_r]}
    nest_st=$dir/nest.$c
    rm -f "$nest_st"
    # The nested run's stderr is the contender's file (not the drawn fault: it outlives the
    # outer run, which may have left a FIFO's reader behind); the enclosing script's own is
    # /dev/null (a job-control shell reports its jobs there: on a broken stderr it would
    # die of SIGPIPE, and rlock would pass that on). The inner bash gets: $1
    # rlock, $2 TTL, $3 wait, $4 key, $5 cs.sh, $6 err, $7 status file, $8 outer's sleep,
    # $9-$13 cs.sh's arguments, $14… the URL options.
    inner=(nested "$rlock" "${ttl}ms" "${wait_ms}ms" "$key" "$cs" "$err" "$nest_st"
      "$outer_s" "$dir" "$c" "$run" "$work_s" "$ttl" "${url_args[@]}")
    nest_run='"$1" -v "${@:14}" run --ttl "$2" --wait "$3" "$4" -- bash "$5" "${@:9:5}" 2>>"$6"
      echo $? >"$7.tmp" && mv "$7.tmp" "$7"'
    case $shape in
      setm) # a job of its own (set -m: a process group of its own)
        set -- -v "${url_args[@]}" run --ttl "${ttl}ms" --wait "${wait_ms}ms" "${run_opts[@]}" "$key" -- \
          bash -c "exec 2>/dev/null; set -m; ( $nest_run ) </dev/null >/dev/null &"' sleep "$8"' "${inner[@]}"
        ;;
      group) # in the holder's own process group, waited for (quorum mode)
        set -- -v "${url_args[@]}" run --ttl "${ttl}ms" --wait "${wait_ms}ms" "${run_opts[@]}" "$key" -- \
          bash -c "exec 2>/dev/null; ( $nest_run ) </dev/null >/dev/null" "${inner[@]}"
        ;;
      setsid) # a session of its own
        set -- -v "${url_args[@]}" run --ttl "${ttl}ms" --wait "${wait_ms}ms" "${run_opts[@]}" "$key" -- \
          bash -c 'exec 2>/dev/null; setsid bash -c "$0" nested "$@" </dev/null >/dev/null &
            sleep "$8"' "$nest_run" "${inner[@]:1}"
        ;;
      whilepid) # a background job of a script that holds the lock with a keeper, then exits
        printf -v opts ' %q' "${run_opts[@]}"
        ((${#run_opts[@]})) || opts=""
        set -- -c 'out=$("$1" -v "${@:14}" acquire --ttl "$2" --wait "$3"'"$opts"' "$4" --while-pid $$ --export) ||
            exit $?
          eval "$out"
          exec 2>/dev/null
          ( '"$nest_run"' ) </dev/null >/dev/null &
          sleep "$8"' "${inner[@]}"
        ;;
    esac
  else
    sup=() run_key=$key cs_shape=excl
    if ((supersede_pct > 0)); then
      rnd 0 99
      # a CI job waits long: past the stop_waiter fault's freeze (at most 8s), so that
      # it comes back to be superseded rather than to a wait that ran out
      ((_r < supersede_pct)) && sup=(--supersede --superseded-exit-code 80) shape=supersede \
        wait_ms=$((wait_ms + 9000))
    fi
    if [[ -z $shape ]] && ((shared_pct + pool_pct + done_pct + priority_pct + layout_pct > 0)); then
      rnd 0 99
      if ((_r < shared_pct)); then
        sup=(--shared) shape=shared cs_shape=shared
      elif ((_r < shared_pct + pool_pct)); then
        rnd 50 400
        work_ms=$_r
        printf -v work_s '%d.%03d' $((work_ms / 1000)) $((work_ms % 1000))
        sup=(--limit 3) shape=pool cs_shape=pool run_key=$pool_key
        if [[ -n $npool_key ]]; then
          rnd 0 1
          ((_r)) && sup=(--limit "$npool_names") shape=npool cs_shape=npool run_key=$npool_key
        fi
      elif ((_r < shared_pct + pool_pct + done_pct)); then
        sup=(--done-for "${done_ms}ms") shape='done' cs_shape='done' run_key=$done_key
      elif ((_r < shared_pct + pool_pct + done_pct + priority_pct)); then
        rnd 0 10
        sup=(--priority $((_r - 5))) shape=priority
      elif ((_r < shared_pct + pool_pct + done_pct + priority_pct + layout_pct)); then
        rnd 0 1
        if ((_r)); then shape=plain run_key=$plain_key; else shape=redisson run_key=$redisson_key; fi
        sup=(--layout "$shape") cs_shape=$shape
      fi
    fi
    # AND_KEY: a fifth of the other runs also take it (another Cluster slot); the fence the
    # critical section writes with is KEY's (RLOCK_FENCE: the first key's).
    if [[ -n $and_key && -z $shape ]]; then
      rnd 0 4
      ((_r == 0)) && sup=(--and "$and_key") shape=and
    fi
    set -- -v "${url_args[@]}" run --ttl "${ttl}ms" --wait "${wait_ms}ms" "${run_opts[@]}" "${sup[@]}" \
      "$run_key" -- bash "$cs" "$dir" "$c" "$run" "$work_s" "$ttl" "$cs_shape"
  fi
  t0=${EPOCHREALTIME/./}
  prog=$rlock
  [[ $shape == whilepid ]] && prog=bash
  case $mode in
    file) "$prog" "$@" </dev/null >/dev/null 2>>"$err" ;;
    full) "$prog" "$@" </dev/null >/dev/null 2>/dev/full ;;
    epipe) "$prog" "$@" </dev/null >/dev/null 2>&"$epipe" ;;
    stall) "$prog" "$@" </dev/null >/dev/null 2>&"$stall" ;;
  esac
  st=$?
  t1=${EPOCHREALTIME/./}
  tail=""
  [[ -n $shape ]] && tail=" $shape"
  if ((nested)); then
    tail=" nested $shape"
    # The outer run let the command run (0, or 76 if it lost the lock meanwhile): the
    # nested run's end is the run's. Bounded: a critical section lasts at most 1.8 TTL
    # and a nested run waits for nobody (the lock is its outer run's).
    if ((st == 0 || st == 76)); then
      for ((k = 0; k < 600; k++)); do
        [[ -e $nest_st ]] && break
        sleep 0.05
      done
      if [[ -e $nest_st ]]; then
        outer_st=$st
        read -r st <"$nest_st"
        t1=${EPOCHREALTIME/./}
        # The outer run found the lock lost at its release, after the nested run had ended
        # 0 (which cannot know): the outer run's 76 is the run's outcome, not a hidden loss.
        ((outer_st == 76 && st == 0)) && st=76
      fi
    fi
  fi
  printf 'R %s %s %s %s %s %s %s %s %s%s\n' "$run" "$t0" "$t1" "$st" "$ttl" "$wait_ms" "$via" \
    "$work_ms" "$mode" "$tail" >>"$hist"
  # Redis is down (a restart), refuses the soak user a command (the acl fault) or is full
  # (the oom fault: 70): do not spin.
  if ((st == 69 || st == 70 || st == 77)); then sleep 0.1; fi
done
