#!/usr/bin/env bats
# ctest-labels: fast
# The scriptable subcommands against a real redis-server: acquire, extend, release,
# status, list, break; waiting, fencing, --limit, --prefix, foreign holders, -q and -v.
# shellcheck disable=SC2154 # $stderr and $stderr_lines come from `run --separate-stderr`
# shellcheck disable=SC2016 # wait_until conditions are expanded when evaluated

bats_require_minimum_version 1.5.0

load helpers/redis

setup_file() {
  # Some tests read server-wide counters (INFO commandstats): one test at a time.
  export BATS_NO_PARALLELIZE_WITHIN_FILE=true
  # The interpreter itself, not a wrapper such as a pyenv shim (which can take a second).
  PYTHON=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || PYTHON=""
  export PYTHON
  redis_start
}

# --- background rlock processes ------------------------------------------------------------

# start_bg NAME ARGS...: `rlock ARGS` in the background (rlock_bg: stdout in
# $BATS_TEST_TMPDIR/NAME.out, stderr in NAME.err), its pid in NAME.pid.
start_bg() {
  local name=$1
  shift
  rlock_bg "$name" "$@"
  echo "$BG_PID" >"$BATS_TEST_TMPDIR/$name.pid"
}

# wait_bg NAME [TIMEOUT_S=15]: waits for NAME to end; sets BG_RC, BG_OUT, BG_ERR.
wait_bg() {
  local d=$BATS_TEST_TMPDIR
  bg_wait "$(<"$d/$1.pid")" "${2:-15}" || return 1
  BG_RC=$BG_STATUS
  BG_OUT=$(<"$d/$1.out")
  BG_ERR=$(<"$d/$1.err")
}

# --- lock state --------------------------------------------------------------------------

# acquire_tok KEY ARGS...: acquires KEY (from this shell, so the holder pid is $BASHPID)
# and sets TOK; fails the test on any error.
acquire_tok() {
  local key=$1 f=$BATS_TEST_TMPDIR/tok.$RANDOM
  shift
  "$RLOCK" acquire "$key" "$@" >"$f" || fail "rlock acquire $key $* failed with $?"
  TOK=$(<"$f")
  [[ $TOK =~ ^[0-9a-f]{32}$ ]] || fail "acquire printed '$TOK', not a 32-hex token"
}

# has_waiter KEY [N=1]: true when `status --json` lists at least N waiters.
has_waiter() {
  local n=${2:-1} json
  json=$("$RLOCK" status "$1" --json 2>/dev/null) || true
  (($(grep -o '"position":' <<<"$json" | wc -l) >= n))
}

# json_assert JSON EXPR...: each Python expression EXPR, evaluated with d = the parsed
# JSON and E = the environment, must be true; fails the test naming those that are not.
# (One python process per call: it can take a second to start.)
json_assert() {
  local j=$1
  shift
  "$PYTHON" -c 'import json, os, sys
d = json.loads(sys.argv[1])
E = os.environ
bad = []
for e in sys.argv[2:]:
    try:
        ok = eval(e)
    except Exception as x:
        ok = False
        e += "  (" + repr(x) + ")"
    if not ok:
        bad.append(e)
if bad:
    print("JSON: " + sys.argv[1])
    for e in bad:
        print("not true: " + e)
    sys.exit(1)' "$j" "$@" || fail "JSON assertions failed (above)"
}

# json_field JSON NAME: prints the first scalar value of "NAME" in JSON (numbers and
# strings without escapes; enough for acquire's flat object).
json_field() {
  local re="\"$2\":(\"([^\"]*)\"|(-?[0-9]+))"
  [[ $1 =~ $re ]] || {
    fail "no \"$2\" in: $1"
    return 1
  }
  echo "${BASH_REMATCH[2]}${BASH_REMATCH[3]}"
}

need_python() {
  [[ -n ${PYTHON:-} && -x $PYTHON ]] || skip "python3 is needed to parse JSON"
}

# --- acquire / status ------------------------------------------------------------------

@test "acquire prints a token and status shows the holder with host, pid, user and command" {
  acquire_tok holder-info --ttl 30s
  rl status holder-info
  assert_success
  assert_output --partial "holder-info: held"
  assert_output --partial "$(hostname)"
  assert_output --partial "pid $BASHPID"
  assert_output --partial "user $(id -un)"
  assert_output --partial "rlock acquire"
  assert_output --partial "$TOK"
}

@test "status --json gives the holder's host, pid, user, command, token and times" {
  need_python
  acquire_tok holder-json --ttl 30s
  rl status holder-json --json
  assert_success
  HOST=$(hostname) USER_NAME=$(id -un) PID=$BASHPID TOK=$TOK json_assert "$output" \
    'd["key"] == "holder-json"' 'd["held"] is True' 'd["limit"] == 0' \
    'd["waiters"] == []' 'len(d["holders"]) == 1' \
    'sorted(d["holders"][0]) == ["age_ms", "command", "done", "fence", "host", "kept", "mode", "nested", "pid", "since", "since_ms", "token", "ttl_left_ms", "ttl_ms", "user"]' \
    'd["holders"][0]["token"] == E["TOK"]' \
    'd["holders"][0]["host"] == E["HOST"]' \
    'd["holders"][0]["pid"] == int(E["PID"])' \
    'd["holders"][0]["user"] == E["USER_NAME"]' \
    'd["holders"][0]["command"] == "rlock acquire"' \
    'd["holders"][0]["ttl_ms"] == 30000' \
    'd["holders"][0]["mode"] == "exclusive"' 'd["holders"][0]["done"] is False' \
    'd["done"] is False' \
    'd["holders"][0]["fence"] == d["fence"] >= 1' \
    '0 < d["holders"][0]["ttl_left_ms"] <= 30000' \
    '0 <= d["holders"][0]["age_ms"] < 10000' \
    'd["holders"][0]["since"].endswith("Z") and d["server_time"].endswith("Z")' \
    'isinstance(d["holders"][0]["since_ms"], int)'
}

