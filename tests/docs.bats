#!/usr/bin/env bats
# ctest-labels: fast plainonly
# The documentation agrees with the binary and with itself: the sample output of README
# and docs/GUIDE.md is what rlock prints (up to host names, pids, times and durations), the
# exit table is the same in README, `rlock --help` and the man page, the docs write a
# subcommand's options after KEY (both orders work), the man page names every option and
# variable, and the cron lines (README's report, the guide's metrics) are the ones
# docs/recipes/cron.md and docs/recipes/prometheus.md test.

# shellcheck disable=SC2016 # single-quoted scripts are expanded by the child's shell
bats_require_minimum_version 1.5.0

load helpers/redis

ROOT="$BATS_TEST_DIRNAME/.."
README="$ROOT/README.md"
GUIDE="$ROOT/docs/GUIDE.md"
MAN="$ROOT/man/rlock.1"

setup_file() { redis_start; }

setup() {
  T=$BATS_TEST_TMPDIR
  rcli flushall >/dev/null # the samples use the same lock names
  # No CI of the machine running the tests labels the samples' holders (the docs' CI
  # samples set their own GitHub Actions variables).
  unset GITHUB_ACTIONS GITLAB_CI JENKINS_URL BUILDKITE RLOCK_LABEL
}

# sample_in FILE COMMAND: the lines FILE shows after `$ COMMAND` in a console block, up
# to the next prompt or the end of the block. readme_sample and guide_sample COMMAND: in
# README and in docs/GUIDE.md.
sample_in() {
  awk -v cmd="\$ $2" 'index($0, cmd) == 1 {f = 1; next}
    f && (/^\$ / || /^```/ || /^\.\.\.$/) {exit} f' "$1"
}
readme_sample() { sample_in "$README" "$1"; }
guide_sample() { sample_in "$GUIDE" "$1"; }

# normalize: what differs from one run to the next, replaced by a word: host names, pids,
# users, times (also HH:MM:SSZ), tokens, durations, fences and the bare numbers of `list`.
normalize() {
  sed -E \
    -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z/TIME/g' \
    -e 's/since [0-9:]+Z/since TIME/g' \
    -e 's/\b[0-9]{2}:[0-9]{2}:[0-9]{2}Z/TIME/g' \
    -e 's/token [0-9a-f]{32}/token TOKEN/g' \
    -e 's/(held by|holder |shared |ran as|done by) +[^ ]+ pid [0-9]+/\1 HOST pid PID/g' \
    -e 's/(waiter [0-9]+\.( \(shared\))?) [^ ]+ pid [0-9]+/\1 HOST pid PID/g' \
    -e 's/ user [^:]+:/ user USER:/g' \
    -e 's/\b[0-9]+(\.[0-9]+)?(ms|s|m|h)([0-9]+(ms|s|m|h))*\b/DUR/g' \
    -e 's/fence [0-9]+/fence N/g' \
    -e 's/^([^\t]+)\t[^\t]+:[0-9]+\t[0-9]+\t[0-9]+\t[0-9]+\t/\1\tHOST:PID\tN\tN\tN\t/'
}

# A ./deploy.sh in $T/ws that runs until $T/ws/done exists, as the docs' samples run it.
write_deploy() {
  mkdir -p "$T/ws"
  printf '#!/bin/sh\ntouch "started.$$"\nwhile [ ! -e done ]; do sleep 0.1; done\n' >"$T/ws/deploy.sh"
  chmod +x "$T/ws/deploy.sh"
}

# in_ws NAME RLOCK-ARGS...: rlock in $T/ws, in the background (bg_start).
in_ws() {
  local name=$1
  shift
  bg_start "$name" sh -c 'cd "$1" && shift && exec "$@"' sh "$T/ws" "$RLOCK" "$@"
}

# holder_and_waiter: the docs' deploy example: a holder that has started, then a waiter,
# each a GitHub Actions run (runs 4242 and 4243 of acme/shop: their labels are the runs'
# URLs, from the variables the runner sets). Sets holder and waiter to their pids.
holder_and_waiter() {
  write_deploy
  export GITHUB_ACTIONS=true GITHUB_SERVER_URL=https://github.com GITHUB_REPOSITORY=acme/shop
  GITHUB_RUN_ID=4242 in_ws holder run deploy:prod -- ./deploy.sh
  holder=$BG_PID
  wait_until 'compgen -G "$T/ws/started.*" >/dev/null'
  GITHUB_RUN_ID=4243 in_ws waiter run deploy:prod --wait 30m -- ./deploy.sh
  waiter=$BG_PID
  unset GITHUB_ACTIONS
}

@test "README's waiting sample is what a waiter prints off a terminal" {
  holder_and_waiter
  wait_until "grep -q 'waiting for' '$T/waiter.err'" 5
  touch "$T/ws/done"
  bg_wait "$holder"
  bg_wait "$waiter"
  assert_equal "$BG_STATUS" 0
  mapfile -t sample < <(readme_sample 'rlock run deploy:prod --wait 30m -- ./deploy.sh')
  assert [ "${#sample[@]}" -ge 2 ]
  # The guide's CI section shows the same lines.
  assert_equal "$(guide_sample 'rlock run deploy:prod --wait 30m -- ./deploy.sh')" \
    "$(printf '%s\n' "${sample[@]}")"
  mapfile -t got < <(normalize <"$T/waiter.err")
  assert_equal "${#got[@]}" 2
  # The first line and the last; the lines between come every 30s (tests/waiting.bats).
  assert_equal "${got[0]}" "$(normalize <<<"${sample[0]}")"
  assert_equal "${got[1]}" "$(normalize <<<"${sample[-1]}")"
  for line in "${sample[@]:1:${#sample[@]}-2}"; do
    [[ $line == "rlock: still waiting for 'deploy:prod' after "* ]] || fail "$line"
  done
}

# outage_lines FILE: the lines of FILE that tell of an outage while waiting, as rlock
# prints them (the man page's escapes undone), normalized, the server's address a word.
outage_lines() {
  grep -E '^rlock: (Redis unreachable|reconnected)' "$1" | sed -e "s/\\\\(aq/'/g" -e 's/\\-/-/g' |
    sed -E 's/[0-9]+(\.[0-9]+){3}:[0-9]+/ADDR/g' | normalize
}

@test "the guide's and the man page's outage lines are what a waiter prints when Redis goes away" {
  tok=$("$RLOCK" acquire --ttl 60s deploy:prod)
  bg_start waiter "$RLOCK" run deploy:prod --wait 30m -- true
  waiter=$BG_PID
  wait_until "grep -q 'waiting for' '$T/waiter.err'" 5
  redis_kill
  wait_until "grep -q 'unreachable' '$T/waiter.err'" 5
  redis_restart
  bg_wait "$waiter"
  assert_equal "$BG_STATUS" 0
  run outage_lines "$T/waiter.err"
  assert_equal "${#lines[@]}" 2
  printed=$output
  assert_equal "$(outage_lines "$GUIDE")" "$printed"
  assert_equal "$(outage_lines "$MAN")" "$printed"
}

@test "every duration in README's waiting sample is written as rlock writes it (1m, not 1m0s)" {
  mapfile -t durations < <(readme_sample 'rlock run deploy:prod --wait 30m -- ./deploy.sh' |
    grep -oE '\b[0-9]+(\.[0-9]+)?(ms|s|m|h)([0-9]+(ms|s|m|h))*\b' | sort -u)
  assert [ "${#durations[@]}" -ge 3 ]
  for d in "${durations[@]}"; do
    # -v says the lease it acquired, written by the one duration formatter.
    run --separate-stderr "$RLOCK" -v run "drift-$d" --ttl "$d" -- true
    assert_success
    [[ $stderr == *"(fence 1, ttl $d)"* ]] ||
      fail "README writes '$d'; rlock writes: $(grep -o '(fence 1, ttl [^)]*)' <<<"$stderr")"
  done
}

@test "README's status and list samples are what status and list print (piped)" {
  holder_and_waiter
  wait_until '[[ $(rcli zcard "lock:{deploy:prod}:queue") == 1 ]]'
  run "$RLOCK" status deploy:prod
  assert_success
  assert_equal "$(normalize <<<"$output")" "$(readme_sample 'rlock status deploy:prod' | normalize)"
  run "$RLOCK" list 'deploy:*'
  assert_success
  assert_equal "$(normalize <<<"$output")" \
    "$(readme_sample "rlock list 'deploy:*'" | normalize)"
  # The guide's operators section shows the same samples.
  assert_equal "$(guide_sample 'rlock status deploy:prod')" "$(readme_sample 'rlock status deploy:prod')"
  assert_equal "$(guide_sample "rlock list 'deploy:*'")" "$(readme_sample "rlock list 'deploy:*'")"
  touch "$T/ws/done"
  bg_wait "$holder"
  bg_wait "$waiter"
}

@test "the guide's shared-lock status sample is what status prints (piped): holders, then the line in order" {
  mkdir -p "$T/ws"
  # ./dump.sh NAME and ./migrate.sh: say they started, then run until $T/ws/done exists.
  printf '#!/bin/sh\ntouch "started.${1:-migrate}"\nwhile [ ! -e done ]; do sleep 0.1; done\n' \
    >"$T/ws/dump.sh"
  cp "$T/ws/dump.sh" "$T/ws/migrate.sh"
  chmod +x "$T/ws/dump.sh" "$T/ws/migrate.sh"
  pids=()
  in_ws orders run db:orders -s -- ./dump.sh orders
  pids+=("$BG_PID")
  wait_for_file "$T/ws/started.orders"
  in_ws users run db:orders -s -- ./dump.sh users
  pids+=("$BG_PID")
  wait_for_file "$T/ws/started.users"
  in_ws migrate run db:orders --wait 1h -- ./migrate.sh
  pids+=("$BG_PID")
  wait_until '[[ $(rcli zcard "lock:{db:orders}:queue") == 1 ]]'
  in_ws items run db:orders -s --wait 1h -- ./dump.sh items
  pids+=("$BG_PID")
  wait_until '[[ $(rcli zcard "lock:{db:orders}:queue") == 2 ]]'
  run "$RLOCK" status db:orders
  assert_success
  # The holders come in the order their leases end, which renewals change: the same lines,
  # and the waiters in the same order.
  got=$(normalize <<<"$output")
  want=$(guide_sample 'rlock status db:orders' | normalize)
  assert_equal "$(sort <<<"$got")" "$(sort <<<"$want")"
  assert_equal "$(grep waiter <<<"$got")" "$(grep waiter <<<"$want")"
  assert_equal "$(head -n 1 <<<"$got")" "$(head -n 1 <<<"$want")"
  # The marker the guide names, in the lock's own key.
  assert_equal "$(rcli get 'lock:{db:orders}')" "shared lock"
  touch "$T/ws/done"
  for pid in "${pids[@]}"; do
    bg_wait "$pid" 30
    assert_equal "$BG_STATUS" 0
  done
}

@test "the guide's once-per-period samples are what run and status print for a done lock (piped)" {
  mkdir -p "$T/ws"
  printf '#!/bin/sh\nexit 0\n' >"$T/ws/report.sh"
  chmod +x "$T/ws/report.sh"
  in_ws first run nightly-report --done-for 20h -- ./report.sh
  bg_wait "$BG_PID"
  assert_equal "$BG_STATUS" 0
  in_ws again run nightly-report --done-for 20h -- ./report.sh
  bg_wait "$BG_PID"
  assert_equal "$BG_STATUS" 75
  sample=$(guide_sample 'rlock run nightly-report --done-for 20h -- ./report.sh')
  assert [ -n "$sample" ]
  assert_equal "$(normalize <"$T/again.err")" "$(normalize <<<"$sample")"
  run "$RLOCK" status nightly-report
  assert_success
  assert_equal "$(normalize <<<"$output")" \
    "$(guide_sample 'rlock status nightly-report' | normalize)"
}

# normalize_history: normalize, and what a history line has besides: the date, and who
# (a host and pid, or an operator's USER@HOST and pid).
normalize_history() {
  normalize | sed -E -e 's/^[0-9]{4}-[0-9]{2}-[0-9]{2} /DATE /' -e 's/[^ ,]+ pid [0-9]+/HOST pid PID/g'
}

@test "the guide's history and metrics samples are what history and list --prometheus print" {
  holder_and_waiter
  wait_until '[[ $(rcli zcard "lock:{deploy:prod}:queue") == 1 ]]'
  # While run 4242 deploys and run 4243 waits: the first families of the metrics.
  mapfile -t sample < <(guide_sample "rlock list --prometheus 'deploy:*'")
  assert [ "${#sample[@]}" -ge 6 ]
  run "$RLOCK" list --prometheus 'deploy:*'
  assert_success
  assert_equal "$(head -n "${#sample[@]}" <<<"$output")" "$(printf '%s\n' "${sample[@]}")"
  # The runner of run 4242 dies with its deploy; its lease runs out (after 30s: at once
  # here), and run 4243, next in line, takes the lock.
  kill -KILL "$holder"
  rcli pexpire 'lock:{deploy:prod}' 1 >/dev/null
  wait_until "grep -q 'acquired' '$T/waiter.err'" 10
  # Its deploy hangs; an operator breaks the lock.
  "$RLOCK" break --yes deploy:prod 2>/dev/null
  bg_wait "$waiter"
  assert_equal "$BG_STATUS" 76
  touch "$T/ws/done"
  run "$RLOCK" history deploy:prod
  assert_success
  assert_equal "$(normalize_history <<<"$output")" \
    "$(guide_sample 'rlock history deploy:prod' | normalize_history)"
  # A free lock's status shows the last three of them, oldest first, after `last`.
  run -1 "$RLOCK" status deploy:prod
  assert_equal "${#lines[@]}" 4
  assert_equal "$(tail -n 3 <<<"$output" | sed 's/^  last    //')" \
    "$("$RLOCK" history deploy:prod -n 3)"
}

@test "the guide's and the man page's metrics line is the cron line docs/recipes/prometheus.md tests" {
  guide=$(grep -E '^\* \* \* \* \* ' "$GUIDE")
  recipe=$(grep -E '^\* \* \* \* \* ' "$ROOT/docs/recipes/prometheus.md")
  assert_equal "$guide" "$recipe"
  [[ $guide == *" list --prometheus >rlock.prom.\$\$ && mv rlock.prom.\$\$ rlock.prom "* ]] ||
    fail "$guide"
  man=$(sed -e 's/\\-/-/g' "$MAN" | grep -E '^\* \* \* \* \* ')
  assert_equal "$man" "$recipe"
}

# guide_line PATTERN: the guide's command line (in a code block) that matches the extended
# regexp PATTERN, without its comment, as words for in_ws (without the leading `rlock`).
guide_line() {
  local line
  line=$(grep -E "^rlock $1" "$GUIDE" | sed 's/ *#.*//')
  [[ -n $line ]] || fail "no line of the guide matches: rlock $1"
  read -ra words <<<"${line#rlock }"
}

@test "the guide's CI policy lines say what rlock prints: superseded by the newer run; a full line" {
  mkdir -p "$T/ws"
  printf '#!/bin/sh\nexit 0\n' >"$T/ws/deploy.sh"
  chmod +x "$T/ws/deploy.sh"
  tok=$("$RLOCK" acquire deploy:prod --ttl 60s)
  # Two GitHub Actions runs ask to deploy only the latest: run 4251 replaces run 4250.
  export GITHUB_ACTIONS=true GITHUB_SERVER_URL=https://github.com GITHUB_REPOSITORY=acme/shop
  guide_line 'run deploy:prod .*--supersede '
  GITHUB_RUN_ID=4250 in_ws older "${words[@]}"
  older=$BG_PID
  wait_until '[[ $(rcli zcard "lock:{deploy:prod}:queue") == 1 ]]'
  GITHUB_RUN_ID=4251 in_ws newer "${words[@]}"
  newer=$BG_PID
  bg_wait "$older" 10
  assert_equal "$BG_STATUS" 75
  want=$(grep -o "rlock: no longer waiting for [^\`]*" "$GUIDE")
  assert_equal "$(tail -n 1 "$T/older.err")" "$want"
  unset GITHUB_ACTIONS
  # Five waiters in line: the guide's --max-waiters 5 is not acquired at once.
  pids=("$newer")
  for i in 1 2 3 4; do
    in_ws "w$i" run deploy:prod --wait 1h -- ./deploy.sh
    pids+=("$BG_PID")
  done
  wait_until '[[ $(rcli zcard "lock:{deploy:prod}:queue") == 5 ]]'
  guide_line 'run deploy:prod .*--max-waiters 5 '
  in_ws full "${words[@]}"
  bg_wait "$BG_PID" 10
  assert_equal "$BG_STATUS" 75
  want=$(grep -o "rlock: 'deploy:prod' has 5 or more waiters already [^\`]*" "$GUIDE")
  got=$(tail -n 1 "$T/full.err")
  [[ $got == "${want%%…*}"* && $got == *"${want#*…}" ]] || fail "the guide: $want; rlock: $got"
  "$RLOCK" release deploy:prod --token "$tok"
  for pid in "${pids[@]}"; do
    bg_wait "$pid" 30
    assert_equal "$BG_STATUS" 0
  done
}

# The exit table as "CODE|MEANING" lines, from each of the three places.
help_exit_table() {
  "$RLOCK" --help | awk '/^Exit status:/ {f = 1; next} f && /^$/ {exit}
    f && /^  [^ ]/ {if (row) print row; code = $1; $1 = ""; sub(/^ +/, ""); row = code "|" $0; next}
    f {sub(/^ +/, ""); row = row " " $0} END {if (row) print row}'
}
readme_exit_table() {
  awk '/^## Exit status/ {f = 1; next} f && /^## / {exit} f && /^\| [0-9]/' "$README" |
    sed -E -e 's/`//g' -e 's/^\| ([^|]+) \| (.*) \|$/\1|\2/' -e 's/^([0-9]+)-([0-9]+)\|/\1-\2|/'
}
man_exit_table() {
  awk '/^\.SH EXIT STATUS/ {f = 1; next} f && /^\.(PP|SH)/ {exit}
    f && /^\.TP/ {if (row) print row; row = ""; next}
    f && /^\.B / && row == "" {row = substr($0, 4) "|"; next}
    f {row = row (row ~ /\|$/ ? "" : " ") $0} END {if (row) print row}' "$MAN" |
    sed -e 's/\\-/-/g'
}

@test "the exit table is the same in README, --help and the man page" {
  help=$(help_exit_table)
  assert [ "$(wc -l <<<"$help")" -ge 11 ]
  assert_equal "$(readme_exit_table)" "$help"
  assert_equal "$(man_exit_table)" "$help"
}

@test "the docs write a subcommand's options after KEY, as run --help does" {
  run "$RLOCK" run --help
  assert_output --partial "rlock run KEY [OPTIONS] -- CMD"
  # Every rlock command line in README, the guide, the decisions, docs/INSTALL.md, the man
  # page and the recipes: the word after `run` or `acquire` is KEY, not an option
  # (`--help` aside).
  run bash -c 'sed -e "s/\\\\-/-/g" "$@" |
    grep -nE "(^|rlock([^a-z|\`][^|\`]*)?) *(run|acquire) +-" | grep -vE "(run|acquire) +--help"' \
    _ "$README" "$GUIDE" "$ROOT/docs/DECISIONS.md" "$ROOT/docs/INSTALL.md" "$MAN" "$ROOT"/docs/recipes/*.md
  assert_output ""
}

@test "both orders work: options before or after KEY mean the same" {
  tok=$("$RLOCK" acquire taken --ttl 30s)
  run "$RLOCK" run -n -E 7 taken -- true
  assert_equal "$status" 7
  run "$RLOCK" run taken -n -E 7 -- true
  assert_equal "$status" 7
  run "$RLOCK" run -E 9 free-key -n -- sh -c 'exit 3'
  assert_equal "$status" 3
  "$RLOCK" release taken --token "$tok"
}

@test "README's cron line is the quiet, full-path line docs/recipes/cron.md tests" {
  readme=$(grep -E '^0 2 \* \* \* ' "$README")
  recipe=$(grep -E '^0 2 \* \* \* ' "$ROOT/docs/recipes/cron.md")
  assert_equal "$readme" "$recipe"
  [[ $readme == *" /usr/local/bin/rlock -q run "*" -E 0 "* ]] || fail "$readme"
  # The guide's cron section and the man page's example are the same line.
  assert_equal "$(grep -E '^0 2 \* \* \* ' "$GUIDE")" "$recipe"
  man=$(sed -e 's/\\-/-/g' "$MAN" | grep -E '^0 2 \* \* \* ')
  assert_equal "$man" "$recipe"
}

@test "the man page names forget and doctor where it lists the operators' commands, -y and status 1" {
  run "$RLOCK" forget --help
  assert_output --partial "--yes"
  # The page as one line of source.
  man=$(sed -e 's/\\-/-/g' "$MAN" | tr '\n' ' ')
  [[ $man == *".BR break , .B forget and .B doctor are for operators."* ]] ||
    fail "the operators' list"
  [[ $man == *'.BR -y ", " --yes .RB ( break , .BR forget ) Do not ask'* ]] || fail "-y"
  [[ $man == *".B 1 status: KEY is free; break: KEY was not held; forget: refused; doctor: a check warned or failed"* ]] ||
    fail "status 1"
}

@test "the guide's --layout samples are what status prints for the other tools' locks, with its warning" {
  # The seeds' NestJS service holds coupon 42 (its token a UUID); a Redisson client holds
  # invoices:close twice (reentrant), as the guide's samples show them.
  rcli set lock:coupon:issue:42 9f1c2e4a-7b3d-4e8f-a1c6-5d2b8e0f3a71 PX 30000 >/dev/null
  rcli hset invoices:close 6f0e5c1a-2b3c-4d5e-8f90-a1b2c3d4e5f6:57 2 >/dev/null
  rcli pexpire invoices:close 30000 >/dev/null
  for cmd in 'rlock --layout plain status coupon:issue:42' \
    'rlock --layout redisson status invoices:close' 'rlock status coupon:issue:42'; do
    shown=$(guide_sample "$cmd")
    [[ -n $shown ]] || fail "the guide shows no output of: $cmd"
    read -ra words <<<"${cmd#rlock }"
    run "$RLOCK" "${words[@]}"
    [[ $status == 0 || $status == 1 ]] || fail "$cmd: exit $status"
    assert_equal "$(normalize <<<"$output")" "$(normalize <<<"$shown")"
  done
}

@test "the man page names every option of --help and every variable of its Environment" {
  # The reference is the man page; README shows only the idioms.
  local sub names name long missing=()
  man=$(sed -e 's/\\-/-/g' "$MAN")
  # Each option line of rlock --help and of each subcommand's: "  -x,--long …", "  --long …"
  # or "  -x,-e,--long …": every long name (the short one when there is none).
  while read -r names; do
    long=$(tr ',' '\n' <<<"$names" | grep -- '^--') || long=$names
    for name in $long; do
      grep -qE -- "(^|[^a-z-])$name([^a-z-]|$)" <<<"$man" || missing+=("man: $name")
    done
  done < <(for sub in "" run acquire extend release status list history break forget; do
    # shellcheck disable=SC2086 # SUB empty: no word
    "$RLOCK" $sub --help
  done | sed -n 's/^  \(-[a-zA-Z-][-a-zA-Z,]*\).*/\1/p' | sort -u)
  # The variables of the Environment paragraph (rlock's own and the child's).
  vars=$("$RLOCK" --help | sed -n '/^Environment:/,/^See /p' | grep -oE '\b(RLOCK|REDIS)[A-Z_]*\b' | sort -u)
  assert [ "$(wc -l <<<"$vars")" -ge 10 ]
  for v in $vars; do
    grep -qE "^\.(B|BR|TQ) .*\b$v\b" "$MAN" || missing+=("man: $v")
  done
  ((${#missing[@]} == 0)) || fail "not named: ${missing[*]}"
}
