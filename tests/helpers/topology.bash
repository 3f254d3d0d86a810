# shellcheck shell=bash
# Helpers for replicated and sharded Redis: independent masters for quorum mode, a Redis
# Cluster, a replica, and a master with replicas watched by sentinels. Load after
# helpers/redis:
#
#   load helpers/redis
#   load helpers/topology
#
# Every server is started by redis_start_named, so it is registered, verified and stopped
# by the default teardown_file (redis_stop_all) like any other.
#
# The soak (tests/soak/soak.sh --sentinel, --cluster) sources this file too, with its own
# versions of what it uses from helpers/redis: redis_start_named NAME [--config FILE]
# ARGS... (exports NAME_PORT, NAME_SOCK, NAME_URL), rcli_to NAME ARGS..., free_port
# (prints a port), _rlock_poll WHAT SECONDS CMD..., fail MESSAGE and BATS_FILE_TMPDIR (a
# directory for configuration files). Nothing else from bats may be used here.

# --- Quorum mode --------------------------------------------------------------------------

# masters_start P N [REDIS-SERVER ARGS...]: N independent masters ${P}1…${P}N
# (redis_start_named ${P}i ARGS...), and exports ${P}_URLS, their URLs separated by spaces
# (as RLOCK_URL holds a quorum's masters).
masters_start() {
  local p=$1 n=$2 i url_var urls=""
  shift 2
  for ((i = 1; i <= n; i++)); do
    redis_start_named "$p$i" "$@" || return 1
    url_var=$p${i}_URL
    urls+="${urls:+ }${!url_var}"
  done
  export "${p}_URLS=$urls"
}

# --- Redis Cluster ------------------------------------------------------------------------

_rlock_cluster_ok() {
  local info
  info=$(rcli_to "$1" cluster info 2>/dev/null | tr -d '\r')
  [[ $info == *cluster_state:ok* && $info == *cluster_slots_ok:16384* &&
    $info == *"cluster_known_nodes:$2"* ]]
}

# cluster_node_start NAME [REDIS-SERVER ARGS...]: server NAME in cluster mode
# (redis_start_named NAME --cluster-enabled yes --cluster-config-file nodes.conf ARGS...),
# a node of no Cluster yet, serving no slot. Its bus port is a claimed free port unless
# ARGS name one (Redis's default, port + 10000, may be another suite's server).
cluster_node_start() {
  local name=$1 bus
  shift
  if [[ " $* " != *" --cluster-port "* ]]; then
    bus=$(free_port) || return 1
    set -- --cluster-port "$bus" "$@"
  fi
  redis_start_named "$name" --cluster-enabled yes --cluster-config-file nodes.conf "$@"
}

# cluster_start [N=3 [R=0]]: a Redis Cluster of N masters with R replicas each on free
# loopback ports, made with `redis-cli --cluster create`. The servers are
# CLUSTER1…CLUSTERM, M = N*(R+1) (CLUSTER1_PORT, rcli_to CLUSTER2 …; redis-cli makes the
# first N the masters); exports CLUSTER_N (M: every node) and CLUSTER_URL (node 1, the seed
# the tests give rlock). Returns once every node reports cluster_state:ok and knows every
# other, and every replica is in sync.
cluster_start() {
  local masters=${1:-3} replicas=${2:-0} n i bus port_var
  local -a addrs=()
  n=$((masters * (replicas + 1)))
  for ((i = 1; i <= n; i++)); do
    bus=$(free_port) || return 1
    cluster_node_start "CLUSTER$i" --cluster-port "$bus" --cluster-node-timeout 2000 || return 1
    port_var="CLUSTER${i}_PORT"
    addrs+=("127.0.0.1:${!port_var}")
  done
  if ! redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$replicas" --cluster-yes \
    >"$BATS_FILE_TMPDIR/cluster-create.log" 2>&1; then
    fail "redis-cli --cluster create failed: $(tail -n 20 "$BATS_FILE_TMPDIR/cluster-create.log")"
    return 1
  fi
  for ((i = 1; i <= n; i++)); do
    _rlock_poll "CLUSTER$i to report cluster_state:ok with $n nodes" 20 \
      _rlock_cluster_ok "CLUSTER$i" "$n" || return 1
  done
  for ((i = masters + 1; i <= n; i++)); do
    _rlock_poll "replica CLUSTER$i to sync" 30 _rlock_replica_linked "CLUSTER$i" || return 1
  done
  export CLUSTER_N=$n CLUSTER_URL=$CLUSTER1_URL
}

