#!/usr/bin/env bats
# ctest-labels: medium plainonly
# ctest-timeout: 600
# Shell completions: bash, zsh (driven through zpty) and fish (complete -C) complete
# subcommands, after each subcommand exactly the options its --help lists, option values,
# run's command with its own arguments, and lock names from a real server (rlock list
# --names), without ever keeping the shell waiting (a stalled server, 100,000 keys).

bats_require_minimum_version 1.5.0

load helpers/redis

COMPLETIONS="$BATS_TEST_DIRNAME/../completions"

setup_file() { redis_start; }

setup() {
  # `rlock` on the line is the binary under test (the completions run it for names).
  mkdir -p "$BATS_FILE_TMPDIR/bin"
  ln -sf "$RLOCK" "$BATS_FILE_TMPDIR/bin/rlock"
  PATH="$BATS_FILE_TMPDIR/bin:$PATH"
  unset REDIS_URL
  BASH_COMPLETION_FILE="$COMPLETIONS/rlock.bash"
  [[ -f $BASH_COMPLETION_FILE ]] || fail "missing $BASH_COMPLETION_FILE"
  # shellcheck source=/dev/null
  source "$BASH_COMPLETION_FILE"
}

# complete_line 'rlock WORDS…': runs the registered completion function as bash would
# for the cursor at the end of the line; prints the candidates, sorted, one per line.
# COMP_WORDS are split as bash splits them: at blanks, and around ':' and '='
# (COMP_WORDBREAKS), so that "redis://h:1/0" is five words. Readline replaces only the
# text after the last ':' or '=' of the last word; each candidate is printed as the whole
# word it makes ("deploy:" + "prod").
complete_line() {
  local line=$1 spec func tok last="" head c
  local -a blank_words
  spec=$(complete -p rlock) || fail "no completion registered for rlock"
  [[ $spec =~ -F[[:space:]]+([^[:space:]]+) ]] || fail "not a -F completion: $spec"
  func=${BASH_REMATCH[1]}
  read -r -a blank_words <<<"$line"
  COMP_WORDS=()
  for tok in "${blank_words[@]}"; do
    while [[ -n $tok ]]; do
      [[ $tok =~ ^([:=]+)(.*)$ || $tok =~ ^([^:=]+)(.*)$ ]]
      COMP_WORDS+=("${BASH_REMATCH[1]}")
      tok=${BASH_REMATCH[2]}
    done
  done
  if [[ $line == *' ' ]]; then COMP_WORDS+=(""); else last=${line##* }; fi
  head=${last%"${last##*[:=]}"}
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMP_LINE=$line
  COMP_POINT=${#line}
  COMPREPLY=()
  "$func" rlock "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
  for c in "${COMPREPLY[@]}"; do printf '%s%s\n' "$head" "$c"; done | sort -u | sed '/^$/d'
}

# option_names: every name of each option line on stdin ("  -x,--long …", "  --long …",
# "  -x,-e,--long …"), one per line.
option_names() {
  sed -n 's/^  \(-[a-zA-Z-][-a-zA-Z,]*\).*/\1/p' | tr ',' '\n'
}

# long_options HELP-TEXT: the long options of the option lines.
long_options() {
  option_names <<<"$1" | grep -- '^--' | sort -u
}

# help_options SUB: every option (short and long) that `rlock SUB --help` lists (SUB
# empty: `rlock --help`), sorted.
help_options() {
  # shellcheck disable=SC2086 # SUB empty: no word
  "$RLOCK" $1 --help | option_names | sort -u
}

# assert_candidates WORD...: $output (from `run complete_line`) is exactly WORD..., in any
# order. On failure shows at most 10 candidates (a command completion lists thousands).
assert_candidates() {
  local expected got
  expected=$(printf '%s\n' "$@" | sort -u)
  got=$output
  [[ $got == "$expected" ]] && return 0
  fail "expected candidates: $(tr '\n' ' ' <<<"$expected")
got $(wc -l <<<"$got") candidates: $(head -n 10 <<<"$got" | tr '\n' ' ')…"
}

# The subcommands that `rlock --help` lists, sorted.
help_subcommands() {
  "$RLOCK" --help | sed -n '/^Subcommands:/,/^$/p' | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p' | sort
}

@test "the bash completion file registers a completion for rlock" {
  run complete -p rlock
  assert_success
  assert_output --partial "rlock"
}

@test "'rlock ' completes the subcommands run acquire extend release status list history break forget doctor top" {
  run complete_line 'rlock '
  assert_success
  assert_candidates run acquire extend release status list history break forget doctor top
}

@test "the completed subcommands are the ones rlock --help lists" {
  [[ -x $RLOCK ]] || skip "no rlock binary at $RLOCK"
  run complete_line 'rlock '
  assert_equal "$output" "$(help_subcommands)"
}

@test "'rlock re' completes release" {
  run complete_line 'rlock re'
  assert_candidates release
}

@test "'rlock run --on-lost ' completes term kill warn" {
  run complete_line 'rlock run --on-lost '
  assert_success
  assert_candidates term kill warn
}

@test "'rlock run KEY --on-lost ' completes term kill warn (not commands)" {
  run complete_line 'rlock run deploy --on-lost '
  assert_success
  assert_candidates term kill warn
}

@test "'rlock run KEY --done-for ' completes a period (not commands); its value is not the command" {
  run complete_line 'rlock run report --done-for '
  assert_success
  assert_candidates 1h 20h 23h 7d
  run complete_line 'rlock run report --done-for 20h -s --'
  assert_line --shared
  run complete_line 'rlock run report --done-for 20h -- '
  assert_line sh
}

@test "'rlock run KEY --and KEY2 ' goes on with options and the command; the CI options' values are not the command" {
  run complete_line 'rlock run deploy --and db --su'
  assert_candidates --supersede --superseded-exit-code
  run complete_line 'rlock run deploy --and db -- '
  assert_line sh
  for opt in --label --priority --max-waiters --superseded-exit-code; do
    run complete_line "rlock run deploy $opt "
    assert_output ""
  done
  run complete_line 'rlock run deploy --label x --priority 5 --max-waiters 1 -- '
  assert_line sh
}

@test "'rlock run KEY --ttl 5m --on-lost k' completes kill" {
  run complete_line 'rlock run deploy --ttl 5m --on-lost k'
  assert_candidates kill
}

@test "'rlock run KEY -- ' completes a command" {
  run complete_line 'rlock run deploy -- '
  assert_line sh
}

@test "subcommands are completed after a global option with its value" {
  run complete_line 'rlock --url redis://h:1/0 st'
  assert_candidates status
}

@test "'rlock --' offers the global options and --version" {
  run complete_line 'rlock --'
  for opt in --url --user --password-file --tls-ca-cert --tls-insecure --connect-timeout \
    --command-timeout --prefix --verbose --quiet --json --help --version; do
    assert_line "$opt"
  done
}

@test "every long option of 'rlock --help' is completed" {
  [[ -x $RLOCK ]] || skip "no rlock binary at $RLOCK"
  run complete_line 'rlock --'
  completed=$output
  opts=$(long_options "$("$RLOCK" --help)")
  assert [ -n "$opts" ]
  for opt in $opts; do
    grep -qx -- "$opt" <<<"$completed" || fail "'rlock --' does not offer $opt"
  done
}

@test "'rlock acquire k --' offers the locking options" {
  run complete_line 'rlock acquire k --'
  for opt in --ttl --wait --no-wait --conflict-exit-code --limit --json --url; do
    assert_line "$opt"
  done
}

@test "'rlock release k --' offers --token" {
  run complete_line 'rlock release k --'
  assert_line --token
}

@test "'rlock history k -' offers -n, --lines, -f, --follow and --json; 'rlock list --p' --prometheus" {
  run complete_line 'rlock history k -'
  for opt in -n --lines -f --follow --json --history; do
    assert_line -- "$opt"
  done
  run complete_line 'rlock list --p'
  assert_candidates --prometheus --password-file --prefix
}

@test "history's -n takes a count (no lock names after it); run's -n is a flag, KEY comes next" {
  hold_keys deploy:prod
  run complete_line 'rlock history -n '
  assert_output ""
  run complete_line 'rlock history --lines 5 deploy:p'
  assert_candidates deploy:prod
  run complete_line 'rlock run -n deploy:p'
  assert_candidates deploy:prod
  run complete_line 'rlock --history 0 run deploy:p'
  assert_candidates deploy:prod
  run complete_line 'rlock --history '
  assert_output ""
}

@test "'rlock break k --' offers --yes, --token and --reason" {
  run complete_line 'rlock break k --'
  assert_line --yes
  assert_line --token
  assert_line --reason
}

@test "the zsh completion parses" {
  command -v zsh >/dev/null || skip "zsh is not installed"
  [[ -f $COMPLETIONS/_rlock ]] || fail "missing $COMPLETIONS/_rlock"
  run zsh -n "$COMPLETIONS/_rlock"
  assert_success
}

@test "the fish completion parses" {
  command -v fish >/dev/null || skip "fish is not installed"
  [[ -f $COMPLETIONS/rlock.fish ]] || fail "missing $COMPLETIONS/rlock.fish"
  run fish --no-execute "$COMPLETIONS/rlock.fish"
  assert_success
}

# --- zsh and fish, for real ------------------------------------------------------------------

# zsh_candidates 'LINE' [MS_FILE]: what zsh offers for TAB at the end of LINE
# (tests/helpers/zsh_complete.zsh); with MS_FILE, how long until the shell took input again.
zsh_candidates() {
  zsh "$BATS_TEST_DIRNAME/helpers/zsh_complete.zsh" "$COMPLETIONS" "$@"
}

# fish_candidates 'LINE': what fish offers (complete -C), without descriptions.
fish_candidates() {
  HOME=$BATS_TEST_TMPDIR XDG_CONFIG_HOME=$BATS_TEST_TMPDIR \
    fish -c "source '$COMPLETIONS/rlock.fish'; complete -C '$1'" | cut -f1 | sort -u
}

@test "zsh: subcommands, URL schemes (not ftp://), option values" {
  command -v zsh >/dev/null || skip "zsh is not installed"
  run zsh_candidates 'rlock '
  assert_candidates run acquire extend release status list history break forget doctor top
  run zsh_candidates 'rlock -u '
  assert_candidates redis:// rediss:// unix:/// redis-sentinel:// rediss-sentinel://
  run zsh_candidates 'rlock run k --on-lost '
  assert_candidates term kill warn
}

@test "zsh: 'rlock run KEY -- ' completes commands, and then their arguments (as nice does)" {
  command -v zsh >/dev/null || skip "zsh is not installed"
  run zsh_candidates 'rlock run k -- '
  assert_line sh
  assert_line env
  run zsh_candidates 'rlock run --ttl 5s k -- ni'
  assert_line nice
  command -v git >/dev/null || skip "git is not installed"
  run zsh_candidates 'rlock run k -- git com'
  assert_line commit
  run zsh_candidates 'rlock run k git com'
  assert_line commit
}

@test "fish: subcommands, URL schemes, option values, and run's command with its arguments" {
  command -v fish >/dev/null || skip "fish is not installed"
  run fish_candidates 'rlock '
  assert_candidates run acquire extend release status list history break forget doctor top
  run fish_candidates 'rlock -u '
  assert_candidates redis:// rediss:// unix:/// redis-sentinel:// rediss-sentinel://
  run fish_candidates 'rlock run k --on-lost '
  assert_candidates term kill warn
  run fish_candidates 'rlock run k -- en'
  assert_line env
  run fish_candidates 'rlock acquire k --'
  assert_line --sync-replicas
  command -v git >/dev/null || skip "git is not installed"
  run fish_candidates 'rlock run k -- git com'
  assert_line commit
}

@test "bash: a URL on the line is one word though bash splits it at ':' (subcommand, scheme)" {
  run complete_line 'rlock --url redis://h:1/0 st'
  assert_candidates status
  run complete_line 'rlock -u redis:'
  assert_candidates redis://
  run complete_line 'rlock run k --on-lost=k'
  assert_candidates --on-lost=kill
}

# --- each subcommand's options: exactly what its --help lists, in every shell ------------

# offered SHELL SUB: the options SHELL offers for `rlock SUB k -` (SUB empty: `rlock -`),
# sorted; run's "--" (end of options) is not an option.
offered() {
  local line="rlock ${2:+$2 k }-"
  [[ ${2:-} == doctor ]] && line="rlock doctor -" # (no KEY)
  case $1 in
    bash) complete_line "$line" ;;
    zsh) zsh_candidates "$line" ;;
    fish) fish_candidates "$line" ;;
  esac | grep -- '^-' | grep -vx -- '--' | sort -u
}

