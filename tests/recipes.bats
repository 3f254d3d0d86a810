#!/usr/bin/env bats
# docs/recipes, tried as written: every block marked `<!-- file: NAME -->` is taken out of
# its page, with only the Redis address, where rlock is found and the job's own script
# swapped for the test's; then run the way cron, systemd, the CI runners and Kubernetes
# would run it, as far as this machine allows (no systemd as PID 1, no runner, no cluster).

bats_require_minimum_version 1.5.0

load helpers/redis

RECIPES="$BATS_TEST_DIRNAME/../docs/recipes"

setup_file() {
  redis_start
}

setup() {
  T=$BATS_TEST_TMPDIR
  rcli flushall >/dev/null # the recipes use the same lock names
  # `rlock` on PATH is the binary under test (as a package would put it in /usr/bin).
  mkdir -p "$T/bin"
  ln -sf "$(realpath "$RLOCK")" "$T/bin/rlock"
}

# recipe_block PAGE NAME: the fenced block after `<!-- file: NAME -->` in docs/recipes/PAGE.
recipe_block() {
  awk -v name="$2" '$0 == "<!-- file: " name " -->" {f = 1; next}
    f && /^```/ {if (++n == 2) exit; next}
    f && n == 1' "$RECIPES/$1"
}

# yaml_json FILE: the YAML file as JSON (Ruby's YAML parser), for jq.
yaml_json() {
  command -v ruby >/dev/null || skip "ruby is not installed (the YAML is parsed with it)"
  ruby -ryaml -rjson -e 'puts JSON.generate(YAML.safe_load(File.read(ARGV[0]), aliases: true))' "$1"
}

# A job that counts its runs in $T/runs and takes a second; while $T/fail exists it
# fails (exit 1) and removes it, so that only its first run fails.
write_job() {
  printf '#!/bin/sh\necho run >>"%s/runs"\nsleep 1\n[ ! -e "%s/fail" ] || { rm -f "%s/fail"; exit 1; }\n' \
    "$T" "$T" "$T" >"$T/job.sh"
  chmod +x "$T/job.sh"
}

# A deploy that says it started and then runs until it is signalled.
write_deploy() {
  printf '#!/bin/sh\ntouch "%s/deploy.started"\nwhile :; do sleep 0.1; done\n' "$T" >"$1/deploy.sh"
  chmod +x "$1/deploy.sh"
}

runs() { [[ -f $T/runs ]] && wc -l <"$T/runs" || echo 0; }

# cron_line: the recipe's crontab line as Debian's cron would run it: sets vars (the
# crontab's variables, RLOCK_URL the test server's) and cmd (the command, with this rlock
# and the test's job swapped in).
cron_line() {
  recipe_block cron.md rlock.cron >"$T/crontab"
  assert [ -s "$T/crontab" ]
  vars=()
  local line job
  while IFS= read -r line; do
    [[ $line =~ ^RLOCK_URL= ]] && line="RLOCK_URL=$RLOCK_URL"
    vars+=("$line")
  done < <(grep -E '^[A-Z_]+=' "$T/crontab")
  job=$(grep -E '^[0-9*]' "$T/crontab")
  # Five time fields and the user (/etc/cron.d): the rest is the command.
  cmd=$(awk '{for (i = 7; i <= NF; i++) printf "%s%s", $i, (i < NF ? " " : "")}' <<<"$job")
  [[ $cmd == /usr/local/bin/rlock\ * ]] || fail "the recipe should name rlock by its path: $cmd"
  cmd=${cmd/\/usr\/local\/bin\/rlock/$RLOCK}
  cmd=${cmd/\/opt\/report\/nightly.sh/$T/job.sh}
}

# cron_job NAME [COMMAND]: COMMAND (default: the recipe's) in cron's environment, in the
# background (bg_start): PATH=/usr/bin:/bin and the crontab's variables, nothing else.
cron_job() {
  bg_start "$1" env -i PATH=/usr/bin:/bin HOME="$T" LOGNAME=report "${vars[@]}" \
    /bin/sh -c "${2:-$cmd}"
}

@test "cron: the line as Debian's cron runs it, on two hosts at once: one runs, both quiet; then done" {
  write_job
  cron_line
  for host in a b; do
    cron_job "cron-$host"
    eval "pid_$host=\$BG_PID"
  done
  bg_wait "$pid_a"
  assert_equal "$BG_STATUS" 0
  bg_wait "$pid_b"
  assert_equal "$BG_STATUS" 0
  assert_equal "$(runs)" 1
  # Nothing for cron to mail.
  assert_equal "$(cat "$T/cron-a.err" "$T/cron-b.err")" ""
  # status says it is done for the period, as the page shows.
  run "$RLOCK" status nightly-report
  assert_success
  assert_line --index 0 --regexp '^nightly-report: done \(fence [0-9]+\)$'
  assert_output --regexp 'done at [0-9:]{8}Z; taken until [0-9:]{8}Z \(--done-for\)'
  # A host whose clock is late starts the same slot after the first finished, or the line
  # is run again later that day: done, exit 0, quiet.
  cron_job late
  bg_wait "$BG_PID"
  assert_equal "$BG_STATUS" 0
  assert_equal "$(cat "$T/late.err")" ""
  assert_equal "$(runs)" 1
  # Without -E 0 the same is 75, still without a word (-q).
  [[ $cmd == *" -E 0 "* ]] || fail "the recipe should say -E 0: $cmd"
  cron_job no-e "${cmd/ -E 0 / }"
  bg_wait "$BG_PID"
  assert_equal "$BG_STATUS" 75
  assert_equal "$(cat "$T/no-e.err")" ""
  assert_equal "$(runs)" 1
  # The page's way to run it again within the period.
  "$RLOCK" break --yes nightly-report
  cron_job again
  bg_wait "$BG_PID"
  assert_equal "$BG_STATUS" 0
  assert_equal "$(runs)" 2
}

@test "cron: the report fails on the first host; the next host in line runs it; then it is done" {
  write_job
  cron_line
  touch "$T/fail"
  for host in a b c; do
    cron_job "cron-$host"
    eval "pid_$host=\$BG_PID"
  done
  statuses=()
  for pid in "$pid_a" "$pid_b" "$pid_c"; do
    bg_wait "$pid" 30
    statuses+=("$BG_STATUS")
  done
  # One host's report failed (cron mails its status), one ran it again and succeeded,
  # the third found it done.
  assert_equal "$(printf '%s\n' "${statuses[@]}" | sort | tr '\n' ' ')" "0 0 1 "
  assert_equal "$(runs)" 2
  assert [ ! -e "$T/fail" ]
  assert_equal "$(cat "$T"/cron-?.err)" ""
  cron_job late
  bg_wait "$BG_PID"
  assert_equal "$BG_STATUS" 0
  assert_equal "$(runs)" 2
}

@test "systemd: systemd-analyze verify accepts the service and the timer; a catch-up run at boot is a quiet no-op" {
  command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed"
  recipe_block systemd.md nightly-report.service >"$T/nightly-report.service"
  recipe_block systemd.md nightly-report.timer >"$T/nightly-report.timer"
  grep -q '^ExecStart=/usr/bin/rlock ' "$T/nightly-report.service" || fail "no ExecStart"
  sed -i "s|^ExecStart=/usr/bin/rlock |ExecStart=$(realpath "$RLOCK") |" "$T/nightly-report.service"
  run systemd-analyze verify "$T/nightly-report.service" "$T/nightly-report.timer"
  assert_success
  assert_output "" # not even a warning
  # A catch-up run at boot for a missed 02:00 (Persistent=true): --done-for makes it a
  # quiet no-op when another host did the night's report.
  grep -qiE '^Persistent *= *(true|yes|on|1)' "$T/nightly-report.timer" ||
    fail "the timer should catch up a missed run (Persistent=true)"
  grep -q -- ' --done-for ' "$T/nightly-report.service" || fail "no --done-for in ExecStart"
  # The command line, with %d (the credentials directory) and the job swapped in.
  mkdir -p "$T/creds"
  printf 'unused\n' >"$T/creds/redis-password"
  write_job
  exec_start=$(sed -n 's/^ExecStart=//p' "$T/nightly-report.service")
  exec_start=${exec_start//%d/$T/creds}
  exec_start=${exec_start/\/opt\/report\/nightly.sh/$T/job.sh}
  # The test server has no password: the password file is for the real one.
  exec_start=${exec_start/--password-file $T\/creds\/redis-password /}
  run env -i PATH=/usr/bin:/bin RLOCK_URL="$RLOCK_URL" $exec_start
  assert_success
  assert_equal "$(runs)" 1
  # The catch-up run of a host that was down at 02:00: done, exit 0, not a word.
  run env -i PATH=/usr/bin:/bin RLOCK_URL="$RLOCK_URL" $exec_start
  assert_success
  assert_output ""
  assert_equal "$(runs)" 1
}

@test "systemd: after a failed report, a host's catch-up run at boot runs it, and only once" {
  recipe_block systemd.md nightly-report.service >"$T/nightly-report.service"
  write_job
  exec_start=$(sed -n 's/^ExecStart=//p' "$T/nightly-report.service")
  exec_start=${exec_start/--password-file %d\/redis-password /}
  exec_start=${exec_start/\/usr\/bin\/rlock/$RLOCK}
  exec_start=${exec_start/\/opt\/report\/nightly.sh/$T/job.sh}
  touch "$T/fail"
  run env -i PATH=/usr/bin:/bin RLOCK_URL="$RLOCK_URL" $exec_start
  assert_equal "$status" 1 # the report's own status: the journal shows the failure
  assert_equal "$(runs)" 1
  run -1 "$RLOCK" status nightly-report # released at once: not done
  for boot in 1 2; do
    run env -i PATH=/usr/bin:/bin RLOCK_URL="$RLOCK_URL" $exec_start
    assert_success
    assert_output ""
  done
  assert_equal "$(runs)" 2
}

# run_step LABEL SHELL... : the step's script ($T/step.sh) in $T/ws, with rlock on PATH
# and RLOCK_URL set, in the background; sets STEP_PID.
run_step() {
  local label=$1
  shift
  bg_start "$label" env PATH="$T/bin:$PATH" RLOCK_URL="$RLOCK_URL" \
    sh -c 'cd "$1" && shift && exec "$@"' sh "$T/ws" "$@"
  STEP_PID=$BG_PID
}

@test "GitHub Actions: the step as the runner runs it; cancelled while deploying, it frees the lock" {
  recipe_block github-actions.md deploy.yml >"$T/deploy.yml"
  yaml_json "$T/deploy.yml" >"$T/deploy.json"
  jq -r '.jobs.deploy.steps[] | select(.run) | .run' "$T/deploy.json" >"$T/step.sh"
  assert_equal "$(jq -r '.jobs.deploy.steps[] | select(.run) | .shell' "$T/deploy.json")" bash
  grep -q '^exec rlock run ' "$T/step.sh" || fail "the step should exec rlock: $(cat "$T/step.sh")"
  mkdir -p "$T/ws"
  write_deploy "$T/ws"
  # shell: bash runs the step as `bash --noprofile --norc -eo pipefail FILE`.
  run_step first bash --noprofile --norc -eo pipefail "$T/step.sh"
  first=$STEP_PID
  wait_for_file "$T/deploy.started"
  run_step second bash --noprofile --norc -eo pipefail "$T/step.sh"
  second=$STEP_PID
  wait_until '[[ $(rcli zcard "lock:{deploy:prod}:queue") == 1 ]]'
  # Cancelling the first run: the runner sends SIGINT to the step's shell (then SIGTERM).
  rm -f "$T/deploy.started"
  kill -INT "$first"
  bg_wait "$first" 10
  assert_equal "$BG_STATUS" 130
  # The lock went to the second run at once, not after a TTL.
  wait_for_file "$T/deploy.started" 5
  # Cancelled too, while deploying.
  kill -INT "$second"
  bg_wait "$second" 10
  assert_equal "$BG_STATUS" 130
  run "$RLOCK" status deploy:prod
  assert_equal "$status" 1
}

@test "GitLab CI: the job's script as the runner runs it; cancelled while waiting or deploying" {
  recipe_block gitlab-ci.md .gitlab-ci.yml >"$T/gitlab.yml"
  yaml_json "$T/gitlab.yml" >"$T/gitlab.json"
  jq -r '.deploy.script[-1]' "$T/gitlab.json" >"$T/last"
  grep -q '^exec rlock run ' "$T/last" || fail "the last script line should exec rlock"
  # The runner's shell script: set -eo pipefail, then the job's lines.
  { echo 'set -eo pipefail'; jq -r '.deploy.script[]' "$T/gitlab.json"; } >"$T/step.sh"
  mkdir -p "$T/ws"
  write_deploy "$T/ws"
  run_step first bash "$T/step.sh"
  first=$STEP_PID
  wait_for_file "$T/deploy.started"
  run_step second bash "$T/step.sh"
  second=$STEP_PID
  wait_until '[[ $(rcli zcard "lock:{deploy:prod}:queue") == 1 ]]'
  # A job cancelled while it waits leaves the line...
  kill -TERM "$second"
  bg_wait "$second" 10
  assert_equal "$BG_STATUS" 143
  assert_equal "$(rcli zcard 'lock:{deploy:prod}:queue')" 0
  # ...and one cancelled while it deploys frees the lock.
  kill -TERM "$first"
  bg_wait "$first" 10
  assert_equal "$BG_STATUS" 143
  run "$RLOCK" status deploy:prod
  assert_equal "$status" 1
}

@test "Kubernetes: the CronJob says what it should; its command, in two pods at once, runs once" {
  recipe_block kubernetes.md cronjob.yaml >"$T/cronjob.yaml"
  yaml_json "$T/cronjob.yaml" >"$T/cronjob.json"
  assert_equal "$(jq -r .kind "$T/cronjob.json")" CronJob
  assert_equal "$(jq -r .spec.concurrencyPolicy "$T/cronjob.json")" Forbid
  c='.spec.jobTemplate.spec.template.spec.containers[0]'
  assert_equal "$(jq -r "$c.env[] | select(.name == \"RLOCK_URL\") | .value" "$T/cronjob.json")" \
    redis://redis.internal:6379/0
  jq -r "$c.env[] | select(.name == \"RLOCK_PASSWORD\") | .valueFrom.secretKeyRef.key" \
    "$T/cronjob.json" | grep -qx password || fail "the password should come from a Secret"
  mapfile -t argv < <(jq -r "$c.command[]" "$T/cronjob.json")
  assert_equal "${argv[0]}" rlock
  write_job
  argv=("${argv[@]/\/opt\/report\/nightly.sh/$T/job.sh}")
  for pod in a b; do
    bg_start "pod-$pod" env -i PATH="$T/bin:/usr/bin:/bin" RLOCK_URL="$RLOCK_URL" "${argv[@]}"
    eval "pid_$pod=\$BG_PID"
  done
  bg_wait "$pid_a"
  assert_equal "$BG_STATUS" 0
  bg_wait "$pid_b"
  assert_equal "$BG_STATUS" 0
  assert_equal "$(runs)" 1
  assert_equal "$(cat "$T/pod-a.err" "$T/pod-b.err")" ""
}

@test "the stuck-lock runbook: status, the JSON line, break (answered at the prompt), status" {
  command -v script >/dev/null || skip "script(1) is not installed"
  # A holder that is stopped (Ctrl-Z, a debugger) and a job waiting behind it.
  rlock_bg holder run --ttl 60s deploy:prod -- sleep 600
  holder=$BG_PID
  wait_until '[[ $(rcli exists "lock:{deploy:prod}") == 1 ]]'
  kill -STOP "$holder"
  rlock_bg waiter run --wait 60s deploy:prod -- sh -c 'touch "$0"; sleep 600' "$T/next.started"
  wait_until '[[ $(rcli zcard "lock:{deploy:prod}:queue") == 1 ]]'
  export PATH="$T/bin:$PATH"
  run bash -e -c "$(recipe_block stuck-lock.md step1.sh)"
  assert_success
  assert_output --partial "deploy:prod: held"
  assert_output --partial "waiter 1."
  run bash -e -o pipefail -c "$(recipe_block stuck-lock.md step3.sh)"
  assert_success
  assert_output --regexp " pid $holder since [0-9T:.-]+Z, [0-9]+ ms left$"
  # The operator answers y at the prompt.
  step4=$(recipe_block stuck-lock.md step4.sh)
  run bash -c "printf 'y\\n' | script -qec '${step4%%#*}' /dev/null"
  assert_success
  assert_output --partial "[y/N]"
  wait_for_file "$T/next.started" 5
  run bash -e -c "$(recipe_block stuck-lock.md step5.sh)"
  assert_success
  refute_output --partial "pid $holder "
  kill -CONT "$holder"
}

@test "the stuck-lock runbook's JSON line on a free key says free (no 'null pid null'), exit 1" {
  export PATH="$T/bin:$PATH"
  run -1 bash -e -o pipefail -c "$(recipe_block stuck-lock.md step3.sh)"
  assert_output free
  refute_output --partial null
}

@test "a lock for a whole script: two copies at once run one after the other; nested take; kill -9 frees it" {
  export PATH="$T/bin:$PATH"
  # make-report says it started, then waits for go; publish-report records its fence.
  printf '#!/bin/sh\necho "start $$" >>"%s/runs"\nwhile [ ! -e "%s/go" ]; do sleep 0.05; done\n' \
    "$T" "$T" >"$T/make-report"
  printf '#!/bin/sh\necho "publish $RLOCK_FENCE" >>"%s/runs"\n' "$T" >"$T/publish-report"
  chmod +x "$T/make-report" "$T/publish-report"
  recipe_block script.md nightly-report.sh |
    sed "s|/usr/local/bin/make-report|$T/make-report|; s|/usr/local/bin/publish-report|$T/publish-report|" \
      >"$T/report.sh"
  bg_start a sh "$T/report.sh"
  a=$BG_PID
  wait_until '[[ $(runs) == 1 ]]'
  bg_start b sh "$T/report.sh"
  b=$BG_PID
  wait_until '[[ $(rcli zcard "lock:{nightly-report}:queue") == 1 ]]'
  assert_equal "$(runs)" 1 # b waits
  touch "$T/go"
  bg_wait "$a" 30
  assert_equal "$BG_STATUS" 0
  bg_wait "$b" 30
  assert_equal "$BG_STATUS" 0
  # serialized, and the nested run inside each copy ran at once with that copy's fence
  run cat "$T/runs"
  assert_line --index 1 "publish 1"
  assert_line --index 3 "publish 2"
  [[ ${lines[0]} == start* && ${lines[2]} == start* ]]
  wait_until '! rlock status nightly-report >/dev/null 2>&1'
  # killed with -9 while it holds: the keeper frees the lock within about a second
  rm -f "$T/go" "$T/runs"
  bg_start c sh "$T/report.sh"
  c=$BG_PID
  wait_until '[[ $(runs) == 1 ]]'
  kill -KILL "$c"
  start=$(now_ms)
  wait_until '! rlock status nightly-report >/dev/null 2>&1' 10
  (($(now_ms) - start < $(slack 3000)))
}
