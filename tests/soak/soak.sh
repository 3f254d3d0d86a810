#!/usr/bin/env bash
# shellcheck disable=SC2317,SC2016 # functions run through poll_until, "fault_$kind", eval
# Soak test: many contended `rlock run` acquisitions under random faults, then a history
# check (tests/soak/check.sh). Run by hand; `--short` is the CI-sized form.
#
#   tests/soak/soak.sh [--acquisitions N] [--contenders C] [--seed S] [--short]
#                      [--rlock PATH] [--proxy PATH] [--direct K] [--fault-every MS]
#                      [--max-time S] [--no-persistence] [--no-stderr-faults] [--dir DIR]
#                      [--masters N | --sentinel | --cluster] [--sync-replicas N]
#                      [--keep] [--quiet] [--rlock-alt PATH] [--nested PCT] [--supersede PCT]
#                      [--shared PCT] [--pool PCT] [--done PCT] [--priority PCT]
#                      [--layout-pct PCT]
#
# What it starts, all its own and all stopped at exit (trap on EXIT, INT, TERM, HUP):
# - redis-server on a free loopback port with persistence (--appendonly yes
#   --appendfsync always, --maxmemory-policy noeviction) in DIR/redis;
# - fault_proxy in front of it; every contender but the last K (default C/4) connects
#   through the proxy, the last K directly;
# - C contenders (tests/soak/contender.sh, each in a session of its own), each a loop of
#   `rlock run --ttl T --wait W soak -- bash cs.sh …` (T = 1s, 1.5s, 2s by contender);
#   the critical section (tests/soak/cs.sh) writes to a fenced resource; with --nested PCT
#   (default 10; in quorum mode, which refuses a nested run outside the holder's process
#   group, the nested run runs in the holder's own group, "group") that share of the runs runs it in a
#   nested `rlock run` that outlives what encloses it, the shape drawn by the seed: a job
#   of its own (`set -m`) or a session of its own (`setsid`) started by the run's command,
#   which exits at once; or a background job of a script that took the lock with
#   `acquire --while-pid $$ --export` and exits at once (contender.sh); with --supersede
#   PCT (default 10 on one server, where the checker reads every superseding job's first
#   join from the lock's :sups hash after the soak; 0 elsewhere) that share of the other
#   runs are `run --supersede` CI jobs (and the stop_waiter fault below freezes one that
#   waits). Contender 0
#   also gives each run a random stderr: a file, /dev/full, a pipe without a reader or
#   a pipe nobody reads (unless --no-stderr-faults). In Cluster mode a fifth of the plain
#   runs take a second key in another slot too (`--and soak-b`), and the newcomer after the
#   soak takes both. Superseding jobs exit 80 when superseded (--superseded-exit-code).
#   Of the runs that are neither nested nor superseding, drawn by the seed too:
#   --shared PCT (default 10) are `run --shared soak`, readers beside the exclusive
#   holders; --pool PCT (default 10; 0 in quorum mode) are `run --limit 3` of a pool key
#   of its own (POOL_KEY, in the slot of `soak`), whose critical section logs RLOCK_SLOT
#   and works 50-400ms, half of them the named pool `run --limit db-a,db-b,db-c` of
#   another key (NPOOL_KEY, same slot; RLOCK_SLOT a name); --done PCT (default 5) are `run --done-for 1s` of a key of its own
#   (DONE_KEY, same slot): once per period; --priority PCT (default 5; 0 in quorum mode,
#   which has no line) are exclusive runs with `--priority -5..5`; --layout-pct PCT
#   (default 10; 0 in quorum mode, which refuses layouts) are `rlock --layout plain run
#   PLAIN_KEY` or `--layout redisson run REDISSON_KEY` (half each; the two keys' Redis
#   keys in the slot of `soak`), beside which two peers (tests/soak/peer.sh) run the real
#   clients of those layouts (tests/interop/: the NestJS service's and node-redisson's,
#   which tests/layout_interop.bats drives) on the same names, in sections of 2-40ms
#   under a 2s lease that their watchdogs renew; without node or tests/interop/
#   node_modules the soak says so and runs no layout run; under Sentinel, whose URL the
#   clients cannot follow, only rlock's layout runs. Only the exclusive holders of
#   `soak` write to the fenced resource (the layouts carry no fence).
# Until N critical sections of `soak` have been entered (or --max-time runs out) it injects one
# fault every ~MS ms (uniform in [MS/2, 3MS/2]), the kind drawn from a stream seeded by S
# (the first faults are each kind once, in a seeded order):
#   cut            fault_proxy SIGUSR1: every proxied connection closed at once
#   client_kill    CLIENT KILL TYPE normal
#   restart        kill -9 redis-server, 0-400ms down, start again (same port, dir, AOF)
#   stop           SIGSTOP a holder's whole job (rlock's process group: the contender loop,
#                  rlock, its guard, or a nested run's own group; and the critical
#                  section's process group) for its TTL + 0.2-1.2s, then SIGCONT (which
#                  side first is drawn too), like a GC pause or a VM freeze. The details
#                  give the real freeze, polled from /proc (frozen_ms, cs_frozen_ms); a
#                  group that can still become orphaned (the kernel would SIGHUP and
#                  SIGCONT it) is not frozen: stop_skipped
#   script_flush   SCRIPT FLUSH, then FUNCTION FLUSH (half the runs call rlock's Functions
#                  library: RLOCK_FUNCTIONS=on, contender.sh)
#   break          rlock break soak --yes
#   stop_waiter    with --supersede PCT > 0 only: SIGSTOP a superseding job that waits
#                  (rlock's process group) for 6.5-8s, past its place's 6s lease, so that
#                  it comes back after newer jobs joined (the checker's supersede rule);
#                  stop_waiter_skipped when none waits within 2s
#   acl            the ACL user the contenders connect as ("soak") loses one command the
#                  scripts use (PEXPIRE, HSET, ZADD, INCR, SET, DEL, PUBLISH, ZREM, LPUSH,
#                  EVALSHA or FCALL) for 0.5-3s, then gets it back: a script refused part way
#   pause          CLIENT PAUSE 1000 WRITE (an operator's pause: writes and expiry wait 1s)
#   oom            CONFIG SET maxmemory to 32 KiB above used_memory (noeviction) for 2-4s,
#                  then the old value: writes refused with OOM
# Each fault is one line of DIR/faults.log: F KIND START_US END_US DETAILS…
# Once the contenders have ended it also asks whether the lock is free, whether a
# newcomer that does not wait gets in (no dead waiter or holder blocks it) and which of
# the lock's keys have no expiry (only the fence counter and the history may not).
# Then it checks the history (tests/soak/check.sh DIR), prints the summary and exits with
# its status: 0 PASS, 1 FAIL, 2 the soak itself could not run, 64 usage.
# DIR (a new temporary directory unless --dir) is removed after a PASS unless --keep.
#
# Mixed versions, --rlock-alt PATH: the odd-numbered contenders run that binary (another
# release of rlock, e.g. the last one), the others --rlock: a rolling upgrade, in which
# hosts of both releases contend for one lock with their own scripts. Run by hand (it needs
# the other release built); the check is the same.
#
# Quorum mode, --masters N (N >= 3; default 1, one server, all of the above): N
# independent redis-servers (each as above, in DIR/redis, DIR/redis1 … DIR/redis(N-1)),
# master 0 behind fault_proxy; every contender gets all N URLs (several --url: a Redlock
# lock, docs/PROTOCOL.md "Quorum mode"), the proxied ones master 0's through the proxy.
# The faults act on one master at a time, one fault at a time, so never more than one
# master (a minority) is down or frozen at once:
#   cut            as above (master 0's proxied connections)
#   client_kill    CLIENT KILL TYPE normal on a random master
#   restart        kill -9 a random master, 0-400ms down, start again with its AOF
#   stop           as above
#   script_flush   SCRIPT FLUSH on a random master
#   break          rlock break soak --yes with every URL
#   master_stop    SIGSTOP a random master for 0.2-2.5s, then SIGCONT
#   acl, pause, oom   as above, on a random master
# The details of a fault on one master start with master=I. With --short, --max-time
# defaults to 75 (not 110) in quorum mode.
#
# Sentinel mode, --sentinel: a master with two replicas and three sentinels
# (tests/helpers/topology.bash, sentinel_setup; down-after 2s, failover-timeout 5s), the
# data nodes in DIR/nodes/NAME with the persistence above; every contender connects
# directly with the redis-sentinel:// URL (no proxy, no `cut`). Faults, the "current
# master" being the one all three sentinels name:
#   failover       SENTINEL FAILOVER (planned), until every sentinel names the promoted
#                  replica and the old master has become its replica
#   master_kill    kill -9 of the current master (an unplanned failover), until every
#                  sentinel names a new one; then the killed server is started again
#                  (same port and dir) as a replica of the new master, until it is in sync
#   client_kill, script_flush, pause, oom   on the current master; stop, break   as above
# Cluster mode, --cluster: a Redis Cluster of three masters with one replica each
# (cluster_start 3 1; node timeout 2s); contender C is given node C mod 6 as its seed.
# Faults act on the master serving the lock's slot (its keys share the hash tag {soak}):
#   failover       CLUSTER FAILOVER (planned, no FORCE) on that master's replica
#   master_kill    kill -9 of that master; once its replica serves the slot, the killed
#                  node is started again (same port, dir, nodes.conf) and rejoins as a
#                  replica
#   migrate        the slot moved to another master: SETSLOT IMPORTING/MIGRATING, 0-1s in
#                  that state, MIGRATE of every key, SETSLOT NODE (cluster_migrate_slot)
#   client_kill, script_flush, pause, oom   on that master; stop, break   as above
# Details name the nodes (old=NAME:PORT new=…) and, before a master_kill, the master's
# replication offset and its replicas' (offset=… replica_offsets=…). --sync-replicas N
# (Sentinel 1-2, Cluster 1) gives every run `--sync-replicas N`; with N = every replica
# the checker explains nothing by a failover. With --short, a replicated mode defaults to
# 250 acquisitions, a fault every ~2.5s, --max-time 100; by hand to 2,500, every ~3s.
set -uo pipefail
exec </dev/null

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

usage() {
  sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
}

die_usage() {
  echo "soak: $1 (see --help)" >&2
  exit 64
}

# --- options ------------------------------------------------------------------------------

