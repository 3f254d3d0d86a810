#!/usr/bin/env bats
# ctest-labels: fast
# ACL users: a user restricted to ~lock:* and &lock:* can use every subcommand; wrong
# credentials and anything outside its patterns are refused with 77.
# shellcheck disable=SC2154 # $stderr and $stderr_lines come from `run --separate-stderr`
# shellcheck disable=SC2016 # wait_until conditions are expanded when evaluated

bats_require_minimum_version 1.5.0

load helpers/redis

setup_file() {
  redis_start
  rcli acl setuser app on '>apppw' resetkeys '~lock:*' resetchannels '&lock:*' '+@all' >/dev/null
  # Keys and channels allowed, but no scripts at all.
  acl_lock_user noscript pw2 -eval -evalsha
  # Keys allowed, the release channels not.
  rcli acl setuser nochan on '>pw3' '~lock:*' resetchannels '&other:*' '+@all' >/dev/null
  export APP_URL="redis://app:apppw@127.0.0.1:$REDIS_PORT/0"
}

@test "the ACL user is what the tests think it is" {
  run rcli acl getuser app
  assert_output --partial '~lock:*'
  assert_output --partial '&lock:*'
}

@test "an ACL user restricted to ~lock:* &lock:* can acquire, extend, status, list and release" {
  rl --url "$APP_URL" acquire acl-all --ttl 10s
  assert_success
  tok=$output
  run rcli get 'lock:{acl-all}'
  assert_output "$tok"
  rl --url "$APP_URL" extend acl-all --token "$tok" --ttl 20s
  assert_success
  rl --url "$APP_URL" status acl-all --json
  assert_success
  assert_output --partial "\"token\":\"$tok\""
  rl --url "$APP_URL" list 'acl-*'
  assert_success
  assert_output --partial acl-all
  rl --url "$APP_URL" release acl-all --token "$tok"
  assert_success
  rl --url "$APP_URL" status acl-all
  assert_equal "$status" 1
}

@test "an ACL user can wait for a lock and be woken by a release" {
  tok=$("$RLOCK" --url "$APP_URL" acquire acl-wait --ttl 30s)
  rlock_bg waiter --url "$APP_URL" acquire acl-wait --wait 20s
  waiter=$BG_PID
  wait_until '"$RLOCK" status acl-wait --json | grep -q "\"position\":"'
  rl --url "$APP_URL" release acl-wait --token "$tok"
  assert_success
  bg_wait "$waiter" 15
  assert_equal "$BG_STATUS" 0
}

# woken_without_lists KEY [PREPARE]: a holder whose releases may not LPUSH takes KEY, a
# waiter without BLPOP (it subscribes to its channel instead) waits in line; the release
# pushes nothing (the push is best effort: its script goes on) and publishes, and the
# waiter is woken on its channel, with no list left behind. The head of a line also
# re-checks every second: a release that lands just as it does (a slow start of the
# releasing rlock on a loaded runner) is taken by the re-check, the message then unheard.
# So up to three rounds, on KEY-1, KEY-2, KEY-3 (PREPARE KEY-N runs first), each of which
# must end well; one must be woken on its channel. WOKEN_KEY: the round's key that was.
woken_without_lists() {
  acl_lock_user noblpop pw5 -blpop
  acl_lock_user nolpush pw6 -lpush
  local nb="redis://noblpop:pw5@127.0.0.1:$REDIS_PORT/0"
  local nl="redis://nolpush:pw6@127.0.0.1:$REDIS_PORT/0" n k
  WOKEN_KEY=""
  for n in 1 2 3; do
    k="$1-$n"
    [[ -z ${2:-} ]] || "$2" "$k"
    tok=$("$RLOCK" --url "$nl" acquire "$k" --ttl 30s)
    rlock_bg waiter -v --url "$nb" run "$k" --wait 20s -- true
    waiter=$BG_PID
    wait_until "[[ \$(rcli pubsub numsub 'lock:release:{$k}:'\$(rcli zrange 'lock:{$k}:queue' 0 0) | tail -n 1) == 1 ]]"
    rl --url "$nl" release "$k" --token "$tok"
    assert_success
    bg_wait "$waiter" 15
    assert_equal "$BG_STATUS" 0
    assert_equal "$(rcli --scan --pattern "lock:{$k}:t:*")" ""
    if grep -q "woken on lock:release:{$k}:" "$BATS_TEST_TMPDIR/waiter.err"; then
      WOKEN_KEY=$k
      return 0
    fi
  done
  fail "never woken on its channel in three rounds: $(cat "$BATS_TEST_TMPDIR/waiter.err")"
}

