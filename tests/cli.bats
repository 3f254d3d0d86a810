#!/usr/bin/env bats
# ctest-labels: fast
# The command line itself: --help, --version, usage errors (64, never CLI11's own codes),
# durations, keys, tokens, and global options before or after the subcommand.
# shellcheck disable=SC2154 # $stderr and $stderr_lines come from `run --separate-stderr`

bats_require_minimum_version 1.5.0

load helpers/redis

setup_file() {
  # One test reads server-wide counters (INFO commandstats): one test at a time.
  export BATS_NO_PARALLELIZE_WITHIN_FILE=true
  redis_start
}

# A usage error: exit 64, nothing on stdout, exactly one stderr line "rlock: …".
assert_usage_error() {
  assert_equal "$status" 64
  assert_equal "$output" ""
  assert_equal "${#stderr_lines[@]}" 1
  [[ ${stderr_lines[0]} == "rlock: "* ]] || fail "stderr does not start with 'rlock: ': $stderr"
}

# A URL where nothing listens.
dead_url() {
  echo "redis://127.0.0.1:$(free_port)/0"
}

@test "--help exits 0 and lists every subcommand" {
  rl --help
  assert_success
  assert_equal "$stderr" ""
  for sub in run acquire extend release status list break; do
    assert_line --regexp "^  $sub  "
  done
}

@test "--help shows the exit-status table" {
  rl --help
  assert_success
  assert_output --partial "Exit status"
  for code in 0 64 69 70 71 75 76 77 126/127 '128\+N'; do
    assert_line --regexp "^  $code "
  done
}

@test "-h is --help, and each subcommand has --help" {
  rl -h
  assert_success
  assert_output --partial "Subcommands:"
  for sub in run acquire extend release status list break; do
    rl "$sub" --help
    assert_success
    assert_output --partial "rlock $sub"
  done
}

@test "--version prints the version and exits 0" {
  rl --version
  assert_success
  assert_output --regexp '^rlock [0-9]+\.[0-9]+\.[0-9]+'
  assert_equal "$stderr" ""
}

@test "an unknown flag is a usage error (64, not CLI11's 109)" {
  rl acquire k --bogus
  assert_usage_error
  assert_equal "${stderr_lines[0]}" "rlock: unknown option '--bogus' for acquire (see rlock acquire --help)"
  rl --bogus status k
  assert_usage_error
}

@test "an unknown subcommand is a usage error (64)" {
  rl frobnicate k
  assert_usage_error
}

@test "no subcommand at all is a usage error (64) in lower case, naming the subcommands" {
  rl
  assert_usage_error
  assert_equal "${stderr_lines[0]}" "rlock: a subcommand is required: run, acquire, extend, \
release, status, list, history, top, break, forget or doctor (see rlock --help)"
  rl -q
  assert_usage_error
  [[ $stderr == "rlock: a subcommand is required"* ]] || fail "$stderr"
}

@test "a global option left without its value, nothing after it, says so (64)" {
  rl -u
  assert_usage_error
  assert_equal "${stderr_lines[0]}" "rlock: --url: 1 required URL missing (see rlock --help)"
  rl --prefix
  assert_usage_error
  [[ $stderr == "rlock: --prefix: 1 required PREFIX missing"* ]] || fail "$stderr"
  rl -w
  assert_usage_error
  assert_equal "${stderr_lines[0]}" "rlock: -w: 1 required DURATION missing (see rlock --help)"
  rl status k --timeout
  assert_usage_error
  [[ $stderr == "rlock: --timeout: 1 required DURATION missing"* ]] || fail "$stderr"
}

@test "a missing KEY is a usage error (64, not CLI11's 106)" {
  for sub in acquire extend release status break; do
    rl "$sub"
    assert_usage_error
  done
}

@test "an extra positional argument is a usage error (64)" {
  rl status a b
  assert_usage_error
}

@test "a malformed -E value is a usage error (64, not CLI11's 105)" {
  rl acquire k -E abc
  assert_usage_error
}

