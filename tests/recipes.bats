#!/usr/bin/env bats
# ctest-labels: fast plainonly
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
  # No CI of the machine running the tests labels anything: the CI tests set the runners'
  # variables themselves.
  unset GITHUB_ACTIONS GITLAB_CI JENKINS_URL BUILDKITE RLOCK_LABEL
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

# gha_steps: the recipe's workflow as JSON in $T/deploy.json; the deploy step's script (the
# step that runs rlock) in $T/step.sh, and the install step's (the one that runs dpkg -i)
# in $T/install.sh.
gha_steps() {
  recipe_block github-actions.md deploy.yml >"$T/deploy.yml"
  yaml_json "$T/deploy.yml" >"$T/deploy.json"
  local steps='.jobs.deploy.steps[] | select(.run)'
  jq -r "$steps | select(.run | test(\"rlock run \")) | .run" "$T/deploy.json" >"$T/step.sh"
  assert_equal "$(jq -r "$steps | select(.run | test(\"rlock run \")) | .shell" "$T/deploy.json")" bash
  grep -q '^exec rlock run ' "$T/step.sh" || fail "the step should exec rlock: $(cat "$T/step.sh")"
  jq -r "$steps | select(.run | test(\"dpkg -i\")) | .run" "$T/deploy.json" >"$T/install.sh"
}

# As the runner runs a `shell: bash` step: `bash --noprofile --norc -eo pipefail FILE`.
GHA_BASH=(bash --noprofile --norc -eo pipefail)

@test "GitHub Actions: a hosted runner; the install step downloads the .deb scripts/package.sh builds and runs dpkg -i" {
  gha_steps
  runs_on=$(jq -r '.jobs.deploy["runs-on"]' "$T/deploy.json")
  [[ $runs_on == ubuntu-* ]] || fail "the recipe should run on a GitHub-hosted runner: $runs_on"
  # The name scripts/package.sh gives the package matches the pattern the step downloads.
  grep -qF 'deb_file=$out/rlock_${version}_${arch}.deb' "$BATS_TEST_DIRNAME/../scripts/package.sh" ||
    fail "scripts/package.sh names its .deb differently"
  deb="rlock_$("$RLOCK" --version | awk '{print $2}')_amd64.deb"
  pattern=$(grep -o -- "--pattern '[^']*'" "$T/install.sh" | cut -d"'" -f2)
  # shellcheck disable=SC2053 # a glob, as gh matches it
  [[ $deb == $pattern ]] || fail "--pattern '$pattern' does not match $deb"
  # The step's lines, with gh, sudo and dpkg standing in: gh puts the asset in --dir.
  mkdir -p "$T/fake" "$T/runner-temp"
  printf '#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = --dir ] && d=$2; shift; done\n: >"$d/%s"\n' \
    "$deb" >"$T/fake/gh"
  printf '#!/bin/sh\nexec "$@"\n' >"$T/fake/sudo"
  printf '#!/bin/sh\necho "$@" >"%s/dpkg.args"\n' "$T" >"$T/fake/dpkg"
  chmod +x "$T/fake/gh" "$T/fake/sudo" "$T/fake/dpkg"
  PATH="$T/fake:$PATH" RUNNER_TEMP="$T/runner-temp" GH_TOKEN=t run "${GHA_BASH[@]}" "$T/install.sh"
  assert_success
  assert_equal "$(cat "$T/dpkg.args")" "-i $T/runner-temp/$deb"
}

@test "GitHub Actions: the step as the runner runs it; cancelled while deploying, it frees the lock" {
  gha_steps
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

# holder_label KEY: the label of KEY's first holder (null: none, or free).
holder_label() { { "$RLOCK" status --json "$1" || true; } | jq -r '.holders[0].label'; }
# waiter_labels KEY: the labels of KEY's waiters in line order, on one line.
waiter_labels() { { "$RLOCK" status --json "$1" || true; } | jq -r '[.waiters[].label] | join(" ")'; }

@test "GitHub Actions: deploy only the latest: a newer run supersedes the waiting one; runs are named by their URLs" {
  gha_steps
  mkdir -p "$T/ws"
  write_deploy "$T/ws"
  # What the runner sets for run N of acme/shop.
  export GITHUB_ACTIONS=true GITHUB_SERVER_URL=https://github.com GITHUB_REPOSITORY=acme/shop
  runs=https://github.com/acme/shop/actions/runs
  GITHUB_RUN_ID=101 run_step r101 "${GHA_BASH[@]}" "$T/step.sh"
  r101=$STEP_PID
  wait_for_file "$T/deploy.started"
  GITHUB_RUN_ID=102 run_step r102 "${GHA_BASH[@]}" "$T/step.sh"
  r102=$STEP_PID
  wait_until '[[ $(rcli zcard "lock:{deploy:prod}:queue") == 1 ]]'
  # The waiting run's log names the deploying run by its URL.
  wait_until "grep -q 'held by $runs/101 since ' '$T/r102.err'" 10
  # A newer push: run 103 replaces run 102 in the line; 102's step fails, saying by whom.
  GITHUB_RUN_ID=103 run_step r103 "${GHA_BASH[@]}" "$T/step.sh"
  r103=$STEP_PID
  bg_wait "$r102" 10
  assert_equal "$BG_STATUS" 75
  grep -qF "superseded by $runs/103 (--supersede)" "$T/r102.err" || fail "$(cat "$T/r102.err")"
  assert_equal "$(holder_label deploy:prod)" "$runs/101"
  assert_equal "$(waiter_labels deploy:prod)" "$runs/103"
  run "$RLOCK" status deploy:prod
  assert_line "          label $runs/101"
  assert_line "          label $runs/103"
  # Run 101 is done (cancelled here): the newest run deploys, never the superseded one.
  rm -f "$T/deploy.started"
  kill -INT "$r101"
  bg_wait "$r101" 10
  assert_equal "$BG_STATUS" 130
  wait_for_file "$T/deploy.started" 5
  assert_equal "$(holder_label deploy:prod)" "$runs/103"
  kill -INT "$r103"
  bg_wait "$r103" 10
  assert_equal "$BG_STATUS" 130
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

# gitlab_job JOB: the recipe's job JOB as the runner's shell script ($T/JOB.sh): set -eo
# pipefail, then the job's lines.
gitlab_job() {
  recipe_block gitlab-ci.md .gitlab-ci.yml >"$T/gitlab.yml"
  yaml_json "$T/gitlab.yml" >"$T/gitlab.json"
  { echo 'set -eo pipefail'; jq -r --arg j "$1" '.[$j].script[]' "$T/gitlab.json"; } >"$T/$1.sh"
  grep -q '^exec rlock run ' "$T/$1.sh" || fail "job $1 should exec rlock"
}

@test "GitLab CI: a hotfix goes ahead of the waiting deploy; a newer deploy supersedes it; jobs are named by CI_JOB_URL" {
  gitlab_job deploy
  gitlab_job hotfix
  mkdir -p "$T/ws"
  write_deploy "$T/ws"
  export GITLAB_CI=true
  jobs=https://gitlab.example.com/acme/shop/-/jobs
  CI_JOB_URL=$jobs/1 run_step j1 bash "$T/deploy.sh"
  j1=$STEP_PID
  wait_for_file "$T/deploy.started"
  CI_JOB_URL=$jobs/2 run_step j2 bash "$T/deploy.sh"
  j2=$STEP_PID
  wait_until '[[ $(rcli zcard "lock:{deploy:prod}:queue") == 1 ]]'
  wait_until "grep -q 'held by $jobs/1 since ' '$T/j2.err'" 10
  # The hotfix stands ahead of the deploy that came first.
  CI_JOB_URL=$jobs/3 run_step j3 bash "$T/hotfix.sh"
  j3=$STEP_PID
  wait_until '[[ $(rcli zcard "lock:{deploy:prod}:queue") == 2 ]]'
  assert_equal "$(waiter_labels deploy:prod)" "$jobs/3 $jobs/2"
  run "$RLOCK" status deploy:prod
  assert_line --partial "waiter 1. (priority 10) "
  # A newer pipeline of main: its deploy replaces the waiting one, behind the hotfix.
  CI_JOB_URL=$jobs/4 run_step j4 bash "$T/deploy.sh"
  j4=$STEP_PID
  bg_wait "$j2" 10
  assert_equal "$BG_STATUS" 75
  grep -qF "superseded by $jobs/4 (--supersede)" "$T/j2.err" || fail "$(cat "$T/j2.err")"
  assert_equal "$(waiter_labels deploy:prod)" "$jobs/3 $jobs/4"
  # They deploy in that order (each cancelled here once it deploys).
  for next in "$j3:3" "$j4:4"; do
    rm -f "$T/deploy.started"
    kill -TERM "$j1"
    bg_wait "$j1" 10
    assert_equal "$BG_STATUS" 143
    wait_for_file "$T/deploy.started" 5
    assert_equal "$(holder_label deploy:prod)" "$jobs/${next#*:}"
    j1=${next%:*}
  done
  kill -TERM "$j1"
  bg_wait "$j1" 10
  assert_equal "$BG_STATUS" 143
  run "$RLOCK" status deploy:prod
  assert_equal "$status" 1
}

# A stand-in psql in $T/bin: it logs "start DB", runs until $T/go.DB exists, logs "end DB".
write_psql() {
  printf '#!/bin/sh\necho "start $1" >>"%s/psql.log"\nwhile [ ! -e "%s/go.$1" ]; do sleep 0.05; done\necho "end $1" >>"%s/psql.log"\n' \
    "$T" "$T" "$T" >"$T/bin/psql"
  chmod +x "$T/bin/psql"
}
started() { grep -c '^start ' "$T/psql.log" 2>/dev/null || echo 0; }

@test "pool: five jobs at once: four on four different databases, the fifth on the first one freed" {
  write_psql
  recipe_block pool.md integration-tests.sh >"$T/it.sh"
  grep -q 'RLOCK_SLOT' "$T/it.sh" || fail "the script should use RLOCK_SLOT"
  pids=()
  for i in 1 2 3 4 5; do
    bg_start "job$i" env PATH="$T/bin:$PATH" RLOCK_URL="$RLOCK_URL" sh "$T/it.sh"
    pids+=("$BG_PID")
  done
  wait_until '[[ $(started) == 4 && $(rcli zcard "lock:{test-db}:queue") == 1 ]]' 20
  assert_equal "$(sed -n 's/^start //p' "$T/psql.log" | sort | tr '\n' ' ')" \
    "test_db_1 test_db_2 test_db_3 test_db_4 "
  run "$RLOCK" status test-db
  assert_output --regexp 'fence [0-9]+, slot 3, exclusive, token'
  # test_db_3 is done: the fifth job gets it.
  touch "$T/go.test_db_3"
  wait_until '[[ $(started) == 5 ]]' 10
  assert_equal "$(grep '^start ' "$T/psql.log" | tail -n 1)" "start test_db_3"
  touch "$T"/go.test_db_{1,2,3,4}
  for pid in "${pids[@]}"; do
    bg_wait "$pid" 20
    assert_equal "$BG_STATUS" 0
  done
}

@test "pool: the script form holds one slot for both of its steps, and frees it when it exits" {
  write_psql
  touch "$T"/go.test_db_{1,2,3,4}
  export PATH="$T/bin:$PATH"
  recipe_block pool.md several-steps.sh >"$T/steps.sh"
  # Two jobs hold slots 1 and 2.
  t1=$(rlock acquire test-db --limit 4 --ttl 60s)
  t2=$(rlock acquire test-db --limit 4 --ttl 60s)
  run sh "$T/steps.sh"
  assert_success
  assert_equal "$(grep -c '^start test_db_3$' "$T/psql.log")" 2
  assert_equal "$(grep -c '^start ' "$T/psql.log")" 2
  # The keeper releases slot 3 within about a second after the script exited.
  wait_until '[[ $(status_json test-db | jq "[.holders[].slot] | sort | join(\" \")") == "\"1 2\"" ]]' 5
  rlock release test-db --token "$t1"
  rlock release test-db --token "$t2"
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

@test "the stuck-lock runbook: top, status, the JSON line, break (answered at the prompt), status" {
  command -v script >/dev/null || skip "script(1) is not installed"
  # A holder that is stopped (Ctrl-Z, a debugger) and a job waiting behind it.
  rlock_bg holder run --ttl 60s deploy:prod -- sleep 600
  holder=$BG_PID
  wait_until '[[ $(rcli exists "lock:{deploy:prod}") == 1 ]]'
  kill -STOP "$holder"
  rlock_bg waiter run --wait 60s deploy:prod -- sh -c 'touch "$0"; sleep 600' "$T/next.started"
  wait_until '[[ $(rcli zcard "lock:{deploy:prod}:queue") == 1 ]]'
  export PATH="$T/bin:$PATH"
  # The live view first: the waited-for lock, its waiter and the oldest wait.
  run bash -e -c "$(recipe_block stuck-lock.md top.sh)"
  assert_success
  assert_line --index 0 --regexp '^rlock top .* locks: 1 shown, 0 hidden '
  assert_line --index 2 --regexp '^  deploy:prod +exclusive +[^ ]+ pid [0-9]+ +[0-9ms]+ +[0-9ms]+ +1 +[0-9ms]+ +1$'
  # Step 0, the server's own health: one verdict line per check (this test server keeps
  # no AOF: a warning, exit 1).
  run bash -c "$(recipe_block stuck-lock.md doctor.sh)"
  assert [ "$status" -le 1 ]
  assert_line --regexp '^(ok|warn|fail|skip) +persistence: '
  run bash -e -c "$(recipe_block stuck-lock.md step1.sh)"
  assert_success
  assert_output --partial "deploy:prod: held"
  assert_output --partial "waiter 1."
  # What happened before: the stopped holder's acquisition, newest last, in UTC.
  run bash -e -c "$(recipe_block stuck-lock.md history.sh)"
  assert_success
  assert_line --index 0 --regexp "^[0-9-]{10} [0-9:]{8}Z  acquired    fence 1, [^ ]+ pid $holder, \\[sleep 600\\]$"
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
  # The history says who broke it, and that the next job got it.
  run bash -e -c "$(recipe_block stuck-lock.md after.sh)"
  assert_success
  assert_equal "${#lines[@]}" 2
  assert_line --index 0 --regexp "  broken      fence 1, [^ ]+ pid $holder, broken by $(id -un)@[^ ]+ pid [0-9]+$"
  assert_line --index 1 --regexp "  acquired    fence 2, [^ ]+ pid [0-9]+, \\[sh -c .*\\]$"
  kill -CONT "$holder"
}

@test "the stuck-lock runbook's JSON line on a free key says free (no 'null pid null'), exit 1" {
  export PATH="$T/bin:$PATH"
  run -1 bash -e -o pipefail -c "$(recipe_block stuck-lock.md step3.sh)"
  assert_output free
  refute_output --partial null
}

@test "hot standbys: one active, one waiting; the maintenance hold takes over ahead of it, Ctrl-C hands over; --follow shows each holder" {
  export PATH="$T/bin:$PATH"
  recipe_block standby.md orders-worker.sh >"$T/orders-worker.sh"
  grep -q '^exec rlock run orders-worker ' "$T/orders-worker.sh" || fail "$(cat "$T/orders-worker.sh")"
  sed -i "s#/usr/local/bin/orders-worker#$T/worker.sh#" "$T/orders-worker.sh"
  # The worker says which instance is active, then works until it is stopped.
  printf '#!/bin/sh\necho "$INSTANCE" >>"%s/active"\nwhile :; do sleep 0.1; done\n' "$T" >"$T/worker.sh"
  chmod +x "$T/worker.sh"
  watch=$(recipe_block standby.md watch.sh)
  [[ $watch == "rlock status orders-worker --follow" ]] || fail "$watch"
  bg_start watch env --default-signal=INT sh -c "exec $watch"
  watcher=$BG_PID
  wait_until "grep -c . '$T/watch.out' | grep -qx 1" 10
  bg_start a env --default-signal INSTANCE=a sh "$T/orders-worker.sh"
  a=$BG_PID
  wait_until "grep -qx a '$T/active'" 10
  # (an acquisition is seen by the watcher's next read, within about a second)
  wait_until "grep -q 'held by .* pid $a, .*fence 1\$' '$T/watch.out'" 10
  bg_start b env --default-signal INSTANCE=b sh "$T/orders-worker.sh"
  b=$BG_PID
  wait_until '[ "$(n_waiters orders-worker)" = 1 ]' 10
  # The hand hold joins the line ahead of the standby, and gets the lock when the active
  # instance is stopped (systemctl stop: SIGTERM).
  bg_start m env --default-signal USER=ops sh -c "exec $(recipe_block standby.md maintenance.sh)"
  m=$BG_PID
  wait_until '[ "$(n_waiters orders-worker)" = 2 ]' 10
  kill -TERM "$a"
  bg_wait "$a" 10
  wait_until "grep -q \"^holding 'orders-worker' (fence 2); kill $m releases it\$\" '$T/m.out'" 10
  assert_equal "$(cat "$T/active")" a
  wait_until "grep -q 'held by .* pid $m, .*fence 2\$' '$T/watch.out'" 10
  # Ctrl-C (SIGINT) gives it back: the standby takes over.
  kill -INT "$m"
  bg_wait "$m" 10
  assert_equal "$BG_STATUS" 0
  wait_until "grep -qx b '$T/active'" 10
  wait_until "grep -q 'held by .* pid $b, .*fence 3\$' '$T/watch.out'" 10
  kill -INT "$watcher"
  bg_wait "$watcher" 10
  assert_equal "$BG_STATUS" 0
  # Each holder in turn (a free moment between two of them may show too).
  run -0 grep -v ': free ' "$T/watch.out"
  assert_equal "${#lines[@]}" 3
  assert_line --index 0 --regexp " orders-worker: held by [^ ]+ pid $a, label orders-worker on $(hostname), fence 1\$"
  assert_line --index 1 --regexp " orders-worker: held by [^ ]+ pid $m, label maintenance by ops, fence 2\$"
  assert_line --index 2 --regexp " orders-worker: held by [^ ]+ pid $b, label orders-worker on $(hostname), fence 3\$"
  [[ $(head -n 1 "$T/watch.out") =~ Z\ \ orders-worker:\ free\ \(last\ fence\ 0\)$ ]] ||
    fail "$(head -n 1 "$T/watch.out")"
}

# metrics_files: the files in $T/textfile, the collector's directory, one per line.
metrics_files() { ls -A "$T/textfile"; }

# assert_metrics_complete FILE: FILE is a whole `list --prometheus` of the locks the
# metrics tests hold (deploy:prod, and test-db with two holders): nine gauge families
# (none is done for a period), each under its HELP and TYPE, and every sample of each.
assert_metrics_complete() {
  local f=$1
  assert_equal "$(grep -c '^# HELP rlock_' "$f")" 9
  assert_equal "$(grep -c '^# TYPE rlock_[a-z_]* gauge$' "$f")" 9
  assert_equal "$(grep -vc '^#' "$f")" 18
  grep -qx 'rlock_held{key="deploy:prod"} 1' "$f" || fail "$(cat "$f")"
  grep -qx 'rlock_holders{key="test-db"} 2' "$f" || fail "$(cat "$f")"
  assert_equal "$(tail -n 1 "$f" | cut -d, -f1)" 'rlock_holder_info{key="test-db"'
}

hold_metrics_locks() {
  "$RLOCK" acquire --ttl 60s deploy:prod >/dev/null
  "$RLOCK" acquire --ttl 60s --limit 4 test-db >/dev/null
  "$RLOCK" acquire --ttl 60s --limit 4 test-db >/dev/null
  mkdir -p "$T/textfile"
}

@test "Prometheus: the cron line as cron runs it replaces the textfile whole, and leaves no temporary file" {
  hold_metrics_locks
  recipe_block prometheus.md rlock-metrics.cron >"$T/crontab"
  local dir=/var/lib/node_exporter/textfile_collector line
  vars=()
  while IFS= read -r line; do
    [[ $line =~ ^RLOCK_URL= ]] && line="RLOCK_URL=$RLOCK_URL"
    vars+=("$line")
  done < <(grep -E '^[A-Z_]+=' "$T/crontab")
  cmd=$(grep -E '^[0-9*]' "$T/crontab" |
    awk '{for (i = 7; i <= NF; i++) printf "%s%s", $i, (i < NF ? " " : "")}')
  [[ $cmd == "cd $dir && "* ]] || fail "the recipe should write in the collector's directory: $cmd"
  [[ $cmd == *" /usr/local/bin/rlock list --prometheus >rlock.prom.\$\$ && mv "* ]] ||
    fail "the recipe should write a temporary file, then rename it: $cmd"
  cmd=${cmd//$dir/$T/textfile}
  cmd=${cmd/\/usr\/local\/bin\/rlock/$RLOCK}
  cron_job metrics
  bg_wait "$BG_PID"
  assert_equal "$BG_STATUS" 0
  assert_equal "$(cat "$T/metrics.err")" ""
  assert_equal "$(metrics_files)" rlock.prom
  assert_metrics_complete "$T/textfile/rlock.prom"
  # The next run renames a new file over it: a reader that has the old one open reads
  # the whole old file, never a mix.
  inode=$(stat -c %i "$T/textfile/rlock.prom")
  exec 7<"$T/textfile/rlock.prom"
  cron_job again
  bg_wait "$BG_PID"
  assert_equal "$BG_STATUS" 0
  assert [ "$(stat -c %i "$T/textfile/rlock.prom")" != "$inode" ]
  assert_metrics_complete /dev/fd/7
  exec 7<&-
  # Two runs that overlap write two files of their own; both are renamed.
  cron_job a
  a=$BG_PID
  cron_job b
  bg_wait "$a"
  assert_equal "$BG_STATUS" 0
  bg_wait "$BG_PID"
  assert_equal "$BG_STATUS" 0
  assert_equal "$(metrics_files)" rlock.prom
  assert_metrics_complete "$T/textfile/rlock.prom"
  # Redis unreachable: rlock's error for cron to mail, the old file untouched, no
  # temporary file left.
  cp "$T/textfile/rlock.prom" "$T/before"
  vars=("${vars[@]/#RLOCK_URL=*/RLOCK_URL=redis://127.0.0.1:1/0}")
  cron_job down
  bg_wait "$BG_PID"
  grep -q '^rlock: ' "$T/down.err" || fail "no error for cron to mail: $(cat "$T/down.err")"
  assert_equal "$(metrics_files)" rlock.prom
  cmp "$T/before" "$T/textfile/rlock.prom"
}

@test "Prometheus: systemd-analyze verify accepts the service and the timer; ExecStart, then ExecStopPost, replace the file and leave no temporary one" {
  command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed"
  hold_metrics_locks
  recipe_block prometheus.md rlock-metrics.service >"$T/rlock-metrics.service"
  recipe_block prometheus.md rlock-metrics.timer >"$T/rlock-metrics.timer"
  run systemd-analyze verify "$T/rlock-metrics.service" "$T/rlock-metrics.timer"
  assert_success
  assert_output "" # not even a warning
  grep -qx 'Type=oneshot' "$T/rlock-metrics.service" || fail "a oneshot never overlaps itself"
  grep -qx 'WorkingDirectory=/var/lib/node_exporter/textfile_collector' \
    "$T/rlock-metrics.service" || fail "no WorkingDirectory"
  # The service's commands as systemd runs them: ExecStart, then ExecStopPost (also after
  # a failure), in WorkingDirectory (this test's), with the unit's environment.
  local start stop
  start=$(sed -n 's/^ExecStart=//p' "$T/rlock-metrics.service")
  stop=$(sed -n 's/^ExecStopPost=//p' "$T/rlock-metrics.service")
  [[ $start == *"/usr/bin/rlock list --prometheus >rlock.prom.tmp && "*" mv rlock.prom.tmp rlock.prom"* ]] ||
    fail "ExecStart should write a temporary file, then rename it: $start"
  start=${start/\/usr\/bin\/rlock/$RLOCK}
  service() {
    (
      cd "$T/textfile" || exit 1
      eval "set -- $start"
      env -i PATH=/usr/bin:/bin RLOCK_URL="$1" "${@:2}"
      rc=$?
      eval "set -- $stop"
      env -i PATH=/usr/bin:/bin "$@"
      exit $rc
    )
  }
  start="'$RLOCK_URL' $start"
  run service
  assert_success
  assert_equal "$(metrics_files)" rlock.prom
  assert_metrics_complete "$T/textfile/rlock.prom"
  # Redis unreachable: the unit fails (the journal has rlock's message), the file stays
  # as it was, and ExecStopPost removes the temporary one.
  cp "$T/textfile/rlock.prom" "$T/before"
  start="'redis://127.0.0.1:1/0' ${start#* }"
  run service
  assert_failure 69
  assert_output --partial "rlock: "
  assert_equal "$(metrics_files)" rlock.prom
  cmp "$T/before" "$T/textfile/rlock.prom"
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

# --- latest wins with cancellation, and named pools, in the three CI recipes ----------------

# A deploy that logs "FENCE started", and on SIGTERM "FENCE stopped" before it exits.
write_trapping_deploy() {
  printf '#!/bin/sh\ntrap '\''echo "$RLOCK_FENCE stopped" >>"%s/log"; exit 0'\'' TERM\necho "$RLOCK_FENCE started" >>"%s/log"\ntouch "%s/deploy.started"\nwhile :; do sleep 0.1; done\n' \
    "$T" "$T" "$T" >"$1/deploy.sh"
  chmod +x "$1/deploy.sh"
}

# A stand-in integration.sh: it logs the name it was given (its second argument) and runs
# until $T/go exists.
write_integration() {
  printf '#!/bin/sh\necho "$2" >>"%s/names"\nwhile [ ! -e "%s/go" ]; do sleep 0.05; done\n' \
    "$T" "$T" >"$1/integration.sh"
  chmod +x "$1/integration.sh"
}

# latest_wins SHELL...: the step ($T/step.sh) as the CI's SHELL runs it: a deploy in
# progress is stopped by a newer one, which then deploys; nothing of the older is left.
latest_wins() {
  mkdir -p "$T/ws"
  write_trapping_deploy "$T/ws"
  # The last call's newer deploy left its file: without this, the next newer job could
  # start before the older one holds the lock, and take the older one's place.
  rm -f "$T/deploy.started"
  run_step old "$@" "$T/step.sh"
  old=$STEP_PID
  wait_for_file "$T/deploy.started" 20
  rm -f "$T/deploy.started"
  run_step new "$@" "$T/step.sh"
  new=$STEP_PID
  bg_wait "$old" 20
  assert_equal "$BG_STATUS" 75
  grep -qF "(--cancel-in-progress): stopping the command" "$T/old.err" || fail "$(cat "$T/old.err")"
  wait_for_file "$T/deploy.started" 20
  # the older deploy stopped before the newer one started, under a newer fence
  assert_equal "$(cut -d' ' -f2 "$T/log" | tr '\n' ' ')" "started stopped started "
  read -ra fences <<<"$(cut -d" " -f1 "$T/log" | tr "\n" " ")"
  ((fences[0] == fences[1] && fences[2] > fences[1]))
  run -0 "$RLOCK" history deploy:prod
  assert_output --partial "asked to stop by"
  kill -TERM "$new"
  bg_wait "$new" 10
  run -1 "$RLOCK" status deploy:prod
  rm -f "$T/log"
}

# three_on_a_pool SHELL...: three jobs of the step ($T/step.sh) at once get the pool's three
# names, one each; NAMES: the names expected, sorted, separated by spaces.
three_on_a_pool() {
  local names=$1 i
  shift
  mkdir -p "$T/ws"
  write_integration "$T/ws"
  for i in 1 2 3; do
    run_step "t$i" "$@" "$T/step.sh"
    pids[i]=$STEP_PID
  done
  wait_until '[[ $(wc -l <"$T/names" 2>/dev/null || echo 0) -eq 3 ]]' 30
  assert_equal "$(sort "$T/names" | tr '\n' ' ')" "$names "
  touch "$T/go"
  for i in 1 2 3; do
    bg_wait "${pids[i]}" 20
    assert_equal "$BG_STATUS" 0
  done
}

@test "GitHub Actions and GitLab CI: latest wins, cancelling the deploy in progress; a named pool" {
  recipe_block github-actions.md deploy-latest.yml >"$T/gha.yml"
  yaml_json "$T/gha.yml" | jq -r '.jobs.deploy.steps[] | select(.run) | .run' >"$T/step.sh"
  grep -q '^exec rlock run deploy:prod .*--cancel-in-progress' "$T/step.sh" || fail "$(cat "$T/step.sh")"
  latest_wins "${GHA_BASH[@]}"
  recipe_block github-actions.md test-pool.yml >"$T/gha.yml"
  yaml_json "$T/gha.yml" | jq -r '.jobs.test.steps[] | select(.run) | .run' >"$T/step.sh"
  three_on_a_pool "db-a db-b db-c" "${GHA_BASH[@]}"

  recipe_block gitlab-ci.md .gitlab-ci-latest.yml >"$T/gl.yml"
  { echo 'set -eo pipefail'; yaml_json "$T/gl.yml" | jq -r '.deploy.script[]'; } >"$T/step.sh"
  latest_wins bash
  recipe_block gitlab-ci.md .gitlab-ci-pool.yml >"$T/gl.yml"
  rm -f "$T/names" "$T/go"
  { echo 'set -eo pipefail'; yaml_json "$T/gl.yml" | jq -r '.integration.script[]'; } >"$T/step.sh"
  three_on_a_pool "env-a env-b env-c" bash
}

# jenkins_sh KEY: the Jenkinsfile's `sh '...'` step that runs KEY, as its shell script.
jenkins_sh() {
  recipe_block jenkins.md Jenkinsfile |
    sed -n "s/^ *sh '\\(exec rlock run $1 .*\\)'\$/\\1/p" | sed "s/\\\\'/'/g" >"$T/step.sh"
  [[ -s $T/step.sh ]] || fail "no sh step runs rlock run $1"
}

@test "Jenkins: the deploy in progress is stopped by a newer build, which then deploys; three builds on three databases" {
  # Jenkins runs an `sh` step as `sh -xe SCRIPT`, with JENKINS_URL and BUILD_URL set.
  export JENKINS_URL=https://jenkins.example.com/ BUILD_URL=https://jenkins.example.com/job/shop/job/main/41/
  jenkins_sh deploy:prod
  latest_wins sh -xe
  jenkins_sh test-db
  three_on_a_pool "db-a db-b db-c" sh -xe
}
