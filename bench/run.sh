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
#      preloaded bench/noguard.c makes memfd_create and fork fail; Linux only) beside it
#      on: its price
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
#  9c. Redis 7 Functions prototype: the same script calls (part 9b's template) by FCALL of
#      one library (bench/fcall_library.py: the prelude run once, at FUNCTION LOAD) beside
#      EVALSHA and the plain cycle: µs of server time per cycle, warm (1 and 16 clients)
#      and cold (each call by a fresh redis-cli); skipped on Redis < 7
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
#  13. round trips: every reply delayed by 50 ms, then by 0.5 ms (tests/helpers/fault_proxy,
#      one proxy per server, sentinel and cluster node): elapsed time over the delay for
#      `run` and `acquire` on one server, on three masters (quorum), over TLS, through
#      three sentinels (master, replica and sentinels announcing their proxies), on a
#      3-master Cluster (announcing its proxies) for a key on the URL's node and one
#      MOVED elsewhere, and for the first run after SCRIPT FLUSH, beside bench/minimal
#      through the same proxy (needs build/tests/helpers/fault_proxy)
#
# Usage: bench/run.sh [--smoke] [--part N]
#   --smoke   tiny counts: checks that every part works (CI), measures nothing
#   --part N  only part N (1, 1b, 1c, 2 … 9, 9b, 9c, 10 … 13; parts 1b, 7, 8 and 12 run part 1 too, their
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
if [[ $(uname -s) == Linux ]] && ! ldd "$RLOCK" >/dev/null 2>&1; then
  # LD_PRELOAD reaches only a dynamically linked binary
  echo "(guard off / on: $RLOCK is linked statically; a preload cannot turn its guard off)"
elif [[ $(uname -s) == Linux ]]; then
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
mem_of() { # KEY: MEMORY USAGE (SAMPLES 0) of every Redis key of lock KEY, summed
  local k total=0 b
  while IFS= read -r k; do
    [[ -n $k ]] || continue
    b=$(rcli MEMORY USAGE "$k" SAMPLES 0 | tr -d '\r')
    [[ $b =~ ^[0-9]+$ ]] && total=$((total + b))
  done < <(rcli --scan --pattern "lock:{$1}*" | tr -d '\r')
  echo "$total"
}
runs_of() { # KEY N: N uncontended runs of KEY (history on)
  local i
  for ((i = 0; i < $2; i++)); do "$RLOCK" run -q "$1" -- true; done
}
rcli SET bench-mem-plain 0123456789abcdef0123456789abcdef NX PX 300000 >/dev/null
plain_mem=$(rcli MEMORY USAGE bench-mem-plain SAMPLES 0 | tr -d '\r')
"$RLOCK" acquire --ttl 5m bench-mem-held >/dev/null
runs_of bench-mem-1 1
runs_of bench-mem-10 10
runs_of bench-mem-100 100
echo "memory per lock, MEMORY USAGE of its keys (bytes), beside a SET NX PX key and value"
printf '%-34s %9s %12s\n' "state" "bytes" "ratio"
printf '%-34s %9s %12s\n' "SET NX PX key, 32-byte token" "$plain_mem" ""
m=$(mem_of bench-mem-held)
printf '%-34s %9s %12s\n' "held (acquire --ttl 5m)" "$m" "$(ratio "$m" "$plain_mem")"
for n in 1 10 100; do
  m=$(mem_of "bench-mem-$n")
  printf '%-34s %9s %12s\n' "idle after $n run(s), history on" "$m" "$(ratio "$m" "$plain_mem")"
done
# what stays once the history expired (7 days without an event): the fence counter alone
m=$(rcli MEMORY USAGE 'lock:{bench-mem-1}:fence' SAMPLES 0 | tr -d '\r')
printf '%-34s %9s %12s\n' "history expired (the fence counter)" "$m" "$(ratio "$m" "$plain_mem")"
echo "(the idle figures include each release's tombstone, kept 20 s: docs/PROTOCOL.md, \"Keys and channels\")"
fi