@test "acquire stores the token in PREFIX{KEY} with a PX expiry of --ttl (default 30s)" {
  acquire_tok layout --ttl 10s
  run rcli get 'lock:{layout}'
  assert_output "$TOK"
  run rcli pttl 'lock:{layout}'
  assert [ "$output" -gt 5000 ]
  assert [ "$output" -le 10000 ]
  acquire_tok layout-default
  run rcli pttl 'lock:{layout-default}'
  assert [ "$output" -gt 25000 ]
  assert [ "$output" -le 30000 ]
}

@test "acquire --json prints key, token, fence and ttl_ms" {
  need_python
  rl acquire acq-json --ttl 12s --json
  assert_success
  json_assert "$output" 'sorted(d) == ["fence", "key", "token", "ttl_ms"]' \
    'd["key"] == "acq-json"' 'd["fence"] == 1' 'd["ttl_ms"] == 12000' \
    'len(d["token"]) == 32 and int(d["token"], 16) >= 0'
  tok=$(json_field "$output" token)
  run rcli get 'lock:{acq-json}'
  assert_output "$tok"
}

@test "tokens are 128 random bits, different at every acquisition" {
  acquire_tok tokens-a --ttl 5s
  a=$TOK
  acquire_tok tokens-b --ttl 5s
  assert [ "$a" != "$TOK" ]
}

@test "the fence strictly increases across acquisitions" {
  prev=0
  for _ in 1 2 3 4; do
    rl acquire fence-up --ttl 5s --json
    assert_success
    fence=$(json_field "$output" fence)
    tok=$(json_field "$output" token)
    assert [ "$fence" -gt "$prev" ]
    prev=$fence
    rl release fence-up --token "$tok"
    assert_success
  done
  run rcli get 'lock:{fence-up}:fence'
  assert_output "$prev"
}

@test "acquire -n on a held key exits 75 with one stderr line" {
  acquire_tok held-n --ttl 30s
  rl acquire held-n -n
  assert_equal "$status" 75
  assert_equal "$output" ""
  assert_equal "${#stderr_lines[@]}" 1
  assert_regex "${stderr_lines[0]}" "^rlock: .*held-n"
  run rcli get 'lock:{held-n}'
  assert_output "$TOK"
}

@test "-E 3 makes a conflict exit 3" {
  acquire_tok held-e --ttl 30s
  rl acquire held-e -n -E 3
  assert_equal "$status" 3
}

@test "-E also applies when --wait runs out" {
  acquire_tok held-ew --ttl 30s
  rl acquire held-ew --wait 200ms -E 9
  assert_equal "$status" 9
}

@test "acquire --wait 300ms on a held key exits 75 after roughly that time" {
  acquire_tok held-w --ttl 30s
  t0=$(now_ms)
  rl acquire held-w --wait 300ms
  elapsed=$(($(now_ms) - t0))
  assert_equal "$status" 75
  assert_equal "$output" ""
  assert [ "$elapsed" -ge 250 ]
  assert [ "$elapsed" -lt 5000 ]
}

@test "a waiter gave up leaves the queue (status shows no waiters)" {
  acquire_tok held-gone --ttl 30s
  rl acquire held-gone --wait 200ms
  assert_equal "$status" 75
  rl status held-gone --json
  assert_output --partial '"waiters":[]'
}

@test "acquire --wait succeeds once the holder releases" {
  acquire_tok wait-rel --ttl 30s
  holder=$TOK
  start_bg waiter acquire wait-rel --wait 20s --ttl 10s
  wait_until 'has_waiter wait-rel'
  rl release wait-rel --token "$holder"
  assert_success
  wait_bg waiter
  assert_equal "$BG_RC" 0 "waiter's stderr: $BG_ERR"
  assert_regex "$BG_OUT" '^[0-9a-f]{32}$'
  run rcli get 'lock:{wait-rel}'
  assert_output "$BG_OUT"
}

@test "release wakes a waiter at once, long before the holder's TTL" {
  acquire_tok wake --ttl 60s
  holder=$TOK
  start_bg waiter acquire wake --wait 50s
  wait_until 'has_waiter wake'
  t0=$(now_ms)
  rl release wake --token "$holder"
  assert_success
  wait_bg waiter 20
  elapsed=$(($(now_ms) - t0))
  assert_equal "$BG_RC" 0
  assert [ "$elapsed" -lt 5000 ]
}

@test "waiters are served first come, first served" {
  acquire_tok fifo --ttl 30s
  holder=$TOK
  start_bg first acquire fifo --wait 30s --ttl 30s
  wait_until 'has_waiter fifo 1'
  start_bg second acquire fifo --wait 30s --ttl 30s
  wait_until 'has_waiter fifo 2'
  rl release fifo --token "$holder"
  assert_success
  wait_bg first 15
  assert_equal "$BG_RC" 0
  first=$BG_OUT
  run rcli get 'lock:{fifo}'
  assert_output "$first"
  _rlock_alive "$(<"$BATS_TEST_TMPDIR/second.pid")" || fail "the second waiter ended before its turn"
  rl release fifo --token "$first"
  assert_success
  wait_bg second 15
  assert_equal "$BG_RC" 0
  run rcli get 'lock:{fifo}'
  assert_output "$BG_OUT"
}