# assert_offers_help_options SHELL: for rlock and each subcommand, SHELL offers exactly the
# options of its --help.
assert_offers_help_options() {
  local sub want got
  for sub in "" run acquire extend release status list history break forget doctor top; do
    want=$(help_options "$sub")
    [[ -n $want ]] || fail "no options in rlock $sub --help"
    got=$(offered "$1" "$sub")
    [[ $got == "$want" ]] ||
      fail "$1, 'rlock ${sub:+$sub k }-' (doctor: no k): offered and --help differ (< --help, > offered):
$(diff <(echo "$want") <(echo "$got") | grep '^[<>]')"
  done
}

@test "bash offers after each subcommand exactly the options its --help lists (no --json for run)" {
  assert_offers_help_options bash
  run complete_line 'rlock run k --j'
  assert_output ""
}

@test "zsh offers after each subcommand exactly the options its --help lists (no --json for run)" {
  command -v zsh >/dev/null || skip "zsh is not installed"
  assert_offers_help_options zsh
}

@test "fish offers after each subcommand exactly the options its --help lists (no --json for run)" {
  command -v fish >/dev/null || skip "fish is not installed"
  assert_offers_help_options fish
}

# --- run: options after KEY, then the command -------------------------------------------

@test "zsh: options complete after run's KEY until the command starts" {
  command -v zsh >/dev/null || skip "zsh is not installed"
  run zsh_candidates 'rlock run k --w'
  assert_candidates --wait
  run zsh_candidates 'rlock run --ttl 5s k --kill-l'
  assert_candidates --kill-leftovers
  run zsh_candidates 'rlock run k --ttl 5s en'
  assert_line env
  run zsh_candidates 'rlock run k env --'
  refute_line --wait
}