# --- 9b. server time per lock ---------------------------------------------------------------
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
# The script calls a real `rlock acquire` and `rlock release` send (seen by MONITOR), key
# and token replaced, into $work/rlock.cycle: bench/cycles.c's template.
capture_cycle() {
  local tok mon _i
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
}
CAD="if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end"
per() { awk -v a="$1" -v n="$2" 'BEGIN { if (n == 0) print "n/a"; else printf "%.1f", a / n }'; }
if want 9b; then
echo
echo "== 9b. server time per lock, history on: uncontended cycles from fresh processes (cold), and 16 clients on distinct keys (warm)"
# The plain lock: SET NX PX, then a compare-and-delete script by EVALSHA.
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
capture_cycle
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
printf '%-38s %9s %9s %9s\n' "16 clients, distinct keys" "cycles/s" "fewer" "usec/cyc"
printf '%-38s %9s %9s %9s\n' "SET NX PX + EVALSHA compare-and-delete" "$plain_cps" "" "$(per "$plain_busy" "$plain_n")"
printf '%-38s %9s %9s %9s\n' "rlock's acquire + release scripts" "$rlock_cps" "$(ratio "$plain_cps" "$rlock_cps")" \
  "$(per "$rlock_busy" "$rlock_n")"
printf '%-38s %9s %9s %9s\n' "server time per cycle, ratio" "" "" "$(ratio "$(per "$rlock_busy" "$rlock_n")" "$(per "$plain_busy" "$plain_n")")"
fi

# --- 9c. Redis 7 Functions prototype -------------------------------------------------------
if want 9c; then
echo
echo "== 9c. Redis 7 Functions prototype: rlock's scripts as one library (bench/fcall_library.py) by FCALL, beside EVALSHA"
major=$(rcli INFO server | tr -d '\r' | sed -n 's/^redis_version:\([0-9]*\).*/\1/p')
if ((${major:-0} < 7)); then
  echo "(skipped: Redis ${major:-?} has no Functions)"
else
capture_cycle
cad=$(rcli SCRIPT LOAD "$CAD")
printf 'SET\t@K\t@T\tNX\tPX\t30000\nEVALSHA\t%s\t1\t@K\t@T\n' "$cad" >"$work/plain.cycle"
cp "$work/rlock.cycle" "$work/evalsha.cycle"
# fcall: the prelude run once at FUNCTION LOAD, each call sets only its state; cached: and
# CLUSTER MYID asked once per library instead of in every release (publish)
gen=ok
python3 bench/fcall_library.py 2>"$work/gen.err" >"$work/fcall.lua" || gen=failed
python3 bench/fcall_library.py --cache-cluster 2>>"$work/gen.err" >"$work/cached.lua" || gen=failed
python3 bench/fcall_library.py --fcall-template "$work/rlock.cycle" 2>>"$work/gen.err" >"$work/fcall.cycle" || gen=failed
python3 bench/fcall_library.py --cache-cluster --fcall-template "$work/rlock.cycle" 2>>"$work/gen.err" >"$work/cached.cycle" || gen=failed
loaded=$( { rcli -x FUNCTION LOAD REPLACE <"$work/fcall.lua"; rcli -x FUNCTION LOAD REPLACE <"$work/cached.lua"; } 2>&1 || true)
if [[ $gen != ok ]]; then
  echo "(skipped: bench/fcall_library.py failed: $(head -c 200 "$work/gen.err"))"
elif [[ $(grep -c '^rlockbench_' <<<"$loaded") != 2 ]]; then
  echo "(skipped: FUNCTION LOAD refused the library: $(head -c 200 <<<"$loaded"))"
else
variants=(plain evalsha fcall cached)
declare -A label=([plain]="SET NX PX + EVALSHA compare-and-delete" [evalsha]="rlock's scripts, EVALSHA (as today)"
  [fcall]="rlock's scripts, FCALL" [cached]="... FCALL, cluster mode cached")
