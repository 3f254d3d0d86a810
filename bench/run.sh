#!/usr/bin/env bash
# The benchmark entry point (docs/PERFORMANCE.md): rlock beside its baselines, measured in one run
# on this machine, every line ending with rlock's ratio to the baseline (< 1: rlock is
# cheaper or faster).
#
#   1. uncontended `rlock run k -- true` beside bench/minimal.c (the same Redis work in a
#      minimal C program), flock(1), one redis-cli call and `etcdctl lock`
#   1b. lock shapes: a shared run (-s), a three-key run (--and twice) and a --done-for run
#      refused because the job was done this period (the other hosts of a cron job), beside
#      part 1's plain run
#  1c. CPU per run, paired: `rlock run k -- true` and bench/minimal run alternately
#      (bench/paired.c: CPU from wait4, the command and the guard included), CPU, wall and
#      minor-fault medians and their ratios; the same run with the group guard off (a
#      preloaded bench/noguard.c makes clone fail; Linux only) beside it on: its price
#   2. `rlock --version` beside an empty C program (process start-up floor)
#   3. handoff gap, contenders already waiting: 8 contenders started together, 20 runs
#      each, a 10 ms critical section (bench/stamp.c); the gap runs from one command's
#      exit to the next command's start. Beside flock(1), `etcdctl lock` and naive
#      polling (redis-cli SET NX every 100 ms)
#   4. handoff gap, next process started cold: one contender running again and again, so
#      every gap includes the tool's own exit, the next process's start and connection
#   5. peak RSS of `rlock run k -- sleep 1` beside a bash wrapper and bench/minimal.c
#   6. Redis work: client commands and server-side commands per acquisition (per critical
#      section that ran), from INFO commandstats, uncontended and with 4, 16 and 64
#      contenders; again with priorities, and with every contender superseding (per run
#      started: most are replaced before their turn)
#   7. quorum mode: `rlock run k -- true` on three masters beside part 1's one server
#   8. Sentinel: `rlock run k -- true` through three sentinels that watch part 1's server
#      (every sentinel asked, then ROLE) beside part 1's direct URL
#   9. history: an uncontended run with recording on and off, back to back; the
#      server time per script call (INFO commandstats usec_per_call); the memory an idle
#      key costs with its history and without (part 3 shows rlock-h0, the handoff with
#      recording off, beside rlock)
#  9b. server time per lock: µs of server time (INFO commandstats) per uncontended
#      acquire + release and per run, history on, beside a plain SET NX PX + compare-and-
#      delete EVALSHA cycle; lock cycles per second one server sustains with 16 clients on
#      distinct keys (bench/cycles.c replays the script calls rlock sent) beside the same
#      plain lock
#  10. many keys: `rlock list` (and --json) over 100,000 held locks beside a
#      bare SCAN of the same keyspace (bench/scan.c: SCAN COUNT 500 in C), and list's
#      peak RSS; `rlock top` over them: one snapshot, and per refresh the server's CPU,
#      each command's calls and server time (INFO commandstats), top's own CPU
#  11. long lines: 8, 64 and 300 waiters on one key released together: time
#      per handoff beside flock(1) with as many waiters, client commands, server
#      commands and server time per acquisition, the waiters' RSS together and one
#      waiter's descriptors
#  12. layouts: an uncontended run with --layout plain and --layout redisson
#      beside part 1's default layout
#  13. round trips: every reply delayed by 50 ms (tests/helpers/fault_proxy, one proxy per
#      server): elapsed time over the delay for `run` and `acquire` on one server, on
#      three masters (quorum) and for the first run after SCRIPT FLUSH, beside
#      bench/minimal through the same proxy (needs build/tests/helpers/fault_proxy)
#
# Usage: bench/run.sh [--smoke] [--part N]
#   --smoke   tiny counts: checks that every part works (CI), measures nothing
#   --part N  only part N (1, 1b, 1c, 2 … 9, 9b, 10 … 13; parts 1b, 7, 8 and 12 run part 1 too, their
#             baseline; 3 and 4 run together): `bench/run.sh --part 10` measures list alone
# Env: RLOCK=path/to/rlock (default build/rlock), CC (default cc)
# Baselines that are not installed (etcd, etcdctl) are skipped with a note. Servers are
# started on loopback by this script and stopped at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

smoke=0 only=
while (($#)); do
  case $1 in
    --smoke) smoke=1 ;;
    --part) only=${2:?--part needs a part number}; shift ;;
    *) echo "usage: bench/run.sh [--smoke] [--part N]" >&2; exit 64 ;;
  esac
  shift
done
want() { [[ -z $only || $only == "$1" ]]; }
RLOCK=$(realpath "${RLOCK:-build/rlock}")
[[ -x $RLOCK ]] || { echo "bench: $RLOCK not built (cmake --build build)" >&2; exit 1; }

if ((smoke)); then
  RUNS=5 WARMUP=1 CONTENDERS=2 PER=3 SLEEP_RSS=0.1 SIZES=(4) ACQ=8 NKEYS=200 LINES=(4)
else
  RUNS=300 WARMUP=20 CONTENDERS=8 PER=20 SLEEP_RSS=1 SIZES=(4 16 64) ACQ=128 NKEYS=100000
  LINES=(8 64 300)
fi

work=$(mktemp -d)
pids=()
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

for tool in minimal stamp timeit scan paired; do
  "${CC:-cc}" -O2 -Wall -o "$work/$tool" "bench/$tool.c"
done
"${CC:-cc}" -O2 -Wall -pthread -o "$work/cycles" bench/cycles.c
printf 'int main(void) { return 0; }\n' >"$work/empty.c"
"${CC:-cc}" -O2 -o "$work/empty" "$work/empty.c"
MINIMAL=$work/minimal STAMP=$work/stamp TIMEIT=$work/timeit

pick_port() {
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 20000))
    (exec 9<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
  return 1
}