@test "fish: 'rlock run KEY CMD' completes the command without '--', then its arguments" {
  command -v fish >/dev/null || skip "fish is not installed"
  run fish_candidates 'rlock run k en'
  assert_line env
  run fish_candidates 'rlock run k --ttl 5s en'
  assert_line env
  run fish_candidates 'rlock run k --w'
  assert_candidates --wait
  command -v git >/dev/null || skip "git is not installed"
  run fish_candidates 'rlock run k git com'
  assert_line commit
}

# --- lock names from the server --------------------------------------------------------

# candidates SHELL LINE [MS_FILE]: what SHELL offers for LINE; with MS_FILE, the
# milliseconds until the shell could take input again.
candidates() {
  local shell=$1 line=$2 ms_file=${3-} t0 rc=0
  t0=$(now_ms)
  case $shell in
    bash) complete_line "$line" || rc=$? ;;
    zsh) zsh_candidates "$line" "$ms_file" || rc=$? ;;
    fish) fish_candidates "$line" || rc=$? ;;
  esac
  if [[ -n $ms_file && $shell != zsh ]]; then echo $(($(now_ms) - t0)) >"$ms_file"; fi
  return $rc
}

have_shell() {
  [[ $1 == bash ]] || command -v "$1" >/dev/null || skip "$1 is not installed"
}