@test "an ACL user without BLPOP, or whose releases may not LPUSH, still waits and is woken" {
  woken_without_lists acl-nob
}

# plant_topo KEY: a server kind in KEY's history that no script writes (not 'p').
plant_topo() {
  rcli hset "lock:{$1}:live" ' topo' c >/dev/null
  rcli pexpire "lock:{$1}:live" 60000 >/dev/null
}

@test "a wrong server kind in the history costs no notice: the release asks, publishes as before, corrects it" {
  # The waiter subscribes with SUBSCRIBE alone on a plain server, and the releaser only
  # publishes: an SPUBLISH, which reaches SSUBSCRIBE alone, would be lost.
  woken_without_lists acl-topo plant_topo
  assert_equal "$(rcli hget "lock:{$WOKEN_KEY}:live" ' topo')" p
}

@test "an ACL user without MGET takes and releases locks and semaphores all the same (the read falls back to GET)" {
  rcli acl setuser nomget on '>pw4' resetkeys '~lock:*' resetchannels '&lock:*' '+@all' '-mget' >/dev/null
  rcli acl log reset >/dev/null
  local url="redis://nomget:pw4@127.0.0.1:$REDIS_PORT/0" tok
  run -0 "$RLOCK" --url "$url" run acl-mget -- true
  tok=$("$RLOCK" --url "$url" acquire --limit 2 acl-mgs)
  run -0 "$RLOCK" --url "$url" run --limit 2 acl-mgs -- true
  run -0 "$RLOCK" --url "$url" release acl-mgs --token "$tok"
  # the semaphore's stored limit went with its last holder
  assert_equal "$(rcli exists 'lock:{acl-mgs}:limit' 'lock:{acl-mgs}' 'lock:{acl-mget}')" 0
  run -0 "$RLOCK" --url "$url" history acl-mget --json
  assert_equal "$(jq -r '[.[].event] | join(" ")' <<<"$output")" "acquired released"
  # MGET is asked before it is sent: a refused command, even one a script catches, would
  # be written to the server's ACL LOG at every release
  run rcli acl log
  refute_output --partial mget
}

# break_without_pexpire NAME SUFFIX...: NAME acquired, its keys :SUFFIX deleted (evicted,
# deleted), then broken by a user without PEXPIRE (break asks the ACL nothing first): no
# key of NAME but its fence counter is left without an expiry.
break_without_pexpire() {
  local name=$1 key s
  shift
  rcli acl setuser nopexp on '>pw5' resetkeys '~lock:*' resetchannels '&lock:*' '+@all' '-pexpire' >/dev/null
  "$RLOCK" acquire --ttl 30s "$name" >/dev/null
  for s; do rcli del "lock:{$name}:$s" >/dev/null; done
  run -0 "$RLOCK" --url "redis://nopexp:pw5@127.0.0.1:$REDIS_PORT/0" break --yes "$name"
  assert_equal "$(rcli exists "lock:{$name}")" 0
  while read -r key; do
    [[ -z $key || $key == "lock:{$name}:fence" ]] && continue
    [[ $(rcli pttl "$key") != -1 ]] || fail "$key has no expiry"
  done < <(rcli --scan --pattern "lock:{$name}*")
}

@test "a break by a user without PEXPIRE leaves no history key without an expiry" {
  # :live gone: the break's event would make it again with ' touch'
  break_without_pexpire acl-npx live
  assert_equal "$("$RLOCK" history acl-npx --json | jq -r '.[-1].event')" broken
}