target="" contenders=8 seed="" short=0 rlock="" rlock_alt="" proxy_bin="" direct="" fault_every=""
max_time="" persistence=1 stderr_faults=1 dir="" keep=0 quiet=0 masters=1 topo=""
sync_replicas=0 nested="" supersede="" shared="" pool="" done_pct="" priority="" layout_pct=""
while (($#)); do
  case $1 in
    --acquisitions) target=${2:-} && shift ;;
    --contenders) contenders=${2:-} && shift ;;
    --seed) seed=${2:-} && shift ;;
    --short) short=1 ;;
    --rlock) rlock=${2:-} && shift ;;
    --rlock-alt) rlock_alt=${2:-} && shift ;;
    --proxy) proxy_bin=${2:-} && shift ;;
    --direct) direct=${2:-} && shift ;;
    --fault-every) fault_every=${2:-} && shift ;;
    --max-time) max_time=${2:-} && shift ;;
    --no-persistence) persistence=0 ;;
    --no-stderr-faults) stderr_faults=0 ;;
    --dir) dir=${2:-} && shift ;;
    --masters) masters=${2:-} && shift ;;
    --sentinel | --cluster)
      [[ -z $topo || $topo == "${1#--}" ]] || die_usage "--sentinel and --cluster exclude each other"
      topo=${1#--}
      ;;
    --sync-replicas) sync_replicas=${2:-} && shift ;;
    --nested) nested=${2:-} && shift ;;
    --supersede) supersede=${2:-} && shift ;;
    --shared) shared=${2:-} && shift ;;
    --pool) pool=${2:-} && shift ;;
    --done) done_pct=${2:-} && shift ;;
    --priority) priority=${2:-} && shift ;;
    --layout-pct) layout_pct=${2:-} && shift ;;
    --keep) keep=1 ;;
    --quiet) quiet=1 ;;
    -h | --help)
      usage
      exit 0
      ;;
    *) die_usage "unknown argument '$1'" ;;
  esac
  shift
done

is_num() { [[ $1 =~ ^[0-9]+$ ]] && ((10#$1 <= 1000000000)); }
replicated=0
[[ -n $topo ]] && replicated=1
# The detail of the master a fault acts on (pick_master, pick_node): empty until one is
# picked (one server: a break may come before any fault that picks one).
_mdetail=""
if ((short && replicated)); then # Sentinel and Cluster: about 100s each
  : "${target:=250}" "${fault_every:=2500}" "${max_time:=100}"
elif ((replicated)); then
  : "${target:=2500}" "${fault_every:=3000}"
  : "${max_time:=$((600 + target / 4))}"
elif ((short)) && [[ $masters != 1 ]]; then # quorum mode's CI form: at most ~90s in all
  : "${target:=300}" "${fault_every:=600}" "${max_time:=75}"
elif ((short)); then
  : "${target:=300}" "${fault_every:=600}" "${max_time:=110}"
else
  : "${target:=10000}" "${fault_every:=1500}"
  : "${max_time:=$((600 + target / 4))}"
fi
: "${seed:=$((EPOCHSECONDS % 1000000))}"
if ((replicated)); then direct=$contenders; fi # no proxy: every contender connects directly
# Quorum mode refuses a nested run outside the holder's process group (docs/GUIDE.md
# "Nesting"): with --nested PCT its nested runs run in the holder's own group
# (contender.sh, "group"), 10% by default as elsewhere (a nested run that a loss of the
# outer run ends before its critical section's first line exits 76 without running: the
# checker knows that outcome). The stop fault never freezes a group that can still become orphaned (the
# kernel would SIGHUP and SIGCONT it) and logs the real freeze (fault_stop).
: "${nested:=10}"
# Superseding jobs (--supersede PCT): one server only, where the checker reads the join
# order of every superseding job (the lock's :sups hash, docs/PROTOCOL.md) after the soak.
if ((masters == 1 && !replicated)) && [[ -z $rlock_alt ]]; then : "${supersede:=10}"; else supersede=0; fi
# The other shapes (contender.sh, SHAPES). Quorum mode has no line (--priority is refused
# there) and its pool would be one per master: neither runs there.
: "${shared:=10}" "${done_pct:=5}"
if ((masters == 1)); then : "${pool:=10}" "${priority:=5}"; else pool=0 priority=0; fi
# Layouts are refused in quorum mode (the man page, OTHER TOOLS' LAYOUTS).
if ((masters == 1)); then : "${layout_pct:=10}"; else layout_pct=0; fi
: "${direct:=$((contenders / 4))}"
for v in target contenders seed direct fault_every max_time masters sync_replicas nested supersede \
  shared pool done_pct priority layout_pct; do
  o=${v%_pct}
  [[ $v != layout_pct ]] || o=layout-pct
  is_num "${!v}" || die_usage "--${o//_/-} needs a whole number, got '${!v}'"
done
((shared + pool + done_pct + priority + layout_pct <= 100)) ||
  die_usage "--shared, --pool, --done, --priority and --layout-pct are shares of the same runs: at most 100 in all"
((target >= 1)) || die_usage "--acquisitions must be at least 1"
((contenders >= 2 && contenders <= 64)) || die_usage "--contenders must be 2..64"
((direct <= contenders)) || die_usage "--direct must be at most --contenders"
((nested <= 100)) || die_usage "--nested must be a share of the runs, 0..100"
((supersede <= 100)) || die_usage "--supersede must be a share of the runs, 0..100"
((fault_every >= 50)) || die_usage "--fault-every must be at least 50 (ms)"
((masters == 1 || (masters >= 3 && masters <= 9))) ||
  die_usage "--masters must be 1, or 3..9 for quorum mode"
seed=$((10#$seed)) masters=$((10#$masters)) sync_replicas=$((10#$sync_replicas))
((replicated == 0 || masters == 1)) || die_usage "--masters excludes --sentinel and --cluster"
case $topo in
  sentinel) REPLICAS=2 ;;
  cluster) REPLICAS=1 ;;
  *)
    REPLICAS=0
    topo=$([[ $masters == 1 ]] && echo single || echo quorum)
    ;;
esac
((sync_replicas <= REPLICAS)) ||
  die_usage "--sync-replicas must be at most $REPLICAS (the replicas of a master) here"

: "${rlock:=$repo/build/rlock}"
[[ -x $rlock ]] || die_usage "no rlock binary at $rlock (build it, or pass --rlock PATH)"
rlock=$(cd "$(dirname "$rlock")" && pwd)/$(basename "$rlock")
if [[ -n $rlock_alt ]]; then
  [[ -x $rlock_alt ]] || die_usage "no rlock binary at $rlock_alt (--rlock-alt)"
  rlock_alt=$(cd "$(dirname "$rlock_alt")" && pwd)/$(basename "$rlock_alt")
fi
if [[ -z $proxy_bin ]]; then
  proxy_bin=$(dirname "$rlock")/tests/helpers/fault_proxy
  [[ -x $proxy_bin ]] || proxy_bin=$repo/build/tests/helpers/fault_proxy
fi
((replicated)) || [[ -x $proxy_bin ]] ||
  die_usage "no fault_proxy at $proxy_bin (build the tests, or pass --proxy)"
for tool in redis-server redis-cli flock setsid timeout awk sort; do
  command -v "$tool" >/dev/null || {
    echo "soak: $tool is needed and not installed" >&2
    exit 2
  }
done

# --- state --------------------------------------------------------------------------------

KEY=soak
# Cluster mode: a share of the plain runs also take AND_KEY (`run soak --and soak-b`), whose
# hash tag puts it in another slot: multi-key waiters across Cluster slots.
AND_KEY=""
[[ $topo == cluster ]] && AND_KEY=soak-b
# One server and quorum mode: contenders (and the soak's own rlock calls) connect as this
# ACL user, which the `acl` fault takes one command from for a while.
SOAK_USER=soak SOAK_PASS=soak-pw
SOAK_AUTH=$SOAK_USER:$SOAK_PASS
LOCK_KEY="lock:{$KEY}"
FENCE_KEY="lock:{$KEY}:fence"
# The pool's and the once-per-period runs' keys: names whose hash slot is that of `soak`
# (CRC16 mod 16384 = 2853), so that a Cluster fault on the lock's master reaches them too.
POOL_KEY=soak-pool-43102 POOL_N=3
# Half the pool's runs take the named pool instead (`--limit db-a,db-b,db-c`: RLOCK_SLOT a
# name; the man page, --limit NAMES), a key of its own: a count and names are two
# definitions, refused on one key.
NPOOL_KEY=soak-names-5027 NPOOL_NAMES=db-a,db-b,db-c
# The layouts' lock names: Redis keys lock:soak-plain-13458 (plain: PREFIX KEY, no hash tag)
# and soak-redisson-15869 (redisson: KEY itself), both in the slot of `soak` too.
PLAIN_KEY=soak-plain-13458 REDISSON_KEY=soak-redisson-15869
DONE_KEY=soak-done-19075 DONE_MS=1000
ALL_KEYS=("$KEY" "$POOL_KEY" "$NPOOL_KEY" "$DONE_KEY")
# layout_of KEY: the --layout of KEY's lock ("" for rlock's own)
layout_of() {
  case $1 in
    "$PLAIN_KEY") _layout=plain ;;
    "$REDISSON_KEY") _layout=redisson ;;
    *) _layout="" ;;
  esac
}
# The peers (the layouts' real clients) need node and tests/interop/node_modules.
peers=""
if ((layout_pct > 0)); then
  if ! command -v node >/dev/null; then
    peers="no: node is not installed"
  elif [[ ! -d $repo/tests/interop/node_modules/node-redisson || ! -d $repo/tests/interop/node_modules/ioredis ]]; then
    peers="no: tests/interop/node_modules is missing (scripts/setup.sh --deps-only)"
  fi
  if [[ -n $peers ]]; then
    echo "soak: ${peers#no: }: the layout contenders are skipped" >&2
    layout_pct=0
  elif [[ $topo == sentinel ]]; then
    peers="no: the clients cannot follow a Sentinel URL"
  else
    peers=yes
  fi
  ((layout_pct == 0)) || ALL_KEYS+=("$PLAIN_KEY" "$REDISSON_KEY")
fi
if [[ -n $dir ]]; then
  mkdir -p "$dir" || exit 2
  [[ -z $(ls -A "$dir") ]] || die_usage "--dir $dir is not empty"
  W=$(cd "$dir" && pwd)
else
  W=$(mktemp -d "${TMPDIR:-/tmp}/rlock-soak.XXXXXX") || exit 2
fi
mkdir -p "$W"/{hist,err,cur,res,redis,proxy} || exit 2
for ((m = 1; m < masters; m++)); do mkdir -p "$W/redis$m" || exit 2; done
echo 0 >"$W/res/max"
: >"$W/res/log"
: >"$W/faults.log"
: >"$W/stopped"