# start_server VAR ARG...: starts `redis-server ARG... --port P` on a free port P and sets
# VAR to it. The port is ours only once the server answering there is the one started (its
# process_id): between pick_port and the bind, another bench's server may take the port,
# ours then fails to bind, and a PONG from theirs would be taken for ours (every quorum
# run then waited for a master that had gone with that other bench: ~607 ms a run).
start_server() {
  local var=$1 port pid _try _i
  shift
  for _try in 1 2 3 4 5; do
    port=$(pick_port) || break
    redis-server "$@" --port "$port" --bind 127.0.0.1 >/dev/null 2>&1 3>&- &
    pid=$!
    for _i in $(seq 200); do
      kill -0 "$pid" 2>/dev/null || break
      if [[ $(redis-cli -p "$port" info server 2>/dev/null | tr -d '\r' |
        sed -n 's/^process_id://p') == "$pid" ]]; then
        pids+=("$pid")
        printf -v "$var" '%s' "$port"
        return 0
      fi
      sleep 0.05
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  echo "bench/run.sh: could not start redis-server $*" >&2
  return 1
}

# --- servers ---------------------------------------------------------------------------
rport="" qport="" sport=""  # set by start_server
start_server rport --save '' --appendonly no --dir "$work"
export RLOCK_URL="redis://127.0.0.1:$rport/0"
rcli() { redis-cli -p "$rport" "$@"; }

have_etcd=0
if { want 1 || want 3 || want 4; } && command -v etcd >/dev/null && command -v etcdctl >/dev/null; then
  cport=$(pick_port) pport=$(pick_port)
  etcd --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$cport" \
    --advertise-client-urls "http://127.0.0.1:$cport" \
    --listen-peer-urls "http://127.0.0.1:$pport" \
    --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
    --initial-cluster "default=http://127.0.0.1:$pport" >"$work/etcd.log" 2>&1 3>&- &
  pids+=($!)
  export ETCDCTL_API=3
  # Bounded: 15 s in all, each check at most 3 s (an etcd that never comes up would
  # otherwise cost etcdctl's own timeouts a hundred times over).
  deadline=$((SECONDS + 15))
  while ((SECONDS < deadline)); do
    timeout 3 etcdctl --endpoints="127.0.0.1:$cport" --dial-timeout=1s --command-timeout=2s \
      endpoint health >/dev/null 2>&1 && { have_etcd=1; break; }
    sleep 0.1
  done
  ((have_etcd)) || echo "bench: etcd did not come up within 15 s; its lines are skipped ($(tail -n 1 "$work/etcd.log"))"
fi
etcd_note="(no etcd: apt-get install etcd-server etcd-client for that baseline)"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "n/a"; else printf "%.2fx", a / b }'; }

declare -A T
measure_cmd() { # NAME CMD...: median into T[NAME]
  local name=$1 med
  shift
  read -r med _ < <("$TIMEIT" "$RUNS" "$WARMUP" "$@")
  T[$name]=$med
}
row() { printf '%-34s %9s %12s\n' "$1" "${T[$2]}" "$3"; }
wait_contenders() { # every background job but the servers
  local p
  for p in $(jobs -p); do
    [[ " ${pids[*]} " == *" $p "* ]] || wait "$p"
  done
}

# --- 1. uncontended --------------------------------------------------------------------
if want 1 || want 1b || want 7 || want 8 || want 12; then
echo "== 1. uncontended: median of $RUNS runs (ms), each a fresh process"
measure_cmd rlock "$RLOCK" run bench-u -- true
measure_cmd minimal "$MINIMAL" 127.0.0.1 "$rport" bench-m true
measure_cmd flock flock "$work/u.flock" true
measure_cmd redis-cli redis-cli -p "$rport" SET bench-r x
((have_etcd)) && measure_cmd etcd etcdctl --endpoints="127.0.0.1:$cport" lock bench-e true
printf '%-34s %9s %12s\n' "command" "median_ms" "rlock_ratio"
row "rlock run k -- true" rlock ""
row "bench/minimal (same Redis work, C)" minimal "$(ratio "${T[rlock]}" "${T[minimal]}")"
row "flock FILE true" flock "$(ratio "${T[rlock]}" "${T[flock]}")"
row "redis-cli SET (one command)" redis-cli "$(ratio "${T[rlock]}" "${T[redis-cli]}")"
if ((have_etcd)); then row "etcdctl lock k true" etcd "$(ratio "${T[rlock]}" "${T[etcd]}")"; else echo "$etcd_note"; fi
fi

# --- 1b. lock shapes --------------------------------------------------------------------
if want 1b; then
echo
echo "== 1b. lock shapes, uncontended: median of $RUNS runs (ms), beside part 1's plain run"
measure_cmd shared "$RLOCK" run -s bench-s1 -- true
measure_cmd and3 "$RLOCK" run bench-a1 --and bench-a2 --and bench-a3 -- true
# the cron case: the job was done this period, and every other host is refused at once
"$RLOCK" run --done-for 1h bench-d -- true
measure_cmd donefor "$RLOCK" -q run -E 0 --done-for 1h bench-d -- true
printf '%-34s %9s %12s\n' "command" "median_ms" "ratio"
row "rlock run -s k -- true (shared)" shared "$(ratio "${T[shared]}" "${T[rlock]}")"
row "rlock run k1 --and k2 --and k3" and3 "$(ratio "${T[and3]}" "${T[rlock]}")"
row "run --done-for, already done" donefor "$(ratio "${T[donefor]}" "${T[rlock]}")"
fi

