#!/usr/bin/env bats
# ctest-labels: fast
# Each script is sent with only the prelude's definitions it uses, in order (cut at build
# time, cmake/cut_prelude.cmake; docs/PROTOCOL.md, "Prelude"). A definition cut that the
# script needs would make its name a global, which Redis refuses to read ("Script
# attempted to access nonexistent global variable") only when that line runs: luac5.1
# lists every global a script reads or writes, so that no such cut reaches a test run.

bats_require_minimum_version 1.5.0

load helpers/redis

setup_file() {
  command -v luac5.1 >/dev/null || fail "luac5.1 is needed (apt-get install lua5.1; scripts/setup.sh)"
  scripts_setup
}

# The globals a script may use: what Redis's Lua environment provides.
PROVIDED=(redis KEYS ARGV cjson bit struct cmsgpack string table math os tonumber tostring type
  unpack ipairs pairs error pcall xpcall select next assert rawget rawset rawequal
  setmetatable getmetatable loadstring)
provided() {
  local p
  for p in "${PROVIDED[@]}"; do [[ $p == "$1" ]] && return 0; done
  return 1
}

# globals FILE: the globals FILE reads or writes (GETGLOBAL, SETGLOBAL), one a line, sorted.
globals() {
  luac5.1 -p -l "$1" | sed -n 's/.*[GS]ETGLOBAL.*; \(.*\)$/\1/p' | sort -u
}

@test "every script as rlock sends it compiles and uses no global but Redis's: no prelude definition it needs was cut" {
  local f g n=0 bad=()
  for f in "$SCRIPTS"/*.lua; do
    luac5.1 -p "$f" || fail "$(basename "$f") does not compile"
    while read -r g; do
      provided "$g" || bad+=("$(basename "$f" .lua): $g")
    done < <(globals "$f")
    n=$((n + 1))
  done
  ((n == 12)) || fail "expected the 12 scripts, found $n in $SCRIPTS"
  ((${#bad[@]} == 0)) || fail "globals Redis does not provide: ${bad[*]}"
}

@test "the check sees a prelude definition cut: the release script without hkey reads hkey as a global" {
  sed '/^local function hkey(/d' "$SCRIPTS/release.lua" >"$BATS_TEST_TMPDIR/cut.lua"
  run -0 globals "$BATS_TEST_TMPDIR/cut.lua"
  assert_line hkey
  run -0 globals "$SCRIPTS/release.lua"
  refute_line hkey
}

@test "no script assigns a global (Redis refuses it)" {
  local f
  for f in "$SCRIPTS"/*.lua; do
    run -0 bash -c "luac5.1 -p -l '$f' | grep -c SETGLOBAL || true"
    assert_output 0
  done
}

@test "bench/sent_scripts.py, the bench tools' copy of the cut, sends what rlock sends" {
  local f name
  for f in "$SCRIPTS"/*.lua; do
    name=$(basename "$f" .lua)
    python3 "$BATS_TEST_DIRNAME/../bench/sent_scripts.py" "$name" >"$BATS_TEST_TMPDIR/$name.lua"
    cmp "$f" "$BATS_TEST_TMPDIR/$name.lua" || fail "bench/sent_scripts.py $name differs from rlock's"
  done
}