hold_keys() {
  rcli flushall >/dev/null
  for k in "$@"; do "$RLOCK" acquire --ttl 10m "$k" >/dev/null || fail "cannot take $k"; done
}

@test "list --names prints the held locks' names, one per line, matching PATTERN" {
  hold_keys deploy:prod deploy:stage other
  rl list --names
  assert_success
  assert_output "$(printf '%s\n' deploy:prod deploy:stage other)"
  rl list --names 'deploy:*'
  assert_output "$(printf '%s\n' deploy:prod deploy:stage)"
  rl list --names --json
  assert_error 64
}

@test "list --names and completion offer keys with a history too, not only held locks" {
  hold_keys deploy:prod
  "$RLOCK" run deploy:old -- true # free now, its history stays
  "$RLOCK" run --history 0 deploy:bare -- true # no history: only its fence counter is left
  rl list --names 'deploy:*'
  assert_success
  assert_output "$(printf '%s\n' deploy:old deploy:prod)"
  run complete_line 'rlock history deploy:o'
  assert_candidates deploy:old
}

@test "list --names prints each name as it is (a completion inserts that lock), never a name that is not one printable line" {
  hold_keys 'we"ird\key' 'tab\x09ed'
  # a foreign key whose name has a newline and a control byte: no line could carry it
  rcli set "$(printf 'lock:{bad\nname\001}')" foreign px 600000 >/dev/null
  rl list --names
  assert_success
  # not escaped (we"ird\\key would name another lock)
  assert_output "$(printf '%s\n' 'tab\x09ed' 'we"ird\key')"
}

