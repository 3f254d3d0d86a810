#!/usr/bin/env bats
# ctest-labels: fast
# The standard streams (std::cin, std::cout, …) are built in run_cli, after the plain
# `run KEY -- CMD` path (core/iostream_lazy.h): a use anywhere else would crash that path.

bats_require_minimum_version 1.5.0

load helpers/redis

# code_naming REGEX: the functions of the binary whose code matches REGEX, one a line.
code_naming() {
  objdump -d --no-show-raw-insn -C "$RLOCK" |
    awk -v re="$1" '/^[0-9a-f]+ <.*>:$/ {fn = $0; sub(/^[0-9a-f]+ </, "", fn); sub(/>:$/, "", fn)}
                    $0 ~ re {print fn}' | sort -u
}

@test "only the confirmations of break and forget use a standard stream, and run_cli alone builds them" {
  command -v objdump >/dev/null || skip "objdump is not installed"
  run -0 code_naming '<std::(w?cout|w?cerr|w?cin|w?clog)(\+0x[0-9a-f]+)?>'
  # (read_yes_answer: their one reader, never inlined, so found by name in a unity build too)
  others=$(grep -Ev '^(std::ios_base::Init::|rlock::read_yes_answer[(])' <<<"$output" || true)
  [[ -z $others ]] || fail "standard streams used by: $others"
  # None at all where the library builds them itself (GCC 13's libstdc++, libc++).
  run -0 code_naming 'call.*<std::ios_base::Init::Init[(][)]>'
  [[ -z $output || $output == "rlock::run_cli("* || $output == main ]] ||
    fail "std::ios_base::Init is built by: $output"
}