@test "status --json lists a waiter with position, token, host, pid, user, command, since, waited_ms" {
  need_python
  acquire_tok waiter-json --ttl 30s
  start_bg waiter acquire waiter-json --wait 20s
  wait_until 'has_waiter waiter-json'
  rl status waiter-json --json
  assert_success
  # acquire records its parent as the pid: here the background subshell that started it.
  HOST=$(hostname) USER_NAME=$(id -un) json_assert "$output" \
    'len(d["waiters"]) == 1' \
    'sorted(d["waiters"][0]) == ["command", "host", "mode", "pid", "position", "priority", "since", "token", "user", "waited_ms"]' \
    'd["waiters"][0]["position"] == 1' \
    'd["waiters"][0]["host"] == E["HOST"]' \
    'd["waiters"][0]["user"] == E["USER_NAME"]' \
    'd["waiters"][0]["command"] == "rlock acquire"' \
    'isinstance(d["waiters"][0]["pid"], int) and d["waiters"][0]["pid"] > 0' \
    'len(d["waiters"][0]["token"]) == 32' \
    'd["waiters"][0]["token"] != d["holders"][0]["token"]' \
    'd["waiters"][0]["waited_ms"] >= 0' \
    'd["waiters"][0]["since"].endswith("Z")'
  rl status waiter-json
  assert_output --partial "waiting"
}

@test "extend keeps the lease alive past its original TTL" {
  t0=$(now_ms)
  # 3s: long enough that a slow machine still extends before it runs out
  acquire_tok ext-alive --ttl 3s
  rl extend ext-alive --token "$TOK" --ttl 20s
  assert_success
  assert_output ""
  run rcli pttl 'lock:{ext-alive}'
  assert [ "$output" -gt 10000 ]
  # Let the original 3s lease pass (with margin), then it must still be held.
  wait_until '(( $(now_ms) - t0 > 3500 ))' 10
  rl status ext-alive
  assert_success
  run rcli get 'lock:{ext-alive}'
  assert_output "$TOK"
}

@test "extend without --ttl renews by the TTL it was acquired with" {
  acquire_tok ext-default --ttl 8s
  rcli pexpire 'lock:{ext-default}' 2000 >/dev/null
  rl extend ext-default --token "$TOK" --json
  assert_success
  json=$output
  run rcli pttl 'lock:{ext-default}'
  assert [ "$output" -gt 6000 ]
  assert [ "$output" -le 8000 ]
  assert_equal "$(json_field "$json" ttl_ms)" 8000
  assert_equal "$(json_field "$json" token)" "$TOK"
}

@test "extend with a token that no longer holds exits 76" {
  acquire_tok ext-wrong --ttl 30s
  rl extend ext-wrong --token 0123456789abcdef0123456789abcdef
  assert_equal "$status" 76
  assert_equal "${#stderr_lines[@]}" 1
  assert_regex "${stderr_lines[0]}" '^rlock: '
  run rcli get 'lock:{ext-wrong}'
  assert_output "$TOK"
}

@test "extend after the lease expired exits 76 and does not re-create the lock" {
  acquire_tok ext-expired --ttl 5s
  rcli pexpire 'lock:{ext-expired}' 1 >/dev/null
  wait_until '[ "$(rcli exists "lock:{ext-expired}")" = 0 ]' 5
  rl extend ext-expired --token "$TOK" --ttl 10s
  assert_equal "$status" 76
  run rcli exists 'lock:{ext-expired}'
  assert_output 0
}

@test "release with a token that no longer holds exits 76" {
  acquire_tok rel-wrong --ttl 30s
  rl release rel-wrong --token 0123456789abcdef0123456789abcdef
  assert_equal "$status" 76
  assert_equal "${#stderr_lines[@]}" 1
  run rcli get 'lock:{rel-wrong}'
  assert_output "$TOK"
  rl release rel-wrong --token "$TOK"
  assert_success
  rl release rel-wrong --token "$TOK"
  assert_equal "$status" 76
}

@test "release then status: free (exit 1), the fence is kept" {
  acquire_tok rel-free --ttl 30s
  rl release rel-free --token "$TOK"
  assert_success
  assert_output ""
  rl status rel-free
  assert_equal "$status" 1
  assert_output --partial "free"
  run rcli exists 'lock:{rel-free}' "lock:{rel-free}:h:$TOK"
  assert_output 0
  run rcli get 'lock:{rel-free}:fence'
  assert_output 1
}

@test "status of a key never used: free (exit 1)" {
  rl status never-used
  assert_equal "$status" 1
  rl status never-used --json
  assert_equal "$status" 1
  assert_output --partial '"held":false'
}

@test "RLOCK_TOKEN is the default --token of release and extend" {
  acquire_tok env-tok --ttl 30s
  RLOCK_TOKEN=$TOK run --separate-stderr "$RLOCK" extend env-tok --ttl 20s
  assert_success
  RLOCK_TOKEN=0123456789abcdef0123456789abcdef run --separate-stderr "$RLOCK" release env-tok
  assert_equal "$status" 76
  RLOCK_TOKEN=$TOK run --separate-stderr "$RLOCK" release env-tok
  assert_success
  rl status env-tok
  assert_equal "$status" 1
}