# --- 1c. CPU per run, paired ------------------------------------------------------------------
if want 1c; then
echo
echo "== 1c. CPU per run, paired: medians of $RUNS runs of each, alternating (bench/paired.c)"
paired() { # NAME CMD_A ... :: CMD_B ...: "cpu_a cpu_b wall_a wall_b flt_a flt_b" into P[NAME]
  local name=$1 out
  shift
  out=$("$work/paired" "$RUNS" "$WARMUP" "$@") || echo "bench: some paired runs failed ($name)" >&2
  P[$name]=$(awk '/^A:/ { ca = $3; wa = $6; fa = $9 } /^B:/ { cb = $3; wb = $6; fb = $9 }
    END { print ca, cb, wa, wb, fa, fb }' <<<"$out")
}
paired_row() { # LABEL NAME: CPU a / b (ratio), wall a / b (ratio), faults a / b
  local ca cb wa wb fa fb
  read -r ca cb wa wb fa fb <<<"${P[$2]}"
  printf '%-30s %6s / %-6s %6s  %6s / %-6s %6s  %4s / %-4s\n' "$1" "$ca" "$cb" \
    "$(ratio "$ca" "$cb")" "$wa" "$wb" "$(ratio "$wa" "$wb")" "$fa" "$fb"
}
declare -A P
printf '%-30s %-22s  %-22s  %s\n' "pair (A / B)" "CPU ms (A/B)" "wall ms (A/B)" "minor flt"
paired floor "$RLOCK" run bench-p -- true :: "$MINIMAL" 127.0.0.1 "$rport" bench-pm true
paired_row "rlock run / bench/minimal" floor
if [[ $(uname -s) == Linux ]]; then
  # The guard-on side preloads a library too, one that replaces nothing: both sides pay
  # for env's exec and for loading one more library, so the ratio is the guard's alone.
  "${CC:-cc}" -O2 -Wall -shared -fPIC -o "$work/noguard.so" bench/noguard.c
  printf 'int rlock_bench_nothing;\n' >"$work/nothing.c"
  "${CC:-cc}" -O2 -shared -fPIC -o "$work/nothing.so" "$work/nothing.c"
  paired guard env LD_PRELOAD="$work/noguard.so" "$RLOCK" run bench-p -- true :: \
    env LD_PRELOAD="$work/nothing.so" "$RLOCK" run bench-p -- true
  paired_row "guard off / on (rlock run)" guard
else
  echo "(guard off / on: Linux only)"
fi
fi

# --- 2. --version ------------------------------------------------------------------------
if want 2; then
echo
echo "== 2. start-up: median of $RUNS runs (ms)"
measure_cmd version "$RLOCK" --version
measure_cmd empty "$work/empty"
printf '%-34s %9s %12s\n' "command" "median_ms" "rlock_ratio"
row "rlock --version" version ""
row "empty C program" empty "$(ratio "${T[version]}" "${T[empty]}")"
fi

# --- 3 and 4. handoff ----------------------------------------------------------------------
if want 3 || want 4; then
acquire_with() { # TOOL KEY: one critical section under TOOL's lock
  case $1 in
    rlock) "$RLOCK" run -q --ttl 30s "$2" -- "$STAMP" 10 ;;
    rlock-h0) "$RLOCK" --history 0 run -q --ttl 30s "$2" -- "$STAMP" 10 ;;
    flock) flock "$work/$2.flock" "$STAMP" 10 ;;
    etcd) etcdctl --endpoints="127.0.0.1:$cport" lock "$2" "$STAMP" 10 >/dev/null ;;
    naive)
      until [[ $(rcli SET "naive:$2" x NX PX 30000) == OK ]]; do sleep 0.1; done
      "$STAMP" 10
      rcli DEL "naive:$2" >/dev/null
      ;;
  esac
}

gaps() { # LOG: "p50 p99" of the gaps between one E and the next S, in ms
  sort -k2,2n "$1" | awk '
    $1 == "S" && have_end { g[++n] = ($2 - last) / 1e6 }
    $1 == "E" { last = $2; have_end = 1 }
    END {
      if (!n) { print "n/a n/a"; exit }
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (g[j] < g[i]) { t = g[i]; g[i] = g[j]; g[j] = t }
      printf "%.1f %.1f\n", g[int((n - 1) * 0.50) + 1], g[int((n - 1) * 0.99) + 1]
    }'
}

handoff() { # TOOL CONTENDERS PER: prints "p50 p99"
  local tool=$1 n=$2 per=$3 key="h-$1-$2-$RANDOM" i
  export LOG="$work/$key.log"
  : >"$LOG"
  for ((i = 0; i < n; i++)); do
    (for ((j = 0; j < per; j++)); do acquire_with "$tool" "$key"; done) 3>&- &
  done
  wait_contenders
  gaps "$LOG"
}
# rlock-h0: rlock with its history off (--history 0), beside it
tools=(rlock rlock-h0 flock naive)
((have_etcd)) && tools+=(etcd)
declare -A P50 P99
print_handoff() { # TITLE CONTENDERS PER
  echo
  echo "== $1"
  printf '%-8s %8s %8s %14s\n' tool p50_ms p99_ms rlock_p50_ratio
  for t in "${tools[@]}"; do
    read -r "P50[$t]" "P99[$t]" < <(handoff "$t" "$2" "$3")
  done
  for t in "${tools[@]}"; do
    local r=""
    [[ $t != rlock ]] && r=$(ratio "${P50[rlock]}" "${P50[$t]}")
    printf '%-8s %8s %8s %14s\n' "$t" "${P50[$t]}" "${P99[$t]}" "$r"
  done
  ((have_etcd)) || echo "$etcd_note"
}
print_handoff "3. handoff, contenders already waiting: $CONTENDERS contenders x $PER runs, 10 ms critical section" \
  "$CONTENDERS" "$PER"
cold_runs=$((CONTENDERS * PER / 4 < 4 ? 4 : CONTENDERS * PER / 4))
print_handoff "4. handoff, next process started cold: 1 contender x $cold_runs runs (gap includes exit, start, connect)" \
  1 "$cold_runs"
fi

