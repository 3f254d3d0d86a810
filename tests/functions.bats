#!/usr/bin/env bats
# ctest-labels: fast
# RLOCK_FUNCTIONS=on: rlock's scripts as one Redis 7 Functions library
# (cmake/functions_library.py), called by FCALL and loaded by rlock where it is missing;
# EVALSHA where the server or the ACL cannot (docs/PROTOCOL.md, "Functions").
# shellcheck disable=SC2154 # $stderr and $stderr_lines come from `run --separate-stderr`
# shellcheck disable=SC2016 # wait_until conditions are expanded when evaluated

bats_require_minimum_version 1.5.0

load helpers/redis

setup_file() {
  redis_start
  scripts_setup
  LIB=$(sed -n '1s/^#!lua name=//p' "$SCRIPTS/functions.library")
  export LIB
  export RLOCK_FUNCTIONS=on
  export BATS_NO_PARALLELIZE_WITHIN_FILE=true
  proxy_start "$REDIS_PORT"
  # Keys and channels allowed, every command but what each name says.
  acl_lock_user nofn pw -function
  acl_lock_user nofcall pw -fcall -fcall_ro
  acl_lock_user nofcallro pw -fcall_ro
  acl_lock_user nopub pw -publish
}

# calls CMD: how many times the server ran CMD (INFO commandstats; "function|load" ...).
calls() {
  local n
  n=$(rcli info commandstats | tr -d '\r' | sed -n "s/^cmdstat_$1:calls=\([0-9]*\),.*/\1/p")
  echo "${n:-0}"
}

# fresh: no library on the server, its counts reset.
fresh() {
  rcli function flush >/dev/null
  rcli config resetstat >/dev/null
}

# Functions came with Redis 7; a build without Python has no library.
need_functions() {
  [[ $(rcli info server | tr -d '\r' | sed -n 's/^redis_version:\([0-9]*\).*/\1/p') -ge 7 ]] ||
    skip "Redis < 7 has no Functions"
  [[ -s $SCRIPTS/functions.library ]] || skip "this build has no Functions library (no Python)"
}