@test "--token overrides RLOCK_TOKEN" {
  acquire_tok env-over --ttl 30s
  RLOCK_TOKEN=0123456789abcdef0123456789abcdef run --separate-stderr \
    "$RLOCK" release env-over --token "$TOK"
  assert_success
}

# --- list ------------------------------------------------------------------------------

@test "list PATTERN prints one tab-separated line per matching lock" {
  acquire_tok list-a1 --ttl 30s
  acquire_tok list-a2 --ttl 30s
  acquire_tok list-b1 --ttl 30s
  rl list 'list-a*'
  assert_success
  assert_equal "${#lines[@]}" 2
  for l in "${lines[@]}"; do
    IFS=$'\t' read -r -a f <<<"$l"
    assert [ "${#f[@]}" -ge 5 ]
    [[ ${f[0]} == list-a1 || ${f[0]} == list-a2 ]] || fail "unexpected key in: $l"
    [[ ${f[1]} == "$(hostname):$BASHPID" ]] || fail "holder is not host:pid in: $l"
  done
  refute_output --partial list-b1
  rl list 'list-?1'
  assert_equal "${#lines[@]}" 2
  assert_output --partial list-b1
}

@test "list --json prints an array of status objects" {
  need_python
  acquire_tok listj-1 --ttl 30s
  acquire_tok listj-2 --ttl 30s
  rl list 'listj-*' --json
  assert_success
  json_assert "$output" 'isinstance(d, list)' \
    'sorted(x["key"] for x in d) == ["listj-1", "listj-2"]' \
    'all(x["held"] and len(x["holders"]) == 1 for x in d)' \
    'all("waiters" in x and "fence" in x for x in d)'
}

@test "list with no match prints nothing (or []) and exits 0" {
  rl list 'nothing-here-*'
  assert_success
  assert_output ""
  rl list 'nothing-here-*' --json
  assert_success
  assert_output "[]"
}

@test "list does not show released locks or foreign keys outside the prefix" {
  acquire_tok listgone --ttl 30s
  rl release listgone --token "$TOK"
  rcli set 'other:{listgone2}' x >/dev/null
  rl list 'listgone*'
  assert_success
  assert_output ""
}

@test "list uses SCAN, never KEYS" {
  acquire_tok scan-me --ttl 30s
  rcli config resetstat >/dev/null
  rl list
  assert_success
  assert_output --partial scan-me
  run bash -c "redis-cli -h 127.0.0.1 -p $REDIS_PORT info commandstats | tr -d '\r'"
  assert_output --partial cmdstat_scan
  refute_output --partial cmdstat_keys
}

@test "list follows the SCAN cursor to the end (300 locks)" {
  for i in $(seq 1 300); do
    printf 'SET "lock:{many-%s}" t%s PX 60000\n' "$i" "$i"
  done | rcli >/dev/null
  rl list 'many-*'
  assert_success
  assert_equal "${#lines[@]}" 300
}

# --- on a terminal -------------------------------------------------------------------------

# tty_rlock COLS ARGS...: `rlock ARGS` with standard output on a terminal COLS columns wide
# (script(1)); $output without the terminal's carriage returns, $status rlock's.
tty_rlock() {
  command -v script >/dev/null || skip "script(1) is not installed"
  local cols=$1 cmd
  shift
  cmd="stty cols $cols;$(printf ' %q' "$RLOCK" "$@")"
  run bash -o pipefail -c "script -qec $(printf '%q' "$cmd") /dev/null | tr -d '\r'"
}