# --- 5. peak RSS ---------------------------------------------------------------------------
if want 5; then
echo
echo "== 5. peak resident set (KiB), max over 3 runs, the command included"
rss() { local kb; read -r _ _ kb < <("$TIMEIT" 3 0 "$@"); echo "$kb"; }
r_rlock=$(rss "$RLOCK" run bench-rss -- sleep "$SLEEP_RSS")
r_bash=$(rss bash -c "sleep $SLEEP_RSS")
r_min=$(rss "$MINIMAL" 127.0.0.1 "$rport" bench-rss-m sleep "$SLEEP_RSS")
printf '%-34s %9s %12s\n' "command" "max_rss" "rlock_ratio"
printf '%-34s %9s %12s\n' "rlock run k -- sleep $SLEEP_RSS" "$r_rlock" ""
printf '%-34s %9s %12s\n' "bash -c 'sleep $SLEEP_RSS'" "$r_bash" "$(ratio "$r_rlock" "$r_bash")"
printf '%-34s %9s %12s\n' "bench/minimal ... sleep $SLEEP_RSS" "$r_min" "$(ratio "$r_rlock" "$r_min")"
fi

# --- 6. Redis work -------------------------------------------------------------------------
if want 6; then
echo
echo "== 6. Redis work per acquisition (INFO commandstats)"
redis_work() { # CONTENDERS TOTAL [prio|supersede]: prints "rt cmds" per acquisition
  local n=$1 total=$2 policy=${3:-} per key="w-$1-$RANDOM" i stats got
  per=$(((total + n - 1) / n))
  export LOG="$work/$key.log"
  : >"$LOG"
  rcli CONFIG RESETSTAT >/dev/null
  for ((i = 0; i < n; i++)); do
    # prio: each contender waits with its own priority (0 to 3); supersede: each asks to
    # replace the superseding waiter before it (those replaced exit 0: --superseded-exit-code)
    local extra=()
    [[ $policy == prio ]] && extra=(--priority $((i % 4)))
    [[ $policy == supersede ]] && extra=(--supersede --superseded-exit-code 0)
    (for ((j = 0; j < per; j++)); do
      "$RLOCK" run -q --ttl 30s "${extra[@]}" "$key" -- "$STAMP" 0
    done) 3>&- &
  done
  wait_contenders
  # per acquisition: the critical sections that ran (each logged S ... E by stamp); with
  # supersede, per run started (most are replaced before their turn)
  got=$(grep -c '^S' "$LOG")
  [[ $policy == supersede ]] && got=$((per * n))
  stats=$(rcli INFO commandstats | tr -d '\r')
  awk -F'[=,:]' -v total="$got" '
    /^cmdstat_/ && $1 !~ /cmdstat_(info|config)$/ { cmds += $3 }
    $1 ~ /^cmdstat_(evalsha|eval|evalsha_ro|eval_ro|subscribe|ssubscribe|unsubscribe|sunsubscribe|blpop|ping|auth|select|hello)$/ { rt += $3 }
    END { if (total == 0) total = 1; printf "%.1f %.1f\n", rt / total, cmds / total }' <<<"$stats"
}
printf '%-12s %8s %10s\n' contenders rt/acq cmds/acq
read -r rt cmds < <(redis_work 1 $((ACQ / 4)))
printf '%-12s %8s %10s\n' 1 "$rt" "$cmds"
for n in "${SIZES[@]}"; do
  read -r rt cmds < <(redis_work "$n" "$ACQ")
  printf '%-12s %8s %10s\n' "$n" "$rt" "$cmds"
done
echo "with --priority 0 to 3 (each contender its own): the line is sorted, the work stays flat"
for n in "${SIZES[@]}"; do
  read -r rt cmds < <(redis_work "$n" "$ACQ" prio)
  printf '%-12s %8s %10s\n' "$n" "$rt" "$cmds"
done
echo "with --supersede (every contender; the replaced ones leave): per run started"
for n in "${SIZES[@]}"; do
  read -r rt cmds < <(redis_work "$n" "$ACQ" supersede)
  printf '%-12s %8s %10s\n' "$n" "$rt" "$cmds"
done
fi

# --- 7. quorum mode ------------------------------------------------------------------------
if want 7; then
echo
echo "== 7. quorum mode: median of $RUNS runs (ms), rlock run k -- true on 3 masters"
qurls=(-u "$RLOCK_URL")
for i in 1 2; do
  start_server qport --save '' --appendonly no --dir "$work" --dbfilename "q$i.rdb"
  qurls+=(-u "redis://127.0.0.1:$qport/0")
done
measure_cmd quorum "$RLOCK" "${qurls[@]}" run bench-q -- true
printf '%-34s %9s %12s\n' "command" "median_ms" "ratio"
row "rlock run, 3 masters (quorum)" quorum ""
row "rlock run, one server (part 1)" rlock "$(ratio "${T[quorum]}" "${T[rlock]}")"
fi

# --- 8. Sentinel -----------------------------------------------------------------------------
if want 8; then
echo
echo "== 8. Sentinel: median of $RUNS runs (ms), rlock run k -- true through 3 sentinels"
surl=""
for i in 1 2 3; do
  printf 'sentinel monitor bench 127.0.0.1 %s 2\n' "$rport" >"$work/sentinel$i.conf"
  start_server sport "$work/sentinel$i.conf" --sentinel --dir "$work"
  for _ in $(seq 100); do
    [[ $(redis-cli -p "$sport" sentinel get-master-addr-by-name bench 2>/dev/null | tail -n 1) == "$rport" ]] && break
    sleep 0.05
  done
  surl+="${surl:+,}127.0.0.1:$sport"
done
measure_cmd sentinel "$RLOCK" --url "redis-sentinel://$surl/bench" run bench-s -- true
printf '%-34s %9s %12s\n' "command" "median_ms" "ratio"
row "rlock run, 3 sentinels" sentinel ""
row "rlock run, one server (part 1)" rlock "$(ratio "${T[sentinel]}" "${T[rlock]}")"
fi