@test "the build's library loads: FUNCTION LOAD accepts it, named for the protocol and its text" {
  need_functions
  [[ $LIB =~ ^rlock_4_[0-9a-f]{12}$ ]] || fail "library name: $LIB"
  rcli function flush >/dev/null
  run rcli -x function load <"$SCRIPTS/functions.library"
  assert_output "$LIB"
  # Every script is a function carrying the same hash (versions coexist on one server),
  # the read-only ones no-writes.
  hash=${LIB##*_}
  run rcli function list libraryname "$LIB"
  for f in acquire extend release leave undo status break forget fence history nest nest_ro list; do
    assert_output --partial "${f}_$hash"
  done
  # Loaded again: refused as existing, never replaced.
  run rcli -x function load <"$SCRIPTS/functions.library"
  assert_output --partial "already exists"
  rcli function flush >/dev/null
}

@test "RLOCK_FUNCTIONS=on: an uncontended run sends FCALLs, no EVALSHA, and loads the library once" {
  need_functions
  fresh
  rl run fn-one -- true
  assert_success
  (($(calls fcall) >= 2)) || fail "fcall: $(calls fcall)"
  assert_equal "$(calls evalsha)" 0
  assert_equal "$(calls eval)" 0
  assert_equal "$(calls 'function|load')" 1
  run rcli function list libraryname "$LIB"
  assert_output --partial "$LIB"
  # The library there: a second run loads nothing.
  rcli config resetstat >/dev/null
  rl run fn-one -- true
  assert_success
  assert_equal "$(calls 'function|load')" 0
  assert_equal "$(calls evalsha)" 0
  # Read-only scripts by FCALL_RO.
  rl status fn-one
  assert_equal "$(calls fcall_ro)" 1
}

@test "RLOCK_FUNCTIONS=on: contention, a waiter woken by the release, status and list" {
  need_functions
  fresh
  tok=$("$RLOCK" acquire fn-wait --ttl 30s)
  rlock_bg waiter acquire fn-wait --wait 20s
  waiter=$BG_PID
  wait_until '"$RLOCK" status fn-wait --json | grep -q "\"position\":"'
  rl acquire fn-wait --no-wait
  assert_equal "$status" 75
  rl list 'fn-*'
  assert_success
  assert_output --partial fn-wait
  rl release fn-wait --token "$tok"
  assert_success
  bg_wait "$waiter" 15
  assert_equal "$BG_STATUS" 0
  assert_equal "$(calls evalsha)" 0
  assert_equal "$(calls evalsha_ro)" 0
}

@test "after FUNCTION FLUSH the next run loads the library again: one FCALL and one FUNCTION LOAD more" {
  need_functions
  fresh
  rl run fn-flush -- true
  assert_success
  rcli config resetstat >/dev/null
  rl run fn-flush -- true
  assert_success
  fcalls=$(calls fcall)
  assert_equal "$(calls 'function|load')" 0
  fresh
  rl run fn-flush -- true
  assert_success
  assert_equal "$(calls fcall)" $((fcalls + 1))
  assert_equal "$(calls 'function|load')" 1
  assert_equal "$(calls evalsha)" 0
}

@test "a user without function|load on a server without the library: EVALSHA, and it works" {
  need_functions
  fresh
  url="redis://nofn:pw@127.0.0.1:$REDIS_PORT/0"
  rl --url "$url" -v run fn-noload -- true
  assert_success
  [[ $stderr == *"no Functions (the library could not be loaded): the scripts go by EVALSHA"* ]] ||
    fail "$stderr"
  (($(calls evalsha) >= 2)) || fail "evalsha: $(calls evalsha)"
  # Once per process: one FCALL missed, then refused with its load, then EVALSHA.
  assert_equal "$(calls fcall)" 2
  run rcli function list
  assert_output ""
  # Quietly without -v.
  rl --url "$url" run fn-noload -- true
  assert_success
  assert_equal "$stderr" ""
  # The library loaded by another (an admin): that user calls it.
  rcli -x function load <"$SCRIPTS/functions.library" >/dev/null
  rcli config resetstat >/dev/null
  rl --url "$url" run fn-noload -- true
  assert_success
  assert_equal "$(calls evalsha)" 0
}

@test "a user without fcall, or without fcall_ro only: EVALSHA (FCALL for the read-only ones)" {
  need_functions
  fresh
  rl --url "redis://nofcall:pw@127.0.0.1:$REDIS_PORT/0" run fn-nofcall -- true
  assert_success
  assert_equal "$stderr" ""
  (($(calls evalsha) >= 2)) || fail "evalsha: $(calls evalsha)"
  assert_equal "$(calls 'function|load')" 0
  rl --url "redis://nofcall:pw@127.0.0.1:$REDIS_PORT/0" status fn-nofcall
  assert_equal "$status" 1
  rcli config resetstat >/dev/null
  rcli -x function load <"$SCRIPTS/functions.library" >/dev/null
  tok=$("$RLOCK" acquire fn-nofcall --ttl 30s)
  rl --url "redis://nofcallro:pw@127.0.0.1:$REDIS_PORT/0" status fn-nofcall
  assert_success
  assert_equal "$(calls evalsha_ro)" 0
  assert_equal "$(calls evalsha)" 0
  "$RLOCK" release fn-nofcall --token "$tok"
}

@test "RLOCK_FUNCTIONS other than on or off is a usage error (64); off is EVALSHA" {
  RLOCK_FUNCTIONS=bogus rl run fn-bogus -- true
  assert_error 64
  assert_equal "${stderr_lines[0]}" "rlock: invalid RLOCK_FUNCTIONS 'bogus': use on or off"
  rcli config resetstat >/dev/null
  RLOCK_FUNCTIONS=off rl run fn-bogus -- true
  assert_success
  assert_equal "$(calls fcall)" 0
}

@test "an ACL refusal inside a function names the command by the library's line and the grant (77)" {
  need_functions
  rcli function flush >/dev/null
  rcli -x function load <"$SCRIPTS/functions.library" >/dev/null
  tok=$("$RLOCK" acquire fn-acl --ttl 30s)
  rl --url "redis://nopub:pw@127.0.0.1:$REDIS_PORT/0" release fn-acl --token "$tok"
  assert_error 77
  assert_equal "${stderr_lines[0]}" "rlock: the ACL user 'nopub' at \
redis://nopub@127.0.0.1:$REDIS_PORT/0 may not run PUBLISH (the release script needs it): \
grant it with ACL SETUSER nopub +publish"
  "$RLOCK" release fn-acl --token "$tok"
}

@test "the guide's locker and watcher ACLs call the library an administrator loaded: no EVALSHA" {
  need_functions
  for who in locker watcher; do
    line=$(grep -m1 "^  ACL SETUSER $who " "$BATS_TEST_DIRNAME/../docs/GUIDE.md") ||
      fail "docs/GUIDE.md names no ACL for '$who'"
    read -ra words <<<"${line/>PASSWORD/>pw}"
    rcli "${words[@]}" >/dev/null
  done
  local lk="redis://locker:pw@127.0.0.1:$REDIS_PORT/0" wt="redis://watcher:pw@127.0.0.1:$REDIS_PORT/0"
  fresh
  rcli -x function load <"$SCRIPTS/functions.library" >/dev/null
  # (long leases and wait: a sanitizer build on a busy machine takes its time; 76 from the
  # release once meant the 30 s lease had run out before it)
  tok=$("$RLOCK" --url "$lk" acquire fn-guide --ttl 5m) || fail "acquire as locker"
  rlock_bg waiter --url "$lk" run fn-guide --ttl 30s --wait 5m -- true
  waiter=$BG_PID
  wait_until '"$RLOCK" --url "$wt" status fn-guide --json | grep -q "\"waiter_count\":1"'
  rl --url "$wt" list 'fn-gu*'
  assert_success
  assert_output --partial fn-guide
  rl --url "$lk" release fn-guide --token "$tok"
  assert_success
  bg_wait "$waiter" 15
  assert_equal "$BG_STATUS" 0
  rl --url "$wt" history fn-guide
  assert_success
  assert_equal "$(calls evalsha)" 0
  assert_equal "$(calls evalsha_ro)" 0
  (($(calls fcall_ro) >= 3)) || fail "fcall_ro: $(calls fcall_ro)"
}

@test "every script by FCALL of the library gives the replies and leaves the keys of the same by EVALSHA" {
  need_functions
  # bench/fcall_check.py: a real session (exclusive, semaphore, shared, waiters, break,
  # forget, history, OOM) captured with MONITOR, replayed step by step by EVALSHA and by
  # FCALL of this build's library on twin keys, replies and keys compared after each step.
  run python3 "$BATS_TEST_DIRNAME/../bench/fcall_check.py" "$RLOCK" "$SCRIPTS/functions.library"
  assert_success
  assert_output --partial "steps compared"
  refute_output --partial DIFFERENT
}

@test "doctor with RLOCK_FUNCTIONS=on: whether the scripts go by FCALL, and what to grant or load" {
  need_functions
  fresh
  rl --url "redis://nofn:pw@127.0.0.1:$REDIS_PORT/0" doctor
  run grep '^warn  functions: ' <<<"$output"
  assert_output --partial "is not here and this user may not load it"
  rl --url "redis://nofcall:pw@127.0.0.1:$REDIS_PORT/0" doctor
  run grep -A1 '^warn  functions: ' <<<"$output"
  assert_output --partial "may not call FCALL"
  assert_output --partial "fix: ACL SETUSER nofcall +fcall +fcall_ro"
  # A user that may load: loaded now, then there.
  rl doctor
  run grep '^ok    functions: ' <<<"$output"
  assert_output --partial "$LIB was loaded now: the scripts go by FCALL"
  rl doctor
  run grep '^ok    functions: ' <<<"$output"
  assert_output --partial "$LIB is loaded"
  # Off: no such line.
  RLOCK_FUNCTIONS=off rl doctor
  refute_output --partial functions
}

@test "out of memory: a loaded library's functions run whole (allow-oom); a missing one is not loaded: EVALSHA's 69" {
  need_functions
  fresh
  rcli -x function load <"$SCRIPTS/functions.library" >/dev/null
  rcli config set maxmemory-policy noeviction >/dev/null
  rcli config set maxmemory 1 >/dev/null
  # A superseding acquire writes first what needs memory: EVALSHA refuses it, the function runs.
  rl run fn-oom --supersede -- true
  local st=$status
  rcli function flush >/dev/null
  rl run fn-oom2 --supersede -- true
  local st2=$status err2=${stderr_lines[0]:-}
  rcli config set maxmemory 0 >/dev/null
  assert_equal "$st" 0
  assert_equal "$st2" 69
  [[ $err2 == "rlock: the server is out of memory (maxmemory): "* ]] || fail "$err2"
  assert_equal "$(rcli --scan --pattern 'lock:{fn-oom2}*')" ""
}

@test "a server without FCALL (as Redis 6: the command unknown): EVALSHA, once per process" {
  need_functions
  redis_start_named OLD --rename-command FCALL '' --rename-command FCALL_RO ''
  rl --url "$OLD_URL" -v run fn-old -- "$RLOCK" --url "$OLD_URL" status fn-old
  assert_success
  [[ $stderr == *"no Functions (ERR unknown command"* ]] || fail "$stderr"
  # Once: the run's own calls after the first went by EVALSHA straight away.
  assert_equal "$(grep -c '\] FCALL' <<<"$stderr")" 1
  run rcli_to OLD info commandstats
  assert_output --partial cmdstat_evalsha_ro
  refute_output --partial cmdstat_function
  redis_stop OLD
}

@test "a release by FCALL whose reply is lost is retried and finds its own success (exit 0)" {
  need_functions
  fresh
  rcli -x function load <"$SCRIPTS/functions.library" >/dev/null
  tok=$("$RLOCK" acquire fn-lost --ttl 30s)
  cuts=$(proxy_state cuts)
  proxy_arm_lose_reply "release_${LIB##*_}"
  rl --url "$PROXY_URL" release fn-lost --token "$tok"
  assert_success
  assert_equal "$stderr" ""
  assert_equal "$(proxy_state cuts)" $((cuts + 1)) # the first try's reply really was lost
  assert_equal "$(rcli exists 'lock:{fn-lost}')" 0
  rl --url "$PROXY_URL" release fn-lost --token "$tok"
  assert_error 76
}