# assert_fits COLS: no line of $output is wider than COLS characters.
assert_fits() {
  local LC_ALL=C.UTF-8 l
  while IFS= read -r l; do
    ((${#l} <= $1)) || fail "wider than $1 columns (${#l}): $l"
  done <<<"$output"
}

@test "status on a terminal: a header, whole seconds, user@host:pid, the token below; piped as before" {
  acquire_tok tty-st --ttl 30s
  tty_rlock 80 status tty-st
  assert_success
  assert_line --index 0 --regexp '^tty-st: held \(fence [0-9]+\)$'
  assert_line --index 1 --regexp '^  ROLE +WHO +SINCE +AGE +LEFT +FENCE +COMMAND$'
  assert_line --index 2 --regexp \
    "^  holder +$(id -un)@$(hostname):$BASHPID +[0-9]{2}:[0-9]{2}:[0-9]{2}Z +[0-9]+m?s +[0-9]+s +[0-9]+ +rlock acquire$"
  assert_line --index 3 --regexp "^ {10,}exclusive, token $TOK$"
  refute_output --partial "ms left" # no bare milliseconds
  rl status tty-st
  assert_line --index 1 "  holder  $(hostname) pid $BASHPID user $(id -un): rlock acquire"
  assert_line --index 2 --regexp '^          since .*, fence [0-9]+, exclusive, token [0-9a-f]{32}$'
}

@test "status on a terminal fits its width: the command is cut with …, who, where and fence stay" {
  local long
  long=$(printf 'x%.0s' {1..150})
  rlock_bg long run --ttl 30s tty-long -- sh -c 'touch "$0"; sleep 600' "$BATS_TEST_TMPDIR/ready" "$long"
  wait_for_file "$BATS_TEST_TMPDIR/ready" 10
  rlock_bg waiter run --wait 60s tty-long -- true "$long"
  wait_until 'has_waiter tty-long'
  tty_rlock 80 status tty-long
  assert_success
  assert_fits 80
  assert_line --index 2 --regexp "^  holder +$(id -un)@$(hostname):[0-9]+ .* [0-9]+s +[0-9]+ +sh -c .*…$"
  assert_line --index 4 --regexp "^  waiter 1 +$(id -un)@$(hostname):[0-9]+ .*…$"
  tty_rlock 60 status tty-long # narrower: SINCE gives way before the command does
  assert_success
  assert_fits 60
  assert_line --index 1 --regexp '^  ROLE +WHO +AGE +LEFT +FENCE +COMMAND$'
  assert_line --index 2 --regexp "^  holder +$(id -un)@$(hostname):[0-9]+ "
  rl status tty-long # piped: the whole command, as before
  assert_output --partial "$long"
}

@test "list on a terminal: a header and whole seconds; piped, the bare tab-separated values" {
  acquire_tok tty-l1 --ttl 30s
  tty_rlock 80 list 'tty-l*'
  assert_success
  assert_line --index 0 --regexp '^KEY +HOLDER +LEFT +FENCE +WAITERS +COMMAND$'
  assert_line --index 1 --regexp "^tty-l1 +$(hostname):$BASHPID +[0-9]+s +[0-9]+ +0 +rlock acquire$"
  assert_fits 80
  rl list 'tty-l*'
  assert_output --regexp "^tty-l1	$(hostname):$BASHPID	[0-9]+	[0-9]+	0	rlock acquire	$"
}

@test "list on a terminal keeps what tells rows apart: keys and URLs whole at 200 columns, cut in the middle at 80" {
  local k=tty-mid:prod:eu-west-1:service-payments-api u=https://github.com/acme/shop/actions/runs
  acquire_tok "$k-p1" --ttl 30s --label "$u/123456"
  acquire_tok "$k-p2" --ttl 30s --label "$u/123457"
  tty_rlock 200 list 'tty-mid:*'
  assert_success
  assert_line --index 1 --regexp "^$k-p1 +$u/123456 +[0-9]+s "
  assert_line --index 2 --regexp "^$k-p2 +$u/123457 +[0-9]+s "
  tty_rlock 80 list 'tty-mid:*'
  assert_success
  assert_fits 80
  # the start and the end of each; the command gave way first
  assert_line --index 1 --regexp "^tty-mid:[^ ]*…[^ ]*-api-p1 +https://[^ ]*…[^ ]*/123456 +[0-9]+s +[0-9]+ +0 +rlock"
  assert_line --index 2 --regexp "^tty-mid:[^ ]*…[^ ]*-api-p2 +https://[^ ]*…[^ ]*/123457 +[0-9]+s "
}

@test "status on a terminal cuts a long label in its middle, keeping the run's id" {
  acquire_tok tty-lab --ttl 30s --label https://github.com/acme/shop-with-a-long-name/actions/runs/98765432
  tty_rlock 80 status tty-lab
  assert_success
  assert_fits 80
  assert_line --index 2 --regexp '^  holder +https://github[^ ]*…[^ ]*/runs/98765432 '
}

@test "a lease kept by --min-hold after its command ended: status says so, with the exit status" {
  run -3 "$RLOCK" run --ttl 30s --min-hold 20s mh-kept -- sh -c 'exit 3'
  rl status mh-kept
  assert_success
  assert_line --index 1 --regexp \
    '^  holder  kept by --min-hold until [0-9]{2}:[0-9]{2}:[0-9]{2}Z; its command exited 3$'
  assert_line --index 2 --regexp "^          ran as $(hostname) pid [0-9]+ user $(id -un): "
  rl status mh-kept --json
  run -0 jq -r '.holders[0] | "\(.kept) \(.exit_status) \(.kept_until | test("^[0-9T:.-]+Z$"))"' <<<"$output"
  assert_output "true 3 true"
  tty_rlock 80 status mh-kept
  assert_line --index 2 --regexp '^  kept +'
  assert_line --index 3 --regexp '^ +kept by --min-hold until [0-9:]+Z; its command exited 3$'
  tty_rlock 80 list mh-kept
  assert_output --partial "(kept) "
  # its key made permanent (PERSIST): no end to name, and none made up from -1
  assert_equal "$(rcli persist 'lock:{mh-kept}')" 1
  rl status mh-kept
  assert_line --index 1 '  holder  kept with no expiry: it stays until broken (rlock break); its command exited 3'
  rl status mh-kept --json
  run -0 jq -r '.holders[0] | "\(.kept) \(.ttl_left_ms) \(has("kept_until"))"' <<<"$output"
  assert_output "true -1 false"
  run -0 "$RLOCK" break mh-kept --yes
}

@test "a running holder is not kept: --json says kept false, without kept_until and exit_status" {
  acquire_tok not-kept --ttl 30s
  rl status not-kept --json
  run -0 jq -r '.holders[0] | "\(.kept) \(has("kept_until")) \(has("exit_status"))"' <<<"$output"
  assert_output "false false false"
}

@test "a list pattern with '{' is a usage error (64)" {
  rl list 'a{*'
  assert_equal "$status" 64
}

# --- prefix ----------------------------------------------------------------------------

@test "--prefix isolates locks" {
  rl --prefix pa: acquire iso --ttl 30s
  assert_success
  rl acquire iso --prefix pb: --ttl 30s -n
  assert_success
  rl acquire iso --ttl 30s -n
  assert_success
  run rcli exists 'pa:{iso}' 'pb:{iso}' 'lock:{iso}'
  assert_output 3
  rl list 'iso' --prefix pa:
  assert_equal "${#lines[@]}" 1
}

# --- break -----------------------------------------------------------------------------

@test "break --yes frees a held lock" {
  acquire_tok brk-held --ttl 30s
  rl break brk-held --yes
  assert_success
  rl status brk-held
  assert_equal "$status" 1
  run rcli exists 'lock:{brk-held}' "lock:{brk-held}:h:$TOK"
  assert_output 0
  rl release brk-held --token "$TOK"
  assert_equal "$status" 76
}

@test "break --yes wakes a waiting acquire --wait; the fence is not reset" {
  rl acquire brk-wait --ttl 60s --json
  fence1=$(json_field "$output" fence)
  start_bg waiter acquire brk-wait --wait 50s --json
  wait_until 'has_waiter brk-wait'
  t0=$(now_ms)
  rl break brk-wait -y
  assert_success
  wait_bg waiter 20
  assert_equal "$BG_RC" 0
  assert [ $(($(now_ms) - t0)) -lt 5000 ]
  fence2=$(json_field "$BG_OUT" fence)
  assert [ "$fence2" -gt "$fence1" ]
}

@test "break on a free key exits 1 and changes nothing" {
  rl break brk-free --yes
  assert_equal "$status" 1
  run rcli exists 'lock:{brk-free}'
  assert_output 0
}

@test "break --token evicts one holder of a --limit pool: the other keeps its slot, a waiter gets the freed one" {
  acquire_tok brk-pool --limit 2 --ttl 60s
  t1=$TOK
  acquire_tok brk-pool --limit 2 --ttl 60s
  t2=$TOK
  start_bg waiter acquire brk-pool --limit 2 --wait 50s --json
  wait_until 'has_waiter brk-pool'
  rl break brk-pool --token "$t1" --reason "job 17 hung" --yes
  assert_success
  [[ $stderr == *"evicted the holder with token $t1 from 'brk-pool'"*"reason: job 17 hung"* ]] ||
    fail "$stderr"
  wait_bg waiter 20
  assert_equal "$BG_RC" 0
  assert_equal "$(json_field "$BG_OUT" slot)" 1 # the evicted holder's slot
  rl extend brk-pool --token "$t2"
  assert_success
  rl extend brk-pool --token "$t1"
  assert_equal "$status" 76
  run -0 "$RLOCK" history brk-pool --json
  assert_equal "$(jq -r '.[] | select(.event == "broken") | "\(.tok) \(.reason)"' <<<"$output")" \
    "$t1 job 17 hung"
}

@test "break --token evicts one shared holder or the holder of a plain lock" {
  acquire_tok brk-sh --shared --ttl 60s
  s1=$TOK
  acquire_tok brk-sh --shared --ttl 60s
  s2=$TOK
  rl break brk-sh --token "$s2" --yes
  assert_success
  rl status brk-sh --json
  assert_equal "$(jq -r '[.holders[].token] | join(" ")' <<<"$output")" "$s1"
  assert_equal "$(rcli get 'lock:{brk-sh}')" "shared lock" # the marker stays for s1
  rl break brk-sh --token "$s1" --yes
  assert_success
  assert_equal "$(rcli exists 'lock:{brk-sh}')" 0 # with the last shared holder, the marker
  acquire_tok brk-ex --ttl 60s
  rl break brk-ex --token "$TOK" -y
  assert_success
  rl status brk-ex
  assert_equal "$status" 1
}

@test "break --token of a token that does not hold KEY exits 1 and changes nothing" {
  acquire_tok brk-other --ttl 60s
  rl break brk-other --token 0123456789abcdef0123456789abcdef --yes
  assert_equal "$status" 1
  [[ $stderr == *"'brk-other' is not held by token 0123456789abcdef0123456789abcdef; nothing to break"* ]] ||
    fail "$stderr"
  rl extend brk-other --token "$TOK"
  assert_success
  rl break brk-none --token "$TOK" --yes # a free key too
  assert_equal "$status" 1
}

@test "break --token and --reason: bad values are usage errors (64)" {
  rl break k --token 'has space' --yes
  assert_error 64
  rl break k --reason "$(printf 'two\nlines')" --yes
  assert_error 64
  [[ $stderr == *"invalid --reason"* ]] || fail "$stderr"
  rl break k --reason "$(printf 'x%.0s' {1..257})" --yes
  assert_error 64
  rl --layout plain break k --token abc --yes
  assert_error 64
  [[ $stderr == *"--layout plain"* ]] || fail "$stderr"
}

# --- every holder's mode, and hints for a glob or the prefix ----------------------------------

@test "status names every holder's mode, exclusive as well as shared (text and --json)" {
  acquire_tok mode-ex --ttl 60s
  rl status mode-ex
  assert_line --index 2 --regexp "^          since .*, fence [0-9]+, exclusive, token $TOK$"
  rl status mode-ex --json
  assert_equal "$(jq -r '.holders[].mode' <<<"$output")" exclusive
  acquire_tok mode-sh --shared --ttl 60s
  acquire_tok mode-sh --shared --ttl 60s
  rl status mode-sh
  assert_equal "$(grep -c ', shared, token ' <<<"$output")" 2
  rl status mode-sh --json
  assert_equal "$(jq -r '[.holders[].mode] | join(" ")' <<<"$output")" "shared shared"
  acquire_tok mode-pool --limit 3 --ttl 60s
  rl status mode-pool
  assert_output --regexp 'slot 1, exclusive, token'
}

@test "status of a glob or of a KEY written with the prefix: the literal KEY, and a hint when it is free" {
  rl status 'hint:*'
  assert_equal "$status" 1 # the status of that very name, as always
  assert_line --index 0 'hint:*: free (last fence 0)'
  [[ $stderr == *"looks like a pattern"*"did you mean rlock list 'hint:*'?"* ]] || fail "$stderr"
  rl status 'lock:hint'
  assert_equal "$status" 1
  [[ $stderr == *"rlock adds the prefix 'lock:' itself: did you mean rlock status hint?"* ]] ||
    fail "$stderr"
  rl -q status 'hint:*'
  assert_equal "$stderr" ""
  acquire_tok 'hint:*' --ttl 60s # a lock of that name: no hint
  rl status 'hint:*'
  assert_success
  assert_equal "$stderr" ""
  rl status 'hint:x'
  assert_equal "$status" 1
  assert_equal "$stderr" "" # neither a glob nor the prefix
}

@test "list of a pattern that starts with the prefix says that rlock adds it; exit 0" {
  acquire_tok lh-deploy --ttl 60s
  rl list 'lock:lh-dep*'
  assert_success
  assert_output ""
  [[ $stderr == *"no lock matches 'lock:lh-dep*'"*"did you mean rlock list 'lh-dep*'?"* ]] ||
    fail "$stderr"
  rl list 'lh-dep*'
  assert_success
  assert_equal "$stderr" ""
  [[ $output == lh-deploy* ]] || fail "$output"
}

# --- forget --------------------------------------------------------------------------------------

@test "forget removes every key of a free lock, its fence counter too: fences start again" {
  acquire_tok fg-free --ttl 30s
  rl release fg-free --token "$TOK"
  acquire_tok fg-free --ttl 30s
  rl release fg-free --token "$TOK"
  assert_equal "$(rcli get 'lock:{fg-free}:fence')" 2
  rl forget fg-free --yes
  assert_success
  [[ $stderr == *"its fences start again at 1"* ]] || fail "$stderr"
  run rcli --raw keys 'lock:{fg-free}*'
  refute_output --regexp 'fence|queue|qseq|holders|limit|^lock:\{fg-free\}$'
  rl acquire fg-free --ttl 30s --json
  assert_output --partial '"fence":1'
}

@test "forget is refused (1) while the lock is held or waited for, and changes nothing" {
  acquire_tok fg-held --ttl 30s
  rl forget fg-held --yes
  assert_equal "$status" 1
  [[ $stderr == *"in use (1 holder, 0 waiting)"* ]] || fail "$stderr"
  assert_equal "$(rcli get 'lock:{fg-held}')" "$TOK"
  assert_equal "$(rcli get 'lock:{fg-held}:fence')" 1
  start_bg waiter acquire fg-held --wait 30s
  wait_until 'has_waiter fg-held'
  rl release fg-held --token "$TOK"
  wait_bg waiter 10
  run rcli exists 'lock:{fg-held}'
  assert_output 1
  # A semaphore with a waiter behind its holders.
  acquire_tok fg-sem --limit 1 --ttl 30s
  start_bg semwaiter acquire fg-sem --limit 1 --wait 30s
  wait_until 'has_waiter fg-sem'
  rl release fg-sem --token "$TOK"
  wait_bg semwaiter 10
  rl forget fg-sem --yes
  assert_equal "$status" 1
}

@test "forget of a key with nothing to forget exits 0" {
  rl forget fg-never --yes
  assert_success
  [[ $stderr == *"nothing to forget"* ]] || fail "$stderr"
}

@test "forget asks on a terminal (declining exits 1) and refuses without one (64)" {
  acquire_tok fg-ask --ttl 30s
  rl release fg-ask --token "$TOK"
  run --separate-stderr "$RLOCK" forget fg-ask </dev/null
  assert_equal "$status" 64
  [[ $stderr == *--yes* ]] || fail "$stderr"
  run bash -c "printf 'n\n' | script -qec '$RLOCK forget fg-ask' /dev/null"
  assert_equal "$status" 1
  assert_output --partial "fence counter included"
  assert_equal "$(rcli exists 'lock:{fg-ask}:fence')" 1
  run bash -c "printf 'y\n' | script -qec '$RLOCK forget fg-ask' /dev/null"
  assert_success
  assert_equal "$(rcli exists 'lock:{fg-ask}:fence')" 0
}

# --- foreign holders, SCRIPT FLUSH ----------------------------------------------------------

@test "a foreign key without an expiry is shown as such, not as a lease of -1ms or 0s" {
  rcli set 'lock:{noexp}' tok >/dev/null
  rl status noexp
  assert_success
  assert_output --partial "no expiry, exclusive, token tok"
  refute_output --partial "-1ms"
  rl list
  assert_success
  assert_line "$(printf 'noexp\t?\t-1\t0\t0\t\t')"
  rl status noexp --json
  assert_output --partial '"ttl_left_ms":-1'
  rcli del 'lock:{noexp}' >/dev/null
}

@test "list --prometheus: a foreign key without an expiry has no lease that runs out now" {
  rcli set 'lock:{noexpp}' tok >/dev/null
  rl list --prometheus 'noexpp'
  assert_success
  assert_line 'rlock_held{key="noexpp"} 1'
  # Not 0.000 and an expiry timestamp of "now": nothing will free it.
  refute_line 'rlock_lease_left_seconds{key="noexpp"} 0.000'
  refute_line --partial 'rlock_lease_expiry_timestamp_seconds{key="noexpp"}'
  rcli del 'lock:{noexpp}' >/dev/null
}

@test "a foreign SET NX PX holder is respected and shown by status" {
  rcli set 'lock:{foreign}' tok NX PX 5000 >/dev/null
  rl acquire foreign -n
  assert_equal "$status" 75
  run rcli get 'lock:{foreign}'
  assert_output tok
  rl status foreign
  assert_success
  assert_output --partial "unknown client"
  rl status foreign --json
  assert_output --partial '"token":"tok"'
}

@test "a foreign SET NX client is kept out while rlock holds the lock" {
  acquire_tok foreign-out --ttl 30s
  run rcli set 'lock:{foreign-out}' other NX PX 5000
  assert_output ""
  run rcli get 'lock:{foreign-out}'
  assert_output "$TOK"
}

@test "a foreign holder's token can release it" {
  rcli set 'lock:{foreign-rel}' tok NX PX 30000 >/dev/null
  rl release foreign-rel --token tok
  assert_success
  run rcli exists 'lock:{foreign-rel}'
  assert_output 0
}

@test "SCRIPT FLUSH between acquire and release still works" {
  acquire_tok flush --ttl 30s
  rcli script flush >/dev/null
  rl extend flush --token "$TOK" --ttl 20s
  assert_success
  rcli script flush >/dev/null
  rl status flush
  assert_success
  rcli script flush >/dev/null
  rl release flush --token "$TOK"
  assert_success
  run rcli exists 'lock:{flush}'
  assert_output 0
}

@test "a run after SCRIPT FLUSH hears NOSCRIPT once: the release script is loaded again with the first EVAL" {
  rcli script flush >/dev/null
  rcli config resetstat >/dev/null
  rl run flush-run -- true
  assert_success
  run rcli exists 'lock:{flush-run}'
  assert_output 0
  # one NOSCRIPT (the acquire's EVALSHA), none for the release: one round trip more
  # than a run with the scripts loaded, not two (docs/PERFORMANCE.md)
  run rcli info errorstats
  [[ $output == *Errorstats* ]] || skip "the server has no INFO errorstats (Redis < 6.2)"
  assert_output --partial "errorstat_NOSCRIPT:count=1"
}

# --- --limit ---------------------------------------------------------------------------

@test "--limit 2: two holders at once, the third is refused (75)" {
  rl acquire sem --limit 2 --ttl 30s
  assert_success
  t1=$output
  rl acquire sem --limit 2 --ttl 30s
  assert_success
  assert [ "$output" != "$t1" ]
  rl acquire sem --limit 2 --ttl 30s -n
  assert_equal "$status" 75
  rl status sem --json
  assert_success
  assert_output --partial '"limit":2'
  assert_equal "$(grep -o '"token":' <<<"$output" | wc -l)" 2
  rl release sem --token "$t1"
  assert_success
  rl acquire sem --limit 2 --ttl 30s -n
  assert_success
}

@test "plain acquire on a --limit key is a usage error (64), never a double grant" {
  rl acquire mixed --limit 2 --ttl 30s
  assert_success
  rl acquire mixed --ttl 30s -n
  assert_equal "$status" 64
  assert_equal "${#stderr_lines[@]}" 1
  run rcli exists 'lock:{mixed}'
  assert_output 0
}

@test "--limit acquire on a plainly held key is a usage error (64)" {
  acquire_tok mixed2 --ttl 30s
  rl acquire mixed2 --limit 2 --ttl 30s -n
  assert_equal "$status" 64
}

# --- output ----------------------------------------------------------------------------

@test "a waiting acquire says so on stderr; -q silences it" {
  acquire_tok quiet --ttl 1s
  rl acquire quiet --wait 10s --ttl 1s
  assert_success
  assert_regex "$output" '^[0-9a-f]{32}$'
  assert_regex "$stderr" 'waiting for .quiet.'
  rl -q acquire quiet --wait 10s --ttl 5s
  assert_success
  assert_regex "$output" '^[0-9a-f]{32}$'
  assert_equal "$stderr" ""
}

@test "-v shows each round trip with a timestamp and latency on stderr" {
  # Whatever earlier tests left in the script cache: none, then the acquire and status
  # scripts loaded by plain runs (through the EVAL fallback), so that each -v run below is
  # one EVALSHA round trip.
  rcli script flush >/dev/null
  acquire_tok verbose --ttl 30s
  run -0 "$RLOCK" status verbose
  rl -v status verbose
  assert_success
  assert_output --partial "verbose: held"
  refute_output --partial EVALSHA
  assert_regex "$stderr" $'(^|\n)rlock: \\[[0-9:.]+\\] EVALSHA(_RO)? [0-9.]+ms(\n|$)'
  refute_regex "$stderr" '(^|[^A-Z])EVAL(_RO)? [0-9.]+ms'
  rl acquire verbose2 --ttl 5s -v
  assert_success
  assert_regex "$output" '^[0-9a-f]{32}$'
  assert_regex "$stderr" $'(^|\n)rlock: \\[[0-9:.]+\\] EVALSHA [0-9.]+ms(\n|$)'
  refute_regex "$stderr" '(^|[^A-Z])EVAL [0-9.]+ms'
}

@test "-v after SCRIPT FLUSH shows the EVAL fallback" {
  rcli script flush >/dev/null
  rl -v status verbose-flush
  assert_equal "$status" 1
  assert_regex "$stderr" 'EVALSHA(_RO)? [0-9.]+ms'
  assert_regex "$stderr" '(^|[^A-Z])EVAL(_RO)? [0-9.]+ms'
}