@test "a break by a user without PEXPIRE, :log and :live gone, leaves no key without an expiry" {
  # both gone: the break's XADD makes :log again, and it cannot expire it (it goes, with
  # the event)
  break_without_pexpire acl-npx2 live log
  # the same user, where :log has its expiry, keeps the event
  break_without_pexpire acl-npx2 live
  assert_equal "$("$RLOCK" history acl-npx2 --json | jq -r '.[-1].event')" broken
}

@test "an ACL user can break a lock" {
  "$RLOCK" --url "$APP_URL" acquire acl-break --ttl 30s >/dev/null
  rl --url "$APP_URL" break acl-break --yes
  assert_success
  run rcli exists 'lock:{acl-break}'
  assert_output 0
}

@test "the ACL user's wrong password exits 77" {
  rl --url "redis://app:wrong@127.0.0.1:$REDIS_PORT/0" acquire acl-wrongpw
  assert_error 77
  rl --url "redis://app:wrong@127.0.0.1:$REDIS_PORT/0" status acl-wrongpw
  assert_error 77
}

@test "an unknown ACL user exits 77" {
  rl --url "redis://nobody:apppw@127.0.0.1:$REDIS_PORT/0" status acl-nobody
  assert_error 77
}

@test "a --prefix outside the user's key patterns exits 77" {
  rl --url "$APP_URL" --prefix other: acquire acl-prefix --ttl 10s
  assert_error 77
  run rcli exists 'other:{acl-prefix}'
  assert_output 0
  rl --url "$APP_URL" --prefix other: status acl-prefix
  assert_error 77
}

@test "release and extend under a --prefix outside the ACL exit 77, not 76" {
  rl --url "$APP_URL" --prefix other: release acl-prefix2 --token 0123456789abcdef0123456789abcdef
  assert_error 77
  rl --url "$APP_URL" --prefix other: extend acl-prefix2 --token 0123456789abcdef0123456789abcdef
  assert_error 77
  rl --url "$APP_URL" --prefix other: break acl-prefix2 --yes
  assert_error 77
}

@test "--user app with RLOCK_PASSWORD works" {
  RLOCK_PASSWORD=apppw run --separate-stderr "$RLOCK" \
    --url "redis://127.0.0.1:$REDIS_PORT/0" --user app acquire acl-user --ttl 10s
  assert_success
  run rcli exists 'lock:{acl-user}'
  assert_output 1
}

@test "--user app with --password-file works" {
  echo apppw >"$BATS_TEST_TMPDIR/pw"
  rl status acl-user-file --user app --password-file "$BATS_TEST_TMPDIR/pw" \
    --url "redis://127.0.0.1:$REDIS_PORT/0"
  assert_equal "$status" 1
}

@test "--user overrides the URL's user name" {
  rl --url "redis://nobody:apppw@127.0.0.1:$REDIS_PORT/0" --user app status acl-user-over
  assert_equal "$status" 1
}

@test "the connection really is the ACL user's" {
  # With the default user a foreign prefix works; as app it must not.
  rl --prefix other: status acl-who
  assert_equal "$status" 1
  RLOCK_PASSWORD=apppw run --separate-stderr "$RLOCK" --user app --prefix other: status acl-who
  assert_error 77
}

@test "a user without EVAL/EVALSHA permission exits 77" {
  rl --url "redis://noscript:pw2@127.0.0.1:$REDIS_PORT/0" acquire acl-noscript --ttl 10s
  assert_error 77
}

@test "a user who may not publish on the release channel: release exits 77" {
  tok=$("$RLOCK" acquire acl-nochan --ttl 30s)
  rl --url "redis://nochan:pw3@127.0.0.1:$REDIS_PORT/0" release acl-nochan --token "$tok"
  assert_error 77
}

# --- refusals that name the fix -----------------------------------------------------------------