# Warm: bench/cycles.c, 1 and 16 clients on distinct keys, the variants one after another
# in each round; the round with the least server time per cycle is kept for each.
secs=2 rounds=3
((smoke)) && secs=0.3 rounds=1
declare -A best cps
for clients in 1 16; do
  for ((r = 0; r < rounds; r++)); do
    for v in "${variants[@]}"; do
      rcli CONFIG RESETSTAT >/dev/null
      c=0 n=0
      "$work/cycles" 127.0.0.1 "$rport" "$secs" "$clients" "$work/$v.cycle" >"$work/cyc.out" ||
        echo "(bench/cycles.c failed on the $v template: $?)" >&2
      read -r c n <"$work/cyc.out" || true
      read -r sc set < <(srv_usec)
      # SET is the plain cycle's own command; in the scripts' rows it is a command a
      # script ran, already in the script's time
      [[ $v == plain ]] || set=0
      u=$(per $((sc + set)) "${n:-0}")
      if [[ -z ${best[$v$clients]:-} ]] || awk -v a="$u" -v b="${best[$v$clients]}" 'BEGIN { exit !(a + 0 < b + 0) }'; then
        best[$v$clients]=$u cps[$v$clients]=${c:-0}
      fi
    done
  done
done
echo "(load $(cut -d' ' -f1-3 /proc/loadavg); warm: best of $rounds rounds of ${secs}s)"
printf '%-40s %9s %9s %9s %9s\n' "warm, usec of server time" "1 client" "ratio" "16 clients" "ratio"
for v in "${variants[@]}"; do
  r1="" r16=""
  [[ $v != plain ]] && r1=$(ratio "${best[${v}1]}" "${best[plain1]}") r16=$(ratio "${best[${v}16]}" "${best[plain16]}")
  printf '%-40s %9s %9s %9s %9s\n' "${label[$v]}" "${best[${v}1]}" "$r1" "${best[${v}16]}" "$r16"
done
printf '%-40s %9s %9s %9s %9s\n' "cycles/s, 16 clients" "" "" "" ""
for v in "${variants[@]}"; do printf '%-40s %9s\n' "  ${label[$v]}" "${cps[${v}16]}"; done
# Cold: each call by a fresh redis-cli, the variants interleaved in every iteration (a
# pair measured in the same second), server time of each call from INFO commandstats.
cold_call() { # TEMPLATE LINE KEY TOKEN: that line of the template, by a fresh redis-cli
  { sed -n "$2p" "$1" | sed "s/@K/$3/g; s/@T/$4/g" | tr -d '\n' | tr '\t' '\0'; printf '\0'; } |
    xargs -0 redis-cli -p "$rport" >/dev/null
}
declare -A cold_a cold_r
for v in "${variants[@]}"; do cold_a[$v]=0 cold_r[$v]=0; done
rcli CONFIG RESETSTAT >/dev/null
for ((i = 0; i < RUNS; i++)); do
  for v in "${variants[@]}"; do
    read -r s0 t0 < <(srv_usec)
    cold_call "$work/$v.cycle" 1 "cold-$v" "t$i"
    read -r s1 t1 < <(srv_usec)
    cold_call "$work/$v.cycle" 2 "cold-$v" "t$i"
    read -r s2 t2 < <(srv_usec)
    [[ $v == plain ]] || { t0=0 t1=0 t2=0; }
    cold_a[$v]=$((cold_a[$v] + s1 + t1 - s0 - t0)) cold_r[$v]=$((cold_r[$v] + s2 + t2 - s1 - t1))
  done
done
echo "(load $(cut -d' ' -f1-3 /proc/loadavg); cold: $RUNS cycles, each call by a fresh redis-cli)"
printf '%-40s %9s %9s %9s %9s\n' "cold, usec of server time" "cycle" "ratio" "acquire" "release"
for v in "${variants[@]}"; do
  cyc=$(per $((cold_a[$v] + cold_r[$v])) "$RUNS") rt=""
  [[ $v != plain ]] && rt=$(ratio "$cyc" "$(per $((cold_a[plain] + cold_r[plain])) "$RUNS")")
  printf '%-40s %9s %9s %9s %9s\n' "${label[$v]}" "$cyc" "$rt" "$(per "${cold_a[$v]}" "$RUNS")" "$(per "${cold_r[$v]}" "$RUNS")"