@test "-E outside 0-255 is a usage error (64)" {
  rl acquire k -E 256
  assert_usage_error
  rl acquire k -E -1
  assert_usage_error
}

@test "--connect-timeout 0 and --command-timeout 0 are usage errors (64)" {
  rl --connect-timeout 0 status k
  assert_usage_error
  rl status k --command-timeout 0
  assert_usage_error
}

@test "--ttl with an unknown unit is a usage error (64)" {
  rl acquire k --ttl 5x
  assert_usage_error
  assert_output ""
  [[ $stderr == *"--ttl"* ]] || fail "the message does not name --ttl: $stderr"
}

@test "--ttl 0 is a usage error (64)" {
  rl acquire k --ttl 0
  assert_usage_error
}

@test "a negative --wait is a usage error (64)" {
  rl acquire k --wait -1s
  assert_usage_error
  [[ $stderr == *"--wait"* ]] || fail "the message does not name --wait: $stderr"
}

@test "malformed durations are usage errors (64)" {
  for d in abc 1h30 ms 1.5.s 5S ' 5s'; do
    rl acquire k --ttl "$d"
    assert_usage_error
  done
  rl --command-timeout nope status k
  assert_usage_error
  rl --connect-timeout 3q status k
  assert_usage_error
}

@test "an empty duration is a usage error (64)" {
  rl acquire k --ttl ''
  assert_usage_error
  rl acquire k --wait ''
  assert_usage_error
}

@test "a bare number is seconds and fractions work" {
  rl acquire dur-bare --ttl 7 -q
  assert_success
  run rcli pttl 'lock:{dur-bare}'
  assert [ "$output" -gt 6000 ]
  assert [ "$output" -le 7000 ]
  rl acquire dur-frac --ttl 1.5s -q
  assert_success
  run rcli pttl 'lock:{dur-frac}'
  assert [ "$output" -gt 1000 ]
  assert [ "$output" -le 1500 ]
}

@test "durations like 250ms, 30s, 5m, 2h and 1h30m are accepted" {
  for d in 250ms 30s 5m 2h 1h30m; do
    rl acquire "dur-$d" --ttl "$d" --json
    assert_success
  done
  run rcli pttl 'lock:{dur-1h30m}'
  assert [ "$output" -gt 5300000 ]
  assert [ "$output" -le 5400000 ]
  run rcli pttl 'lock:{dur-250ms}'
  assert [ "$output" -le 250 ]
}

@test "an empty KEY is a usage error (64)" {
  rl acquire ''
  assert_usage_error
}

@test "a KEY with '{' is a usage error (64)" {
  rl acquire 'a{b'
  assert_usage_error
}

@test "a KEY with '}' is a usage error (64)" {
  rl status 'a}b'
  assert_usage_error
}

@test "a KEY with control characters is a usage error (64)" {
  rl acquire $'a\tb'
  assert_usage_error
  rl acquire $'a\nb'
  assert_usage_error
  rl acquire $'a\x7fb'
  assert_usage_error
}

@test "a KEY that is not UTF-8 is a usage error (64)" {
  rl acquire $'\xff\xfe'
  assert_usage_error
}

@test "a KEY of 512 bytes is accepted, 513 bytes is a usage error (64)" {
  k512=$(printf 'k%.0s' {1..512})
  rl acquire "$k512" --ttl 5s
  assert_success
  assert_output --regexp '^[0-9a-f]{32}$'
  run rcli exists "lock:{$k512}"
  assert_output 1
  rl acquire "${k512}x" --ttl 5s
  assert_usage_error
}

@test "a UTF-8 KEY is accepted" {
  key='ключ/ü✓ 🔒'
  rl acquire "$key" --ttl 5s
  assert_success
  tok=$output
  rl status "$key"
  assert_success
  run rcli get "lock:{$key}"
  assert_output "$tok"
}

