#!/usr/bin/env bash
# Handoff benchmark: N contenders share one lock; each acquisition runs a tiny
# critical section. For every N it prints, per tool:
#   rt/acq    client round trips to Redis per acquisition (EVALSHA, EVAL, SUBSCRIBE,
#             SET, DEL…: the commands clients send; INFO commandstats)
#   cmds/acq  every command Redis executed per acquisition, including the ones
#             inside rlock's Lua scripts (the server's work)
#   p50, p99  handoff gap: one holder's critical section ends -> the next one starts
# and ratios of rlock against the baselines measured in the same run:
#   naive     redis-cli polling: SET NX PX every 50ms until it succeeds, then DEL
#   etcd      etcdctl lock (etcd's own fair, revision-ordered lock), if installed
#   flock     flock(1) on a local file: the single-host floor
#
# Usage: bench/handoff.sh [SIZES...]       (default: 1 4 16 64)
# Env:   RLOCK=path/to/rlock (default build/rlock), ACQUISITIONS=64 per size
# Everything runs on loopback against servers this script starts and stops.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

RLOCK=${RLOCK:-build/rlock}
ACQ=${ACQUISITIONS:-64}
SIZES=("$@")
((${#SIZES[@]})) || SIZES=(1 4 16 64)
[[ -x $RLOCK ]] || { echo "bench: $RLOCK not built (cmake --build build)" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

pick_port() {
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 20000))
    (exec 9<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
  return 1
}

# --- servers ------------------------------------------------------------------------
rport=$(pick_port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
  --dir "$work" >/dev/null 2>&1 3>&- &
pids+=($!)
for _ in $(seq 100); do [[ $(redis-cli -p "$rport" ping 2>/dev/null) == PONG ]] && break; sleep 0.05; done
export RLOCK_URL="redis://127.0.0.1:$rport/0"

have_etcd=0
if command -v etcd >/dev/null && command -v etcdctl >/dev/null; then
  cport=$(pick_port) pport=$(pick_port)
  etcd --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$cport" \
    --advertise-client-urls "http://127.0.0.1:$cport" \
    --listen-peer-urls "http://127.0.0.1:$pport" \
    --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
    --initial-cluster "default=http://127.0.0.1:$pport" >"$work/etcd.log" 2>&1 3>&- &
  pids+=($!)
  export ETCDCTL_API=3
  for _ in $(seq 100); do
    etcdctl --endpoints="127.0.0.1:$cport" endpoint health >/dev/null 2>&1 && { have_etcd=1; break; }
    sleep 0.1
  done
fi

# --- one measurement ----------------------------------------------------------------
# The critical section logs its start and end in nanoseconds (one append each).
# shellcheck disable=SC2016 # expanded by the child shell
CS='echo "S $(date +%s%N)" >> "$LOG"; echo "E $(date +%s%N)" >> "$LOG"'

acquire_with() { # TOOL KEY: run CS once under TOOL's lock
  case $1 in
    rlock) "$RLOCK" run -q --ttl 30s "$2" -- sh -c "$CS" ;;
    naive)
      until [[ $(redis-cli -p "$rport" SET "naive:$2" x NX PX 30000) == OK ]]; do sleep 0.05; done
      sh -c "$CS"
      redis-cli -p "$rport" DEL "naive:$2" >/dev/null
      ;;
    etcd) etcdctl --endpoints="127.0.0.1:$cport" lock "$2" -- sh -c "$CS" >/dev/null ;;
    flock) flock "$work/$2.flock" sh -c "$CS" ;;
  esac
}