done
rcli FUNCTION FLUSH >/dev/null
fi
fi
fi

# --- 10. many keys ----------------------------------------------------------------------------
if want 10; then
echo
echo "== 10. many keys: rlock list and top over $NKEYS held locks beside a bare SCAN (ms, median of 3)"
rcli FLUSHALL >/dev/null
# The locks are made by rlock's own acquire script, sent by redis-cli --pipe (as many
# rlock processes would take minutes): the script as rlock sends it (bench/sent_scripts.py:
# the part of the prelude it uses, then acquire.lua after its "-- >8 --" line).
python3 bench/sent_scripts.py acquire >"$work/acquire.lua"
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
t13=$SECONDS
# 50 ms dwarfs the machine's noise; 0.5 ms (a LAN) is of its size: many more runs.
DELAYS=(50 0.5)
declare -A RT_N=([50]=$((smoke ? 1 : 15)) [0.5]=$((smoke ? 1 : 101)))
echo "== 13. round trips: every reply delayed by 50 ms, then by 0.5 ms (fault_proxy: one per server,"
echo "   sentinel and cluster node); medians of ${RT_N[50]} runs at 50 ms and of ${RT_N[0.5]} at 0.5 ms (the"
echo "   machine's own noise is of that size) of round trips = (a run delayed - the next run,"
echo "   through the same proxies undelayed) / one round trip's delay as measured through them"
echo "   (redis-cli -r 20 PING, the same way)"
proxy_dirs=()
# proxy VAR PORT: a fault_proxy to 127.0.0.1:PORT (delayed by set_delay); VAR gets its port
proxy() {
  local var=$1 dir line=""
  dir=$(mktemp -d "$work/proxy.XXXXXX")
  : >"$dir/port"
  "$PROXY" 0 127.0.0.1 "$2" "$dir/ctl" >"$dir/port" 2>/dev/null &
  pids+=($!)
  for _ in $(seq 200); do
    read -r line <"$dir/port" && [[ -n $line ]] && break
    sleep 0.05
  done
  proxy_dirs+=("$dir/ctl")
  printf -v "$var" '%s' "$line"
}
# set_delay MS: every proxy delays the replies on the connections it accepts from now on
set_delay() {
  local d
  for d in "${proxy_dirs[@]}"; do printf '%s\n' "$1" >"$d/delay_ms"; done
}
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# pair_us PREP CMD...: the median over RT_N[$DELAY] pairs of runs of CMD, one with every
# proxy at $DELAY and one undelayed, of the difference in µs (pairs, not two medians: the
# load other processes put on the machine changes less within a pair); PREP (a function or
# :) runs untimed before each; @N@ in CMD becomes a number never used before (a fresh key
# for each `acquire`, left to expire)
pair_us() {
  local prep=$1 i d t0 t1 slow diffs=()
  shift
  for ((i = 0; i < RT_N[$DELAY]; i++)); do
    for d in "$DELAY" 0; do
      set_delay "$d"
      "$prep"
      t0=${EPOCHREALTIME/[.,]/}
      "${@//@N@/$BASHPID.$i.$d}" >/dev/null 2>&1 || true
      t1=${EPOCHREALTIME/[.,]/}
      if [[ $d == 0 ]]; then diffs+=($((slow - (t1 - t0)))); else slow=$((t1 - t0)); fi
    done
  done
  median "${diffs[@]}"
}
declare -A RT EFF
# rt NAME PREP CMD...: round trips of CMD at $DELAY into RT[NAME,$DELAY]
rt() {
  local name=$1 prep=$2 diff
  shift 2
  diff=$(pair_us "$prep" "$@")
  RT[$name,$DELAY]=$(awk -v a="$diff" -v d="${EFF[$DELAY]}" 'BEGIN { printf "%.1f", a / d }')
}
# shellcheck disable=SC2317 # called by pair_us, by name
flush_scripts() { redis-cli -p "$rport" SCRIPT FLUSH >/dev/null; }