@test "list --names prints at most 1000 names of 100,000 keys, within --command-timeout" {
  rcli flushall >/dev/null
  rcli eval "for i = 1, 100000 do redis.call('SET', 'lock:{k' .. i .. '}', 'x') end" 0 >/dev/null
  assert_equal "$(rcli dbsize)" 100000
  t0=$(now_ms)
  rl list --names --command-timeout 2s
  elapsed=$(($(now_ms) - t0))
  assert_success
  assert_equal "${#lines[@]}" 1000
  # A prefix that few keys match needs the whole SCAN: --command-timeout still bounds it.
  t0=$(now_ms)
  rl list --names --command-timeout 300ms 'k9999*'
  elapsed=$(($(now_ms) - t0))
  ((elapsed < $(slack 1500))) || fail "took ${elapsed}ms"
  [[ $status == 0 || $status == 69 ]] || fail "exit $status"
  rcli flushall >/dev/null
}

@test "list --names gives up at --command-timeout in all when the server is stalled (SIGSTOP)" {
  hold_keys deploy:prod
  redis_pause
  t0=$(now_ms)
  rl list --names --command-timeout 300ms --connect-timeout 5s
  elapsed=$(($(now_ms) - t0))
  assert_error 69
  ((elapsed < $(slack 1500))) || fail "took ${elapsed}ms"
}

# assert_names_completed SHELL: KEY of each subcommand completes from the server named by
# -u on the line or by $RLOCK_URL, and nothing without a URL.
assert_names_completed() {
  local url=$RLOCK_URL
  have_shell "$1"
  hold_keys deploy:prod deploy:stage other
  run candidates "$1" 'rlock status dep'
  assert_candidates deploy:prod deploy:stage
  run candidates "$1" 'rlock run deploy:s'
  assert_candidates deploy:stage
  run candidates "$1" 'rlock release --token t deploy:p'
  assert_candidates deploy:prod
  # --and KEY2 (run, acquire, extend, release) completes as KEY does.
  run candidates "$1" 'rlock run other --and deploy:s'
  assert_candidates deploy:stage
  run candidates "$1" 'rlock acquire other --and dep'
  assert_candidates deploy:prod deploy:stage
  run candidates "$1" 'rlock release --token t other --and deploy:p'
  assert_candidates deploy:prod
  # history KEY, also after its -n N (not after run's -n: a flag).
  run candidates "$1" 'rlock history dep'
  assert_candidates deploy:prod deploy:stage
  run candidates "$1" 'rlock history -n 5 deploy:s'
  assert_candidates deploy:stage
  run candidates "$1" 'rlock history -n '
  assert_output ""
  unset RLOCK_URL
  run candidates "$1" "rlock -u $url break dep"
  assert_candidates deploy:prod deploy:stage
  run candidates "$1" "rlock status --url=$url o"
  assert_candidates other
  run candidates "$1" 'rlock status dep'
  assert_output ""
  RLOCK_URL=$url
}

@test "bash completes lock names from the server" { assert_names_completed bash; }
@test "zsh completes lock names from the server" { assert_names_completed zsh; }
@test "fish completes lock names from the server" { assert_names_completed fish; }

