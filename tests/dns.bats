#!/usr/bin/env bats
# ctest-labels: topology
# DNS: managed Redis fails over by changing a DNS record, so a reconnect looks the name up
# again; and a resolver that stalls must never hold up a renewal, so lookups run off the
# event loop, with a bound, and a reconnect that has addresses from before does not wait
# long for new ones.
#
# rlock runs in a private mount namespace (unshare -m) whose /etc/hosts and
# /etc/resolv.conf are this test's files, so a test can move a name or silence the DNS
# server. That needs root and unshare; without them the file is skipped.

bats_require_minimum_version 1.5.0

load helpers/redis

setup_file() {
  if ((EUID != 0)) || ! unshare -m true 2>/dev/null; then
    skip "needs root and unshare -m (a private /etc/hosts)"
  fi
  redis_start # server A: 127.0.0.1:P
  # Server B: the same port on 127.0.0.2, where the name moves in a failover.
  local dir=$BATS_FILE_TMPDIR/server-b
  mkdir -p "$dir"
  _rlock_spawn "$dir/redis.log" "$dir/redis.log" redis-server --port "$REDIS_PORT" \
    --bind 127.0.0.2 --save '' --appendonly no --daemonize no --dir "$dir" \
    --unixsocket "$dir/redis.sock" --unixsocketperm 700
  local pid=$_RLOCK_SPAWNED
  _rlock_poll "server B to answer" 10 _rlock_redis_ready "$pid" "$dir/redis.sock" || return 1
  _rlock_reg_write SERVERB kind=helper pid="$pid" port="$REDIS_PORT" dir="$dir"
  export SERVERB_SOCK=$dir/redis.sock
  # A DNS server that never answers.
  _rlock_helper_bin udp_sink || return 1
  _rlock_helper_start SINK sink "$BATS_FILE_TMPDIR/sink" "$HELPERS/udp_sink" 127.0.0.77 53
}

setup() {
  T=$BATS_TEST_TMPDIR
  cat >"$BATS_FILE_TMPDIR/in_ns" <<'EOF'
#!/bin/sh
exec unshare -m sh -c 'mount --bind "$1/hosts" /etc/hosts &&
  mount --bind "$1/resolv.conf" /etc/resolv.conf && shift && exec "$@"' sh "$@"
EOF
  chmod +x "$BATS_FILE_TMPDIR/in_ns"
  write_gate "$T/gate"
  printf 'nameserver 127.0.0.77\noptions timeout:5 attempts:2\n' >"$T/resolv.conf"
  printf '127.0.0.1 localhost\n' >"$T/hosts"
}

b_cli() { redis-cli -s "$SERVERB_SOCK" "$@"; }

# in_ns CMD...: CMD in a private mount namespace with $T/hosts and $T/resolv.conf. The
# files are bind-mounted: rewriting them in place (`>`) changes what CMD sees. A script,
# not a function, so that bg_start can run it.
in_ns() { "$BATS_FILE_TMPDIR/in_ns" "$T" "$@"; }

@test "a reconnect looks the name up again and follows it to the new server" {
  printf '127.0.0.1 rlock-dns-test\n' >"$T/hosts"
  rcli set 'lock:{dns}' foreign PX 60000 >/dev/null # held on A
  bg_start waiter "$BATS_FILE_TMPDIR/in_ns" "$T" env --default-signal "$RLOCK" -v \
    --url "redis://rlock-dns-test:$REDIS_PORT/0" run --wait 60s dns -- \
    sh -c 'echo "$RLOCK_FENCE" >"$0"' "$T/fence"
  waiter=$BG_PID
  wait_until "[[ \$(rcli zcard 'lock:{dns}:queue') == 1 ]]"
  # The failover: the name now points at B, and A is gone.
  printf '127.0.0.2 rlock-dns-test\n' >"$T/hosts"
  redis_kill REDIS
  bg_wait "$waiter" 30
  assert_equal "$BG_STATUS" 0
  assert_equal "$(cat "$T/fence")" 1
  assert_equal "$(b_cli get 'lock:{dns}:fence')" 1
  redis_recover REDIS
}

@test "a resolver that does not answer never holds up a renewal" {
  printf '127.0.0.1 rlock-slow\n' >"$T/hosts"
  bg_start holder "$BATS_FILE_TMPDIR/in_ns" "$T" env --default-signal "$RLOCK" -v \
    --url "redis://rlock-slow:$REDIS_PORT/0" run --ttl 2s slow -- sh "$T/gate" "$T" h
  holder=$BG_PID
  wait_for_file "$T/h.started"
  # The name leaves /etc/hosts: every lookup now waits on the silent DNS server (2 x 5s).
  printf '127.0.0.1 localhost\n' >"$T/hosts"
  for n in 1 2 3; do
    rcli client kill type normal >/dev/null
    # The holder reconnects for its next renewal (every 667ms) without waiting for DNS.
    wait_until "(( \$(grep -c \"lookup of 'rlock-slow' is slow\" '$T/holder.err') >= $n ))" 10
  done
  touch "$T/h.go"
  bg_wait "$holder"
  assert_equal "$BG_STATUS" 0
  ! grep -q lost "$T/holder.err" || fail "$(cat "$T/holder.err")"
}

@test "a first lookup that does not answer is bounded by --connect-timeout: 69" {
  start=$(now_ms)
  run --separate-stderr in_ns "$RLOCK" --connect-timeout 1s \
    --url "redis://rlock-nowhere:$REDIS_PORT/0" status k
  took=$(($(now_ms) - start))
  assert_error 69
  [[ $stderr == *"cannot resolve 'rlock-nowhere': no answer within 1000ms"* ]] || fail "$stderr"
  ((took < 4000)) || fail "took ${took}ms"
}

@test "lookups abandoned on a silent resolver never pile threads up" {
  printf '127.0.0.1 rlock-pile\n' >"$T/hosts"
  bg_start holder "$BATS_FILE_TMPDIR/in_ns" "$T" env --default-signal "$RLOCK" -v \
    --connect-timeout 300ms --url "redis://rlock-pile:$REDIS_PORT/0" run --ttl 3s pile -- \
    sh "$T/gate" "$T" h
  holder=$BG_PID
  wait_for_file "$T/h.started"
  printf '127.0.0.1 localhost\n' >"$T/hosts"
  max=0
  for n in 1 2 3 4 5 6 7 8; do
    rcli client kill type normal >/dev/null
    wait_until "(( \$(grep -cE \"look(up of| up) 'rlock-pile'\" '$T/holder.err') >= $n ))" 10
    tasks=$(find "/proc/$holder/task" -mindepth 1 -maxdepth 1 | wc -l)
    ((tasks > max)) && max=$tasks
  done
  touch "$T/h.go"
  bg_wait "$holder"
  assert_equal "$BG_STATUS" 0
  # The main thread and at most 4 lookups (each waits 2 x 5s on the silent server).
  ((max <= 5)) || fail "$max threads at once"
}