# One server: part 1's. Quorum: it and two more masters.
p1="" qp="" pq=""  # set by proxy and start_server
proxy p1 "$rport"
one=(-u "redis://127.0.0.1:$p1/0")
quorum=("${one[@]}")
for i in 1 2; do
  start_server qp --save '' --appendonly no --dir "$work" --dbfilename "rt$i.rdb"
  proxy pq "$qp"
  quorum+=(-u "redis://127.0.0.1:$pq/0")
done

# TLS: the server's certificate names IP 127.0.0.1, the host of the address rlock is given;
# a certificate names no port, so the proxy's own port changes nothing in the verification.
# (Its plain TCP port is there for start_server's check only.)
# shellcheck disable=SC2034 # tp: set by start_server, whose check needs the TCP port
tls=() tp="" tls_port="" pt=""
if tls_port=$(pick_port) &&
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$work/tls.key" -out "$work/tls.crt" \
    >/dev/null 2>&1 &&
  start_server tp --save '' --appendonly no --dir "$work" --dbfilename rt-tls.rdb \
    --tls-port "$tls_port" --tls-cert-file "$work/tls.crt" --tls-key-file "$work/tls.key" \
    --tls-ca-cert-file "$work/tls.crt" --tls-auth-clients no 2>/dev/null; then
  proxy pt "$tls_port"
  tls=(-u "rediss://127.0.0.1:$pt/0" --tls-ca-cert "$work/tls.crt")
else
  echo "(TLS rows skipped: no openssl, or redis-server without TLS)"
fi

# Sentinel and Cluster, each node behind its own proxy (set up in ~5 s: in smoke too).
sentinel=() cluster_local=() ck_local="" ck_moved="" c1=""
th=$SECONDS
# Sentinel: a master and a replica, 3 sentinels. The sentinels monitor the master at its
# proxy, so that is the address they report; the replica announces its proxy
# (replica-announce-ip/port, before it connects), the sentinels theirs (announce-ip/port).
sm="" psm="" sr="" psr="" ss="" pss="" s_list=""
start_server sm --save '' --appendonly no --dir "$work" --dbfilename rts-m.rdb
proxy psm "$sm"
start_server sr --save '' --appendonly no --dir "$work" --dbfilename rts-r.rdb
proxy psr "$sr"
redis-cli -p "$sr" CONFIG SET replica-announce-ip 127.0.0.1 >/dev/null
redis-cli -p "$sr" CONFIG SET replica-announce-port "$psr" >/dev/null
redis-cli -p "$sr" REPLICAOF 127.0.0.1 "$sm" >/dev/null
sents=()
for i in 1 2 3; do
  printf 'sentinel monitor rtm 127.0.0.1 %s 2\nsentinel announce-ip 127.0.0.1\n' "$psm" >"$work/sent$i.conf"
  start_server ss "$work/sent$i.conf" --sentinel --dir "$work"
  proxy pss "$ss"
  redis-cli -p "$ss" SENTINEL CONFIG SET announce-port "$pss" >/dev/null
  sents+=("$ss")
  s_list+=${s_list:+,}127.0.0.1:$pss
done
sentinel=(-u "redis-sentinel://$s_list/rtm")
# Cluster: 3 masters; clients are told of each node's proxy (cluster-announce-ip/port: in
# CLUSTER SLOTS and MOVED), the bus stays on the real port + 10000.
cn=() cl_proxies=() ci="" pc=""
for i in 1 2 3; do
  start_server ci --save '' --appendonly no --dir "$work" --dbfilename "rtc$i.rdb" \
    --cluster-enabled yes --cluster-config-file "$work/rtc$i-nodes.conf"
  proxy pc "$ci"
  redis-cli -p "$ci" CONFIG SET cluster-announce-ip 127.0.0.1 >/dev/null
  redis-cli -p "$ci" CONFIG SET cluster-announce-port "$pc" >/dev/null
  cn+=("$ci") cl_proxies+=("$pc")
