#!/usr/bin/env bats
# Shell completions: the bash completion completes subcommands, options and option values
# and agrees with `rlock --help`; zsh (driven through zpty) and fish (complete -C) complete
# subcommands, URL schemes, option values and run's command with its own arguments.

bats_require_minimum_version 1.5.0

load helpers/redis

COMPLETIONS="$BATS_TEST_DIRNAME/../completions"

setup() {
  BASH_COMPLETION_FILE="$COMPLETIONS/rlock.bash"
  [[ -f $BASH_COMPLETION_FILE ]] || fail "missing $BASH_COMPLETION_FILE"
  # shellcheck source=/dev/null
  source "$BASH_COMPLETION_FILE"
}

# complete_line 'rlock WORDS…': runs the registered completion function as bash would
# for the cursor at the end of the line; prints the candidates, sorted, one per line.
complete_line() {
  local line=$1 spec func
  spec=$(complete -p rlock) || fail "no completion registered for rlock"
  [[ $spec =~ -F[[:space:]]+([^[:space:]]+) ]] || fail "not a -F completion: $spec"
  func=${BASH_REMATCH[1]}
  read -r -a COMP_WORDS <<<"$line"
  if [[ $line == *' ' ]]; then COMP_WORDS+=(""); fi
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMP_LINE=$line
  COMP_POINT=${#line}
  COMPREPLY=()
  "$func" rlock "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
  printf '%s\n' "${COMPREPLY[@]}" | sort -u | sed '/^$/d'
}

# long_options HELP-TEXT: the long options of the option lines ("  -x,--long …", "  --long …").
long_options() {
  sed -n 's/^  \(-[a-zA-Z],\)\{0,1\}\(--[a-z][a-z-]*\).*/\2/p' <<<"$1" | sort -u
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

@test "'rlock ' completes the subcommands run acquire extend release status list break forget" {
  run complete_line 'rlock '
  assert_success
  assert_candidates run acquire extend release status list break forget
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
    --timeout --prefix --verbose --quiet --json --help --version; do
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

@test "every long option of each subcommand's --help is completed after it" {
  [[ -x $RLOCK ]] || skip "no rlock binary at $RLOCK"
  for sub in run acquire extend release status list break forget; do
    run complete_line "rlock $sub k --"
    completed=$output
    for opt in $(long_options "$("$RLOCK" "$sub" --help)"); do
      grep -qx -- "$opt" <<<"$completed" || fail "'rlock $sub k --' does not offer $opt"
    done
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

@test "'rlock break k --' offers --yes" {
  run complete_line 'rlock break k --'
  assert_line --yes
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

# zsh_candidates 'LINE': what zsh offers for TAB at the end of LINE (tests/helpers/zsh_complete.zsh).
zsh_candidates() {
  zsh "$BATS_TEST_DIRNAME/helpers/zsh_complete.zsh" "$COMPLETIONS" "$1"
}

# fish_candidates 'LINE': what fish offers (complete -C), without descriptions.
fish_candidates() {
  HOME=$BATS_TEST_TMPDIR XDG_CONFIG_HOME=$BATS_TEST_TMPDIR \
    fish -c "source '$COMPLETIONS/rlock.fish'; complete -C '$1'" | cut -f1 | sort -u
}

@test "zsh: subcommands, URL schemes (not ftp://), option values" {
  command -v zsh >/dev/null || skip "zsh is not installed"
  run zsh_candidates 'rlock '
  assert_candidates run acquire extend release status list break forget
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
  assert_candidates run acquire extend release status list break forget
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