@test "a bad token is a usage error (64)" {
  rl release k --token ''
  assert_usage_error
  rl release k --token 'a b'
  assert_usage_error
  rl extend k --token $'a\tb'
  assert_usage_error
  rl release k --token "$(printf 'a%.0s' {1..129})"
  assert_usage_error
}

@test "release and extend without any token are usage errors (64)" {
  rl release k
  assert_usage_error
  rl extend k
  assert_usage_error
}

@test "a missing token names --token and \$RLOCK_TOKEN; status without KEY names rlock list" {
  RLOCK_TOKEN='' run --separate-stderr "$RLOCK" release k
  assert_usage_error
  assert_equal "${stderr_lines[0]}" \
    "rlock: release needs the token that acquire printed: give --token TOKEN or set \$RLOCK_TOKEN"
  rl extend k
  assert_usage_error
  [[ $stderr == *"give --token TOKEN or set \$RLOCK_TOKEN"* ]] || fail "$stderr"
  rl status
  assert_usage_error
  assert_equal "${stderr_lines[0]}" \
    "rlock: status needs a KEY: rlock status KEY (to see every held lock, use rlock list)"
  rl acquire
  assert_usage_error
  assert_equal "${stderr_lines[0]}" "rlock: acquire needs a KEY: see rlock acquire --help"
}

@test "a bad URL is a usage error (64)" {
  rl --url 'foo://x' status k
  assert_usage_error
  rl --url 'redis://127.0.0.1:notaport/0' status k
  assert_usage_error
  rl --url 'redis://127.0.0.1:6379/notadb' status k
  assert_usage_error
}

@test "a bad --prefix is a usage error (64)" {
  rl --prefix 'a{' status k
  assert_usage_error
}

@test "global options after the subcommand work" {
  dead=$(dead_url) good=$RLOCK_URL
  RLOCK_URL=$dead run --separate-stderr "$RLOCK" acquire gopt --ttl 5s --url "$good" --prefix gp: -q
  assert_success
  run rcli exists 'gp:{gopt}'
  assert_output 1
  RLOCK_URL=$dead run --separate-stderr "$RLOCK" status gopt --prefix gp: --url "$good" --json
  assert_success
  assert_output --partial '"held":true'
}

@test "global options before the subcommand work" {
  dead=$(dead_url) good=$RLOCK_URL
  RLOCK_URL=$dead run --separate-stderr "$RLOCK" --url "$good" --prefix gq: -q acquire gopt2 --ttl 5s
  assert_success
  run rcli exists 'gq:{gopt2}'
  assert_output 1
}

@test "--wait with --no-wait is a usage error (64)" {
  rl acquire k --wait 1s --no-wait
  assert_usage_error
  rl acquire k -n --wait 1s
  assert_usage_error
}

@test "break without a terminal and without --yes refuses (64)" {
  tok=$("$RLOCK" acquire brk --ttl 10s)
  run --separate-stderr "$RLOCK" break brk </dev/null
  assert_usage_error
  [[ $stderr == *--yes* ]] || fail "the message does not mention --yes: $stderr"
  run rcli get 'lock:{brk}'
  assert_output "$tok"
}

@test "run --on-lost bogus is a usage error (64)" {
  rl run k --on-lost bogus -- true
  assert_usage_error
}

@test "--limit 0 is a usage error (64)" {
  rl acquire lim0 --limit 0
  assert_usage_error
}

@test "--limit with a negative number is a usage error (64)" {
  rl acquire limneg --limit -1
  assert_usage_error
}