done
redis-cli -p "${cn[0]}" CLUSTER ADDSLOTSRANGE 0 5460 >/dev/null
redis-cli -p "${cn[1]}" CLUSTER ADDSLOTSRANGE 5461 10922 >/dev/null
redis-cli -p "${cn[2]}" CLUSTER ADDSLOTSRANGE 10923 16383 >/dev/null
redis-cli -p "${cn[0]}" CLUSTER MEET 127.0.0.1 "${cn[1]}" >/dev/null
redis-cli -p "${cn[0]}" CLUSTER MEET 127.0.0.1 "${cn[2]}" >/dev/null
c1=${cl_proxies[0]}
cluster_up=0
for _ in $(seq 300); do
  ok=0
  for c in "${cn[@]}"; do
    [[ $(redis-cli -p "$c" CLUSTER INFO | tr -d '\r') == *cluster_state:ok* ]] && ok=$((ok + 1))
  done
  # every node's proxy is in node 1's CLUSTER SLOTS
  if ((ok == 3)) && (($(redis-cli -p "${cn[0]}" CLUSTER SLOTS | grep -cFx -f <(printf '%s\n' "${cl_proxies[@]}")) == 3)); then
    cluster_up=1
    break
  fi
  sleep 0.05
done
# sentinels: each names the master (at its proxy)
for s in "${sents[@]}"; do
  for _ in $(seq 100); do
    [[ $(redis-cli -p "$s" SENTINEL GET-MASTER-ADDR-BY-NAME rtm 2>/dev/null | tail -n 1) == "$psm" ]] && break
    sleep 0.05
  done
done
if ((cluster_up)); then
  # a key whose slot node 1 serves, and one it redirects (MOVED)
  for j in $(seq 100); do
    if [[ $(redis-cli -p "${cn[0]}" EXISTS "lock:{rt-c$j}" 2>&1) == 0 ]]; then
      [[ -n $ck_local ]] || ck_local=rt-c$j
    else
      [[ -n $ck_moved ]] || ck_moved=rt-c$j
    fi
    if [[ -n $ck_local && -n $ck_moved ]]; then break; fi
  done
  cluster_local=(-u "redis://127.0.0.1:$c1/0")
else
  echo "(Cluster rows skipped: the cluster did not come up in 15 s)"
fi
echo "   (Sentinel and Cluster set up in $((SECONDS - th)) s)"
# shellcheck disable=SC2317 # called by pair_us, by name
cluster_unlock() {
  redis-cli -c -p "${cn[0]}" DEL "lock:{$ck_local}" >/dev/null
  redis-cli -c -p "${cn[0]}" DEL "lock:{$ck_moved}" >/dev/null
}