# --- 9. history ----------------------------------------------------------------------------
if want 9; then
echo
echo "== 9. history: recording on (default, 100 events) and off (--history 0), back to back"
measure_cmd hist_on "$RLOCK" run bench-h1 -- true
measure_cmd hist_off "$RLOCK" --history 0 run bench-h0 -- true
printf '%-34s %9s %12s\n' "command" "median_ms" "ratio"
row "rlock run k -- true (history on)" hist_on ""
row "rlock --history 0 run k -- true" hist_off "$(ratio "${T[hist_on]}" "${T[hist_off]}")"
script_usec() { # HISTORY: server time per script call (usec_per_call of evalsha), uncontended
  rcli CONFIG RESETSTAT >/dev/null
  for ((i = 0; i < RUNS; i++)); do "$RLOCK" --history "$1" run -q "bench-us-$1" -- true; done
  rcli INFO commandstats | tr -d '\r' |
    awk -F'[=,:]' '$1 == "cmdstat_evalsha" { for (i = 2; i < NF; i += 2) if ($i == "usec_per_call") print $(i + 1) }'
}
printf '%-34s %9s\n' "server time per script call" "usec"
printf '%-34s %9s\n' "history on" "$(script_usec 100)"
printf '%-34s %9s\n' "history off" "$(script_usec 0)"
idle_bytes() { # HISTORY: used_memory per idle key after one run each (its fence, its log)
  local n=$((ACQ < 200 ? 200 : ACQ)) before after i
  rcli FLUSHALL >/dev/null
  before=$(rcli INFO memory | tr -d '\r' | awk -F: '$1 == "used_memory" {print $2}')
  for ((i = 0; i < n; i++)); do echo "$i"; done |
    xargs -P 4 -I{} "$RLOCK" --history "$1" run -q "idle-{}" -- true
  after=$(rcli INFO memory | tr -d '\r' | awk -F: '$1 == "used_memory" {print $2}')
  echo $(((after - before) / n))
}
printf '%-34s %9s\n' "memory per idle key (bytes)" ""
printf '%-34s %9s\n' "history on (2 events)" "$(idle_bytes 100)"
printf '%-34s %9s\n' "history off (the fence alone)" "$(idle_bytes 0)"
fi

# --- 9b. server time per lock ---------------------------------------------------------------
if want 9b; then
echo
echo "== 9b. server time per lock, history on: uncontended cycles from fresh processes (cold), and 16 clients on distinct keys (warm)"
# usec the server spent since the last CONFIG RESETSTAT: "scripts set", scripts being
# EVAL*, EVALSHA* and FCALL* (the commands a script calls are in its time, and counted again
# under their own names: so a plain cycle is SET + its script, an rlock cycle its scripts)
srv_usec() {
  rcli INFO commandstats | tr -d '\r' | awk -F'[=,:]' '
    $1 ~ /^cmdstat_(eval|fcall)/ || $1 == "cmdstat_set" {
      for (i = 2; i < NF; i += 2) if ($i == "usec") { if ($1 == "cmdstat_set") set += $(i + 1); else sc += $(i + 1) }
    }
    END { printf "%d %d\n", sc, set }'
}
# The plain lock: SET NX PX, then a compare-and-delete script by EVALSHA.
CAD="if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end"
cad=$(rcli SCRIPT LOAD "$CAD")
for ((i = 0; i < WARMUP; i++)); do "$RLOCK" run -q bench-st -- true; done
rcli CONFIG RESETSTAT >/dev/null
for ((i = 0; i < RUNS; i++)); do "$RLOCK" run -q bench-st -- true; done
read -r run_sc _ < <(srv_usec)
acq=0 rel=0 a0=0 a1=0 r1=0
rcli CONFIG RESETSTAT >/dev/null
for ((i = 0; i < RUNS + WARMUP; i++)); do
  ((i == WARMUP)) && { rcli CONFIG RESETSTAT >/dev/null; acq=0 rel=0; }
  read -r a0 _ < <(srv_usec)
  tok=$("$RLOCK" acquire bench-sa)
  read -r a1 _ < <(srv_usec)
  "$RLOCK" release bench-sa --token "$tok"
  read -r r1 _ < <(srv_usec)
  acq=$((acq + a1 - a0)) rel=$((rel + r1 - a1))
done
# (each command from a fresh redis-cli, as rlock's come from fresh processes: both cold)
rcli CONFIG RESETSTAT >/dev/null
for ((i = 0; i < RUNS; i++)); do
  rcli SET bench-sp "t$i" NX PX 30000 >/dev/null
  rcli EVALSHA "$cad" 1 bench-sp "t$i" >/dev/null
done
read -r plain_sc plain_set < <(srv_usec)
plain_all=$((plain_sc + plain_set))
us() { awk -v a="$1" -v n="$RUNS" 'BEGIN { printf "%.1f", a / n }'; }
printf '%-38s %9s %9s\n' "server time per cycle" "usec" "ratio"
printf '%-38s %9s %9s\n' "SET NX PX + EVALSHA compare-and-delete" "$(us "$plain_all")" ""
printf '%-38s %9s %9s\n' "rlock acquire + release" "$(us $((acq + rel)))" "$(ratio "$(us $((acq + rel)))" "$(us "$plain_all")")"
printf '%-38s %9s %9s\n' "  acquire" "$(us "$acq")" "$(ratio "$(us "$acq")" "$(us "$plain_all")")"
printf '%-38s %9s %9s\n' "  release" "$(us "$rel")" "$(ratio "$(us "$rel")" "$(us "$plain_all")")"
printf '%-38s %9s %9s\n' "rlock run k -- true" "$(us "$run_sc")" "$(ratio "$(us "$run_sc")" "$(us "$plain_all")")"
# Cycles per second of one server: 16 connections, each its own key, each sending one
# cycle's commands one after another (bench/cycles.c). rlock's are the script calls a real
# `rlock acquire` and `rlock release` sent (seen by MONITOR), token and key replaced.
tok=$("$RLOCK" acquire cycKEY) && "$RLOCK" release cycKEY --token "$tok"
redis-cli -p "$rport" MONITOR >"$work/monitor" 2>&1 &
mon=$!
for _i in $(seq 100); do [[ -s $work/monitor ]] && break; sleep 0.02; done
tok=$("$RLOCK" acquire cycKEY)
"$RLOCK" release cycKEY --token "$tok"
rcli PING >/dev/null  # (the last line MONITOR shows: everything before it was written)
for _i in $(seq 100); do grep -q '"PING"' "$work/monitor" && break; sleep 0.02; done
kill "$mon"
wait "$mon" 2>/dev/null || true
python3 bench/monitor_template.py cycKEY "$tok" <"$work/monitor" >"$work/rlock.cycle"
printf 'SET\t@K\t@T\tNX\tPX\t30000\nEVALSHA\t%s\t1\t@K\t@T\n' "$cad" >"$work/plain.cycle"
secs=3
((smoke)) && secs=0.3
# (and the server time per cycle there: warm, every call right after the one before)
rcli CONFIG RESETSTAT >/dev/null
read -r plain_cps plain_n < <("$work/cycles" 127.0.0.1 "$rport" "$secs" 16 "$work/plain.cycle") || true
read -r plain_busy plain_set < <(srv_usec)
plain_busy=$((plain_busy + plain_set))
rcli CONFIG RESETSTAT >/dev/null
read -r rlock_cps rlock_n < <("$work/cycles" 127.0.0.1 "$rport" "$secs" 16 "$work/rlock.cycle") || true
read -r rlock_busy _ < <(srv_usec)
per() { awk -v a="$1" -v n="$2" 'BEGIN { if (n == 0) print "n/a"; else printf "%.1f", a / n }'; }
printf '%-38s %9s %9s %9s\n' "16 clients, distinct keys" "cycles/s" "fewer" "usec/cyc"
printf '%-38s %9s %9s %9s\n' "SET NX PX + EVALSHA compare-and-delete" "$plain_cps" "" "$(per "$plain_busy" "$plain_n")"
printf '%-38s %9s %9s %9s\n' "rlock's acquire + release scripts" "$rlock_cps" "$(ratio "$plain_cps" "$rlock_cps")" \
  "$(per "$rlock_busy" "$rlock_n")"
