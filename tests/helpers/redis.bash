# shellcheck shell=bash
# Test helpers for rlock's bats suites. Every .bats file starts with
#
#   load helpers/redis
#
# and typically
#
#   setup_file() { redis_start; }          # exports REDIS_PORT, REDIS_PID, RLOCK_URL...
#
# A default teardown_file (redis_stop_all) is defined below; a file that defines its own
# teardown_file must call redis_stop_all itself.
#
# What the helpers promise:
# - Every server and helper process they start is theirs: ports are picked at random
#   below the kernel's ephemeral range, reserved across parallel suites, and a redis
#   that cannot bind is retried on another port; `INFO server` process_id is checked
#   against the pid that was started.
# - Background processes never inherit bats's descriptors (fd 3 and its copies), so a
#   run never hangs at the end.
# - State lives in $BATS_FILE_TMPDIR/.rlock-registry, one file per named process, so a
#   server restarted in one test has its new pid in the next test and in teardown_file
#   (each test is a separate process; plain variables would not carry over).
# - Waiting is polling with a bound (50ms steps) and fails the test with a message;
#   nothing sleeps and hopes.
#
# Names: NAME is an upper-case shell identifier (REDIS, TLS, SECOND, PROXY...). It
# prefixes the exported variables, and is the last, optional argument of the helpers
# that act on a started process.

# --- bats libraries ---------------------------------------------------------------------

_rlock_load_bats_libs() {
  if declare -F bats_load_library >/dev/null; then
    case ":${BATS_LIB_PATH:-}:" in
      *:/usr/lib/bats:*) ;;
      *) export BATS_LIB_PATH="${BATS_LIB_PATH:+$BATS_LIB_PATH:}/usr/lib/bats" ;;
    esac
    bats_load_library bats-support && bats_load_library bats-assert && return 0
  fi
  # shellcheck source=/dev/null
  source /usr/lib/bats/bats-support/load.bash
  # shellcheck source=/dev/null
  source /usr/lib/bats/bats-assert/load.bash
}
_rlock_load_bats_libs

# --- paths ------------------------------------------------------------------------------

# The suites run inside CI systems too: a CI's variables would label every holder
# (--label's default), and RLOCK_* of the caller would change what rlock does.
unset GITHUB_ACTIONS GITLAB_CI JENKINS_URL BUILDKITE RLOCK_LABEL RLOCK_HISTORY RLOCK_LAYOUT

RLOCK="${RLOCK_BIN:-$BATS_TEST_DIRNAME/../build/rlock}"
HELPERS="${RLOCK_HELPERS:-$BATS_TEST_DIRNAME/../build/tests/helpers}"
export RLOCK HELPERS
: "${BATS_FILE_TMPDIR:?helpers/redis.bash must be loaded from a bats test file}"
_RLOCK_REG="$BATS_FILE_TMPDIR/.rlock-registry"
# (not under TMPDIR: scripts/test.sh gives each run a TMPDIR of its own, and the claims
# must be seen by every suite on the machine)
_RLOCK_PORT_DIR="${RLOCK_TEST_PORT_DIR:-/tmp/rlock-test-ports}"

# --- time and polling -------------------------------------------------------------------

# Timing slack. Bounds in the suites come in two kinds:
# - bounds that measure no promise (how long to wait for a server to start, for a line to
#   appear, for a run to finish at all): generous at factor 1, and multiplied by
#   RLOCK_TEST_SLACK through `slack MS` (every wait_until/_rlock_poll timeout is);
# - bounds that measure a promise (give up after about --command-timeout, not twice it; a release
#   wakes the next waiter at once, not at the next poll): never scaled; a comment beside
#   each says which promise, and the test is built so that the promise leaves room for a
#   machine three times slower than an idle one (e.g. a longer --command-timeout, so the fixed
#   start-up cost is small beside it).
# RLOCK_TEST_SLACK (a whole number, default 1) is the one factor: ctest sets it to 3 for a
# sanitizer build (ASan/UBSan make every start and exit slower; tests/CMakeLists.txt also
# multiplies each suite's limit by it). The suites must pass at the default on a machine
# three times slower than an idle one (RLOCK_TEST_LOAD in scripts/test.sh).
: "${RLOCK_TEST_SLACK:=1}"
[[ $RLOCK_TEST_SLACK =~ ^[1-9][0-9]?$ ]] || {
  echo "RLOCK_TEST_SLACK must be a whole number from 1 to 99, not '$RLOCK_TEST_SLACK'" >&2
  exit 1
}
export RLOCK_TEST_SLACK

# slack MS: MS scaled by RLOCK_TEST_SLACK (for bounds that measure no promise).
slack() { echo $(($1 * RLOCK_TEST_SLACK)); }