# assert_stalled_server_is_quick SHELL: KEY completion against a SIGSTOPped server gives
# the shell back within about a second.
assert_stalled_server_is_quick() {
  have_shell "$1"
  hold_keys deploy:prod
  redis_pause
  run candidates "$1" 'rlock status dep' "$BATS_TEST_TMPDIR/ms"
  ms=$(cat "$BATS_TEST_TMPDIR/ms")
  ((ms < $(slack 1500))) || fail "$1 took ${ms}ms to complete against a stalled server"
}

@test "bash: a stalled server (SIGSTOP) does not hang completion" { assert_stalled_server_is_quick bash; }
@test "zsh: a stalled server (SIGSTOP) does not hang completion" { assert_stalled_server_is_quick zsh; }
@test "fish: a stalled server (SIGSTOP) does not hang completion" { assert_stalled_server_is_quick fish; }

@test "100,000 keys: each shell completes in bounded time, at most 1000 names" {
  rcli flushall >/dev/null
  rcli eval "for i = 1, 100000 do redis.call('SET', 'lock:{k' .. i .. '}', 'x') end" 0 >/dev/null
  for shell in bash zsh fish; do
    [[ $shell == bash ]] || command -v "$shell" >/dev/null || continue
    run candidates "$shell" 'rlock status k' "$BATS_TEST_TMPDIR/ms"
    ms=$(cat "$BATS_TEST_TMPDIR/ms")
    ((ms < $(slack 1500))) || fail "$shell took ${ms}ms"
    ((${#lines[@]} > 0 && ${#lines[@]} <= 1000)) || fail "$shell offered ${#lines[@]} names"
    run candidates "$shell" 'rlock status k9999' "$BATS_TEST_TMPDIR/ms"
    ms=$(cat "$BATS_TEST_TMPDIR/ms")
    ((ms < $(slack 1500))) || fail "$shell took ${ms}ms for a prefix"
  done
  rcli flushall >/dev/null
}

# --- --layout: its values, and the word after it is neither KEY nor subcommand ------------

# assert_layout_completed SHELL: --layout completes rlock plain redisson (also as
# --layout=VALUE, before and after the subcommand, after run's KEY), its value is not taken
# for the subcommand, KEY or run's command, and lock names are those of the layout on the
# line (it is passed to `rlock list --names`, as --prefix is).
assert_layout_completed() {
  have_shell "$1"
  rcli flushall >/dev/null
  "$RLOCK" --layout plain acquire --ttl 10m deploy:prod >/dev/null || fail "cannot take deploy:prod"
  run candidates "$1" 'rlock --layout '
  assert_candidates rlock plain redisson
  run candidates "$1" 'rlock status --layout '
  assert_candidates rlock plain redisson
  run candidates "$1" 'rlock run deploy --layout '
  assert_candidates rlock plain redisson
  run candidates "$1" 'rlock --layout=r'
  case $1 in
    zsh) assert_candidates redisson rlock ;; # zsh offers the value alone
    *) assert_candidates --layout=redisson --layout=rlock ;;
  esac
  run candidates "$1" 'rlock --layout plain st'
  assert_candidates status
  run candidates "$1" 'rlock --layout plain status dep'
  assert_candidates deploy:prod
  run candidates "$1" 'rlock status --layout=plain dep'
  assert_candidates deploy:prod
  run candidates "$1" 'rlock status dep'
  assert_output ""
  run candidates "$1" 'rlock run --layout plain deploy:p'
  assert_candidates deploy:prod
  run candidates "$1" 'rlock run deploy:prod --layout plain --on-lost '
  assert_candidates term kill warn
  run candidates "$1" 'rlock run deploy:prod --layout plain -- '
  assert_line sh
  rcli flushall >/dev/null
}

@test "bash completes --layout's values; its value is neither KEY nor subcommand" { assert_layout_completed bash; }
@test "zsh completes --layout's values; its value is neither KEY nor subcommand" { assert_layout_completed zsh; }
@test "fish completes --layout's values; its value is neither KEY nor subcommand" { assert_layout_completed fish; }