RANDOM=$seed
REDIS_PID="" REDIS_PORT="" PROXY_PID="" PROXY_PORT="" PORT_CLAIM=""
CONT_PIDS=()
PORT_DIR="${RLOCK_TEST_PORT_DIR:-/tmp/rlock-test-ports}" # shared with the bats helpers
REDIS_DIR=$W/redis
REDIS_SOCK=$W/redis/redis.sock
if ((${#REDIS_SOCK} > 100)); then REDIS_SOCK=$(mktemp -u /tmp/rlock-soak-sock.XXXXXX); fi
# Quorum mode: master I's state; REDIS_* above are the master in use (use_master I).
M_PID=() M_PORT=() M_CLAIM=() M_SOCK=() M_DIR=()
QUORUM=$((masters / 2 + 1))
M_SOCK[0]=$REDIS_SOCK M_DIR[0]=$REDIS_DIR
for ((m = 1; m < masters; m++)); do
  M_DIR[m]=$W/redis$m M_SOCK[m]=$W/redis$m/redis.sock
  if ((${#M_SOCK[m]} > 100)); then M_SOCK[m]=$(mktemp -u /tmp/rlock-soak-sock.XXXXXX); fi
done
((masters == 1)) || : >"$W/stopped_masters"

now_us() { _now=${EPOCHREALTIME/./}; }
log() { ((quiet)) || echo "soak: $*" >&2; }
harness_error() {
  echo "soak: $*" >&2
  echo "soak: history kept in $W" >&2
  keep=1
  exit 2
}

# rnd LO HI: _r = a number in [LO, HI] from the seeded stream.
rnd() { _r=$(($1 + (RANDOM * 32768 + RANDOM) % ($2 - $1 + 1))); }

alive() {
  local st
  { read -r st <"/proc/$1/stat"; } 2>/dev/null || return 1
  st=${st##*) }
  [[ ${st:0:1} != [ZX] ]]
}

# poll_until SECONDS CMD…: runs CMD every 50ms until it succeeds; 1 when time runs out.
poll_until() {
  local limit deadline
  limit=$(($1 * 1000000))
  shift
  now_us
  deadline=$((_now + limit))
  until "$@"; do
    now_us
    ((_now < deadline)) || return 1
    sleep 0.05
  done
}

rcli() { timeout 5 redis-cli -s "$REDIS_SOCK" "$@" 2>/dev/null; }
# rcli_m I ARGS…: redis-cli to master I.
rcli_m() {
  local s=${M_SOCK[$1]}
  shift
  timeout 5 redis-cli -s "$s" "$@" 2>/dev/null
}

# use_master I: REDIS_* are master I's; save_master I: stores them back.
use_master() {
  REDIS_PID=${M_PID[$1]:-} REDIS_PORT=${M_PORT[$1]:-} PORT_CLAIM=${M_CLAIM[$1]:-}
  REDIS_SOCK=${M_SOCK[$1]} REDIS_DIR=${M_DIR[$1]}
}
save_master() {
  M_PID[$1]=$REDIS_PID M_PORT[$1]=$REDIS_PORT M_CLAIM[$1]=$PORT_CLAIM
}

# --- ports (the same claim directory as tests/helpers/redis.bash) -------------------------

claim_port() {
  local d="$PORT_DIR/$1" mtime
  mkdir "$d" 2>/dev/null && return 0
  mtime=$(stat -c %Y "$d" 2>/dev/null) || return 1
  ((EPOCHSECONDS - mtime > 300)) || return 1
  mv "$d" "$d.stale.$BASHPID" 2>/dev/null || return 1
  rm -rf "$d.stale.$BASHPID"
  mkdir "$d" 2>/dev/null
}

pick_port() {
  local lo=32768 span p i
  { read -r lo _ </proc/sys/net/ipv4/ip_local_port_range; } 2>/dev/null || true
  if ((lo > 21000)); then span=$((lo - 20000)); else span=40000; fi
  mkdir -p "$PORT_DIR"
  for ((i = 0; i < 500; i++)); do
    p=$((20000 + (SRANDOM % span)))
    claim_port "$p" || continue
    if { true <>"/dev/tcp/127.0.0.1/$p"; } 2>/dev/null; then continue; fi
    _port=$p
    return 0
  done
  return 1
}

# --- redis-server and fault_proxy ---------------------------------------------------------

redis_args() {
  local -a a=(--port "$REDIS_PORT" --bind 127.0.0.1 --daemonize no --dir "$REDIS_DIR"
    --unixsocket "$REDIS_SOCK" --unixsocketperm 700 --save ''
    --maxmemory-policy noeviction --user "$SOAK_USER" on ">$SOAK_PASS" "~*" "&*" "+@all")
  if ((persistence)); then
    a+=(--appendonly yes --appendfsync always)
  else
    a+=(--appendonly no)
  fi
  printf '%s\0' "${a[@]}"
}

# Ready once it answers and has loaded its AOF (before that, most commands get LOADING).
redis_answers() {
  alive "$REDIS_PID" || return 0
  rcli info persistence | tr -d '\r' | grep -q -x 'loading:0' # not async_loading:0
}

# close_fds: closes every descriptor above 2 of the current (sub)shell, so that a server
# started from it holds none of the caller's pipes.
close_fds() {
  local fd
  for fd in /proc/self/fd/*; do
    fd=${fd##*/}
    if ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
}

# redis_launch: starts redis-server with redis_args, waits for PING and checks that the
# server on the TCP port is the one started. 0 ready, 2 port taken, 1 other failure.
redis_launch() {
  local -a args
  mapfile -d '' args < <(redis_args)
  (
    close_fds
    exec redis-server "${args[@]}" >>"$REDIS_DIR/redis.log" 2>&1
  ) &
  REDIS_PID=$!
  if ! poll_until 20 redis_answers; then
    kill -KILL "$REDIS_PID" 2>/dev/null
    wait "$REDIS_PID" 2>/dev/null
    return 1
  fi
  if ! alive "$REDIS_PID"; then
    wait "$REDIS_PID" 2>/dev/null
    tail -n 5 "$REDIS_DIR/redis.log" | grep -q -i 'address already in use' && return 2
    return 1
  fi
  local got
  got=$(timeout 5 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" info server 2>/dev/null |
    tr -d '\r' | sed -n 's/^process_id://p')
  [[ $got == "$REDIS_PID" ]] || return 2
}

redis_start() {
  local attempt rc
  for ((attempt = 1; attempt <= 8; attempt++)); do
    pick_port || harness_error "no free port"
    REDIS_PORT=$_port PORT_CLAIM=$_port
    rc=0
    redis_launch || rc=$?
    ((rc == 0)) && return 0
    rmdir "$PORT_DIR/$PORT_CLAIM" 2>/dev/null
    ((rc == 2)) || harness_error "redis-server did not start: $(tail -n 5 "$REDIS_DIR/redis.log")"
  done
  harness_error "no usable port for redis-server after 8 attempts"
}

redis_kill9() {
  touch "$PORT_DIR/$PORT_CLAIM" 2>/dev/null
  kill -KILL "$REDIS_PID" 2>/dev/null
  wait "$REDIS_PID" 2>/dev/null
}

proxy_start() {
  (
    close_fds
    exec "$proxy_bin" 0 127.0.0.1 "$REDIS_PORT" "$W/proxy" >"$W/proxy/stdout" 2>"$W/proxy/stderr"
  ) &
  PROXY_PID=$!
  poll_until 10 grep -q -x '[0-9]\+' "$W/proxy/stdout" ||
    harness_error "fault_proxy did not start: $(cat "$W/proxy/stderr")"
  read -r PROXY_PORT <"$W/proxy/stdout"
}

proxy_seq() { sed -n 's/^seq=//p' "$W/proxy/state"; }
proxy_seq_above() { (($(proxy_seq) > $1)); }

# --- Sentinel and Cluster: the servers of tests/helpers/topology.bash ---------------------

# topology.bash (shared with tests/sentinel.bats and tests/cluster.bats) sets the topology
# up; these are the helpers it needs, in place of helpers/redis's bats versions. A node
# NAME has NAME_PORT, NAME_SOCK, NAME_PID, NAME_URL, NAME_DIR (globals).
NODES=()
declare -A NODE_ARGS=() NODE_CLAIM=()
BATS_FILE_TMPDIR=$W/topology # the sentinels' configuration files

free_port() { pick_port && echo "$_port"; }
fail() {
  echo "soak: $*" >&2
  return 1
}
_rlock_poll() {
  local what=$1 secs=$2
  shift 2
  poll_until "$secs" "$@" && return 0
  echo "soak: timed out after ${secs}s waiting for $what" >&2
  return 1
}
rcli_to() {
  local s="${1}_SOCK"
  shift
  timeout 5 redis-cli -s "${!s}" "$@" 2>/dev/null
}

node_answers() {
  alive "$1" || return 0
  local r
  r=$(timeout 2 redis-cli -s "$2" ping 2>/dev/null)
  [[ -n $r && $r != LOADING* ]]
}

# node_launch NAME PORT SOCK ARGS…: starts redis-server ARGS as node NAME, waits for it and
# checks that the server on PORT is the one started. 0 ready, 2 port taken, 1 other failure.
node_launch() {
  local name=$1 port=$2 sock=$3 pid got
  shift 3
  (
    close_fds
    exec redis-server "$@" >>"$W/nodes/$name/redis.log" 2>&1
  ) &
  pid=$!
  declare -g "${name}_PID=$pid"
  if ! poll_until 20 node_answers "$pid" "$sock"; then
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 1
  fi
  if ! alive "$pid"; then
    wait "$pid" 2>/dev/null
    tail -n 5 "$W/nodes/$name/redis.log" | grep -q -i 'address already in use' && return 2
    return 1
  fi
  got=$(timeout 5 redis-cli -h 127.0.0.1 -p "$port" info server 2>/dev/null |
    tr -d '\r' | sed -n 's/^process_id://p')
  [[ $got == "$pid" ]] || return 2
}

# redis_start_named NAME [--config FILE] ARGS…: topology.bash's way to start a server (a
# sentinel with --config FILE --sentinel). Data nodes get the soak's persistence.
redis_start_named() {
  local name=$1 conf="" dir sock attempt rc
  shift
  if [[ ${1:-} == --config ]]; then
    conf=$2
    shift 2
  fi
  dir=$W/nodes/$name sock=$W/nodes/$name/redis.sock
  mkdir -p "$dir" || harness_error "cannot make $dir"
  if ((${#sock} > 100)); then sock=$(mktemp -u /tmp/rlock-soak-sock.XXXXXX); fi
  local -a args
  for ((attempt = 1; attempt <= 8; attempt++)); do
    pick_port || harness_error "no free port"
    args=(${conf:+"$conf"} --port "$_port" --bind 127.0.0.1 --daemonize no --dir "$dir"
      --unixsocket "$sock" --unixsocketperm 700 --save '')
    if [[ -z $conf ]]; then
      args+=(--maxmemory-policy noeviction)
      if ((persistence)); then
        args+=(--appendonly yes --appendfsync always)
      else
        args+=(--appendonly no)
      fi
    fi
    args+=("$@")
    rc=0
    node_launch "$name" "$_port" "$sock" "${args[@]}" || rc=$?
    if ((rc == 0)); then
      NODES+=("$name")
      NODE_CLAIM[$name]=$_port
      NODE_ARGS[$name]=$(printf '%q ' "${args[@]}")
      declare -g "${name}_PORT=$_port" "${name}_SOCK=$sock" "${name}_DIR=$dir" \
        "${name}_URL=redis://127.0.0.1:$_port/0"
      return 0
    fi
    rmdir "$PORT_DIR/$_port" 2>/dev/null
    ((rc == 2)) || harness_error "redis-server $name did not start: $(tail -n 5 "$dir/redis.log")"
  done
  harness_error "no usable port for $name after 8 attempts"
}

# node_kill9 NAME: kill -9 (its port stays claimed). node_restart NAME [ARGS…]: starts it
# again with its arguments (same port, dir, data) and ARGS after them.
node_kill9() {
  local pid_var=${1}_PID
  touch "$PORT_DIR/${NODE_CLAIM[$1]}" 2>/dev/null
  kill -KILL "${!pid_var}" 2>/dev/null
  wait "${!pid_var}" 2>/dev/null
}
node_restart() {
  local name=$1 port_var=${1}_PORT sock_var=${1}_SOCK rc=0
  shift
  local -a args
  eval "args=(${NODE_ARGS[$name]})"
  node_launch "$name" "${!port_var}" "${!sock_var}" "${args[@]}" "$@" || rc=$?
  ((rc == 0)) || harness_error "$name did not come back after kill -9 (rc $rc)"
}

node_pids() {
  local name v
  _npids=" "
  for name in "${NODES[@]}"; do
    v=${name}_PID
    _npids+="${!v} "
  done
}

stop_nodes() {
  local name pid_var sock_var a
  for name in "${NODES[@]}"; do
    pid_var=${name}_PID sock_var=${name}_SOCK
    REDIS_PID=${!pid_var} PORT_CLAIM=${NODE_CLAIM[$name]} REDIS_SOCK=${!sock_var}
    kill -CONT "$REDIS_PID" 2>/dev/null
    stop_redis
    # the cluster bus port claimed by cluster_start
    a=${NODE_ARGS[$name]}
    if [[ $a =~ --cluster-port\ ([0-9]+) ]]; then rmdir "$PORT_DIR/${BASH_REMATCH[1]}" 2>/dev/null; fi
  done
  NODES=()
}

# use_node NAME: REDIS_* (rcli, snapshot, redis_keys) are node NAME's.
use_node() {
  local p=${1}_PORT s=${1}_SOCK d=${1}_PID
  REDIS_PORT=${!p} REDIS_SOCK=${!s} REDIS_PID=${!d}
}

role_of() { rcli_to "$1" role | head -n 1; }

# Sentinel: _mname/_mport, the data node every sentinel names as the master and that says
# so itself (ROLE), and not port _not_port.
sentinel_agree() {
  local i p="" q
  for i in 1 2 3; do
    q=$(rcli_to "SENT$i" sentinel get-master-addr-by-name "$SENTINEL_MASTER" | sed -n 2p)
    [[ -n $q && ( -z $p || $q == "$p" ) ]] || return 1
    p=$q
  done
  [[ $p != "${_not_port:-}" ]] || return 1
  _mname=$(sentinel_node_at "$p") || return 1
  _mport=$p
  [[ $(role_of "$_mname") == master ]]
}
# sentinel_switch_times OLD_PORT: asks each sentinel in turn (every ~20ms) until they
# agree on a master other than OLD_PORT (sentinel_agree); _named1 / _named: when the first
# / the last of them first named another master (µs, taken just before the question that
# got that answer: the switch came after the answer before it, so the window these bound
# is never wider than the truth by more than one question). Returns 2 when Sentinel
# aborted the failover before any sentinel named another master, 1 after 60s.
sentinel_switch_times() {
  local deadline i q t
  local -a first=(0 0 0)
  now_us
  deadline=$((_now + 60000000))
  while :; do
    for i in 0 1 2; do
      ((first[i])) && continue
      now_us
      t=$_now
      q=$(rcli_to "SENT$((i + 1))" sentinel get-master-addr-by-name "$SENTINEL_MASTER" | sed -n 2p)
      [[ -n $q && $q != "$1" ]] && first[i]=$t
    done
    if ((first[0] && first[1] && first[2])); then
      _not_port=$1
      sentinel_agree && break
    fi
    # Sentinel may abort the failover itself (-failover-abort-slave-timeout: the promoted
    # replica did not report its new role in time, or another sentinel made it a replica
    # again first). Then SENT1, which runs it, is no longer failing over and still names
    # the old master (asked in that order: a switch clears the flag after naming the new
    # one), and no sentinel named another.
    if ((!first[0] && !first[1] && !first[2])) &&
      [[ $(_rlock_master_field SENT1 "$SENTINEL_MASTER" flags) != *failover_in_progress* ]] &&
      [[ $(rcli_to SENT1 sentinel get-master-addr-by-name "$SENTINEL_MASTER" | sed -n 2p) == "$1" ]]; then
      return 2
    fi
    now_us
    ((_now < deadline)) || return 1
    sleep 0.02
  done
  _named1=${first[0]} _named=${first[0]}
  for i in 1 2; do
    ((first[i] < _named1)) && _named1=${first[i]}
    ((first[i] > _named)) && _named=${first[i]}
  done
  return 0
}

sentinel_current() {
  _not_port=""
  poll_until 60 sentinel_agree || harness_error "the sentinels did not agree on a master within 60s"
}

# sentinel_settled: the sentinels agree on a master (not _not_port) and every other data
# node replicates it, in sync. A loaded master may be failed over again meanwhile.
sentinel_settled() { sentinel_agree && replicas_linked "$_mname" "$_mport"; }

# _rlock_is_replica_of NAME PORT (topology.bash) for every data node but the master.
replicas_linked() {
  local n
  for n in $SENTINEL_NODES; do
    [[ $n == "$1" ]] && continue
    _rlock_is_replica_of "$n" "$2" || return 1
  done
}

# Cluster: _owner (a node number) serves the lock's slot, every live node says
# cluster_state:ok and the owner is a master.
cluster_settled() {
  local i pid_var info
  for ((i = 1; i <= CLUSTER_N; i++)); do
    pid_var=CLUSTER${i}_PID
    alive "${!pid_var}" || continue
    info=$(rcli_to "CLUSTER$i" cluster info | tr -d '\r')
    [[ $info == *cluster_state:ok* ]] || return 1
  done
  _owner=$(cluster_node_of "$KEY" 2>/dev/null) || return 1
  [[ -n $_owner && $(role_of "CLUSTER$_owner") == master ]]
}
cluster_current() {
  poll_until 60 cluster_settled || harness_error "the cluster did not settle within 60s"
}

# cluster_replica_of I: _rep = a node in sync with CLUSTERi as its replica.
cluster_replica_of() {
  local j p=CLUSTER${1}_PORT
  for ((j = 1; j <= CLUSTER_N; j++)); do
    ((j == $1)) && continue
    if _rlock_is_replica_of "CLUSTER$j" "${!p}"; then
      _rep=$j
      return 0
    fi
  done
  return 1
}

# repl_offsets NAME: _offs = "offset=O replica_offsets=A,B" from NAME's INFO replication.
repl_offsets() {
  local info
  info=$(rcli_to "$1" info replication | tr -d '\r')
  _offs="offset=$(sed -n 's/^master_repl_offset://p' <<<"$info")"
  _offs+=" replica_offsets=$(sed -n 's/^slave[0-9]*:.*offset=\([0-9]*\).*/\1/p' <<<"$info" | paste -sd, -)"
}

topology_start() {
  # shellcheck source=/dev/null
  source "$repo/tests/helpers/topology.bash"
  mkdir -p "$BATS_FILE_TMPDIR" || exit 2
  if [[ $topo == sentinel ]]; then
    # down-after 2s: on a busy 2-core machine a promoted replica busy for a second
    # (AOF fsync, rewriting its config) was failed over again with 1s
    SENTINEL_DOWN_AFTER_MS=2000 SENTINEL_FAILOVER_TIMEOUT_MS=5000 \
      sentinel_setup soakmaster 2 || harness_error "the Sentinel topology did not come up"
    TOPO_URL=$SENTINEL_URL
    sentinel_current
    use_node "$_mname"
  else
    cluster_start 3 1 || harness_error "the Cluster did not come up"
    TOPO_URL=$CLUSTER1_URL
    cluster_current
    SLOT=$(rcli_to "CLUSTER$_owner" cluster keyslot "$LOCK_KEY")
    use_node "CLUSTER$_owner"
  fi
}

# pick_node: REDIS_* are the current master's (the lock slot's in a Cluster), _mdetail
# "node=NAME ".
pick_node() {
  if [[ $topo == sentinel ]]; then
    sentinel_current
    _mdetail="node=$_mname "
    use_node "$_mname"
  else
    cluster_current
    _mdetail="node=CLUSTER$_owner "
    use_node "CLUSTER$_owner"
  fi
}

fault_failover() {
  local old oldn new newn
  if [[ $topo == cluster ]]; then
    cluster_current
    oldn=CLUSTER$_owner
    if ! cluster_replica_of "$_owner"; then
      _kind=failover_skipped _detail="old=$oldn: no replica in sync"
      return
    fi
    newn=CLUSTER$_rep
    old=${oldn}_PORT new=${newn}_PORT
    old=${!old} new=${!new}
    now_us
    _t0=$_now
    if ! _rlock_poll "CLUSTER FAILOVER to be accepted" 30 \
      eval "[[ \$(rcli_to $newn cluster failover) == OK ]]"; then
      _kind=failover_skipped _detail="old=$oldn:$old new=$newn:$new: CLUSTER FAILOVER refused"
      return
    fi
    poll_until 60 eval "cluster_settled && [[ \$_owner == ${newn#CLUSTER} ]]" ||
      harness_error "CLUSTER FAILOVER to $newn did not complete within 60s"
    now_us
    _t1=$_now
    poll_until 60 _rlock_is_replica_of "$oldn" "$new" ||
      harness_error "$oldn did not become a replica of $newn within 60s"
  else
    sentinel_current
    oldn=$_mname old=$_mport
    now_us
    _t0=$_now
    if ! _rlock_poll "SENTINEL FAILOVER to be accepted" 30 _rlock_failover_started; then
      _kind=failover_skipped _detail="old=$oldn:$old: SENTINEL FAILOVER refused for 30s"
      return
    fi
    local rc=0
    sentinel_switch_times "$old" || rc=$?
    if ((rc == 2)); then
      # No sentinel ever named another master: nothing was failed over. The next fault
      # starts once the replicas follow the master again.
      _not_port=""
      poll_until 60 sentinel_settled || harness_error "the replicas did not settle within 60s of an aborted SENTINEL FAILOVER"
      _kind=failover_skipped _detail="old=$oldn:$old: SENTINEL FAILOVER aborted by Sentinel"
      return
    fi
    ((rc == 0)) || harness_error "SENTINEL FAILOVER did not complete within 60s"
    newn=$_mname new=$_mport
    _t1=$_named
    _not_port=""
    poll_until 60 sentinel_settled || harness_error "the replicas did not follow $newn within 60s"
    [[ $_mname == "$newn" ]] || newn+=",then:$_mname"
    now_us
    _detail="planned=1 old=$oldn:$old new=$newn:$new named1_ms=$(((_named1 - _t0) / 1000)) named_ms=$(((_named - _t0) / 1000)) settled_ms=$(((_now - _t1) / 1000))"
    return
  fi
  now_us
  _detail="planned=1 old=$oldn:$old new=$newn:$new settled_ms=$(((_now - _t1) / 1000))"
}

fault_master_kill() {
  local old oldn new newn t_kill t_new
  if [[ $topo == cluster ]]; then
    cluster_current
    oldn=CLUSTER$_owner
    if ! cluster_replica_of "$_owner"; then
      _kind=master_kill_skipped _detail="old=$oldn: no replica in sync"
      return
    fi
  else
    sentinel_current
    oldn=$_mname
  fi
  old=${oldn}_PORT
  old=${!old}
  repl_offsets "$oldn"
  node_kill9 "$oldn"
  now_us
  t_kill=$_now
  if [[ $topo == cluster ]]; then
    poll_until 60 eval "cluster_settled && [[ CLUSTER\$_owner != $oldn ]]" ||
      harness_error "no replica took over from $oldn within 60s"
    newn=CLUSTER$_owner
  else
    _not_port=$old
    poll_until 60 sentinel_agree || harness_error "the sentinels did not fail $oldn over within 60s"
    newn=$_mname
  fi
  new=${newn}_PORT
  new=${!new}
  now_us
  t_new=$_now
  if [[ $topo == cluster ]]; then
    node_restart "$oldn"
  else
    node_restart "$oldn" --replicaof 127.0.0.1 "$new"
  fi
  if [[ $topo == sentinel ]]; then
    _not_port=""
    poll_until 60 sentinel_settled ||
      harness_error "$oldn and the other replica did not follow $newn within 60s"
    [[ $_mname == "$newn" ]] || newn+=",then:$_mname"
  else
    poll_until 60 _rlock_is_replica_of "$oldn" "$new" ||
      harness_error "$oldn did not rejoin as a replica of $newn within 60s"
    cluster_current
  fi
  now_us
  _t0=$t_kill _t1=$t_new
  _detail="planned=0 old=$oldn:$old new=$newn:$new $_offs failover_ms=$(((t_new - t_kill) / 1000)) rejoin_ms=$(((_now - t_new) / 1000))"
}

fault_migrate() {
  local from to pause i
  local -a masters_=()
  cluster_current
  from=$_owner
  for ((i = 1; i <= CLUSTER_N; i++)); do
    ((i != from)) && [[ $(role_of "CLUSTER$i") == master ]] && masters_+=("$i")
  done
  rnd 0 $((${#masters_[@]} - 1))
  to=${masters_[$_r]}
  rnd 0 1000
  pause=$_r
  now_us
  _t0=$_now
  cluster_migrate_slot "$SLOT" "$from" "$to" "$(printf '%d.%03d' $((pause / 1000)) $((pause % 1000)))" ||
    harness_error "moving slot $SLOT from CLUSTER$from to CLUSTER$to failed"
  now_us
  _t1=$_now
  cluster_current
  _detail="slot=$SLOT from=CLUSTER$from to=CLUSTER$to pause_ms=$pause"
}

# --- contenders ---------------------------------------------------------------------------

ttl_of() {
  local t=(1000 1500 2000)
  echo "${t[$(($1 % 3))]}"
}

# The URLs of every master, space-separated: _urls direct, _purls master 0's via the proxy.
master_urls() {
  local m
  _urls="" _purls="redis://$SOAK_AUTH@127.0.0.1:$PROXY_PORT/0"
  for ((m = 0; m < masters; m++)); do
    _urls+="${_urls:+ }redis://$SOAK_AUTH@127.0.0.1:${M_PORT[m]}/0"
    ((m == 0)) || _purls+=" redis://$SOAK_AUTH@127.0.0.1:${M_PORT[m]}/0"
  done
}

# url_args URLS: _uargs = --url U for each of the space-separated URLS.
url_args() {
  local u
  _uargs=()
  for u in $1; do _uargs+=(--url "$u"); done
}

start_contenders() {
  local c url via node opts=""
  ((sync_replicas == 0)) || opts="--sync-replicas $sync_replicas"
  for ((c = 0; c < contenders; c++)); do
    if [[ $topo == sentinel ]]; then
      url=$TOPO_URL via=direct
    elif [[ $topo == cluster ]]; then
      node=CLUSTER$((c % CLUSTER_N + 1))_URL
      url=${!node} via=direct
    elif ((masters > 1)); then
      master_urls
      if ((c >= contenders - direct)); then url=$_urls via=direct; else url=$_purls via=proxy; fi
    elif ((c >= contenders - direct)); then
      url="redis://$SOAK_AUTH@127.0.0.1:$REDIS_PORT/0" via=direct
    else
      url="redis://$SOAK_AUTH@127.0.0.1:$PROXY_PORT/0" via=proxy
    fi
    : >"$W/hist/$c"
    : >"$W/err/$c"
    bin=$rlock
    ((c % 2 == 1)) && [[ -n $rlock_alt ]] && bin=$rlock_alt
    RLOCK_SOAK_DIR=$W setsid bash "$here/contender.sh" "$W" "$c" "$seed" "$bin" "$url" "$KEY" \
      "$(ttl_of "$c")" "$via" $((c == 0 ? stderr_faults : 0)) "$opts" "$nested" "$supersede" "$AND_KEY" \
      "shared=$shared pool=$pool done=$done_pct priority=$priority pool_key=$POOL_KEY npool_key=$NPOOL_KEY npool_names=$NPOOL_NAMES done_key=$DONE_KEY done_ms=$DONE_MS layout=$layout_pct plain_key=$PLAIN_KEY redisson_key=$REDISSON_KEY" \
      </dev/null >/dev/null 2>>"$W/err/contender.$c" &
    CONT_PIDS+=($!)
  done
  [[ $peers == yes ]] || return 0
  local -a nargs=()
  if [[ $topo == cluster ]]; then
    for ((c = 1; c <= CLUSTER_N; c++)); do
      node=CLUSTER${c}_PORT
      nargs+=(--port "${!node}")
    done
    nargs+=(--cluster)
  else
    nargs=(--port "$REDIS_PORT")
  fi
  for l in plain redisson; do
    k=$PLAIN_KEY
    [[ $l == redisson ]] && k=$REDISSON_KEY
    : >"$W/hist/p-$l"
    setsid bash "$here/peer.sh" "$W" "$l" "$seed" "$k" "${nargs[@]}" </dev/null >/dev/null \
      2>>"$W/err/peer.$l" &
    CONT_PIDS+=($!)
  done
}

contenders_alive() {
  local p
  for p in "${CONT_PIDS[@]}"; do alive "$p" && return 0; done
  return 1
}
contenders_gone() { ! contenders_alive; }

# Resumes every job a fault froze (a stopped process ignores SIGTERM until continued).
resume_stopped() {
  local g
  [[ -s $W/stopped ]] || return 0
  while read -r g; do kill -CONT -- "-$g" 2>/dev/null; done <"$W/stopped"
}

# Ends the contenders: SIGTERM to each one's session (rlock forwards it to its command),
# SIGKILL after 10s.
end_contenders() {
  local p
  resume_stopped
  for p in "${CONT_PIDS[@]}"; do alive "$p" && kill -TERM -- "-$p" 2>/dev/null; done
  if ! poll_until 10 contenders_gone; then
    for p in "${CONT_PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null; done
    poll_until 5 contenders_gone
  fi
  for p in "${CONT_PIDS[@]}"; do wait "$p" 2>/dev/null; done
}

# Every process whose command line names our directory (rlock, its guard, cs.sh, sleep…),
# and every keeper of `acquire --while-pid` (a fork of the acquire, detached: its command
# line names no directory of ours, but its environment has the contenders' RLOCK_SOAK_DIR).
our_leftovers() {
  local f pid args st ppid
  _left=()
  node_pids
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}
    pid=${pid%/cmdline}
    [[ $pid == "$$" || $pid == "$REDIS_PID" || $pid == "$PROXY_PID" ]] && continue
    [[ " ${M_PID[*]} " == *" $pid "* || $_npids == *" $pid "* ]] && continue
    { read -r st <"/proc/$pid/stat"; } 2>/dev/null || continue
    st=${st##*) }
    read -r _ ppid _ <<<"$st"
    [[ $ppid == "$$" ]] && continue # our own command substitutions
    args=$(tr '\0' ' ' 2>/dev/null <"$f") || continue
    if [[ $args != *"$W"* && $args == *" --while-pid "* ]] &&
      grep -qzxF "RLOCK_SOAK_DIR=$W" "/proc/$pid/environ" 2>/dev/null; then
      args+=" $W"
    fi
    [[ $args == *"$W"* ]] && alive "$pid" && _left+=("$pid")
  done
  ((${#_left[@]} > 0))
}

# Stops the redis-server in use (REDIS_*) and gives back its port and socket.
stop_redis() {
  if [[ -n $REDIS_PID ]] && alive "$REDIS_PID"; then
    kill -TERM "$REDIS_PID" 2>/dev/null
    poll_until 10 eval '! alive $REDIS_PID' || kill -KILL "$REDIS_PID" 2>/dev/null
    wait "$REDIS_PID" 2>/dev/null
  fi
  [[ -n $PORT_CLAIM ]] && rmdir "$PORT_DIR/$PORT_CLAIM" 2>/dev/null
  [[ $REDIS_SOCK == /tmp/rlock-soak-sock.* ]] && rm -f "$REDIS_SOCK"
}

# Quorum mode: every master (a frozen one is continued first: it ignores SIGTERM till then).
stop_masters() {
  local m p
  while read -r p; do kill -CONT "$p" 2>/dev/null; done <"$W/stopped_masters"
  # one being (re)started when a signal came, not yet recorded as its master's
  [[ -n $REDIS_PID && " ${M_PID[*]} " != *" $REDIS_PID "* ]] && stop_redis
  for ((m = 0; m < masters; m++)); do
    use_master "$m"
    stop_redis
    M_PID[m]=""
  done
}

cleaned=0
cleanup() {
  ((cleaned)) && return
  cleaned=1
  touch "$W/stop" 2>/dev/null
  if ((${#CONT_PIDS[@]})); then end_contenders; fi
  if our_leftovers; then kill -KILL "${_left[@]}" 2>/dev/null; fi
  if [[ -n $PROXY_PID ]]; then
    kill -TERM "$PROXY_PID" 2>/dev/null
    poll_until 5 eval '! alive $PROXY_PID' || kill -KILL "$PROXY_PID" 2>/dev/null
    wait "$PROXY_PID" 2>/dev/null
  fi
  if ((replicated)); then
    stop_nodes
  elif ((masters > 1)); then
    stop_masters
  else
    stop_redis
  fi
  if ((keep == 0)); then rm -rf "$W"; fi
}
trap cleanup EXIT
interrupted() {
  keep=1
  echo "soak: interrupted; history (unchecked) kept in $W" >&2
  exit "$1"
}
trap 'interrupted 130' INT
trap 'interrupted 143' TERM
trap 'interrupted 129' HUP

# --- faults -------------------------------------------------------------------------------

# Lua snapshot of the lock: its token (or empty), its PTTL and the fence counter, atomic.
SNAP="return {redis.call('GET', KEYS[1]) or '', redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[2]) or '0'}"
snapshot() {
  local -a s
  mapfile -t s < <(rcli eval "$SNAP" 2 "$LOCK_KEY" "$FENCE_KEY")
  now_us
  _snap="tok=${s[0]:--} pttl=${s[1]:--} fence=${s[2]:--} at=$_now"
}

# Quorum mode, every master: _snap as snapshot's, where tok is the token that holds on a
# majority (else -), pttl its Q-th longest PTTL, fence the lowest fence counter (or that
# token's own fence, if lower): no run granted later, nor that holder, has a lower fence;
# _fmax is the highest fence counter (no run granted so far has a higher fence).
QSNAP="local t = redis.call('GET', KEYS[1]) or ''
local f = ''
if t ~= '' then f = redis.call('HGET', KEYS[1] .. ':h:' .. t, 'fence') or '' end
return {t, redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[2]) or '0', f}"
qsnapshot() {
  local m t best="" lo="" hi="" fences="" hf pt
  local -a s pttls
  local -A votes=() tp=()
  for ((m = 0; m < masters; m++)); do
    mapfile -t s < <(rcli_m "$m" eval "$QSNAP" 2 "$LOCK_KEY" "$FENCE_KEY")
    fences+="${fences:+,}${s[2]:--}"
    [[ ${s[2]:-} =~ ^[0-9]+$ ]] || continue
    if [[ -z $lo ]] || ((s[2] < lo)); then lo=${s[2]}; fi
    if [[ -z $hi ]] || ((s[2] > hi)); then hi=${s[2]}; fi
    t=${s[0]:-}
    [[ -n $t ]] || continue
    votes[$t]=$((${votes[$t]:-0} + 1))
    tp[$t]+="${s[1]} "
    if [[ ${s[3]:-} =~ ^[0-9]+$ ]]; then tp[$t:f]=${s[3]}; fi
  done
  for t in "${!votes[@]}"; do ((votes[$t] >= QUORUM)) && best=$t; done
  pt="-"
  if [[ -n $best ]]; then
    mapfile -t pttls < <(tr ' ' '\n' <<<"${tp[$best]}" | grep . | sort -rn)
    pt=${pttls[QUORUM - 1]}
    hf=${tp[$best:f]:-}
    if [[ -n $hf && -n $lo ]] && ((hf < lo)); then lo=$hf; fi
  fi
  now_us
  _fmax=${hi:--}
  _snap="tok=${best:--} pttl=$pt fence=${lo:--} at=$_now fences=$fences"
}

# pick_master: quorum mode, a random master is the one in use (REDIS_*), _m its number,
# _mdetail "master=I "; one server: master 0, no detail. done_master: master 0 again.
pick_master() {
  _m=0 _mdetail=""
  if ((replicated)); then
    pick_node
    return
  fi
  ((masters > 1)) || return 0
  rnd 0 $((masters - 1))
  _m=$_r _mdetail="master=$_r "
  use_master "$_m"
}
done_master() {
  ((masters > 1)) || return 0 # (replicated: the next fault picks the master again)
  save_master "$_m"
  use_master 0
}

fault_cut() {
  local seq
  seq=$(proxy_seq)
  kill -USR1 "$PROXY_PID"
  poll_until 5 proxy_seq_above "$seq" || _detail="unconfirmed=1"
  _detail+=" cuts=$(sed -n 's/^cuts=//p' "$W/proxy/state")"
}

fault_client_kill() {
  pick_master
  _detail="${_mdetail}killed=$(rcli client kill type normal | tr -d '\r\n ')"
  done_master
}

fault_script_flush() {
  pick_master
  _detail="${_mdetail}reply=$(rcli script flush | tr -d '\r\n ')"
  # (a server before Redis 7 answers an error: recorded, nothing else)
  _detail+=" functions=$(rcli function flush 2>&1 | tr -d '\r\n ' | cut -c1-40)"
  done_master
}

# An operator's pause (CLIENT PAUSE WRITE, 1s) on the master in use: writes, and key
# expiry, wait for it; renewals are late, nobody is granted meanwhile.
fault_pause() {
  pick_master
  _detail="${_mdetail}ms=1000 reply=$(rcli client pause 1000 write | tr -d '\r\n ')"
  now_us
  _t0=$_now
  sleep 1
  done_master
}

# maxmemory reached: the master in use gets a maxmemory just above its used_memory, with
# noeviction (every write refused with OOM once it is reached), for 2-4s, then its own back.
fault_oom() {
  local used old dur r1 r2
  pick_master
  rnd 2000 4000
  dur=$_r
  old=$(rcli config get maxmemory | tr -d '\r' | sed -n 2p)
  used=$(rcli info memory | tr -d '\r' | sed -n 's/^used_memory://p')
  [[ $used =~ ^[0-9]+$ ]] || used=0
  now_us
  _t0=$_now
  r1=$(rcli config set maxmemory $((used + 32768)) | tr -d '\r\n ')
  sleep "$(printf '%d.%03d' $((dur / 1000)) $((dur % 1000)))"
  r2=$(rcli config set maxmemory "${old:-0}" | tr -d '\r\n ')
  now_us
  _t1=$_now
  _detail="${_mdetail}ms=$dur used=$used maxmemory=$((used + 32768)) set=${r1:-none} restored=${r2:-none}"
  done_master
}

fault_restart() {
  local before after down rc=0
  pick_master
  snapshot
  before=$_snap
  redis_kill9
  rnd 0 400
  down=$_r
  sleep "$(printf '%d.%03d' 0 "$down")"
  redis_launch || rc=$?
  ((rc == 0)) || harness_error "redis-server did not come back after a restart (rc $rc)"
  snapshot
  after=${_snap//tok=/tok1=}
  after=${after//pttl=/pttl1=}
  after=${after//fence=/fence1=}
  after=${after//at=/at1=}
  _detail="${_mdetail}pid=$REDIS_PID sleep_ms=$down $before $after"
  done_master
}

# Quorum mode: SIGSTOP a random master (it neither answers nor expires keys meanwhile;
# the keys whose time ran out go at SIGCONT), then SIGCONT.
fault_master_stop() {
  local dur
  pick_master
  rnd 200 2500
  dur=$_r
  echo "$REDIS_PID" >>"$W/stopped_masters"
  now_us
  _t0=$_now
  kill -STOP "$REDIS_PID" 2>/dev/null
  sleep "$(printf '%d.%03d' $((dur / 1000)) $((dur % 1000)))"
  kill -CONT "$REDIS_PID" 2>/dev/null
  now_us
  _t1=$_now
  : >"$W/stopped_masters"
  _detail="${_mdetail}pid=$REDIS_PID stop_ms=$dur"
  done_master
}

fault_break() {
  local st=0 fence1
  if ((masters > 1)); then
    fault_break_quorum
    return
  fi
  local url="redis://127.0.0.1:$REDIS_PORT/0"
  if ((replicated)); then
    pick_node
    url=$TOPO_URL
  fi
  snapshot
  _detail="${_mdetail-}$_snap"
  now_us
  _t0=$_now
  timeout 15 "$rlock" --url "$url" break "$KEY" --yes \
    2>>"$W/faults.err" || st=$?
  now_us
  _t1=$_now
  fence1=$(rcli get "$FENCE_KEY" | tr -d '\r\n')
  _detail="status=$st $_detail fence1=${fence1:--}"
}

fault_break_quorum() {
  local st=0
  master_urls
  url_args "$_urls"
  qsnapshot
  _detail="$_snap"
  now_us
  _t0=$_now
  timeout 15 "$rlock" "${_uargs[@]}" break "$KEY" --yes 2>>"$W/faults.err" || st=$?
  now_us
  _t1=$_now
  qsnapshot
  _detail="status=$st $_detail fence1=$_fmax"
}

# Finds a holder (a live critical section) within 1s: sets _hold to "RUN CS_PID RLOCK_PID TTL".
find_holder() {
  local f line run cspid rpid ttl
  local -a cur
  cur=("$W"/cur/*)
  [[ -e ${cur[0]} ]] || return 1
  rnd 0 $((${#cur[@]} - 1))
  f=${cur[$_r]}
  { read -r line <"$f"; } 2>/dev/null || return 1
  read -r run cspid rpid ttl <<<"$line"
  [[ $cspid =~ ^[0-9]+$ && $rpid =~ ^[0-9]+$ && $ttl =~ ^[0-9]+$ ]] || return 1
  alive "$cspid" && alive "$rpid" || return 1
  [[ $(tr '\0' ' ' 2>/dev/null <"/proc/$cspid/cmdline") == *" $run "* ]] || return 1
  _hold="$run $cspid $rpid $ttl"
}

pgid_of() {
  local st
  { read -r st <"/proc/$1/stat"; } 2>/dev/null || return 1
  st=${st##*) }
  read -r _ _ _pg _ <<<"$st"
}

# group_orphaned PGID: 0 when no member of the process group has its parent in another
# group of the same session: the group is orphaned already (a contender's own session,
# a nested run under setsid or whose outer run has gone), so it cannot become orphaned
# while frozen. 1 when it still can: the kernel sends an orphaned group with a stopped
# member SIGHUP and SIGCONT at once (a nested run's group the moment its outer run's
# command exits), which would end the freeze early and signal the nested run.
group_orphaned() {
  local f st ppid pg sid ppg psid
  for f in /proc/[0-9]*/stat; do
    { read -r st <"$f"; } 2>/dev/null || continue
    st=${st##*) }
    read -r _ ppid pg sid _ <<<"$st"
    [[ $pg == "$1" ]] || continue
    { read -r st <"/proc/$ppid/stat"; } 2>/dev/null || continue
    st=${st##*) }
    read -r _ _ ppg psid _ <<<"$st"
    [[ $ppg != "$1" && $psid == "$sid" ]] && return 1
  done
  return 0
}

# frozen_state PID: 0 while the process is stopped (state T), 1 once it runs, 2 once it is
# gone (or a zombie).
frozen_state() {
  local st
  { read -r st <"/proc/$1/stat"; } 2>/dev/null || return 2
  st=${st##*) }
  case ${st:0:1} in
    T) return 0 ;;
    [ZX]) return 2 ;;
  esac
  return 1
}

# watch_frozen NAME PID: one poll of a frozen process's state (for fault_stop). Sets
# NAME_lo (µs after the stop it was last seen stopped) and, once it is seen running again
# or gone before the soak continued it, NAME_hi (µs after the stop: it ran by then) and
# NAME_how (ran or ended). A process not yet seen stopped 100ms after the SIGSTOP counts
# as continued at once.
# shellcheck disable=SC2034 # lo, hi, how: namerefs to the caller's variables
watch_frozen() {
  local -n lo=${1}_lo hi=${1}_hi how=${1}_how
  local st=0
  [[ -z $hi ]] || return 0
  frozen_state "$2" || st=$?
  if ((st == 0)); then
    lo=$((_now - _t0))
  elif ((st == 2)) || [[ -n $lo ]] || ((_now - _t0 >= 100000)); then
    hi=$((_now - _t0)) lo=${lo:-0} how=$([[ $st == 2 ]] && echo ended || echo ran)
  fi
}

# Finds a superseding job still waiting (an rlock run --supersede of ours whose critical
# section has not started): sets _waiter to "RUN RLOCK_PID". (The command lines are read
# with mapfile, without a process per /proc entry: the soak polls this.)
find_waiter() {
  local f pid c run
  local -a a
  for f in /proc/[0-9]*/cmdline; do
    mapfile -d '' -t a 2>/dev/null <"$f" || continue
    ((${#a[@]} > 6)) || continue
    [[ ${a[0]} != bash && " ${a[*]} " == *" --supersede "*" $here/cs.sh $W "* ]] || continue
    pid=${f#/proc/}
    pid=${pid%/cmdline}
    run=${a[-4]} # (cs.sh … RUN WORK_S TTL_MS SHAPE)
    c=${run%%.*}
    [[ -e $W/cur/$c ]] && continue # its section runs (or the contender's previous one)
    _waiter="$run $pid"
    return 0
  done
  return 1
}

# stop_waiter: a superseding job frozen while it waits, for longer than its place's lease
# (6s), so that it comes back after newer jobs joined: whether it then runs is the
# checker's supersede rule ("latest wins"). stop_waiter_skipped when none waits within 2s
# (or its group could become orphaned).
fault_stop_waiter() {
  local run pid pg dur
  if ! poll_until 2 find_waiter; then
    _kind=stop_waiter_skipped _detail="no superseding job waiting within 2s"
    return
  fi
  read -r run pid <<<"$_waiter"
  if ! pgid_of "$pid" || ! group_orphaned "$_pg"; then
    _kind=stop_waiter_skipped _detail="run=$run: it ended, or its group can still be orphaned"
    return
  fi
  pg=$_pg
  rnd 6500 8000
  dur=$_r
  echo "$pg" >>"$W/stopped"
  now_us
  _t0=$_now
  kill -STOP -- "-$pg" 2>/dev/null
  sleep "$(printf '%d.%03d' $((dur / 1000)) $((dur % 1000)))"
  kill -CONT -- "-$pg" 2>/dev/null
  now_us
  _t1=$_now
  _detail="run=$run stop_ms=$dur rlock_pid=$pid"
}

fault_stop() {
  local run cspid rpid ttl rpg cpg dur order end r_lo="" r_hi="" c_lo="" c_hi="" r_how="" c_how=""
  if ! poll_until 1 find_holder; then
    _kind=stop_skipped _detail="no holder found within 1s"
    return
  fi
  read -r run cspid rpid ttl <<<"$_hold"
  if ! pgid_of "$rpid" || ! { rpg=$_pg; pgid_of "$cspid"; }; then
    _kind=stop_skipped _detail="holder $run ended before it could be stopped"
    return
  fi
  cpg=$_pg
  # rlock's group (the one that renews the lease) must not become orphaned while frozen;
  # the critical section's group cannot: its parent, rlock, is frozen too.
  if ! group_orphaned "$rpg"; then
    _kind=stop_skipped _detail="run=$run: its rlock's process group can still be orphaned (a nested run whose outer run's command still runs)"
    return
  fi
  rnd 200 1200
  dur=$((ttl + _r))
  rnd 0 1
  if ((_r)); then order="cs-first"; else order="rlock-first"; fi
  echo "$rpg" >>"$W/stopped"
  echo "$cpg" >>"$W/stopped"
  now_us
  _t0=$_now
  end=$((_t0 + dur * 1000))
  kill -STOP -- "-$rpg" "-$cpg" 2>/dev/null
  # The freeze that counts is the real one: poll both processes' state every ~10ms until
  # the planned end, or until both run again (something else continued them).
  while now_us && ((_now < end)); do
    watch_frozen r "$rpid"
    watch_frozen c "$cspid"
    [[ -n $r_hi && -n $c_hi ]] && break
    sleep 0.01
  done
  now_us
  [[ -n $r_hi ]] || r_lo=$((_now - _t0))
  [[ -n $c_hi ]] || c_lo=$((_now - _t0))
  if [[ $order == cs-first ]]; then
    kill -CONT -- "-$cpg" "-$rpg" 2>/dev/null
  else
    kill -CONT -- "-$rpg" "-$cpg" 2>/dev/null
  fi
  now_us
  _t1=$_now
  [[ -n $r_hi ]] || r_hi=$((_now - _t0)) r_how=soak
  [[ -n $c_hi ]] || c_hi=$((_now - _t0)) c_how=soak
  _detail="run=$run ttl=$ttl stop_ms=$dur order=$order cs_pid=$cspid rlock_pid=$rpid"
  _detail+=" frozen_min_ms=$((r_lo / 1000)) frozen_ms=$(((r_hi + 999) / 1000))"
  _detail+=" cs_frozen_min_ms=$((c_lo / 1000)) cs_frozen_ms=$(((c_hi + 999) / 1000))"
  # how each ran again: "soak" (its SIGCONT), "ran" (something else continued it: the
  # kernel, for a group that became orphaned), "ended" (it was ending: it never stopped)
  _detail+=" continued=$r_how cs_continued=$c_how"
}

# The soak user loses one command the scripts use for 0.5-3s (on one master in quorum
# mode), then gets it back: a script refused part way must leave nothing half-written
# (docs/PROTOCOL.md), and the lock must be free and unblocked once the faults stop.
ACL_COMMANDS=(pexpire hset zadd incr set del publish zrem lpush evalsha fcall)
fault_acl() {
  local cmd dur r1 r2
  pick_master
  rnd 0 $((${#ACL_COMMANDS[@]} - 1))
  cmd=${ACL_COMMANDS[$_r]}
  rnd 500 3000
  dur=$_r
  now_us
  _t0=$_now
  r1=$(rcli acl setuser "$SOAK_USER" "-$cmd" | tr -d '\r\n ')
  sleep "$(printf '%d.%03d' $((dur / 1000)) $((dur % 1000)))"
  r2=$(rcli acl setuser "$SOAK_USER" "+$cmd" | tr -d '\r\n ')
  now_us
  _t1=$_now
  [[ $r2 == OK ]] || harness_error "could not give $SOAK_USER back '$cmd': ${r2:-no answer}"
  _detail="${_mdetail}cmd=$cmd ms=$dur taken=${r1:-none}"
  done_master
}

KINDS=(cut client_kill restart stop script_flush break acl pause oom)
WEIGHTS=(3 2 1 2 1 1 2 1 1)
if ((masters > 1)); then
  KINDS+=(master_stop)
  WEIGHTS=(3 2 2 2 1 1 2 1 1 2)
elif [[ $topo == sentinel ]]; then
  KINDS=(failover master_kill client_kill stop script_flush break pause oom)
  WEIGHTS=(3 3 1 2 1 1 1 1)
elif [[ $topo == cluster ]]; then
  KINDS=(failover master_kill migrate client_kill stop script_flush break pause oom)
  WEIGHTS=(3 3 3 1 2 1 1 1 1)
fi
# With superseding jobs (one server), stop_waiter is a kind of its own.
if ((supersede > 0)); then
  KINDS+=(stop_waiter)
  WEIGHTS+=(1)
fi
fault_no=0
first_kinds=()

pick_kind() {
  local total=0 w i
  if ((fault_no == 0)); then # each kind once, in a seeded order, first
    first_kinds=("${KINDS[@]}")
    for ((i = ${#first_kinds[@]} - 1; i > 0; i--)); do
      rnd 0 "$i"
      w=${first_kinds[$i]}
      first_kinds[i]=${first_kinds[$_r]}
      first_kinds[_r]=$w
    done
  fi
  if ((fault_no < ${#KINDS[@]})); then
    _kind=${first_kinds[$fault_no]}
    return
  fi
  for w in "${WEIGHTS[@]}"; do total=$((total + w)); done
  rnd 0 $((total - 1))
  for i in "${!KINDS[@]}"; do
    if ((_r < WEIGHTS[i])); then
      _kind=${KINDS[$i]}
      return
    fi
    _r=$((_r - WEIGHTS[i]))
  done
}

inject() {
  pick_kind
  _detail="" _t0="" _t1=""
  now_us
  local t0=$_now
  "fault_$_kind"
  now_us
  printf 'F %s %s %s %s\n' "$_kind" "${_t0:-$t0}" "${_t1:-$_now}" "$_detail" >>"$W/faults.log"
  fault_no=$((fault_no + 1))
}

acquisitions() {
  # (the pool's and the once-per-period key's runs do not count: the soak key's
  # acquisitions, and so the faults they meet, stay what they were without them)
  _acq=$(cat "$W"/hist/* 2>/dev/null | awk -v k="$KEY" '$1 == "E" && (NF < 8 || $8 == k) { n++ } END { print n + 0 }')
}

# --- the run ------------------------------------------------------------------------------

if ((replicated)); then
  topology_start
elif ((masters > 1)); then
  for ((m = 0; m < masters; m++)); do
    use_master "$m"
    redis_start
    save_master "$m"
  done
  use_master 0
else
  redis_start
fi
((replicated)) || proxy_start
now_us
T0=$_now
{
  echo "seed=$seed"
  echo "target=$target"
  echo "contenders=$contenders"
  echo "direct=$direct"
  echo "fault_every_ms=$fault_every"
  echo "max_time_s=$max_time"
  echo "persistence=$persistence"
  echo "stderr_faults=$stderr_faults"
  echo "short=$short"
  echo "nested_pct=$nested"
  echo "supersede_pct=$supersede"
  echo "shared_pct=$shared"
  echo "pool_pct=$pool"
  echo "done_pct=$done_pct"
  echo "priority_pct=$priority"
  echo "key=$KEY"
  echo "pool_key=$POOL_KEY"
  echo "pool_n=$POOL_N"
  echo "npool_key=$NPOOL_KEY"
  echo "npool_names=$NPOOL_NAMES"
  echo "layout_pct=$layout_pct"
  echo "plain_key=$PLAIN_KEY"
  echo "redisson_key=$REDISSON_KEY"
  echo "peers=${peers:-no}"
  echo "done_key=$DONE_KEY"
  echo "done_ms=$DONE_MS"
  echo "t0=$T0"
  echo "grace_ms=1000"
  echo "break_grace_ms=2000"
  echo "planned_grace_ms=300"
  echo "rlock=$rlock"
  [[ -z $rlock_alt ]] || echo "rlock_alt=$rlock_alt (odd contenders)"
  echo "rlock_version=$("$rlock" --version 2>&1 | head -n 1)"
  echo "commit=$(git -C "$(dirname "$rlock")" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "redis=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')"
  if ((masters > 1)); then
    master_urls
    echo "masters=$masters"
    echo "quorum=$QUORUM"
    echo "urls=$_urls"
  fi
  echo "topology=$topo"
  echo "replicas=$REPLICAS"
  echo "sync_replicas=$sync_replicas"
  ((replicated)) && echo "url=$TOPO_URL"
} >"$W/meta"

((masters == 1)) || log "quorum mode: $masters masters ($_urls), master 0 behind the proxy"
((replicated == 0)) || log "$topo mode ($TOPO_URL), $REPLICAS replica(s) per master," \
  "--sync-replicas $sync_replicas"
log "seed $seed, $contenders contenders ($direct direct), target $target acquisitions," \
  "a fault every ~${fault_every}ms, at most ${max_time}s; history in $W"
start_contenders

deadline=$((T0 + max_time * 1000000))
rnd $((fault_every / 2)) $((fault_every * 3 / 2))
next_fault=$((T0 + _r * 1000))
next_report=$((T0 + 10000000))
reached=0
while :; do
  acquisitions
  if ((_acq >= target)); then
    reached=1
    break
  fi
  now_us
  ((_now < deadline)) || break
  contenders_alive || harness_error "every contender has exited"
  if ((_now >= next_fault)); then
    inject
    now_us
    rnd $((fault_every / 2)) $((fault_every * 3 / 2))
    next_fault=$((_now + _r * 1000))
  fi
  if ((_now >= next_report)); then
    log "$(((_now - T0) / 1000000))s: $_acq/$target acquisitions, $fault_no faults"
    next_report=$((_now + 10000000))
  fi
  sleep 0.1
done

# Stop: every contender ends after its current run (bounded: --wait is at most 6s, a
# critical section at most 1.8 TTL), then anything left is terminated.
now_us
t_stop=$_now
touch "$W/stop"
log "stopping after $_acq acquisitions and $fault_no faults"
resume_stopped
poll_until 30 contenders_gone || log "contenders still running after 30s: terminating them"
end_contenders
now_us
t_end=$_now

# The locks must be free once every holder is gone (at most one TTL, 2s, later; the done
# key's period, 1s, after its last success).
lock_free() {
  local rc=0 k
  local -a lo
  for k in "${ALL_KEYS[@]}"; do
    rc=0 lo=()
    layout_of "$k"
    [[ -z $_layout ]] || lo=(--layout "$_layout")
    if ((replicated)); then
      timeout 10 "$rlock" --url "$TOPO_URL" "${lo[@]}" status "$k" >/dev/null 2>&1 || rc=$?
    elif ((masters > 1)); then
      master_urls
      url_args "$_urls"
      timeout 10 "$rlock" "${_uargs[@]}" "${lo[@]}" status "$k" >/dev/null 2>&1 || rc=$?
    else
      timeout 10 "$rlock" --url "redis://127.0.0.1:$REDIS_PORT/0" "${lo[@]}" status "$k" >/dev/null 2>&1 ||
        rc=$?
    fi
    ((rc == 1)) || return 1
  done
}

# The lock's keys left on the master in use (release tombstones counted: they expire soon).
redis_keys() {
  echo "$(rcli --scan --pattern "lock:*" | grep -v ':[rx]:' | sort | tr '\n' ' ')$(
    rcli --scan --pattern "lock:*:r:*" | wc -l) release tombstones, $(
    rcli --scan --pattern "lock:*:x:*" | wc -l) superseded marks"
}
final_free=no
poll_until 4 lock_free && final_free=yes

# ... and unblocked: a newcomer that does not wait gets in (no dead waiter ahead of it), and
# no key of the lock's state is left without an expiry (docs/PROTOCOL.md: the fence
# counter and the history's two keys are the only ones kept for good or for a week).
# A waiter that could not leave the line (a run that gave up on an unreachable or full
# server, in the last seconds before the stop) keeps its place for its place lease, 6s
# (docs/PROTOCOL.md, `:w:TOKEN`), and a newcomer rightly waits behind it until then:
# the newcomer is asked again for 10s (the lease and slack) before the lock counts as
# blocked, which a dead waiter would do for ever.
final_unblocked() {
  local rc=0 k args bad=""
  local -a still=()
  for k in "${UNBLOCK_KEYS[@]}"; do
    rc=0 args=("$k")
    [[ $k == "$KEY" && -n $AND_KEY ]] && args+=(--and "$AND_KEY")
    [[ $k == "$POOL_KEY" ]] && args+=(--limit "$POOL_N")
    [[ $k == "$NPOOL_KEY" ]] && args+=(--limit "$NPOOL_NAMES")
    layout_of "$k"
    [[ -z $_layout ]] || args+=(--layout "$_layout")
    [[ $k != "$POOL_KEY" && $k != "$NPOOL_KEY" ]] || ((pool > 0)) || continue
    [[ $k != "$DONE_KEY" ]] || ((done_pct > 0)) || continue
    if ((replicated)); then
      timeout 20 "$rlock" --url "$TOPO_URL" run -n "${args[@]}" -- true \
        >/dev/null 2>>"$W/faults.err" || rc=$?
    elif ((masters > 1)); then
      master_urls
      url_args "$_urls"
      timeout 20 "$rlock" "${_uargs[@]}" run -n "${args[@]}" -- true >/dev/null 2>>"$W/faults.err" ||
        rc=$?
    else
      timeout 20 "$rlock" --url "redis://$SOAK_AUTH@127.0.0.1:$REDIS_PORT/0" run -n "${args[@]}" \
        -- true >/dev/null 2>>"$W/faults.err" || rc=$?
    fi
    ((rc == 0)) || { bad+="${bad:+, }$k: no (status $rc)"; still+=("$k"); }
  done
  UNBLOCK_KEYS=("${still[@]}")
  [[ -n $unblocked_first ]] || unblocked_first=${bad:-yes}
  _unblocked=${bad:-yes}
  [[ $_unblocked == yes ]]
}
# The lock's keys without an expiry on the master in use, but for the three kept ones.
# (At most ten named, then how many in all.)
keys_without_expiry() {
  local k out="" n=0
  while read -r k; do
    [[ -n $k ]] || continue
    case $k in *:fence | *:log | *:live) continue ;; esac
    [[ $(rcli pttl "$k" | tr -d '\r') == -1 ]] || continue
    ((++n <= 10)) && out+="${out:+,}$k"
  done < <(for k in "${ALL_KEYS[@]}"; do
    layout_of "$k"
    case $_layout in
      plain) echo "lock:$k" ;;
      redisson) echo "$k" ;;
      *) rcli --scan --pattern "lock:{$k}*" ;;
    esac
  done)
  ((n <= 10)) || out+=" ($n in all)"
  echo "$out"
}
now_us
unblock_t0=$_now
UNBLOCK_KEYS=("${ALL_KEYS[@]}")
unblocked_first=""
poll_until 10 final_unblocked || true
now_us
unblocked_after_ms=$(((_now - unblock_t0) / 1000))
# The first join (server ms) of every superseding job, for the checker's supersede rule:
# DIR/sups, "TOKEN MS" lines (one server; docs/PROTOCOL.md, the :sups hash).
if ((supersede > 0)); then
  rcli hgetall "$LOCK_KEY:sups" | tr -d '\r' | paste - - | awk -F '\t' '$1 !~ / / { print $1, $2 }' >"$W/sups"
fi
noexpiry=""
if ((replicated)); then
  pick_node
  noexpiry=$(keys_without_expiry)
elif ((masters > 1)); then
  for ((m = 0; m < masters; m++)); do
    use_master "$m"
    k=$(keys_without_expiry)
    [[ -z $k ]] || noexpiry+="${noexpiry:+ }master$m:$k"
  done
  use_master 0
else
  noexpiry=$(keys_without_expiry)
fi
leftovers=0
if our_leftovers; then
  leftovers=${#_left[@]}
  {
    echo "leftover processes:"
    for p in "${_left[@]}"; do echo "  $p $(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline")"; done
  } >>"$W/meta.leftovers"
fi
{
  echo "t_stop=$t_stop"
  echo "t_end=$t_end"
  echo "reached=$reached"
  echo "final_free=$final_free"
  echo "final_unblocked=$_unblocked"
  echo "final_unblocked_after_ms=$unblocked_after_ms"
  echo "final_unblocked_first=$unblocked_first"
  echo "final_noexpiry=$noexpiry"
  echo "leftovers=$leftovers"
  # release tombstones (lock:{KEY}:r:TOKEN) expire by themselves within seconds: counted
  if ((replicated)); then
    pick_node
    echo "redis_keys=$_mdetail$(redis_keys)"
  elif ((masters > 1)); then
    keys=""
    for ((m = 0; m < masters; m++)); do
      use_master "$m"
      keys+="${keys:+; }master $m: $(redis_keys)"
    done
    use_master 0
    echo "redis_keys=$keys"
  else
    echo "redis_keys=$(redis_keys)"
  fi
} >>"$W/meta"

cleanup_keep=$keep
keep=1
cleanup
keep=$cleanup_keep

rc=0
bash "$here/check.sh" "$W" | tee "$W/summary.txt"
rc=${PIPESTATUS[0]}
if ((rc == 0 && keep == 0)); then
  rm -rf "$W"
else
  echo "history kept in $W"
fi
exit "$rc"