# Prints "rt_per_acq cmds_per_acq p50_ms p99_ms" for TOOL with N contenders.
measure() {
  local tool=$1 n=$2 key="bench-$1-$2-$RANDOM" per i
  per=$(((ACQ + n - 1) / n))
  export LOG="$work/$key.log"
  : >"$LOG"
  redis-cli -p "$rport" CONFIG RESETSTAT >/dev/null
  for ((i = 0; i < n; i++)); do
    (for ((j = 0; j < per; j++)); do acquire_with "$tool" "$key"; done) 3>&- &
  done
  wait
  local stats calls trips
  stats=$(redis-cli -p "$rport" INFO commandstats | tr -d '\r')
  calls=$(awk -F'[=,:]' '/^cmdstat_/ && $1 !~ /cmdstat_(info|config)$/ {s += $3} END {print s + 0}' <<<"$stats")
  if [[ $tool == naive ]]; then
    trips=$calls # every command of the naive lock is a round trip
  else
    trips=$(awk -F'[=,:]' '$1 ~ /^cmdstat_(evalsha|eval|subscribe|unsubscribe|ping|auth|select)$/ {s += $3} END {print s + 0}' <<<"$stats")
  fi
  local total=$((per * n))
  awk -v calls="$calls" -v trips="$trips" -v total="$total" -v tool="$tool" '
    $1 == "S" { if (have_end) gaps[++g] = ($2 - last_end) / 1e6; }
    $1 == "E" { last_end = $2; have_end = 1 }
    END {
      n = g; for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (gaps[j] < gaps[i]) { t = gaps[i]; gaps[i] = gaps[j]; gaps[j] = t }
      p50 = n ? gaps[int((n - 1) * 0.50) + 1] : 0
      p99 = n ? gaps[int((n - 1) * 0.99) + 1] : 0
      redis = (tool == "rlock" || tool == "naive")
      cpa = redis ? sprintf("%.1f", calls / total) : "n/a"
      rpa = redis ? sprintf("%.1f", trips / total) : "n/a"
      printf "%s %s %.1f %.1f\n", rpa, cpa, p50, p99
    }' "$LOG"
}

tools=(rlock naive flock)
((have_etcd)) && tools+=(etcd)

printf '%-6s %-6s %10s %10s %10s %10s\n' N tool rt/acq cmds/acq p50_ms p99_ms
declare -A RPA CPA P50
for n in "${SIZES[@]}"; do
  for t in "${tools[@]}"; do
    read -r rpa cpa p50 p99 < <(measure "$t" "$n")
    RPA[$t,$n]=$rpa CPA[$t,$n]=$cpa P50[$t,$n]=$p50
    printf '%-6s %-6s %10s %10s %10s %10s\n' "$n" "$t" "$rpa" "$cpa" "$p50" "$p99"
  done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0 || a == "n/a" || b == "n/a") print "n/a"; else printf "%.2f", a / b }'; }
echo
echo "Ratios (rlock / baseline; < 1 means rlock is cheaper or faster):"
printf '%-6s %14s %14s %14s %14s %14s\n' N rt_vs_naive cmds_vs_naive p50_vs_naive p50_vs_etcd p50_vs_flock
for n in "${SIZES[@]}"; do
  printf '%-6s %14s %14s %14s %14s %14s\n' "$n" \
    "$(ratio "${RPA[rlock,$n]}" "${RPA[naive,$n]}")" \
    "$(ratio "${CPA[rlock,$n]}" "${CPA[naive,$n]}")" \
    "$(ratio "${P50[rlock,$n]}" "${P50[naive,$n]}")" \
    "$(ratio "${P50[rlock,$n]}" "${P50[etcd,$n]:-n/a}")" \
    "$(ratio "${P50[rlock,$n]}" "${P50[flock,$n]}")"
done
((have_etcd)) || echo "(etcd not installed: apt-get install etcd-server etcd-client for that baseline)"
echo
echo "rlock round trips per acquisition by contenders: $(for n in "${SIZES[@]}"; do printf '%s=%s ' "$n" "${RPA[rlock,$n]}"; done)"
echo "rlock server commands per acquisition by contenders: $(for n in "${SIZES[@]}"; do printf '%s=%s ' "$n" "${CPA[rlock,$n]}"; done)"
