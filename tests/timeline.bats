#!/usr/bin/env bats
# ctest-labels: fast
# A lock's timeline (the man page's "history"): `rlock history KEY --timeline [--since D]
# [--svg FILE]` draws the key's history, one row per holder host, each hold a bar, waits
# shaded, failed exits, expiries and breaks marked, under a time axis; --svg writes the
# same picture as SVG.

load helpers/redis

bats_require_minimum_version 1.5.0

setup_file() { redis_start; }

# 2026-01-01T00:00:00Z in ms: a scripted history at fixed times draws one picture.
T0=1767225600000

# xadd KEY SECONDS FIELD VALUE...: one event of KEY's history, SECONDS after T0, written
# as the scripts write it (docs/PROTOCOL.md "History").
xadd() {
  local key=$1 at=$(($2 * 1000 + T0))
  shift 2
  rcli XADD "lock:{$key}:log" "$at-$((++SEQ))" "$@" >/dev/null
}

# A deploy key's afternoon: ci-1 holds, ci-2 waits and then holds until its lease
# runs out, ci-1 again (after waiting) fails with exit 3, ci-3 is broken, a label holds.
script_history() {
  local k=$1
  xadd "$k" 0 ev acquired tok a fence 1 who 'ci-1 pid 10' mode exclusive waited 0 slot 0 cmd make
  xadd "$k" 300 ev released tok a fence 1 who 'ci-1 pid 10' held 300000 exit 0
  xadd "$k" 300 ev acquired tok b fence 2 who 'ci-2 pid 20' mode exclusive waited 240000 slot 0 cmd make
  xadd "$k" 900 ev expired tok b fence 2 who 'ci-2 pid 20'
  xadd "$k" 900 ev acquired tok c fence 3 who 'ci-1 pid 11' mode exclusive waited 480000 slot 0 cmd make
  xadd "$k" 1500 ev released tok c fence 3 who 'ci-1 pid 11' held 600000 exit 3
  xadd "$k" 1560 ev acquired tok d fence 4 who 'ci-3 pid 30' mode exclusive waited 0 slot 0 cmd make
  xadd "$k" 1800 ev broken tok d fence 4 who 'ci-3 pid 30' by 'ops@admin pid 1'
  xadd "$k" 1800 ev acquired tok e fence 5 who 'release train' mode exclusive waited 60000 slot 0 cmd make
  xadd "$k" 2400 ev released tok e fence 5 who 'release train' held 600000 exit 0
}

@test "--timeline of a scripted history draws the checked picture" {
  script_history tl1
  COLUMNS=80 run -0 "$RLOCK" history tl1 --timeline
  diff -u "$BATS_TEST_DIRNAME/fixtures/timeline/tl1.txt" <(printf '%s\n' "$output")
  # the same in a narrower terminal: every line within it
  COLUMNS=50 run -0 "$RLOCK" history tl1 --timeline
  for line in "${lines[@]:1}"; do
    assert [ "$(printf '%s' "$line" | wc -m)" -le 50 ]
  done
}

@test "real runs: each a bar on its host's row, a failed one marked with its exit status" {
  run -0 "$RLOCK" run tl2 -- true
  run -7 "$RLOCK" run tl2 -- sh -c 'exit 7'
  run -0 "$RLOCK" history tl2 --timeline
  assert_line --index 0 --regexp '^tl2  [0-9-]{10} [0-9:]{8}Z \.\. [0-9-]{10} [0-9:]{8}Z'
  # one host: one row, the first run's bar, then the second's, marked with its exit status
  assert_line --index 1 --regexp '^[^ ]+ +█+ *█+!7$'
  assert_line --index 2 --regexp '^ +[─┴]+$'
  assert_output --partial 'UTC, a tick every'
  # off a terminal: no colours
  refute_output --partial $'\e'
}

@test "--since shows only the last stretch; a key without holds says so" {
  script_history tl3
  # every event is months old: nothing in the last hour
  run --separate-stderr -0 "$RLOCK" history tl3 --timeline --since 1h
  assert_output ''
  assert_equal "$stderr" "rlock: no holds recorded for 'tl3' in that time"
  run --separate-stderr -0 "$RLOCK" history never-used --timeline
  assert_output ''
  assert_equal "$stderr" "rlock: no holds recorded for 'never-used'"
  # the last 24 hours of a hold that began two days ago and still runs: one bar, the
  # whole width
  rcli XADD 'lock:{tl3b}:log' "$(($(date +%s) * 1000 - 172800000))-1" ev acquired tok x \
    who 'long pid 1' waited 0 >/dev/null
  COLUMNS=60 run -0 "$RLOCK" history tl3b --timeline --since 24h
  assert_line --index 1 --regexp '^long  █{50}$'
}

@test "--svg writes the picture as SVG: it parses, renders to PNG, and hostile text is escaped; a foreign exit status is drawn as ?" {
  script_history tl4
  xadd tl4 2500 ev acquired tok f fence 6 who $'<b>&"x\' \e[2J</b> pid 1' waited 0
  xadd tl4 2600 ev released tok f fence 6 who $'<b>&"x\' \e[2J</b> pid 1' held 100000 exit $'<9>\e]0;pwn\a'
  run -0 "$RLOCK" history tl4 --timeline --svg "$BATS_TEST_TMPDIR/t.svg"
  # an exit status that is not a number is drawn as '?', its bytes never reach the terminal
  assert_output --partial '!?'
  [[ $output != *$'\e]0'* && $output != *'<9>'* ]] || fail "$output"
  python3 - "$BATS_TEST_TMPDIR/t.svg" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = {"s": "http://www.w3.org/2000/svg"}
texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
assert texts[0] == "tl4", texts[0]
assert "<b>&\"x' \\x1b[2J</b>" in texts, texts
assert "!?" in texts, texts
bars = root.findall(".//s:rect[s:title]", ns)
assert len(bars) == 9, len(bars)  # six holds, three waits
for row in ("ci-1", "ci-2", "ci-3", "release train"):
    assert row in texts, row
PY
  rsvg-convert -o "$BATS_TEST_TMPDIR/t.png" "$BATS_TEST_TMPDIR/t.svg"
  run -0 file "$BATS_TEST_TMPDIR/t.png"
  assert_output --regexp 'PNG image data, 1000 x [0-9]+'
}

@test "bad input: --since and --svg without --timeline, --timeline with --json or --follow, a file it cannot write" {
  run -64 "$RLOCK" history tl5 --since 1h
  assert_output --partial '--since goes with --timeline'
  run -64 "$RLOCK" history tl5 --svg x.svg
  assert_output --partial '--svg goes with --timeline'
  run -64 "$RLOCK" history tl5 --timeline --json
  run -64 "$RLOCK" history tl5 --timeline --follow
  run -64 "$RLOCK" history tl5 --timeline --since forever
  script_history tl5
  run -70 "$RLOCK" history tl5 --timeline --svg "$BATS_TEST_TMPDIR/no/such/dir/t.svg"
  assert_output --regexp "cannot write '.*/no/such/dir/t.svg': No such file or directory"
}