printf '%-38s %9s %9s %9s\n' "server time per cycle, ratio" "" "" "$(ratio "$(per "$rlock_busy" "$rlock_n")" "$(per "$plain_busy" "$plain_n")")"
fi

# --- 10. many keys ----------------------------------------------------------------------------
if want 10; then
echo
echo "== 10. many keys: rlock list and top over $NKEYS held locks beside a bare SCAN (ms, median of 3)"
rcli FLUSHALL >/dev/null
# The locks are made by rlock's own acquire script, sent by redis-cli --pipe (as many
# rlock processes would take minutes): the script as rlock sends it is the prelude and
# acquire.lua after their "-- >8 --" lines.
{ sed '1,/^-- >8 --/d' src/lock/lua/prelude.lua; sed '1,/^-- >8 --/d' src/lock/lua/acquire.lua; } >"$work/acquire.lua"
acq_sha=$(rcli SCRIPT LOAD "$(cat "$work/acquire.lua")")
awk -v n="$NKEYS" -v sha="$acq_sha" '
  function bulk(s) { printf "$%d\r\n%s\r\n", length(s), s }
  BEGIN {
    for (i = 0; i < n; i++) {
      k = "many-" i; b = "lock:{" k "}"
      printf "*26\r\n"; bulk("EVALSHA"); bulk(sha); bulk("6")
      bulk(b); bulk(b ":fence"); bulk(b ":holders"); bulk(b ":limit"); bulk(b ":queue"); bulk(b ":qseq")
      bulk("tok" i); bulk("3600000"); bulk("0"); bulk("try"); bulk("6000"); bulk("lock:release:{" k "}")
      bulk("bench"); bulk("1"); bulk("bench"); bulk("bench"); bulk("1"); bulk(""); bulk("")
      bulk("0"); bulk(""); bulk("0"); bulk("100")
    }
  }' | rcli --pipe >/dev/null
