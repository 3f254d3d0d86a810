#!/usr/bin/env bats
# ctest-labels: fast
# One schema for every --json (the man page, JSON OUTPUT; docs/json-output.json): each
# command's objects have only known fields, each of its type (numbers as numbers, host
# and pid apart), values not known left out; a hostile history record stays valid JSON.

load helpers/redis
load helpers/topology

bats_require_minimum_version 1.5.0

setup_file() {
  redis_start
  masters_start M 3
}

setup() { T=$BATS_TEST_TMPDIR; }

SCHEMA="$BATS_TEST_DIRNAME/helpers/json_schema.py"

# conforms OBJECT [--array|--lines]: $output follows OBJECT of the schema.
conforms() {
  local faults
  faults=$(python3 "$SCHEMA" validate "$@" <<<"$output") ||
    fail "not the schema's $1: $faults"$'\n'"$output"
}

has_waiter() { "$RLOCK" status "$1" --json | jq -e '.waiter_count >= 1' >/dev/null; }

@test "the man page's JSON OUTPUT section is docs/json-output.json" {
  run -0 python3 "$SCHEMA" --check
}

@test "the schema checker catches an unknown field, a number as a string and a missing field" {
  output='{"key":"k","token":"t","fence":"1","ttl_ms":5,"who":"x"}'
  run -1 python3 "$SCHEMA" validate acquire <<<"$output"
  assert_line 'acquire#0.fence: not an integer: '"'1'"
  assert_line 'acquire#0.who: not a field of acquire'
  run -1 python3 "$SCHEMA" validate extend <<<'{"key":"k","token":"t"}'
  assert_line 'extend#0: extend without ttl_ms'
}

@test "status --json: a holder with a label, a waiter; numbers as numbers, host and pid apart, no slot" {
  tok=$("$RLOCK" acquire --ttl 30s --label 'job 7' js)
  rlock_bg w run --wait 60s --priority 3 js -- true
  wait_until "has_waiter js"
  run -0 "$RLOCK" status js --json
  conforms status
  run -0 jq -c '.holders[0] | [.host, (.pid|type), (.fence|type), .label, has("slot"), has("exit_status"), has("kept_until")]' <<<"$output"
  assert_output "[\"$(hostname)\",\"number\",\"number\",\"job 7\",false,false,false]"
  run -0 "$RLOCK" status js --json
  run -0 jq -c '.waiters[0] | [.position, .priority, (.pid|type), has("label")]' <<<"$output"
  assert_output '[1,3,"number",false]'
  "$RLOCK" release js --token "$tok"
}

@test "status --json of a semaphore holder has its slot; of a holder that is not rlock, no host, pid or fence" {
  "$RLOCK" acquire --ttl 30s --limit 2 jsem >/dev/null
  run -0 "$RLOCK" status jsem --json
  conforms status
  assert_equal "$(jq -c '[.limit, .holders[0].slot]' <<<"$output")" '[2,1]'
  rcli set 'lock:{jforeign}' sometoken px 30000 >/dev/null
  run -0 "$RLOCK" status jforeign --json
  conforms status
  run -0 jq -c '.holders[0] | [.token, has("host"), has("pid"), has("fence"), has("since"), has("user")]' <<<"$output"
  assert_output '["sometoken",false,false,false,false,false]'
}

@test "status --json of a free key: its last events typed (fence, held, exit numbers; host and pid apart)" {
  "$RLOCK" run jfree -- sh -c 'exit 3' || true
  run -1 "$RLOCK" status jfree --json
  conforms status
  run -0 jq -c '.last_events[-1] | [.event, (.fence|type), (.held|type), .exit, .host, (.pid|type), has("slot")]' <<<"$output"
  assert_output "[\"released\",\"number\",\"number\",3,\"$(hostname)\",\"number\",false]"
}