for DELAY in "${DELAYS[@]}"; do
  EFF[$DELAY]=$(awk -v a="$(pair_us : redis-cli -p "$p1" -r 20 PING)" 'BEGIN { printf "%.1f", a / 20 }')
  rt minimal : "$MINIMAL" 127.0.0.1 "$p1" rt-m true
  rt run : "$RLOCK" "${one[@]}" run rt-r -- true
  rt acquire : "$RLOCK" "${one[@]}" acquire --ttl 5s rt-a@N@
  rt flushed flush_scripts "$RLOCK" "${one[@]}" run rt-f -- true
  rt quorum : "$RLOCK" "${quorum[@]}" run rt-q -- true
  rt quorum_acq : "$RLOCK" "${quorum[@]}" acquire --ttl 5s rt-qa@N@
  if ((${#tls[@]})); then
    rt tls : "$RLOCK" "${tls[@]}" run rt-t -- true
    rt tls_acq : "$RLOCK" "${tls[@]}" acquire --ttl 5s rt-ta@N@
  fi
  if ((${#sentinel[@]})); then
    rt sentinel : "$RLOCK" "${sentinel[@]}" run rt-s -- true
    rt sentinel_acq : "$RLOCK" "${sentinel[@]}" acquire --ttl 5s rt-sa@N@
  fi
  if ((${#cluster_local[@]})); then
    rt cluster cluster_unlock "$RLOCK" "${cluster_local[@]}" run "$ck_local" -- true
    rt cluster_acq cluster_unlock "$RLOCK" "${cluster_local[@]}" acquire --ttl 5s "$ck_local"
    rt moved cluster_unlock "$RLOCK" "${cluster_local[@]}" run "$ck_moved" -- true
    rt moved_acq cluster_unlock "$RLOCK" "${cluster_local[@]}" acquire --ttl 5s "$ck_moved"
  fi
done
set_delay 0
# verdict VALUE OP BOUND: "met" or "NOT met" (0.3 round trip of slack for the noise)
verdict() {
  ((smoke)) && { echo "not judged in smoke"; return; }
  awk -v v="$1" -v op="$2" -v b="$3" 'BEGIN {
    ok = op == "=" ? (v - b < 0.3 && b - v < 0.3) : v <= b + 0.3
    print ok ? "met" : "NOT met" }'
}
plus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a + b }'; }
rtrow() { # LABEL NAME [TARGET]
  [[ -n ${RT[$2,50]:-} ]] || { printf '%-46s %6s %6s   %s\n' "$1" - - "(not set up)"; return; }
  printf '%-46s %6s %6s   %s\n' "$1" "${RT[$2,50]}" "${RT[$2,0.5]}" "${3:-}"
}
run1=$(plus "${RT[run,50]}" 1)
printf '%-46s %6s %6s   %s\n' "round trips per command" "50ms" "0.5ms" "target (judged at 50 ms)"
printf '%-46s %6s %6s\n' "(one round trip measured, ms)" \
  "$(awk -v a="${EFF[50]}" 'BEGIN { printf "%.2f", a / 1000 }')" \
  "$(awk -v a="${EFF[0.5]}" 'BEGIN { printf "%.3f", a / 1000 }')"
rtrow "bench/minimal (SET NX PX, EVAL)" minimal "the floor"
rtrow "rlock run k -- true, one server" run \
  "= minimal (${RT[minimal,50]}): $(verdict "${RT[run,50]}" = "${RT[minimal,50]}")"
rtrow "rlock acquire k, one server" acquire
rtrow "rlock run, 3 masters (quorum)" quorum "<= run + 1 ($run1): $(verdict "${RT[quorum,50]}" le "$run1")"
rtrow "rlock acquire, 3 masters (quorum)" quorum_acq "(the fence round + acquire)"
rtrow "rlock run, first after SCRIPT FLUSH" flushed \
  "<= run + 1 ($run1): $(verdict "${RT[flushed,50]}" le "$run1")"
rtrow "rlock run, TLS (rediss://)" tls "run + the TLS 1.3 handshake's 1"
rtrow "rlock acquire, TLS" tls_acq "acquire + 1"
rtrow "rlock run, Sentinel (3 sentinels)" sentinel "run + 3: survey, ROLE, survey after the grant"
rtrow "rlock acquire, Sentinel" sentinel_acq "acquire + 3: the same"
rtrow "rlock run, Cluster, key on the URL's node" cluster "= run (no topology probe)"
rtrow "rlock acquire, Cluster, key on the URL's node" cluster_acq "= acquire"
rtrow "rlock run, Cluster, key MOVED elsewhere" moved "run + 1: the MOVED reply"
rtrow "rlock acquire, Cluster, key MOVED elsewhere" moved_acq "acquire + 1"
echo "(Sentinel and Cluster: what to expect, not targets; docs/PERFORMANCE.md says where each"
echo " round trip goes. The quorum target replaces the loopback-CPU one, 3 masters <= 1.2x one"
echo " server: part 7's ratio, still printed there.)"
echo "(part 13 took $((SECONDS - t13)) s)"
fi
fi

echo
echo "$("$RLOCK" --version | head -n 1); $(redis-server --version | awk '{print $1, $2, $3}'); $(nproc) cores"
((smoke)) && echo "bench: smoke run complete (counts too small to mean anything)"
exit 0