@test "an ACL refusal names what the user lacks and the ACL SETUSER that grants it (77)" {
  acl_lock_user nopub pw4 -publish
  tok=$("$RLOCK" acquire acl-fix --ttl 30s)
  # A command inside a script: the line of the script names it.
  rl --url "redis://nopub:pw4@127.0.0.1:$REDIS_PORT/0" release acl-fix --token "$tok"
  assert_error 77
  assert_equal "${stderr_lines[0]}" "rlock: the ACL user 'nopub' at \
redis://nopub@127.0.0.1:$REDIS_PORT/0 may not run PUBLISH (the release script needs it): \
grant it with ACL SETUSER nopub +publish"
  # The script itself.
  rl --url "redis://noscript:pw2@127.0.0.1:$REDIS_PORT/0" acquire acl-fix2 --ttl 10s
  assert_error 77
  [[ $stderr == *"'noscript' at redis://noscript@127.0.0.1:$REDIS_PORT/0 may not run EVALSHA"* &&
    $stderr == *"ACL SETUSER noscript +evalsha +eval" ]] || fail "$stderr"
  # A key pattern.
  rl --url "$APP_URL" --prefix other: acquire acl-fix
  assert_error 77
  [[ $stderr == *"may not access rlock's keys (other:*): grant the key pattern with ACL SETUSER app ~other:*" ]] ||
    fail "$stderr"
  # A channel pattern.
  rl --url "redis://nochan:pw3@127.0.0.1:$REDIS_PORT/0" release acl-fix --token "$tok"
  assert_error 77
  [[ $stderr == *"may not publish on rlock's channels (lock:*): grant the channel pattern with ACL SETUSER nochan &lock:*" ]] ||
    fail "$stderr"
}

# --- the exact ACLs the guide names ---------------------------------------------------------

# guide_acl NAME: docs/GUIDE.md's `ACL SETUSER NAME …` line, as words, password pw; the
# man page's line is the same.
guide_acl() {
  local line man
  line=$(grep -m1 "^  ACL SETUSER $1 " "$BATS_TEST_DIRNAME/../docs/GUIDE.md") ||
    fail "docs/GUIDE.md names no ACL for '$1'"
  man=$(sed -e 's/\\-/-/g' "$BATS_TEST_DIRNAME/../man/rlock.1" | grep -m1 "^ACL SETUSER $1 ")
  assert_equal "$man" "${line#  }"
  read -ra ACL_WORDS <<<"${line/>PASSWORD/>pw}"
}

@test "the guide's locker and watcher ACLs run the basic scenario: acquire, wait in line, release, status, list, history, break" {
  guide_acl locker
  rcli "${ACL_WORDS[@]}" >/dev/null
  guide_acl watcher
  rcli "${ACL_WORDS[@]}" >/dev/null
  local lk="redis://locker:pw@127.0.0.1:$REDIS_PORT/0" wt="redis://watcher:pw@127.0.0.1:$REDIS_PORT/0"
  tok=$("$RLOCK" --url "$lk" acquire acl-exact --ttl 30s) || fail "acquire as locker"
  rlock_bg waiter --url "$lk" run acl-exact --ttl 30s --wait 20s -- true
  waiter=$BG_PID
  wait_until '"$RLOCK" --url "$wt" status acl-exact --json | grep -q "\"waiter_count\":1"'
  rl --url "$lk" extend acl-exact --token "$tok"
  assert_success
  rl --url "$wt" list 'acl-ex*'
  assert_success
  assert_output --partial acl-exact
  rl --url "$lk" release acl-exact --token "$tok"
  assert_success
  bg_wait "$waiter" 15
  assert_equal "$BG_STATUS" 0
  rl --url "$wt" history acl-exact
  assert_success
  assert_equal "$(grep -c acquired <<<"$output")" 2
  # The watcher writes nothing, scripts included.
  rl --url "$wt" acquire acl-exact2 --ttl 10s
  assert_error 77
  "$RLOCK" --url "$lk" acquire acl-exact --ttl 30s >/dev/null
  rl --url "$lk" break acl-exact --yes
  assert_success
  rl --url "$wt" status acl-exact
  assert_equal "$status" 1
  rl --url "$lk" forget acl-exact --yes
  assert_success
  # (what is left is the releases' and the break's tombstones, which expire by themselves)
  assert_equal "$(rcli --scan --pattern 'lock:{acl-exact}*' | grep -v ':r:')" ""
}