ms_of() { # CMD...: wall time of one run in ms (output discarded)
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000000))
}
median3() { # CMD...: the median of three ms_of
  local a b c
  a=$(ms_of "$@") b=$(ms_of "$@") c=$(ms_of "$@")
  printf '%s\n%s\n%s\n' "$a" "$b" "$c" | sort -n | sed -n 2p
}
T[scan]=$(median3 "$work/scan" 127.0.0.1 "$rport")
T[list]=$(median3 "$RLOCK" list)
T[listjson]=$(median3 "$RLOCK" list --json)
listed=$("$RLOCK" list | wc -l)
list_rss=$( { command time -f %M "$RLOCK" list >/dev/null; } 2>&1 | tail -n 1)
# rlock top over the same locks: one snapshot (SCAN, then at most 1000 statuses), and the
# server's CPU for a refresh (INFO cpu, over 5 snapshots a second apart: the SCAN runs at
# most a fifth of the time, the statuses every time).
T[top]=$(median3 "$RLOCK" top -b --count 1)
server_cpu_ms() { rcli INFO cpu | tr -d '\r' | awk -F: '$1 == "used_cpu_sys" || $1 == "used_cpu_user" {s += $2} END {printf "%d", s * 1000}'; }
# (and, over the same five refreshes, the commands each sent from INFO commandstats, the
# server time they took, and top's own CPU time)
cmdstats() { rcli INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_\([a-z_|]*\):calls=\([0-9]*\),usec=\([0-9]*\),.*/\1 \2 \3/p' | LC_ALL=C sort; }
cmdstats >"$work/stats0"
cpu0=$(server_cpu_ms)
top_client=$( { command time -f '%U %S' "$RLOCK" top -b --count 5 --interval 1s >/dev/null; } 2>&1 | tail -n 1)
top_cpu=$((($(server_cpu_ms) - cpu0) / 5))
cmdstats >"$work/stats1"
# per refresh: each command's calls and server time (INFO's own left out; the commands a
# script calls are counted under their own names too, their time within the script's)
top_cmds=$(LC_ALL=C join -a 2 -e 0 -o 0,1.2,1.3,2.2,2.3 "$work/stats0" "$work/stats1" |
  awk '$1 != "info" && $4 > $2 {printf "%s %.0f calls %.1f ms; ", $1, ($4 - $2) / 5, ($5 - $3) / 5000}')
printf '%-34s %9s %12s\n' "command" "ms" "ratio"
printf '%-34s %9s %12s\n' "bench/scan: SCAN COUNT 500 ($("$work/scan" 127.0.0.1 "$rport") keys)" "${T[scan]}" ""
printf '%-34s %9s %12s\n' "rlock list ($listed locks)" "${T[list]}" "$(ratio "${T[list]}" "${T[scan]}")"
printf '%-34s %9s %12s\n' "rlock list --json" "${T[listjson]}" "$(ratio "${T[listjson]}" "${T[scan]}")"
printf '%-34s %9s\n' "rlock list peak RSS (KB)" "$list_rss"
printf '%-34s %9s %12s\n' "rlock top -b, one snapshot" "${T[top]}" "$(ratio "${T[top]}" "${T[scan]}")"
printf '%-34s %9s\n' "server CPU per top refresh (ms)" "$top_cpu"
printf '%-34s %s\n' "per top refresh (commandstats)" "$top_cmds"
printf '%-34s %9s\n' "top's CPU, 5 refreshes (user sys s)" "$top_client"
printf '%-34s %s\n' "load (uptime)" "$(uptime | sed 's/.*load average/load average/')"
rcli FLUSHALL >/dev/null
fi

# --- 11. long lines ---------------------------------------------------------------------------
if want 11; then
echo
echo "== 11. long lines: N waiters on one key, released together (10 ms critical sections)"
rss_kb() { # PID...: their VmRSS together, in KB
  local p sum=0 v
  for p in "$@"; do
    v=$(awk '$1 == "VmRSS:" {print $2}' "/proc/$p/status" 2>/dev/null || true)
    sum=$((sum + ${v:-0}))
  done
  echo "$sum"
}
line_run() { # TOOL N: prints "ms_per_handoff rt/acq cmds/acq usec/acq rss_kb fds"
  local tool=$1 n=$2 key="line-$1-$2-$RANDOM" i gate wpids=() t0 t1 rss fds stats
  gate="$work/$key.gate"
  export LOG="$work/$key.log"
  : >"$LOG"
  case $tool in
    rlock) "$RLOCK" run -q "$key" -- sh -c "while [ ! -e '$gate' ]; do sleep 0.01; done" 3>&- & ;;
    flock) flock "$work/$key.flock" sh -c "while [ ! -e '$gate' ]; do sleep 0.01; done" 3>&- & ;;
  esac
  local holder=$!
  sleep 0.2
  for ((i = 0; i < n; i++)); do
    case $tool in
      rlock) "$RLOCK" run -q --wait 10m "$key" -- "$STAMP" 10 3>&- & ;;
      flock) flock "$work/$key.flock" "$STAMP" 10 3>&- & ;;
    esac
    wpids+=($!)
  done
  if [[ $tool == rlock ]]; then
    for _ in $(seq 600); do
      [[ $("$RLOCK" status --json "$key" | jq .waiter_count) == "$n" ]] && break
      sleep 0.1
    done
  else
    sleep 1
  fi
  rss=$(rss_kb "${wpids[@]}")
  fds=$(find "/proc/${wpids[0]}/fd" -mindepth 1 2>/dev/null | wc -l)
  rcli CONFIG RESETSTAT >/dev/null
  t0=$(date +%s%N)
  touch "$gate"
  wait "$holder" "${wpids[@]}"
  t1=$(date +%s%N)
  stats=$(rcli INFO commandstats | tr -d '\r')
  awk -F'[=,:]' -v n="$n" -v ms="$(((t1 - t0) / 1000000))" -v rss="$rss" -v fds="$fds" -v tool="$tool" '
    /^cmdstat_/ && $1 !~ /cmdstat_(info|config)$/ {
      cmds += $3
      for (i = 2; i < NF; i += 2) if ($i == "usec") usec += $(i + 1)
    }
    $1 ~ /^cmdstat_(evalsha|eval|evalsha_ro|eval_ro|subscribe|ssubscribe|unsubscribe|sunsubscribe|blpop|ping|auth|select|hello)$/ { rt += $3 }
    END {
      if (tool != "rlock") { rt = "-"; cmds = "-"; usec = "-" } else { rt = sprintf("%.1f", rt / n); cmds = sprintf("%.1f", cmds / n); usec = sprintf("%.0f", usec / n) }
      printf "%.1f %s %s %s %d %d\n", ms / n, rt, cmds, usec, rss, fds
    }' <<<"$stats"
}
printf '%-8s %-6s %12s %8s %9s %9s %11s %5s %9s\n' waiters tool ms/handoff rt/acq cmds/acq usec/acq rss_all_kb fds vs_flock
for n in "${LINES[@]}"; do
  read -r fms _ _ _ frss ffds < <(line_run flock "$n")
  read -r ms rt cmds usec rss fds < <(line_run rlock "$n")
  printf '%-8s %-6s %12s %8s %9s %9s %11s %5s %9s\n' "$n" flock "$fms" - - - "$frss" "$ffds" ""
  printf '%-8s %-6s %12s %8s %9s %9s %11s %5s %9s\n' "$n" rlock "$ms" "$rt" "$cmds" "$usec" "$rss" "$fds" "$(ratio "$ms" "$fms")"
done
fi

# --- 12. layouts ------------------------------------------------------------------------------
if want 12; then
echo
echo "== 12. layouts: median of $RUNS runs (ms), uncontended rlock run k -- true"
measure_cmd lay_plain "$RLOCK" --layout plain run bench-lp -- true
measure_cmd lay_redisson "$RLOCK" --layout redisson run bench-lr -- true
printf '%-34s %9s %12s\n' "command" "median_ms" "ratio"
row "--layout plain" lay_plain "$(ratio "${T[lay_plain]}" "${T[rlock]}")"
row "--layout redisson" lay_redisson "$(ratio "${T[lay_redisson]}" "${T[rlock]}")"
row "default layout (part 1)" rlock ""
fi