# cluster_node_of KEY: prints i when CLUSTERi serves the slot of rlock's lock KEY
# (the Redis key lock:{KEY}): it answers EXISTS itself (a replica answers MOVED, a node
# that is down nothing).
cluster_node_of() {
  local i reply
  for ((i = 1; i <= CLUSTER_N; i++)); do
    reply=$(rcli_to "CLUSTER$i" exists "lock:{$1}" 2>&1)
    if [[ $reply =~ ^[0-9]+$ ]]; then
      echo "$i"
      return 0
    fi
  done
  fail "no node serves the slot of lock:{$1}"
}

# cluster_key_on I NAME: prints a lock KEY ("NAME-j") whose slot CLUSTERi serves.
cluster_key_on() {
  local j
  for ((j = 0; j < 1000; j++)); do
    if [[ $(cluster_node_of "$2-$j") == "$1" ]]; then
      echo "$2-$j"
      return 0
    fi
  done
  fail "no key NAME-j of CLUSTER$1 among 1000"
}

# cluster_slot KEY: the hash slot of lock KEY.
cluster_slot() {
  rcli_to CLUSTER1 cluster keyslot "lock:{$1}"
}

# cluster_migrate_slot SLOT FROM TO [PAUSE_S=0]: moves SLOT from CLUSTER$FROM to CLUSTER$TO
# the way `redis-cli --cluster reshard` does: IMPORTING on the target, MIGRATING on the
# source, MIGRATE of every key, then SETSLOT NODE on every master (replicas refuse it
# and learn it from their masters). PAUSE_S keeps the slot in the migrating state that
# long before the keys move (clients get ASK and TRYAGAIN meanwhile).
cluster_migrate_slot() {
  local slot=$1 from=$2 to=$3 pause=${4:-0} from_id to_id i to_port_var keys
  from_id=$(rcli_to "CLUSTER$from" cluster myid)
  to_id=$(rcli_to "CLUSTER$to" cluster myid)
  to_port_var="CLUSTER${to}_PORT"
  rcli_to "CLUSTER$to" cluster setslot "$slot" importing "$from_id" >/dev/null || return 1
  rcli_to "CLUSTER$from" cluster setslot "$slot" migrating "$to_id" >/dev/null || return 1
  if [[ $pause != 0 ]]; then sleep "$pause"; fi
  while true; do
    mapfile -t keys < <(rcli_to "CLUSTER$from" cluster getkeysinslot "$slot" 100 | grep .)
    ((${#keys[@]})) || break
    rcli_to "CLUSTER$from" migrate 127.0.0.1 "${!to_port_var}" "" 0 5000 keys "${keys[@]}" \
      >/dev/null || return 1
  done
  rcli_to "CLUSTER$to" cluster setslot "$slot" node "$to_id" >/dev/null || return 1
  rcli_to "CLUSTER$from" cluster setslot "$slot" node "$to_id" >/dev/null || return 1
  for ((i = 1; i <= CLUSTER_N; i++)); do
    if ((i != from && i != to)) && [[ $(rcli_to "CLUSTER$i" role 2>/dev/null | head -n 1) == master ]]; then
      rcli_to "CLUSTER$i" cluster setslot "$slot" node "$to_id" >/dev/null || return 1
    fi
  done
}

# --- Sentinel -----------------------------------------------------------------------------

# sentinel_start_named NAME MASTER_NAME MASTER_PORT [REDIS-SERVER ARGS...]: one sentinel
# (redis-server CONF --sentinel) that monitors 127.0.0.1:MASTER_PORT as MASTER_NAME with a
# quorum of 2, down-after 1s, failover-timeout 5s (SENTINEL_DOWN_AFTER_MS and
# SENTINEL_FAILOVER_TIMEOUT_MS change them). ARGS go to redis-server (e.g. TLS).
sentinel_start_named() {
  local name=$1 master=$2 mport=$3 conf
  shift 3
  conf="$BATS_FILE_TMPDIR/sentinel-$name.conf"
  {
    echo "sentinel monitor $master 127.0.0.1 $mport 2"
    echo "sentinel down-after-milliseconds $master ${SENTINEL_DOWN_AFTER_MS:-1000}"
    echo "sentinel failover-timeout $master ${SENTINEL_FAILOVER_TIMEOUT_MS:-5000}"
    echo "sentinel parallel-syncs $master 1"
  } >"$conf"
  redis_start_named "$name" --config "$conf" --sentinel "$@"
}

# sentinel_address_only_user SENTINEL...: on each SENTINEL (a name of
# sentinel_start_named), a user `getaddr` (password pw) that may only ask for the
# master's address (SENTINEL GET-MASTER-ADDR-BY-NAME): sentinels that answer it without
# an epoch.
sentinel_address_only_user() {
  local s
  for s in "$@"; do
    rcli_to "$s" acl setuser getaddr on '>pw' -@all '+sentinel|get-master-addr-by-name' \
      >/dev/null || return 1
  done
}

# _rlock_sentinel_sees NAME MASTER_NAME REPLICAS SENTINELS: the sentinel knows the master,
# REPLICAS replicas and SENTINELS other sentinels.
_rlock_sentinel_sees() {
  local r s
  r=$(rcli_to "$1" sentinel replicas "$2" 2>/dev/null | grep -cx 'slave' || true)
  s=$(rcli_to "$1" sentinel sentinels "$2" 2>/dev/null | grep -c '^runid$' || true)
  ((r >= $3 && s >= $4))
}

_rlock_replica_linked() {
  [[ $(rcli_to "$1" info replication 2>/dev/null | tr -d '\r') == *master_link_status:up* ]]
}

# replica_start NAME MASTER [REDIS-SERVER ARGS...]: server NAME (redis_start_named NAME
# ARGS... --replicaof 127.0.0.1 MASTER_PORT), a replica of server MASTER (REDIS, SMASTER,
# …). Returns once its link to the master is up (the first sync done).
replica_start() {
  local name=$1 port_var=${2}_PORT
  shift 2
  redis_start_named "$name" "$@" --replicaof 127.0.0.1 "${!port_var}" || return 1
  _rlock_poll "replica $name to sync" 20 _rlock_replica_linked "$name"
}

# sentinel_setup [MASTER_NAME=rlmaster [REPLICAS=1]]: a master (SMASTER), REPLICAS
# replicas (SREPLICA, SREPLICA2, …) and three sentinels (SENT1..SENT3). Exports
# SENTINEL_MASTER, SENTINEL_NODES (the data nodes' names, space-separated) and SENTINEL_URL
# (redis-sentinel://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3/MASTER_NAME). Returns once every
# replica is in sync and every sentinel knows the replicas and the two other sentinels.
sentinel_setup() {
  local m=${1:-rlmaster} replicas=${2:-1} i name nodes=SMASTER
  # No delay before a full sync (the default waits 5s for more replicas).
  redis_start_named SMASTER --repl-diskless-sync-delay 0 || return 1
  for ((i = 1; i <= replicas; i++)); do
    name=SREPLICA
    ((i == 1)) || name+=$i
    nodes+=" $name"
    replica_start "$name" SMASTER --repl-diskless-sync-delay 0 || return 1
  done
  for i in 1 2 3; do
    sentinel_start_named "SENT$i" "$m" "$SMASTER_PORT" || return 1
  done
  for i in 1 2 3; do
    _rlock_poll "sentinel $i to see the replicas and the other sentinels" 30 \
      _rlock_sentinel_sees "SENT$i" "$m" "$replicas" 2 || return 1
  done
  export SENTINEL_MASTER=$m SENTINEL_NODES=$nodes
  export SENTINEL_URL="redis-sentinel://127.0.0.1:$SENT1_PORT,127.0.0.1:$SENT2_PORT,127.0.0.1:$SENT3_PORT/$m"
}

# sentinel_master_port: the port the sentinels name as the master now (SENT1's view).
sentinel_master_port() {
  rcli_to SENT1 sentinel get-master-addr-by-name "$SENTINEL_MASTER" | sed -n 2p
}

# sentinel_node_at PORT: the data node (SMASTER, SREPLICA, …) that listens on PORT.
sentinel_node_at() {
  local name port_var
  for name in ${SENTINEL_NODES:-SMASTER SREPLICA}; do
    port_var=${name}_PORT
    if [[ $1 == "${!port_var}" ]]; then
      echo "$name"
      return 0
    fi
  done
  return 1
}

_rlock_all_sentinels_name() {
  local i
  for i in 1 2 3; do
    [[ $(rcli_to "SENT$i" sentinel get-master-addr-by-name "$SENTINEL_MASTER" | sed -n 2p) == "$1" ]] ||
      return 1
  done
  [[ $(rcli_to "$(sentinel_node_at "$1")" role | head -n 1) == master ]]
}

_rlock_is_replica_of() {
  local info
  info=$(rcli_to "$1" info replication 2>/dev/null | tr -d '\r')
  [[ $info == *role:slave* && $info == *"master_port:$2"* && $info == *master_link_status:up* ]]
}

# _rlock_replicated NAME [N=1]: a write on master NAME, then WAIT on the same connection:
# true once N replicas have acknowledged it, and so everything written before it.
_rlock_replicated() {
  local n=${2:-1}
  [[ $(printf 'SET rlock-test-barrier 1\nWAIT %s 2000\n' "$n" | rcli_to "$1" | tail -n 1) == "$n" ]]
}

# _rlock_demoted OLD NEW: true once OLD replicates port NEW. The sentinels turn a former
# master into a replica only after it has reported itself a master for a while, from an
# INFO they ask for every 10 s, and not at all while they are in TILT mode (their timer
# ran late by 2 s: a loaded runner does that); past _RLOCK_DEMOTE_AFTER the test does what
# they would do, once (REPLICAOF of the master every sentinel names).
_rlock_demoted() {
  _rlock_is_replica_of "$1" "$2" && return 0
  _rlock_now
  if ((_RLOCK_DEMOTE_AFTER && _RLOCK_NOW >= _RLOCK_DEMOTE_AFTER)); then
    _RLOCK_DEMOTE_AFTER=0
    { echo "# the sentinels had not demoted the former master: REPLICAOF sent by the test" >&3; } 2>/dev/null
    rcli_to "$1" replicaof 127.0.0.1 "$2" >/dev/null 2>&1
  fi
  return 1
}

_rlock_failover_started() {
  [[ $(rcli_to SENT1 sentinel failover "$SENTINEL_MASTER" 2>&1) == OK ]]
}

# _rlock_failover_to NEW OLD: true once every sentinel names port NEW the master. While
# SENT1 still names OLD with no failover in progress, the failover was aborted (a loaded
# machine let failover-timeout pass before the promotion was acknowledged: the replica
# was never promoted), so it is asked again; never once SENT1 names NEW, which would
# fail back.
_rlock_failover_to() {
  _rlock_all_sentinels_name "$1" && return 0
  [[ $(rcli_to SENT1 sentinel get-master-addr-by-name "$SENTINEL_MASTER" | sed -n 2p) == "$2" ]] ||
    return 1
  [[ $(rcli_to SENT1 sentinel master "$SENTINEL_MASTER" | awk 'p {print; exit} $0 == "flags" {p = 1}') \
    == *failover_in_progress* ]] && return 1
  _rlock_failover_started || true
  return 1
}

# sentinel_failover: SENTINEL FAILOVER through SENT1, once the replica has everything the
# master has (asynchronous replication would otherwise lose the latest writes, which is
# what a failover can do, but not what these tests are about). Returns once every
# sentinel names the former replica as the master, it says so itself (ROLE), and the
# former master has become its replica, in sync.
sentinel_failover() {
  local old new
  old=$(sentinel_master_port)
  if [[ $old == "$SMASTER_PORT" ]]; then new=$SREPLICA_PORT; else new=$SMASTER_PORT; fi
  _rlock_poll "the replica to have every write" 20 _rlock_replicated "$(sentinel_node_at "$old")" ||
    return 1
  # Refused (NOGOODSLAVE, INPROG) while a sentinel still thinks the replica unfit, e.g.
  # right after the previous failover: asked again until it starts.
  _rlock_poll "SENTINEL FAILOVER to be accepted" 30 _rlock_failover_started || return 1
  _rlock_poll "the sentinels to name 127.0.0.1:$new the master" 60 \
    _rlock_failover_to "$new" "$old" || return 1
  _rlock_now
  _RLOCK_DEMOTE_AFTER=$((_RLOCK_NOW + 20000 * RLOCK_TEST_SLACK))
  _rlock_poll "the former master to replicate the new one" 90 \
    _rlock_demoted "$(sentinel_node_at "$old")" "$new" || return 1
  _rlock_poll "the new replica to have every write" 20 _rlock_replicated "$(sentinel_node_at "$new")"
}

# --- A planned failover that stays half done -----------------------------------------------

# slow_failover_setup P NAME: a master (${P}MASTER), a replica the sentinels may promote
# (${P}REPLICA), a replica they never promote (${P}SLOW, replica-priority 0), and three
# sentinels (${P}SENT1..3) watching them as NAME with down-after 20s and failover-timeout
# 60s. Exports ${P}_URL1 (${P}SENT1 listed first) and ${P}_URL2 (${P}SENT2 first).
slow_failover_setup() {
  local p=$1 m=$2 i mp
  redis_start_named "${p}MASTER" --repl-diskless-sync-delay 0 || return 1
  mp=${p}MASTER_PORT
  replica_start "${p}REPLICA" "${p}MASTER" --repl-diskless-sync-delay 0 || return 1
  replica_start "${p}SLOW" "${p}MASTER" --replica-priority 0 || return 1
  for i in 1 2 3; do
    SENTINEL_DOWN_AFTER_MS=20000 SENTINEL_FAILOVER_TIMEOUT_MS=60000 \
      sentinel_start_named "${p}SENT$i" "$m" "${!mp}" || return 1
  done
  for i in 1 2 3; do
    _rlock_poll "sentinel ${p}SENT$i to see two replicas and the other sentinels" 30 \
      _rlock_sentinel_sees "${p}SENT$i" "$m" 2 2 || return 1
  done
  local s1=${p}SENT1_PORT s2=${p}SENT2_PORT s3=${p}SENT3_PORT
  export "${p}_URL1=redis-sentinel://127.0.0.1:${!s1},127.0.0.1:${!s2},127.0.0.1:${!s3}/$m"
  export "${p}_URL2=redis-sentinel://127.0.0.1:${!s2},127.0.0.1:${!s3},127.0.0.1:${!s1}/$m"
}

# _rlock_names SENTINEL NAME PORT: get-master-addr-by-name of SENTINEL names port PORT.
_rlock_names() {
  [[ $(rcli_to "$1" sentinel get-master-addr-by-name "$2" | sed -n 2p) == "$3" ]]
}

# _rlock_master_field SENTINEL NAME FIELD: a field of SENTINEL MASTER NAME.
_rlock_master_field() {
  rcli_to "$1" sentinel master "$2" | tr -d '\r' | sed -n "/^$3\$/{n;p;q}"
}

_rlock_planned_window() {
  local p=$1 m=$2 i old_var=${1}MASTER_PORT new_var=${1}REPLICA_PORT
  for i in 1 2 3; do _rlock_names "${p}SENT$i" "$m" "${!new_var}" || return 1; done
  [[ $(_rlock_master_field "${p}SENT1" "$m" port) == "${!old_var}" ]] &&
    [[ $(rcli_to "${p}MASTER" role | head -n 1) == master ]] &&
    [[ $(rcli_to "${p}REPLICA" role | head -n 1) == master ]]
}

# slow_failover_start P NAME: with ${P}SLOW paused (so that it cannot be reconfigured),
# SENTINEL FAILOVER through ${P}SENT1, which promotes ${P}REPLICA and then waits for ${P}SLOW
# (up to down-after or failover-timeout). Returns once every sentinel's
# get-master-addr-by-name names ${P}REPLICA while ${P}SENT1's SENTINEL MASTER still names
# ${P}MASTER, and both answer ROLE with "master": the window in which two could hold the lock (man page, CHOOSING A
# TOPOLOGY: Sentinel). It lasts until
# ${P}SLOW resumes, or the other sentinels turn ${P}MASTER into a replica (some 8s after
# they switched).
slow_failover_start() {
  local p=$1 m=$2
  _rlock_poll "both replicas to have every write" 20 _rlock_replicated "${p}MASTER" 2 || return 1
  redis_pause "${p}SLOW" || return 1
  _rlock_poll "SENTINEL FAILOVER to be accepted" 30 \
    eval "[[ \$(rcli_to ${p}SENT1 sentinel failover $m 2>&1) == OK ]]" || return 1
  _rlock_poll "the half-done failover of $m" 30 _rlock_planned_window "$p" "$m"
}

# planned_window_open P NAME: ${P}SENT1 still fails over (its SENTINEL MASTER names ${P}MASTER).
planned_window_open() {
  local old_var=${1}MASTER_PORT
  [[ $(_rlock_master_field "${1}SENT1" "$2" port) == "${!old_var}" ]]
}