@test "list --json: an array of status objects without last_events" {
  "$RLOCK" acquire --ttl 30s jl-1 >/dev/null
  "$RLOCK" acquire --ttl 30s --shared jl-2 >/dev/null
  run -0 "$RLOCK" list 'jl-*' --json
  conforms status --array
  assert_equal "$(jq -c '[.[] | has("last_events")] | unique' <<<"$output")" '[false]'
  assert_equal "$(jq -c '[.[].holders[0].mode] | sort' <<<"$output")" '["exclusive","shared"]'
}

@test "history --json and --follow --json: events as the schema says, with a pool's slot and a label" {
  "$RLOCK" run --limit 2 --label ci/job/1 jh -- true
  "$RLOCK" run jh2 -- true
  run -0 "$RLOCK" history jh --json
  conforms event --array
  run -0 jq -c '.[0] | [.event, .slot, .label, has("host"), .mode, .waited]' <<<"$output"
  assert_output '["acquired",1,"ci/job/1",false,"exclusive",0]'
  # --follow: the reader leaves after two lines, which ends it
  run -0 bash -c '"$RLOCK" history jh2 --follow --json | head -n 2'
  assert_equal "${#lines[@]}" 2
  conforms event --lines
  assert_equal "$(jq -c '[(.pid|type), has("slot")]' <<<"${lines[0]}")" '["number",false]'
}

@test "a hostile history record: no crash, valid JSON; what is not of its type goes under other" {
  rcli xadd 'lock:{jbad}:log' '*' ev acquired tok t1 fence abc who 'x pid y' slot 0 held 12 \
    nested 1 exit '' zz $'q\x01' fence 9 >/dev/null
  run -0 "$RLOCK" history jbad --json
  conforms event --array
  run -0 jq -c '.[0] | [has("fence"), .other.fence, .who, .label, has("pid"), has("slot"), .held, .nested, has("exit"), .other.zz]' <<<"$output"
  assert_output '[false,"abc","x pid y","x pid y",false,false,12,true,false,"q\u0001"]'
}

@test "acquire --json and extend --json: plain, a pool's slot, --and's keys and fences" {
  run -0 "$RLOCK" acquire --ttl 30s --json ja
  conforms acquire
  tok=$(jq -r .token <<<"$output")
  assert_equal "$(jq -c '[(.fence|type), has("slot"), has("keys")]' <<<"$output")" '["number",false,false]'
  run -0 "$RLOCK" extend ja --token "$tok" --ttl 20s --json
  conforms extend
  assert_equal "$(jq .ttl_ms <<<"$output")" 20000
  run -0 "$RLOCK" acquire --ttl 30s --limit 3 --json jap
  conforms acquire
  assert_equal "$(jq .slot <<<"$output")" 1
  run -0 "$RLOCK" acquire --ttl 30s --json jand1 --and jand2
  conforms acquire
  assert_equal "$(jq -c '[.keys, (.fences|map(type))]' <<<"$output")" '[["jand1","jand2"],["number","number"]]'
  run -0 "$RLOCK" --layout plain acquire --ttl 30s --json jlay
  conforms acquire
  assert_equal "$(jq 'has("fence")' <<<"$output")" false
}

@test "quorum mode: status --json's masters, and each master's holder" {
  RLOCK_URL=$M_URLS "$RLOCK" acquire --ttl 30s jq1 >/dev/null
  run -0 env RLOCK_URL="$M_URLS" "$RLOCK" status jq1 --json
  conforms status
  # a majority holds it (the third master may have answered too late)
  assert_equal "$(jq -c '[.quorum, (.masters|length), ([.masters[].holder | select(.) | .fence | type] | unique)]' <<<"$output")" \
    '[2,3,["number"]]'
  assert [ "$(jq '[.masters[] | select(has("holder"))] | length' <<<"$output")" -ge 2 ]
  run -1 env RLOCK_URL="$M_URLS" "$RLOCK" status jq-free --json
  conforms status
  assert_equal "$(jq -c '[.masters[] | has("holder")] | unique' <<<"$output")" '[false]'
}

@test "doctor --json: an array of checks" {
  run "$RLOCK" doctor --json
  [[ $status == 0 || $status == 1 ]] || fail "doctor exited $status: $output"
  conforms check --array
}