@test "a --tls-* flag with a redis:// URL is a usage error (64) that names rediss://" {
  rl status k --tls-ca-cert /dev/null
  assert_usage_error
  assert_equal "$status" 64
  [[ $stderr == *rediss://* ]] || fail "the message does not name rediss://: $stderr"
}

@test "usage errors do not touch Redis" {
  rcli config resetstat >/dev/null
  rl acquire 'a{b'
  rl acquire k --ttl 5x
  rl acquire k --bogus
  run bash -c "redis-cli -p $REDIS_PORT info commandstats | tr -d '\r'"
  refute_output --partial cmdstat_eval
}

# --- option order and help ----------------------------------------------------------------------

@test "a subcommand's option before the subcommand is refused (64), naming where it goes" {
  T=$BATS_TEST_TMPDIR
  rl --wait 30m run order1 -- touch "$T/ran"
  assert_usage_error
  assert_equal "${stderr_lines[0]}" \
    "rlock: put --wait after 'run': it is an option of 'run', not of rlock itself"
  [[ ! -e $T/ran ]] || fail "the command ran"
  assert_equal "$(rcli exists 'lock:{order1}')" 0
  rl -n acquire order2
  assert_usage_error
  [[ $stderr == *"put -n after 'acquire'"* ]] || fail "$stderr"
  rl --limit=2 acquire order2
  assert_usage_error
  [[ $stderr == *"put --limit after 'acquire'"* ]] || fail "$stderr"
  rl --token t release order2
  assert_usage_error
  [[ $stderr == *"put --token after 'release'"* ]] || fail "$stderr"
  rl --yes break order2
  assert_usage_error
  [[ $stderr == *"put --yes after 'break'"* ]] || fail "$stderr"
  rl -c 'touch x' run order2
  assert_usage_error
  [[ $stderr == *"put -c after 'run'"* ]] || fail "$stderr"
  # An option of other subcommands only: they are named.
  rl --ttl 5s status order2
  assert_usage_error
  [[ $stderr == *"--ttl is an option of run, acquire and extend"* ]] || fail "$stderr"
  # Connection and output options stay welcome before the subcommand.
  rl -q --command-timeout 2s status order2
  assert_equal "$status" 1
}

@test "every help fits in 80 columns and names its values" {
  for sub in "" run acquire extend release status list break forget; do
    # shellcheck disable=SC2086 # no subcommand for the top-level help
    run "$RLOCK" $sub --help
    assert_success
    long=$(awk 'length > 80' <<<"$output")
    [[ -z $long ]] || fail "'rlock $sub --help' has lines over 80 columns: $long"
    refute_output --partial TEXT
  done
  run "$RLOCK" run --help
  assert_line --regexp '^  --ttl DURATION +'
  assert_line --regexp '^  --limit N +'
  assert_line --regexp '^  -u,--url URL +'
  assert_line --partial 'rlock run KEY [OPTIONS] -- CMD [ARGS...]'
  # -u says that repeating it makes a quorum lock.
  assert_output --partial "Repeated: one independent"
}

@test "the man page passes groff's lint without a warning" {
  command -v groff >/dev/null || skip "groff is not installed (apt-get install groff-base)"
  run groff -ww -man -z "$BATS_TEST_DIRNAME/../man/rlock.1"
  assert_success
  assert_output ""
}

@test "a subcommand's help lists the connection and output options it accepts" {
  run "$RLOCK" status --help
  assert_line --regexp '^  --json +'
  assert_line --regexp '^  -u,--url URL +'
  assert_line --regexp '^  --command-timeout DURATION( |$)'
  assert_output --partial 'Exit status'
  run "$RLOCK" run --help
  refute_line --regexp '^  --json +'
  assert_line --regexp '^  -q,--quiet +'
}

@test "--json is refused where there is nothing to print as JSON (64)" {
  for sub in "run jr -- true" "release jr --token t" "break jr --yes" "forget jr --yes"; do
    # shellcheck disable=SC2086
    rl --json $sub
    assert_usage_error
    [[ $stderr == *"--json does not apply to ${sub%% *}"* ]] || fail "$stderr"
  done
  assert_equal "$(rcli exists 'lock:{jr}')" 0
}

# --- typos are never executed -------------------------------------------------------------------

@test "a mistyped option after run's KEY is refused (64) with a suggestion, never run" {
  T=$BATS_TEST_TMPDIR
  cd "$T"
  # Without '--' the typo would have been the command (127).
  rl run typo1 --wiat
  assert_usage_error
  assert_equal "${stderr_lines[0]}" "rlock: unknown option '--wiat' for run: did you mean --wait?"
  rl run typo1 --wiat 5s touch "$T/ran"
  assert_usage_error
  assert_equal "${stderr_lines[0]}" "rlock: unknown option '--wiat' for run: did you mean --wait?"
  rl run typo1 --wiat 5s -- touch "$T/ran"
  assert_usage_error
  assert_equal "${stderr_lines[0]}" "rlock: unknown option '--wiat' for run: did you mean --wait?"
  rl run typo1 --wiat=5s -- touch "$T/ran"
  assert_usage_error
  [[ $stderr == *"did you mean --wait?"* ]] || fail "$stderr"
  rl run typo1 --tll 5s -- touch "$T/ran"
  assert_usage_error
  [[ $stderr == *"'--tll' for run: did you mean --ttl?"* ]] || fail "$stderr"
  rl run typo1 -wait 5s -- touch "$T/ran"
  assert_usage_error
  [[ $stderr == *"'-wait' for run: did you mean --wait?"* ]] || fail "$stderr"
  [[ ! -e $T/ran ]] || fail "the command ran"
  assert_equal "$(rcli exists 'lock:{typo1}')" 0
}

@test "an unknown option anywhere before the command is 64: global, subcommand, short" {
  rl --comand-timeout 2s status typo2
  assert_usage_error
  assert_equal "${stderr_lines[0]}" "rlock: unknown option '--comand-timeout': did you mean --command-timeout?"
  rl status typo2 --comand-timeout 2s
  assert_usage_error
  assert_equal "${stderr_lines[0]}" "rlock: unknown option '--comand-timeout' for status: did you mean --command-timeout?"
  rl acquire typo2 --conn 2s
  assert_usage_error
  [[ $stderr == *"did you mean --connect-timeout?"* ]] || fail "$stderr"
  rl run typo2 -z -- true
  assert_usage_error
  [[ $stderr == *"unknown option '-z' for run"* ]] || fail "$stderr"
  rl run typo2 -nz -- true
  assert_usage_error
  rl run typo2 --frobnicate -- true
  assert_usage_error
  assert_equal "${stderr_lines[0]}" "rlock: unknown option '--frobnicate' for run: a command \
that starts with '-' goes after '--' (rlock run KEY -- CMD), or see rlock run --help"
  # An option of another subcommand says where it belongs.
  rl status typo2 --wait 5s
  assert_usage_error
  assert_equal "${stderr_lines[0]}" "rlock: --wait is not an option of status: it is one of run \
and acquire (see rlock status --help)"
  assert_equal "$(rcli exists 'lock:{typo2}')" 0
}

@test "known options still work together: -qn, -E3, --ttl=5s" {
  run -0 "$RLOCK" run typo3 -qn -E3 --ttl=5s --prefix typo: -- true
  run -0 "$RLOCK" run typo3 -q -- sh -c 'exit 0'
}

@test "a command that starts with '-' runs after '--', and words after the command are its own" {
  T=$BATS_TEST_TMPDIR
  printf '#!/bin/sh\necho "dash ran $*"\n' >"$T/-dash"
  chmod +x "$T/-dash"
  cd "$T"
  PATH="$T:$PATH" run -0 "$RLOCK" run typo4 -- -dash --wiat x
  assert_output "dash ran --wiat x"
  run -0 "$RLOCK" run typo4 printf '[%s]\n' --wiat
  assert_output "[--wiat]"
}

@test "--url takes one URL: a KEY after it is the subcommand's KEY" {
  run -1 "$RLOCK" status --url "$RLOCK_URL" url-then-key
  assert_output --partial "url-then-key"
  run -1 "$RLOCK" --url "$RLOCK_URL" status url-then-key
}