# --- 13. round trips ----------------------------------------------------------------------------
if want 13; then
echo
PROXY=$(dirname "$RLOCK")/tests/helpers/fault_proxy
if [[ ! -x $PROXY ]]; then
  echo "== 13. round trips: skipped ($PROXY not built: cmake --build build)"
else
DELAY=50 RT_RUNS=$((smoke ? 1 : 9))
echo "== 13. round trips: every reply delayed by $DELAY ms (one proxy per server); median of $RT_RUNS runs"
# proxy VAR PORT DELAY_MS: a fault_proxy to 127.0.0.1:PORT; VAR gets its port
proxy() {
  local var=$1 dir line=""
  dir=$(mktemp -d "$work/proxy.XXXXXX")
  "$PROXY" 0 127.0.0.1 "$2" "$dir/ctl" "$3" >"$dir/port" 2>/dev/null &
  pids+=($!)
  for _ in $(seq 200); do
    read -r line <"$dir/port" && [[ -n $line ]] && break
    sleep 0.05
  done
  printf -v "$var" '%s' "$line"
}
# elapsed_ms PREP CMD...: median wall time (ms) of CMD over RT_RUNS runs; PREP (a shell
# function or :) runs untimed before each; @N@ in CMD becomes a number never used before
# (a fresh key for each `acquire`, left to expire)
elapsed_ms() {
  local prep=$1 i t0 all=()
  shift
  for ((i = 0; i < RT_RUNS; i++)); do
    "$prep"
    t0=$EPOCHREALTIME
    "${@//@N@/$BASHPID.$i}" >/dev/null 2>&1 || true
    all+=("$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", (b - a) * 1000 }')")
  done
  printf '%s\n' "${all[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
# shellcheck disable=SC2317 # called by elapsed_ms, by name
flush_scripts() { redis-cli -p "$rport" SCRIPT FLUSH >/dev/null; }
declare -A RT
# rt NAME PREP CMD...: round trips of CMD at $DELAY ms beside the same through an
# undelayed proxy (what the machine adds), into RT[NAME]
rt() {
  local name=$1 prep=$2 slow fast
  shift 2
  slow=$(elapsed_ms "$prep" "${@//@URL@/$slow_url}")
  fast=$(elapsed_ms "$prep" "${@//@URL@/$fast_url}")
  RT[$name]=$(awk -v s="$slow" -v f="$fast" -v d="$DELAY" 'BEGIN { printf "%.1f", (s - f) / d }')
}
p_slow="" p_fast="" ps="" pf="" qp=""  # set by proxy and start_server
proxy p_slow "$rport" "$DELAY"
proxy p_fast "$rport" 0
slow_url="redis://127.0.0.1:$p_slow/0" fast_url="redis://127.0.0.1:$p_fast/0"
# bench/minimal takes a host and a port, not a URL
s=$(elapsed_ms : "$MINIMAL" 127.0.0.1 "$p_slow" rt-m true)
f=$(elapsed_ms : "$MINIMAL" 127.0.0.1 "$p_fast" rt-m true)
RT[minimal]=$(awk -v s="$s" -v f="$f" -v d="$DELAY" 'BEGIN { printf "%.1f", (s - f) / d }')
rt run : "$RLOCK" -u @URL@ run rt-r -- true
rt acquire : "$RLOCK" -u @URL@ acquire --ttl 5s rt-a@N@
rt flushed flush_scripts "$RLOCK" -u @URL@ run rt-f -- true
# quorum: part 1's server and two more masters; one proxy each
qs=("$rport")
for i in 1 2; do
  start_server qp --save '' --appendonly no --dir "$work" --dbfilename "rt$i.rdb"
  qs+=("$qp")
done
qslow=() qfast=()
for q in "${qs[@]}"; do
  proxy ps "$q" "$DELAY"; qslow+=(-u "redis://127.0.0.1:$ps/0")
  proxy pf "$q" 0; qfast+=(-u "redis://127.0.0.1:$pf/0")
done
s=$(elapsed_ms : "$RLOCK" "${qslow[@]}" run rt-q -- true)
s_acq=$(elapsed_ms : "$RLOCK" "${qslow[@]}" acquire --ttl 5s rt-qa@N@)
f=$(elapsed_ms : "$RLOCK" "${qfast[@]}" run rt-q -- true)
f_acq=$(elapsed_ms : "$RLOCK" "${qfast[@]}" acquire --ttl 5s rt-qa@N@)
RT[quorum]=$(awk -v s="$s" -v f="$f" -v d="$DELAY" 'BEGIN { printf "%.1f", (s - f) / d }')
RT[quorum_acq]=$(awk -v s="$s_acq" -v f="$f_acq" -v d="$DELAY" 'BEGIN { printf "%.1f", (s - f) / d }')
printf '%-44s %11s %14s\n' "command" "round_trips" "target"
printf '%-44s %11s %14s\n' "bench/minimal (SET NX PX, EVAL)" "${RT[minimal]}" ""
printf '%-44s %11s %14s\n' "rlock run k -- true, one server" "${RT[run]}" "${RT[minimal]} (minimal)"
printf '%-44s %11s %14s\n' "rlock acquire k, one server" "${RT[acquire]}" ""
printf '%-44s %11s %14s\n' "rlock run, 3 masters (quorum)" "${RT[quorum]}" "<= run + 1"
printf '%-44s %11s %14s\n' "rlock acquire, 3 masters (quorum)" "${RT[quorum_acq]}" ""
printf '%-44s %11s %14s\n' "rlock run, first after SCRIPT FLUSH" "${RT[flushed]}" "<= run + 1"
echo "(TLS, Sentinel and Cluster are not measured here: the proxy carries neither TLS nor the"
echo " announce settings Sentinel and Cluster would need to route through it)"
fi
fi

echo
echo "$("$RLOCK" --version | head -n 1); $(redis-server --version | awk '{print $1, $2, $3}'); $(nproc) cores"
((smoke)) && echo "bench: smoke run complete (counts too small to mean anything)"
exit 0