# Sets _RLOCK_NOW to the current time in milliseconds (no fork).
_rlock_now() {
  local us=${EPOCHREALTIME//[!0-9]/}
  _RLOCK_NOW=$((10#$us / 1000))
}

# now_ms: the wall clock in milliseconds (for measuring elapsed time in tests).
now_ms() {
  _rlock_now
  echo "$_RLOCK_NOW"
}

# Prints seconds ("10", "0.5", "2.25") as milliseconds.
_rlock_ms() {
  local s=$1 int frac=""
  [[ $s =~ ^[0-9]*(\.[0-9]*)?$ && $s == *[0-9]* ]] || {
    echo "not a number of seconds: '$s'" >&2
    return 1
  }
  int=${s%%.*}
  [[ $s == *.* ]] && frac=${s#*.}
  frac="${frac}000"
  echo $((10#${int:-0} * 1000 + 10#${frac:0:3}))
}

# _rlock_poll DESCRIPTION TIMEOUT_S COMMAND [ARGS...]
# Runs COMMAND every 50ms until it succeeds; fails the test when TIMEOUT_S passes first.
_rlock_poll() {
  local what=$1 timeout=$2 limit deadline
  shift 2
  limit=$(_rlock_ms "$timeout") || return 1
  limit=$((limit * RLOCK_TEST_SLACK))
  _rlock_now
  deadline=$((_RLOCK_NOW + limit))
  until "$@"; do
    _rlock_now
    if ((_RLOCK_NOW >= deadline)); then
      if ((RLOCK_TEST_SLACK > 1)); then
        fail "timed out after ${timeout}s (times $RLOCK_TEST_SLACK, the slack) waiting for $what"
      else
        fail "timed out after ${timeout}s waiting for $what"
      fi
      return 1
    fi
    sleep 0.05
  done
}

# wait_until 'SHELL CONDITION' [TIMEOUT_S=10]
# Evaluates the condition every 50ms until it is true; fails the test on timeout with
# a message that quotes the condition.
wait_until() {
  _rlock_poll "condition: $1" "${2:-10}" eval "$1"
}

# wait_renewal NAME KEY [TIMEOUT_S=15]: waits until a renewal reaches server NAME: KEY's
# PTTL goes up between two reads. (A renewal sets the same PTTL each time, so one read
# taken just after the last renewal may never be beaten by a later read.)
wait_renewal() {
  _RLOCK_LAST_PTTL=-3
  _rlock_poll "a renewal of $2 on $1" "${3:-15}" _rlock_pttl_rose "$1" "$2"
}

_rlock_pttl_rose() {
  local prev=$_RLOCK_LAST_PTTL
  _RLOCK_LAST_PTTL=$(rcli_to "$1" pttl "$2")
  ((prev >= 0 && _RLOCK_LAST_PTTL > prev))
}

# tmux_kill SOCKET_NAME: ends the tmux server of a test (tmux -L NAME) and removes its
# socket file, which tmux leaves behind (one per test, piling up on a dev machine).
tmux_kill() {
  [[ -n $1 ]] || return 0
  tmux -L "$1" kill-server 2>/dev/null || true
  rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$1"
}

# wait_for_file PATH [TIMEOUT_S=10]
# Waits until PATH exists (any type); fails the test on timeout.
wait_for_file() {
  _rlock_poll "file $1 to appear" "${2:-10}" test -e "$1"
}

# wait_for_content FILE [SECONDS]: FILE exists and is not empty. For a file whose content
# is read next (a pid, an exit status): `echo $$ >F` creates F before it writes, and a
# reader between the two reads nothing.
wait_for_content() {
  _rlock_poll "file $1 to be written" "${2:-10}" test -s "$1"
}

# --- processes --------------------------------------------------------------------------

# Prints the state letter of PID from /proc (R S D T Z...), or nothing when it is gone.
_rlock_pstate() {
  local stat
  [[ $1 =~ ^[1-9][0-9]*$ ]] || return 0
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
  stat=${stat##*) }
  echo "${stat:0:1}"
}

# True while PID exists and is not a zombie (a process reparented to a PID 1 that does
# not reap stays a zombie forever, so kill -0 alone is not enough).
_rlock_alive() {
  local stat
  # ("" would read /proc//stat, which is /proc/stat: alive for ever)
  [[ $1 =~ ^[1-9][0-9]*$ ]] || {
    echo "_rlock_alive: '$1' is not a pid" >&2
    return 2
  }
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} != [ZX] ]]
}

_rlock_dead() {
  local st=0
  _rlock_alive "$1" || st=$?
  ((st == 1))
}
_rlock_stopped() { [[ $(_rlock_pstate "$1") == [Tt] ]]; }
_rlock_not_stopped() { ! _rlock_stopped "$1"; }

# _rlock_close_fds: closes every descriptor above 2 of the current (sub)shell: bats's fd 3
# and its copies, so that a process started from it never holds a bats pipe open.
_rlock_close_fds() {
  local fd
  for fd in /proc/self/fd/*; do
    fd=${fd##*/}
    if ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
}

# _rlock_spawn [--job] STDOUT STDERR COMMAND [ARGS...]
# Starts COMMAND in the background with stdin from /dev/null, output appended to the given
# files and every descriptor above 2 closed (bats's fd 3 and its copies), so the process
# never holds a bats pipe open. Sets _RLOCK_SPAWNED to its pid. Without --job it leaves
# the job table (no "Killed" notice from bats when a test kill -9s it; the shell still
# reaps it); with --job it stays, for `wait` to collect its status.
_rlock_spawn() {
  local job=0
  if [[ $1 == --job ]]; then
    job=1
    shift
  fi
  local out=$1 err=$2
  shift 2
  (
    _rlock_close_fds
    exec "$@" </dev/null >>"$out" 2>>"$err"
  ) &
  _RLOCK_SPAWNED=$!
  if ((!job)); then disown "$_RLOCK_SPAWNED" 2>/dev/null || true; fi
}

# _rlock_terminate PID: SIGCONT + SIGTERM, then SIGKILL if it is still there after 5s.
_rlock_terminate() {
  local pid=$1
  _rlock_alive "$pid" || return 0
  kill -CONT "$pid" 2>/dev/null || true
  kill -TERM "$pid" 2>/dev/null || true
  if ! _rlock_poll "pid $pid to exit after SIGTERM" 5 _rlock_dead "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
    _rlock_poll "pid $pid to exit after SIGKILL" 5 _rlock_dead "$pid"
  fi
}

# --- ports ------------------------------------------------------------------------------

# Claims PORT for this suite with an atomic mkdir in a directory shared by all suites on
# the machine. A claim older than 300s (the ctest timeout of a file) is stale and taken
# over; the rename makes the take-over atomic too.
_rlock_port_claim() {
  local d="$_RLOCK_PORT_DIR/$1" mtime
  mkdir "$d" 2>/dev/null && return 0
  mtime=$(stat -c %Y "$d" 2>/dev/null) || return 1
  ((EPOCHSECONDS - mtime > 300)) || return 1
  mv "$d" "$d.stale.$BASHPID" 2>/dev/null || return 1
  rm -rf "$d.stale.$BASHPID"
  mkdir "$d" 2>/dev/null
}

# Refreshes the claim on PORT (before a kill -9 and restart on the same port).
_rlock_port_touch() {
  if mkdir -p "$_RLOCK_PORT_DIR/$1" 2>/dev/null; then touch "$_RLOCK_PORT_DIR/$1"; fi
}

_rlock_port_release() { rmdir "$_RLOCK_PORT_DIR/$1" 2>/dev/null || true; }

# free_port: prints a loopback TCP port that nothing listens on and that no other suite
# on this machine has claimed in the last 300s. Ports come from 20000 up to the start of
# the kernel's ephemeral range (so outgoing connections never sit on them). Whoever
# binds it may still lose a race with a foreign program; redis_start retries then.
free_port() {
  local lo=32768 base span p i
  { read -r lo _ </proc/sys/net/ipv4/ip_local_port_range; } 2>/dev/null || true
  if ((lo > 21000)); then
    base=20000 span=$((lo - 20000))
  else
    base=20000 span=40000
  fi
  mkdir -p "$_RLOCK_PORT_DIR"
  for ((i = 0; i < 500; i++)); do
    p=$((base + (RANDOM * 32768 + RANDOM) % span))
    _rlock_port_claim "$p" || continue
    if { true <>"/dev/tcp/127.0.0.1/$p"; } 2>/dev/null; then
      continue # a foreign listener; leave the claim, it ages out
    fi
    echo "$p"
    return 0
  done
  fail "free_port: no free port found in 500 tries"
}

# --- registry ---------------------------------------------------------------------------

_rlock_check_name() {
  [[ $1 =~ ^[A-Z][A-Z0-9_]*$ ]] || {
    fail "not a valid NAME (upper-case identifier): '$1'"
    return 1
  }
}

# _rlock_reg_write NAME KEY=VALUE... [-- ARGS...]: (re)writes NAME's registry entry.
_rlock_reg_write() {
  local name=$1 kv
  shift
  mkdir -p "$_RLOCK_REG"
  {
    while (($#)) && [[ $1 != -- ]]; do
      kv=$1
      printf '%s=%q\n' "${kv%%=*}" "${kv#*=}"
      shift
    done
    if [[ ${1:-} == -- ]]; then
      shift
      printf 'args=('
      (($#)) && printf '%q ' "$@"
      printf ')\n'
    fi
  } >"$_RLOCK_REG/$name.tmp"
  mv "$_RLOCK_REG/$name.tmp" "$_RLOCK_REG/$name"
}

_rlock_reg_has() { [[ -f $_RLOCK_REG/$1 ]]; }

# `eval "$_RLOCK_ENTRY_LOCALS"` declares, in the calling function, the locals that a
# registry entry sets, so sourcing one never leaks globals.
_RLOCK_ENTRY_LOCALS='local kind="" pid="" port="" tcp_port="" tls_port="" dir="" sock=""
  local sockdir="" password="" claim=""; local -a args=()'

# Exports NAME_* for one registry entry: NAME_PID, NAME_PORT, NAME_DIR and, for redis,
# NAME_SOCK, NAME_URL, NAME_TLS_PORT/NAME_TLS_URL (TLS on), NAME_PASSWORD (requirepass).
# shellcheck disable=SC2154 # the entry's fields are the eval-declared locals
_rlock_export() {
  local name=$1 url=""
  eval "$_RLOCK_ENTRY_LOCALS"
  # shellcheck source=/dev/null
  source "$_RLOCK_REG/$name" || return 1
  export "${name}_PID=$pid" "${name}_PORT=$port" "${name}_DIR=$dir"
  [[ $kind == redis ]] || return 0
  if [[ $tcp_port != 0 ]]; then
    url="redis://127.0.0.1:$tcp_port/0"
  else
    url="rediss://127.0.0.1:$tls_port/0"
  fi
  export "${name}_SOCK=$sock" "${name}_URL=$url"
  if [[ -n $tls_port && $tls_port != 0 ]]; then
    export "${name}_TLS_PORT=$tls_port" "${name}_TLS_URL=rediss://127.0.0.1:$tls_port/0"
  fi
  if [[ -n $password ]]; then export "${name}_PASSWORD=$password"; fi
  if [[ $name == REDIS ]]; then export RLOCK_URL="$url"; fi
}

_rlock_unexport() {
  local v
  for v in PID PORT DIR SOCK URL TLS_PORT TLS_URL PASSWORD; do unset "${1}_$v"; done
  if [[ $1 == REDIS ]]; then unset RLOCK_URL; fi
}

# Runs at load time in every bats process (the file's and each test's): no setting of
# the caller's shell may point rlock or redis-cli at a server the suite did not start,
# and every registered process's current variables are exported again.
_rlock_refresh() {
  local f
  unset RLOCK_URL REDIS_URL RLOCK_PASSWORD REDISCLI_AUTH
  for f in "$_RLOCK_REG"/*; do
    [[ -f $f && $f != *.tmp ]] && _rlock_export "${f##*/}"
  done
  if [[ -d $BATS_FILE_TMPDIR/tls ]]; then export TLS_DIR="$BATS_FILE_TMPDIR/tls"; fi
  return 0
}

# --- redis-server -----------------------------------------------------------------------

# Prints the value after the last occurrence of option $1 among the remaining arguments.
_rlock_last_opt() {
  local opt=$1 val=""
  shift
  while (($#)); do
    if [[ $1 == "$opt" && $# -ge 2 ]]; then val=$2; fi
    shift
  done
  echo "$val"
}

# Prints process_id from INFO server through CLI ARGS, or nothing if it can't be read
# (e.g. the server wants a client certificate or ACL credentials we do not know).
_rlock_info_pid() {
  timeout 5 redis-cli --no-auth-warning "$@" info server 2>/dev/null |
    tr -d '\r' | sed -n 's/^process_id://p'
}

# _rlock_redis_ready PID SOCK: true once the server answers on its unix socket (any
# reply counts: a server with requirepass answers NOAUTH) and has loaded its data (a
# server restarted with its AOF answers LOADING meanwhile, which rlock takes as a failure
# of that server: on a slow machine a test would meet it).
_rlock_redis_ready() {
  _rlock_alive "$1" || return 0 # stop polling; the caller sees the death
  local reply
  reply=$(timeout 2 redis-cli -s "$2" ping 2>/dev/null)
  [[ -n $reply && $reply != LOADING* ]]
}

# _rlock_redis_launch PID_VAR DIR SOCK ARGS...: starts redis-server and waits for it.
# Returns 0 when ready, 2 when it died because its port was taken, 1 otherwise.
_rlock_redis_launch() {
  local -n _pid_out=$1
  local dir=$2 sock=$3
  shift 3
  _rlock_spawn "$dir/redis.log" "$dir/redis.log" redis-server "$@"
  _pid_out=$_RLOCK_SPAWNED
  _rlock_poll "redis-server (pid $_pid_out, $dir) to answer PING" 10 \
    _rlock_redis_ready "$_pid_out" "$sock" || {
    _rlock_terminate "$_pid_out"
    return 1
  }
  _rlock_alive "$_pid_out" && return 0
  grep -q -i 'address already in use' "$dir/redis.log" && return 2
  fail "redis-server exited at start; its log ($dir/redis.log):
$(tail -n 20 "$dir/redis.log")"
  return 1
}

# _rlock_redis_verify PID TCP_PORT TLS_PORT PASSWORD ARGS...: checks that the servers
# on the TCP and TLS ports report PID. Returns 1 on a mismatch (someone else's server).
_rlock_redis_verify() {
  local pid=$1 tcp=$2 tls=$3 pw=$4 got
  shift 4
  local -a auth=()
  if [[ -n $pw ]]; then auth=(-a "$pw"); fi
  if [[ -n $tcp && $tcp != 0 ]]; then
    got=$(_rlock_info_pid -h 127.0.0.1 -p "$tcp" "${auth[@]}")
    [[ -z $got || $got == "$pid" ]] || return 1
  fi
  if [[ -n $tls && $tls != 0 ]]; then
    local cert key
    cert=$(_rlock_last_opt --tls-cert-file "$@")
    key=$(_rlock_last_opt --tls-key-file "$@")
    local -a tlsargs=(--tls --insecure)
    if [[ -n $cert && -n $key ]]; then tlsargs+=(--cert "$cert" --key "$key"); fi
    got=$(_rlock_info_pid "${tlsargs[@]}" -h 127.0.0.1 -p "$tls" "${auth[@]}")
    [[ -z $got || $got == "$pid" ]] || return 1
  fi
  return 0
}

# redis_start_named NAME [--config FILE] [REDIS-SERVER ARGS...]
# Starts a private redis-server on a free loopback port (FILE, if given, is its
# configuration file: the first argument of redis-server, as a sentinel needs):
#   redis-server --port P --bind 127.0.0.1 --save '' --appendonly no --daemonize no
#     --dir $BATS_FILE_TMPDIR/redis-P --unixsocket $BATS_FILE_TMPDIR/redis-P/redis.sock
#     --unixsocketperm 700 ARGS...
# ARGS come last so they override (e.g. --port 0 to turn plain TCP off); the word
# @PORT@ in ARGS is replaced by P (e.g. --tls-port @PORT@). Waits up to 10s for PING on
# the unix socket, checks that INFO server on the TCP/TLS port reports the started pid,
# and retries with another port if the port was taken. Exports:
#   NAME_PORT  the TCP port, or the TLS port when TCP is off (--port 0)
#   NAME_PID NAME_DIR NAME_SOCK
#   NAME_URL   redis://127.0.0.1:PORT/0 (rediss://… when TCP is off)
#   NAME_TLS_PORT NAME_TLS_URL  when --tls-port is set
#   NAME_PASSWORD               when --requirepass is set (rcli/rcli_to use it)
redis_start_named() {
  local name=$1 conf=""
  shift
  if [[ ${1:-} == --config ]]; then
    conf=$2
    shift 2
  fi
  _rlock_check_name "$name" || return 1
  if _rlock_reg_has "$name"; then
    fail "redis_start_named: $name is already started"
    return 1
  fi
  local attempt port dir sock sockdir pid rc tcp tls pw
  local -a args
  for ((attempt = 1; attempt <= 8; attempt++)); do
    port=$(free_port) || return 1
    dir="$BATS_FILE_TMPDIR/redis-$port"
    rm -rf "$dir" && mkdir -p "$dir"
    sock="$dir/redis.sock" sockdir=""
    if ((${#sock} > 100)); then # sun_path holds 108 bytes
      sockdir=$(mktemp -d /tmp/rlk.XXXXXX) && sock="$sockdir/redis.sock"
    fi
    args=(${conf:+"$conf"} --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no
      --dir "$dir" --unixsocket "$sock" --unixsocketperm 700 "${@//@PORT@/$port}")
    rc=0
    _rlock_redis_launch pid "$dir" "$sock" "${args[@]}" || rc=$?
    tcp=$(_rlock_last_opt --port "${args[@]}")
    tls=$(_rlock_last_opt --tls-port "${args[@]}")
    pw=$(_rlock_last_opt --requirepass "${args[@]}")
    if ((rc == 0)) && ! _rlock_redis_verify "$pid" "$tcp" "$tls" "$pw" "${args[@]}"; then
      _rlock_terminate "$pid"
      rc=2
    fi
    if ((rc == 0)); then
      local primary=$tcp
      if [[ $tcp == 0 ]]; then primary=$tls; fi
      _rlock_reg_write "$name" kind=redis pid="$pid" port="$primary" \
        tcp_port="$tcp" tls_port="$tls" dir="$dir" sock="$sock" sockdir="$sockdir" \
        password="$pw" claim="$port" -- "${args[@]}"
      _rlock_export "$name"
      return 0
    fi
    [[ -n $sockdir ]] && rm -rf "$sockdir"
    ((rc == 2)) || return 1
  done
  fail "redis_start_named $name: no usable port after 8 attempts"
}

# redis_start [REDIS-SERVER ARGS...]: redis_start_named REDIS; also exports
# RLOCK_URL=redis://127.0.0.1:$REDIS_PORT/0, so plain `"$RLOCK" …` talks to it.
redis_start() { redis_start_named REDIS "$@"; }

# _rlock_entry NAME: loads NAME's registry entry into the caller's locals
# (kind pid port tcp_port tls_port dir sock sockdir password claim args).
_rlock_entry() {
  _rlock_reg_has "$1" || {
    fail "nothing named $1 was started"
    return 1
  }
  # shellcheck source=/dev/null
  source "$_RLOCK_REG/$1"
}

# redis_stop [NAME=REDIS]: stops the server (SIGCONT, SIGTERM, SIGKILL after 5s),
# frees its port claim and unsets NAME_*.
redis_stop() {
  local name=${1:-REDIS}
  eval "$_RLOCK_ENTRY_LOCALS"
  _rlock_reg_has "$name" || return 0
  _rlock_entry "$name" || return 1
  _rlock_terminate "$pid"
  [[ -n $sockdir ]] && rm -rf "$sockdir"
  [[ -n $claim ]] && _rlock_port_release "$claim"
  rm -f "$_RLOCK_REG/$name"
  _rlock_unexport "$name"
}

# redis_stop_all: stops every redis-server, garbage_server and fault_proxy this file
# started (for teardown_file; it is the default teardown_file).
redis_stop_all() {
  local f
  for f in "$_RLOCK_REG"/*; do
    [[ -f $f && $f != *.tmp ]] && redis_stop "${f##*/}"
  done
  return 0
}

teardown_file() { redis_stop_all; }

# redis_recover_all: redis_recover for every server, proxy_heal for every proxy.
redis_recover_all() {
  local f name kind
  for f in "$_RLOCK_REG"/*; do
    [[ -f $f && $f != *.tmp ]] || continue
    name=${f##*/}
    kind=$(sed -n 's/^kind=//p' "$f")
    case $kind in
      redis) redis_recover "$name" ;;
      proxy) proxy_heal "$name" ;;
    esac
  done
  return 0
}

# The per-test teardown of every suite: ends what bg_start/rlock_bg started in the test,
# then undoes fault injection (a paused or killed server, a partitioned proxy), so one
# failing fault test does not make every later test time out. A suite with more to undo
# defines suite_teardown (called last) instead of its own teardown.
teardown() {
  bg_cleanup
  redis_recover_all
  if declare -F suite_teardown >/dev/null; then suite_teardown || true; fi
}

# redis_kill [NAME=REDIS]: kill -9, like a crash; the port stays claimed for a restart.
redis_kill() {
  local name=${1:-REDIS}
  eval "$_RLOCK_ENTRY_LOCALS"
  _rlock_entry "$name" || return 1
  [[ -n $claim ]] && _rlock_port_touch "$claim"
  kill -KILL "$pid" 2>/dev/null || true
  _rlock_poll "redis-server $name (pid $pid) to die" 5 _rlock_dead "$pid"
}

# redis_restart [NAME=REDIS]: kill -9 (if still running) and start again with the same
# arguments: same port(s), same dir, no data (nothing is saved). Updates NAME_PID.
redis_restart() {
  local name=${1:-REDIS} newpid rc=0
  eval "$_RLOCK_ENTRY_LOCALS"
  _rlock_entry "$name" || return 1
  redis_kill "$name" || return 1
  _rlock_redis_launch newpid "$dir" "$sock" "${args[@]}" || rc=$?
  if ((rc == 2)); then
    fail "redis_restart $name: port $port was taken while the server was down"
    return 1
  fi
  ((rc == 0)) || return 1
  if ! _rlock_redis_verify "$newpid" "$tcp_port" "$tls_port" "$password" "${args[@]}"; then
    _rlock_terminate "$newpid"
    fail "redis_restart $name: another server answers on port $port"
    return 1
  fi
  _rlock_reg_write "$name" kind=redis pid="$newpid" port="$port" tcp_port="$tcp_port" \
    tls_port="$tls_port" dir="$dir" sock="$sock" sockdir="$sockdir" password="$password" \
    claim="$claim" -- "${args[@]}"
  _rlock_export "$name"
}

# redis_pause [NAME=REDIS]: SIGSTOP; returns once the kernel shows it stopped. The
# server then accepts TCP connections (kernel backlog) but answers nothing.
redis_pause() {
  local name=${1:-REDIS}
  eval "$_RLOCK_ENTRY_LOCALS"
  _rlock_entry "$name" || return 1
  kill -STOP "$pid"
  _rlock_poll "redis-server $name (pid $pid) to stop" 5 _rlock_stopped "$pid"
}

# redis_resume [NAME=REDIS]: SIGCONT; returns once it runs again.
redis_resume() {
  local name=${1:-REDIS}
  eval "$_RLOCK_ENTRY_LOCALS"
  _rlock_entry "$name" || return 1
  kill -CONT "$pid"
  _rlock_poll "redis-server $name (pid $pid) to continue" 5 _rlock_not_stopped "$pid"
}

# redis_recover [NAME=REDIS]: for a test's teardown after fault injection: resumes a
# paused server, restarts a dead one, does nothing to a healthy one.
redis_recover() {
  local name=${1:-REDIS}
  eval "$_RLOCK_ENTRY_LOCALS"
  _rlock_entry "$name" || return 1
  if ! _rlock_alive "$pid"; then
    redis_restart "$name"
  elif _rlock_stopped "$pid"; then
    redis_resume "$name"
  fi
}

# rcli ARGS...: redis-cli against the REDIS server (TCP port, no auth warning).
rcli() {
  local -a auth=()
  if [[ -n ${REDIS_PASSWORD:-} ]]; then auth=(-a "$REDIS_PASSWORD"); fi
  redis-cli -h 127.0.0.1 -p "$REDIS_PORT" --no-auth-warning "${auth[@]}" "$@"
}

# blocked_in_blpop [NAME]: how many clients of the server (NAME: one of redis_start_named;
# default the file's) are blocked in BLPOP: waiters in a line wait on their lists so.
blocked_in_blpop() {
  if [[ -n ${1:-} ]]; then
    rcli_to "$1" client list | grep -c ' flags=b .*cmd=blpop' || true
  else
    rcli client list | grep -c ' flags=b .*cmd=blpop' || true
  fi
}

# rcli_to NAME ARGS...: redis-cli against server NAME through its unix socket (works for
# TLS-only servers too).
rcli_to() {
  local sock_var="${1}_SOCK" pw_var="${1}_PASSWORD"
  shift
  local -a auth=()
  if [[ -n ${!pw_var:-} ]]; then auth=(-a "${!pw_var}"); fi
  redis-cli -s "${!sock_var}" --no-auth-warning "${auth[@]}" "$@"
}

# --- ACL users --------------------------------------------------------------------------

# acl_lock_user USER PASSWORD [RULES...]: on the REDIS server, ACL SETUSER USER on
# >PASSWORD ~lock:* &lock:* +@all RULES...: a user with rlock's keys and channels and
# every command, less what RULES take away (e.g. -eval).
acl_lock_user() {
  local user=$1 pw=$2
  shift 2
  rcli acl setuser "$user" on ">$pw" '~lock:*' '&lock:*' '+@all' "$@" >/dev/null
}

# acl_readonly_user [--on NAME] USER PASSWORD: ACL SETUSER USER on >PASSWORD ~* &* +@read
# +@connection +@pubsub +@scripting +time: a user that may read every key, subscribe and
# run scripts (writing ones refuse it), on server NAME (default REDIS).
acl_readonly_user() {
  local on=REDIS
  if [[ $1 == --on ]]; then
    on=$2
    shift 2
  fi
  rcli_to "$on" acl setuser "$1" on ">$2" '~*' '&*' +@read +@connection +@pubsub \
    +@scripting +time >/dev/null
}

# --- TLS --------------------------------------------------------------------------------

_rlock_openssl_cnf() {
  cat >"$TLS_DIR/openssl.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = placeholder
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
EOF
}

# _rlock_gen_ca NAME CN: NAME.crt / NAME.key, a self-signed CA.
_rlock_gen_ca() {
  openssl req -x509 -new -nodes -newkey rsa:2048 -sha256 -days 3650 \
    -config "$TLS_DIR/openssl.cnf" -extensions ca -subj "/CN=$2" \
    -keyout "$TLS_DIR/$1.key" -out "$TLS_DIR/$1.crt" 2>>"$TLS_DIR/openssl.log"
}

# _rlock_gen_cert NAME CA CN EXTENDED_KEY_USAGE [SUBJECT_ALT_NAME]
_rlock_gen_cert() {
  local name=$1 ca=$2 cn=$3 eku=$4 san=${5:-}
  {
    echo "[leaf]"
    echo "basicConstraints = CA:FALSE"
    echo "keyUsage = critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage = $eku"
    echo "subjectKeyIdentifier = hash"
    echo "authorityKeyIdentifier = keyid"
    if [[ -n $san ]]; then echo "subjectAltName = $san"; fi
  } >"$TLS_DIR/$name.ext"
  openssl req -new -nodes -newkey rsa:2048 -config "$TLS_DIR/openssl.cnf" -subj "/CN=$cn" \
    -keyout "$TLS_DIR/$name.key" -out "$TLS_DIR/$name.csr" 2>>"$TLS_DIR/openssl.log" &&
    openssl x509 -req -sha256 -days 3650 -in "$TLS_DIR/$name.csr" \
      -CA "$TLS_DIR/$ca.crt" -CAkey "$TLS_DIR/$ca.key" -CAcreateserial \
      -CAserial "$TLS_DIR/$ca.srl" -extfile "$TLS_DIR/$name.ext" -extensions leaf \
      -out "$TLS_DIR/$name.crt" 2>>"$TLS_DIR/openssl.log"
}

# tls_setup [REDIS-SERVER ARGS...]
# Writes test certificates to TLS_DIR=$BATS_FILE_TMPDIR/tls (RSA 2048, 10 years):
#   ca.crt/.key                  the test CA
#   server.crt/.key              CN=localhost, SAN DNS:localhost + IP:127.0.0.1, by ca
#                                (EKU serverAuth+clientAuth)
#   client.crt/.key              CN=rlock-client, by ca (clientAuth)
#   wrong-ca.crt/.key            an unrelated CA
#   wrong-server.crt/.key        same names as server.crt, signed by wrong-ca
#   wrong-client.crt/.key        a client certificate signed by wrong-ca
# then starts redis_start_named TLS --port 0 --tls-port P --tls-cert-file server.crt
#   --tls-key-file server.key --tls-ca-cert-file ca.crt --tls-auth-clients optional ARGS
# Exports TLS_DIR, TLS_PORT (the TLS port), TLS_URL=rediss://127.0.0.1:P/0, TLS_SOCK,
# TLS_PID.
tls_setup() {
  export TLS_DIR="$BATS_FILE_TMPDIR/tls"
  mkdir -p "$TLS_DIR"
  _rlock_openssl_cnf
  if ! {
    _rlock_gen_ca ca "rlock test CA" &&
      _rlock_gen_ca wrong-ca "rlock wrong CA" &&
      _rlock_gen_cert server ca localhost serverAuth,clientAuth "DNS:localhost,IP:127.0.0.1" &&
      _rlock_gen_cert client ca rlock-client clientAuth &&
      _rlock_gen_cert wrong-server wrong-ca localhost serverAuth "DNS:localhost,IP:127.0.0.1" &&
      _rlock_gen_cert wrong-client wrong-ca rlock-client clientAuth
  }; then
    fail "tls_setup: openssl failed: $(tail -n 20 "$TLS_DIR/openssl.log")"
    return 1
  fi
  tls_start_named TLS server optional "$@" || return 1
  # The server named TLS exported its own directory as TLS_DIR: the certificates win (as
  # in every later test of the file, see _rlock_refresh).
  export TLS_DIR="$BATS_FILE_TMPDIR/tls"
}

# tls_server_args ARRAY CERT AUTH_CLIENTS: sets the array named ARRAY to the redis-server
# arguments of a server on TLS alone: --port 0 --tls-port @PORT@ --tls-cert-file CERT.crt
# --tls-key-file CERT.key (CERT: one of tls_setup's certificates) --tls-ca-cert-file
# ca.crt --tls-auth-clients AUTH_CLIENTS (yes, no or optional), files of TLS_DIR.
tls_server_args() {
  local -n _tls_args_out=$1
  _tls_args_out=(--port 0 --tls-port @PORT@
    --tls-cert-file "$TLS_DIR/$2.crt" --tls-key-file "$TLS_DIR/$2.key"
    --tls-ca-cert-file "$TLS_DIR/ca.crt" --tls-auth-clients "$3")
}

# tls_start_named NAME CERT AUTH_CLIENTS [REDIS-SERVER ARGS...]: after tls_setup, starts
# server NAME on TLS alone (redis_start_named NAME with tls_server_args CERT AUTH_CLIENTS,
# then ARGS).
tls_start_named() {
  local name=$1
  local -a tls_args
  tls_server_args tls_args "$2" "$3"
  shift 3
  redis_start_named "$name" "${tls_args[@]}" "$@"
}

# tls_cli ARGS...: redis-cli over TLS to the TLS server, verifying it with the test CA.
tls_cli() {
  # shellcheck disable=SC2153 # exported by tls_setup
  redis-cli --tls --cacert "$TLS_DIR/ca.crt" -h 127.0.0.1 -p "$TLS_PORT" --no-auth-warning "$@"
}

# --- garbage_server and fault_proxy -----------------------------------------------------

_rlock_helper_bin() {
  [[ -x $HELPERS/$1 ]] || {
    fail "$HELPERS/$1 is missing: build the test helpers first (cmake --build build)"
    return 1
  }
}

_rlock_has_port_line() {
  _rlock_alive "$2" || return 0 # stop polling; the caller sees the death
  grep -q -x '[0-9]\+' "$1" 2>/dev/null
}

# _rlock_helper_start NAME KIND DIR COMMAND...: starts a helper that prints its port,
# waits for the port (10s), registers and exports NAME_PORT, NAME_PID, NAME_DIR.
_rlock_helper_start() {
  local name=$1 kind=$2 dir=$3 pid port
  shift 3
  _rlock_check_name "$name" || return 1
  if _rlock_reg_has "$name"; then
    fail "$name is already started"
    return 1
  fi
  mkdir -p "$dir"
  : >"$dir/stdout"
  _rlock_spawn "$dir/stdout" "$dir/stderr" "$@"
  pid=$_RLOCK_SPAWNED
  _rlock_poll "$kind $name to print its port" 10 _rlock_has_port_line "$dir/stdout" "$pid" || {
    _rlock_terminate "$pid"
    return 1
  }
  if ! _rlock_alive "$pid"; then
    fail "$kind $name exited at start: $(cat "$dir/stderr")"
    return 1
  fi
  read -r port <"$dir/stdout"
  _rlock_reg_write "$name" kind="$kind" pid="$pid" port="$port" dir="$dir"
  _rlock_export "$name"
}

# garbage_start_named NAME MODE: starts garbage_server on a kernel-picked port.
# MODE: garbage | close | silent | badtype | reply=TEXT (see garbage_server.cc).
# Exports NAME_PORT, NAME_PID, NAME_DIR. Stop with redis_stop NAME (or redis_stop_all).
garbage_start_named() {
  local name=$1 mode=$2 dir="$BATS_FILE_TMPDIR/helper-$1"
  _rlock_helper_bin garbage_server || return 1
  _rlock_helper_start "$name" garbage "$dir" "$HELPERS/garbage_server" 0 "$mode" "$dir/pid"
}

# garbage_start MODE: garbage_start_named GARBAGE MODE (GARBAGE_PORT, GARBAGE_PID).
garbage_start() { garbage_start_named GARBAGE "$1"; }

# proxy_start_named NAME TARGET_PORT [TARGET_HOST=127.0.0.1] [DELAY_MS=0 (0.5: decimals)]: starts
# fault_proxy on a kernel-picked port in front of TARGET. Exports NAME_PORT, NAME_PID,
# NAME_DIR (its control directory, with the `state` file) and
# NAME_URL=redis://127.0.0.1:NAME_PORT/0. With DELAY_MS, everything the target sends
# reaches the client DELAY_MS later (requests are not delayed): a master that always
# answers last, after the others, while it acts on each request on time.
proxy_start_named() {
  local name=$1 target_port=$2 target_host=${3:-127.0.0.1} delay=${4:-0}
  local dir="$BATS_FILE_TMPDIR/helper-$1"
  _rlock_helper_bin fault_proxy || return 1
  _rlock_helper_start "$name" proxy "$dir" \
    "$HELPERS/fault_proxy" 0 "$target_host" "$target_port" "$dir" "$delay" || return 1
  local port_var="${name}_PORT"
  export "${name}_URL=redis://127.0.0.1:${!port_var}/0"
}

# proxy_start TARGET_PORT [TARGET_HOST]: proxy_start_named PROXY … (PROXY_PORT, PROXY_URL…).
proxy_start() { proxy_start_named PROXY "$@"; }

# proxy_start_resetting NAME N TARGET_PORT: proxy_start_named NAME TARGET_PORT whose first
# N connections are reset (RST) as soon as they are accepted (CONTROL_DIR/reset_first): a
# server going down just as rlock connects. `proxy_state resets NAME` counts them.
proxy_start_resetting() {
  local dir="$BATS_FILE_TMPDIR/helper-$1"
  mkdir -p "$dir"
  printf '%s\n' "$2" >"$dir/reset_first"
  proxy_start_named "$1" "$3"
}

# proxy_state KEY [NAME=PROXY]: prints KEY (mode, armed, seq, cuts, accepted, active, port, pid,
# delay_ms, resets) from the proxy's state file.
proxy_state() {
  local dir_var="${2:-PROXY}_DIR"
  sed -n "s/^$1=//p" "${!dir_var}/state"
}

_rlock_proxy_seq_above() { (($(proxy_state seq "$1") > $2)); }

# _rlock_proxy_signal SIGNAL NAME: sends SIGNAL and returns once the proxy handled it.
_rlock_proxy_signal() {
  local name=$2 seq
  eval "$_RLOCK_ENTRY_LOCALS"
  _rlock_entry "$name" || return 1
  seq=$(proxy_state seq "$name")
  kill "-$1" "$pid"
  _rlock_poll "fault_proxy $name to handle SIG$1" 5 _rlock_proxy_seq_above "$name" "$seq"
}

# proxy_cut [NAME=PROXY]: closes every connection through the proxy (both sides) and
# returns once done. New connections are forwarded as before.
proxy_cut() { _rlock_proxy_signal USR1 "${1:-PROXY}"; }

# proxy_arm_cut [NAME=PROXY]: the next bytes a client sends through the proxy are not
# forwarded: that connection is cut instead (once). Returns once armed; `proxy_state armed`
# goes back to 0 when the cut happened. (NAME_DIR/reset, if a test writes it, turns the
# cut into a reset and may name a word the cut waits for: see fault_proxy.cc.)
proxy_arm_cut() {
  local dir_var="${1:-PROXY}_DIR"
  rm -f "${!dir_var}/after"
  _rlock_proxy_signal WINCH "${1:-PROXY}"
}

# proxy_arm_lose_reply WORD [NAME=PROXY]: the next bytes a client sends with WORD in them
# are forwarded, and that connection is cut (both sides, once) when the target's reply
# arrives, which is dropped: the request ran on the server, the client never hears how.
# Returns once armed; `proxy_state armed` goes back to 0 when the request went through,
# `cuts` grows when its reply was dropped.
proxy_arm_lose_reply() {
  local dir_var="${2:-PROXY}_DIR"
  printf '%s\n' "$1" >"${!dir_var}/after"
  _rlock_proxy_signal WINCH "${2:-PROXY}"
}

# proxy_blackhole [NAME=PROXY]: toggles blackhole mode and returns once it took effect.
proxy_blackhole() { _rlock_proxy_signal USR2 "${1:-PROXY}"; }

# proxy_partition [NAME=PROXY]: blackhole on (no-op if already on). Connections stay
# open, every byte either way is dropped.
proxy_partition() {
  [[ $(proxy_state mode "${1:-PROXY}") == blackhole ]] || proxy_blackhole "${1:-PROXY}"
}

# proxy_heal [NAME=PROXY]: blackhole off (no-op if already off); new data flows again.
proxy_heal() {
  [[ $(proxy_state mode "${1:-PROXY}") == forward ]] || proxy_blackhole "${1:-PROXY}"
}

_rlock_proxy_active_at_least() { (($(proxy_state active "$2") >= $1)); }

# proxy_wait_active N [NAME=PROXY] [TIMEOUT_S=10]: waits until at least N connections
# are open through the proxy (e.g. until rlock has connected, before cutting).
proxy_wait_active() {
  local name=${2:-PROXY}
  _rlock_poll "$1 connections through fault_proxy $name" "${3:-10}" \
    _rlock_proxy_active_at_least "$1" "$name"
}

# --- background commands ----------------------------------------------------------------

# bg_start NAME CMD...
# Starts CMD in the background with stdin from /dev/null, stdout in
# $BATS_TEST_TMPDIR/NAME.out, stderr in NAME.err and every descriptor above 2 closed (so
# bats never waits for it). Sets BG_PID and appends it to BG_PIDS; the default teardown
# (bg_cleanup) ends it if it is still running after the test, and everything it started.
# CMD and all its descendants carry RLOCK_TEST_MARK=$BATS_TEST_TMPDIR in their
# environment (the mark bg_kill_leftovers looks for).
bg_start() {
  local name=$1 d=$BATS_TEST_TMPDIR
  shift
  : >"$d/$name.out"
  : >"$d/$name.err"
  _rlock_spawn --job "$d/$name.out" "$d/$name.err" env RLOCK_TEST_MARK="$d" "$@"
  BG_PID=$_RLOCK_SPAWNED
  BG_PIDS+=("$BG_PID")
  echo "$BG_PID" >>"$d/.rlock-bg-pids"
}

# rlock_bg NAME [RLOCK ARGS...]: bg_start NAME env --default-signal "$RLOCK" ARGS...
# Every signal starts at its default disposition: a script's background job would
# otherwise start with SIGINT and SIGQUIT ignored, and rlock (like a shell) keeps them
# ignored, so a test's SIGINT would never arrive.
rlock_bg() {
  local name=$1
  shift
  bg_start "$name" env --default-signal "$RLOCK" "$@"
}

# bg_wait PID [TIMEOUT_S=20]: waits, bounded, for a bg_start process to end and sets
# BG_STATUS to its exit status (128+N when killed by signal N). Fails the test if it is
# still running after TIMEOUT_S.
# shellcheck disable=SC2034 # BG_STATUS is for the caller
bg_wait() {
  _rlock_poll "pid $1 to exit" "${2:-20}" _rlock_dead "$1" || return 1
  BG_STATUS=0
  wait "$1" || BG_STATUS=$?
}

# bg_cleanup: SIGTERM (then SIGKILL after 5s) to every bg_start process of this test
# that is still running, so that an rlock among them can release its lock; then
# bg_kill_leftovers for whatever they left behind.
bg_cleanup() {
  local pid
  if [[ -f $BATS_TEST_TMPDIR/.rlock-bg-pids ]]; then
    while read -r pid; do
      _rlock_terminate "$pid" || true
    done <"$BATS_TEST_TMPDIR/.rlock-bg-pids"
    rm -f "$BATS_TEST_TMPDIR/.rlock-bg-pids"
  fi
  bg_kill_leftovers
}

# _rlock_marked: the pids of the live processes whose environment has this test's mark.
# (/proc/PID/environ is the environment a process was exec'd with: a subshell of bats
# never has it, and a zombie shows an empty one.)
_rlock_marked() {
  local f
  # -s: processes that end meanwhile, or of other users, are no error
  grep -lsxzF -- "RLOCK_TEST_MARK=$BATS_TEST_TMPDIR" /proc/[0-9]*/environ |
    while read -r f; do
      f=${f#/proc/}
      echo "${f%/environ}"
    done
}

# bg_kill_leftovers: SIGKILLs every process that descends from a bg_start command of this
# test (or was started with RLOCK_TEST_MARK=$BATS_TEST_TMPDIR), wherever it went: a
# grandchild reparented after its parent died, a process group or session of its own.
# Repeats until none is left (bounded: 5s), so one that forks meanwhile is caught too.
# For teardown: a test that fails midway leaves nothing running.
bg_kill_leftovers() {
  local -a pids
  _rlock_now
  local deadline=$((_RLOCK_NOW + 5000))
  while mapfile -t pids < <(_rlock_marked) && ((${#pids[@]})); do
    kill -KILL "${pids[@]}" 2>/dev/null || true
    _rlock_now
    if ((_RLOCK_NOW >= deadline)); then
      fail "bg_kill_leftovers: still running after SIGKILL: ${pids[*]}"
      return 1
    fi
    sleep 0.05
  done
  return 0
}

BG_PIDS=()

# --- the suite's watchdog ------------------------------------------------------------------
# A suite that is killed (ctest's timeout, Ctrl-C, a CI cancel) never runs teardown_file, so
# what it started would outlive it. Everything a suite starts carries its mark,
# RLOCK_SUITE_MARK=$BATS_FILE_TMPDIR, in its environment (exported below, inherited by
# every test, server, helper and rlock), and one watchdog per suite, started by the first
# bats process of the file that loads this helper, waits for bats itself
# ($BATS_ROOT_PID) to be gone, then SIGKILLs every live process with the mark, wherever it
# went (reparented, in a session of its own), and every process whose working directory
# is in the suite's directory (redis-server overwrites its environment with its title;
# the helpers start it with --dir there). The watchdog does not carry the mark, keeps
# none of bats's descriptors (so nothing waits for it) and ends with the suite.

_rlock_watchdog_start() {
  [[ -n ${BATS_ROOT_PID:-} && -d /proc/$BATS_ROOT_PID ]] || return 0
  mkdir "$BATS_FILE_TMPDIR/.rlock-watchdog" 2>/dev/null || return 0
  (
    # descriptors first, with exec: a redirection on a command would keep copies of
    # bats's (its output pipe), and bats would then wait for the watchdog, which waits
    # for bats
    exec </dev/null >/dev/null 2>&1
    _rlock_close_fds
    unset RLOCK_SUITE_MARK
    trap '' INT HUP TERM # Ctrl-C reaches the whole group: the watchdog outlives it to clean up
    exec bash "${BASH_SOURCE[0]%/*}/watchdog.sh" "$BATS_ROOT_PID" "$BATS_FILE_TMPDIR"
  ) &
  disown $! 2>/dev/null || true
}

export RLOCK_SUITE_MARK="$BATS_FILE_TMPDIR"
_rlock_watchdog_start

_rlock_refresh

# --- assertions shared by the suites -------------------------------------------------------

# rl ARGS...: runs rlock with stdout and stderr kept apart ($output / $stderr).
rl() {
  run --separate-stderr "$RLOCK" "$@"
}

# An error: exit $1, nothing on stdout, exactly one stderr line "rlock: …".
# (status, output, stderr and stderr_lines are set by bats's `run`.)
# shellcheck disable=SC2154
assert_error() {
  assert_equal "$status" "$1"
  assert_equal "$output" ""
  assert_equal "${#stderr_lines[@]}" 1
  [[ ${stderr_lines[0]} == "rlock: "* ]] || fail "stderr does not start with 'rlock: ': $stderr"
}

# status_json KEY: `rlock status KEY --json`; "free" (exit 1) is not an error here.
status_json() {
  local rc=0
  "$RLOCK" status "$1" --json || rc=$?
  ((rc <= 1))
}

# json_without_times: each lock's object of `list --json` and of `status --json`, without what the clock moves
# and without status's last_events (list --json leaves them out).
json_without_times() {
  jq -S 'if type == "array" then .[] else . end | del(.server_time, .last_events) |
    .holders[] |= del(.age_ms, .ttl_left_ms, .kept_until) | .waiters[] |= del(.waited_ms)'
}

# n_holders KEY / n_waiters KEY: how many hold / wait (every one, not only those listed).
n_holders() { status_json "$1" | jq '.holder_count'; }
n_waiters() { status_json "$1" | jq '.waiter_count'; }

# write_gate FILE: writes a child script, run as `sh FILE DIR NAME [WORD]`, that appends
# WORD (if given) to DIR/order, creates DIR/NAME.started and then holds on until the test
# creates DIR/NAME.go (bounded: 120s). Tests use it to decide when a holder lets go.
write_gate() {
  cat >"$1" <<'EOF'
d=$1 n=$2
if [ -n "${3:-}" ]; then echo "$3" >>"$d/order"; fi
touch "$d/$n.started"
i=0
while [ ! -e "$d/$n.go" ] && [ "$i" -lt 2400 ]; do sleep 0.05; i=$((i + 1)); done
EOF
}

# scripts_setup: exports SCRIPTS=$BATS_FILE_TMPDIR/scripts, where the dump_scripts helper
# writes the Lua scripts as rlock sends them (for a file's setup_file).
scripts_setup() {
  export SCRIPTS=$BATS_FILE_TMPDIR/scripts
  "$HELPERS/dump_scripts" "$SCRIPTS" || fail "dump_scripts failed"
}

# rlock_on_path DIR: `rlock` on PATH is the binary under test, as scripts call it (a link
# DIR/bin/rlock, DIR/bin exported first on PATH).
rlock_on_path() {
  mkdir -p "$1/bin"
  ln -sf "$(realpath "$RLOCK")" "$1/bin/rlock"
  export PATH="$1/bin:$PATH"
}

# assert_only_fence_left KEY: of KEY's Redis keys only the fence counter is left, apart
# from release tombstones (lock:{KEY}:r:TOKEN, kept 3 x the retry window + 5 s, 20 s
# by default, so that a retried release can tell "done" from "lost"), and the lock's
# history (lock:{KEY}:log and :live, which expire 7 days after the last event).
assert_only_fence_left() {
  local k pttl found=0
  run -0 rcli --raw keys "lock:{$1}*"
  # shellcheck disable=SC2154 # set by bats's run
  for k in "${lines[@]}"; do
    if [[ $k == "lock:{$1}:fence" ]]; then
      found=1
    elif [[ $k == "lock:{$1}:log" || $k == "lock:{$1}:live" ]]; then
      : # the lock's history (kept 7 days after its last event)
    elif [[ $k == "lock:{$1}:r:"* ]]; then
      pttl=$(rcli pttl "$k")
      ((pttl > 0 && pttl <= 20000)) || fail "release tombstone $k has PTTL $pttl"
    else
      fail "left behind in Redis: $k (all: ${lines[*]})"
    fi
  done
  ((found)) || fail "no fence counter lock:{$1}:fence (keys: ${lines[*]})"
}

# assert_nesting_and_while_pid KEY: through the servers RLOCK_URL names, a nested run of
# KEY runs at once, and `acquire --while-pid PID` renews KEY past its TTL, then frees it
# once PID ends.
# shellcheck disable=SC2016 # single-quoted: expanded by the child shell or by eval
assert_nesting_and_while_pid() {
  local key=$1 spid
  run timeout 30 "$RLOCK" run --wait 3s "$key" -- "$RLOCK" run --wait 3s "$key" -- sh -c 'echo "inner $RLOCK_KEY"'
  [ "$status" -eq 0 ]
  [[ $output == *"inner $key"* ]]
  sleep 1000 &
  spid=$!
  "$RLOCK" acquire --ttl 2s --while-pid "$spid" "$key" >/dev/null
  sleep 3 # past its TTL: renewed
  "$RLOCK" status "$key" >/dev/null
  kill "$spid"
  _rlock_poll "$key to be free" 10 eval '! "$RLOCK" status "$key" >/dev/null 2>&1'
}

# assert_keeper_release_and_break KEY: through the servers RLOCK_URL names, the owner's
# release with the bare token stops the keeper of `acquire --while-pid PID` quietly (PID
# gets no SIGTERM); a break of KEY reaches PID.
# shellcheck disable=SC2016 # single-quoted: expanded by the child shell or by eval
assert_keeper_release_and_break() {
  local key=$1 wpid tok
  sh -c 'trap "touch \"$0.term\"; exit 0" TERM; while :; do sleep 0.05; done' "$BATS_TEST_TMPDIR/w" 3>&- &
  wpid=$!
  tok=$("$RLOCK" acquire --ttl 1s --while-pid "$wpid" "$key")
  "$RLOCK" release --token "$tok" "$key"
  _rlock_poll "the keeper to end" 10 eval '! pgrep -f "acquire --ttl 1s --while-pid $wpid $key" >/dev/null'
  [ ! -e "$BATS_TEST_TMPDIR/w.term" ]
  "$RLOCK" acquire --while-pid "$wpid" "$key" >/dev/null
  "$RLOCK" break --yes "$key"
  _rlock_poll "SIGTERM to PID" 10 test -e "$BATS_TEST_TMPDIR/w.term"
}
