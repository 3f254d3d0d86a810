#!/usr/bin/env bash
# The one test command. Builds and runs every test (GoogleTest units and the bats
# suites against private redis-servers), then most of them again under the sanitizers,
# then fuzzes the parsers once:
#   1. build/       RelWithDebInfo (both trees are unity builds: see unity= below)
#   2. build-asan/  -DRLOCK_SANITIZE=ON (AddressSanitizer + UndefinedBehaviorSanitizer):
#                   the unit tests and the suites labelled fast, medium or faults; built
#                   at nice 19 while the first pass's tests run (they mostly wait)
#   3. build-fuzz/  scripts/fuzz.sh: each libFuzzer target of tests/fuzz for a bounded time
# and, once, on the plain build: the soak's short form (tests/soak/soak.sh --short, then
# in quorum mode with --masters 3, in Sentinel mode with --sentinel and in Cluster mode
# with --cluster), a
# smoke run of the benchmark (bench/run.sh --smoke: it works; nothing is timed or asserted
# about speed) and the packaging tests (tests/packaging: the standalone .deb, the Debian
# source package built with dpkg-buildpackage, the RPM, the recipes;
# the recipe checks of docs/recipes run in the bats suites).
# Environment:
#   RLOCK_SKIP_SANITIZERS=1   skip the second pass
#   RLOCK_ASAN_ALL=1          the second pass runs every test, not only the unit tests and
#                             the suites labelled fast, medium or faults (not slow, not
#                             plainonly)
#   RLOCK_SKIP_FUZZ=1         skip the fuzzing step
#   RLOCK_SKIP_SOAK=1         skip the soak's short form
#   RLOCK_SKIP_BENCH=1        skip the benchmark smoke run
#   RLOCK_SKIP_PACKAGING=1    skip the packaging tests
#   RLOCK_FUZZ_SECONDS=N      seconds per fuzz target (default 20)
#   RLOCK_JOBS=N              build parallelism (default 2)
#   RLOCK_CTEST_JOBS=N        how many tests ctest runs at once (default twice RLOCK_JOBS: the
#                             suites mostly wait on servers, leases and failovers, and every
#                             suite has servers and ports of its own)
#   RLOCK_TEST_LOAD=N         load the machine while testing: N busy loops per core (nice 0,
#                             started before the first build, ended at exit), to prove the
#                             suite holds on a busy CI runner (docs/RELIABILITY.md)
#   RLOCK_SUITE_TIMEOUT=S     ctest's limit for a test that sets none (the unit tests; default
#                             300). Each bats suite has its own: tests/CMakeLists.txt
# Every process this run starts carries RLOCK_TEST_RUN=<id> in its environment; at the end
# any that is still running (a redis-server a killed suite left, a helper) is named, killed
# and counted as one failure.
# The last line is "N passed, N failed" over the passes (each fuzz target counts as one
# test; a failed build counts as one failure); the exit status is non-zero if anything
# failed. Needs no stdin or terminal.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
exec </dev/null

jobs=${RLOCK_JOBS:-2}
ctest_jobs=${RLOCK_CTEST_JOBS:-$((jobs * 2))}
suite_timeout=${RLOCK_SUITE_TIMEOUT:-300}
total_passed=0
total_failed=0

# The mark of this run: inherited by everything it starts, so that leftovers can be found
# in /proc/PID/environ at the end, whoever their parent is by then.
RLOCK_TEST_RUN="$$-${EPOCHSECONDS:-$(date +%s)}-$RANDOM"
export RLOCK_TEST_RUN
# and a TMPDIR of its own: bats puts each suite's directory in it, and the helpers start
# every redis-server with its --dir there (redis-server writes its title over its
# environment, so it is known by its working directory instead of the mark).
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlt.XXXXXX") || exit 1
export TMPDIR=$run_tmp

# --- load (RLOCK_TEST_LOAD=N): N busy loops per core, for the whole run ---------------------
load_pids=()
start_load() {
  local per_core=${RLOCK_TEST_LOAD:-0} cores i
  [[ $per_core =~ ^[0-9]+$ ]] || {
    echo "test.sh: RLOCK_TEST_LOAD must be a number of busy loops per core, not '$per_core'" >&2
    exit 64
  }
  ((per_core > 0)) || return 0
  cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
  for ((i = 0; i < per_core * cores; i++)); do
    # a busy loop with no output that ends by itself after 3 hours at the latest
    timeout 10800 bash -c 'while :; do :; done' </dev/null >/dev/null 2>&1 &
    load_pids+=($!)
  done
  echo "==> load: ${#load_pids[@]} busy loops ($per_core per core on $cores cores) until the end"
}
stop_load() {
  ((${#load_pids[@]})) || return 0
  kill "${load_pids[@]}" 2>/dev/null
  wait "${load_pids[@]}" 2>/dev/null
  load_pids=()
}
trap stop_load EXIT
trap 'stop_load; exit 130' INT
trap 'stop_load; exit 143' TERM
start_load

# --- per-suite times: ctest's "Test #N: NAME ....   Passed   12.34 sec" lines, slowest first
print_times() {
  local log=$1 label=$2
  echo "==> [$label] time per test, slowest first (limits: tests/CMakeLists.txt):"
  sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) \.+[^0-9]*([0-9.]+) sec$/\2 \1/p' "$log" |
    sort -rn | awk '$1 >= 1 { printf "      %7.1f s  %s\n", $1, $2 }'
}

# cpu_ticks: "BUSY IDLE" clock ticks of the whole machine so far (Linux /proc/stat; nothing
# elsewhere). print_busy LABEL BEFORE AFTER says how busy the cores were in between: a pass
# whose cores idle can run more tests at once (RLOCK_CTEST_JOBS), a busy one cannot.
cpu_ticks() {
  local user nice sys idle iowait irq softirq steal
  [[ -r /proc/stat ]] || return 0
  read -r _ user nice sys idle iowait irq softirq steal _ </proc/stat || return 0
  echo "$((user + nice + sys + irq + softirq + steal)) $((idle + iowait))"
}
print_busy() {
  local b0 i0 b1 i1
  read -r b0 i0 <<<"$2"
  read -r b1 i1 <<<"$3"
  [[ -n ${b0:-} && -n ${b1:-} ]] && ((b1 + i1 > b0 + i0)) || return 0
  echo "==> [$1] the cores were $(((b1 - b0) * 100 / (b1 + i1 - b0 - i0)))% busy"
}

# build_tree LABEL BUILD_DIR [CMAKE ARGS...]: configure and build; non-zero if either failed.
build_tree() {
  local label=$1 dir=$2
  shift 2
  echo "==> [$label] configure and build in $dir/"
  cmake -S . -B "$dir" "$@" && cmake --build "$dir" -j "$jobs"
}

# run_ctest LABEL BUILD_DIR: ctest in a built tree; adds to the totals. ctest_select (an
# array, empty: every test) narrows what it runs (-L/-LE).
ctest_select=()
run_ctest() {
  local label=$1 dir=$2 rc summary passed failed total before
  echo "==> [$label] ctest -j $ctest_jobs"
  before=$(cpu_ticks)
  ctest --test-dir "$dir" --output-on-failure -j "$ctest_jobs" --timeout "$suite_timeout" \
    "${ctest_select[@]}" 2>&1 |
    tee "$dir/ctest.log"
  rc=${PIPESTATUS[0]}
  print_times "$dir/ctest.log" "$label"
  print_busy "$label ctest" "$before" "$(cpu_ticks)"
  summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$dir/ctest.log" | tail -n 1)
  if [[ $summary =~ ([0-9]+)\ tests?\ failed\ out\ of\ ([0-9]+) ]]; then
    failed=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]}
    passed=$((total - failed))
  elif grep -q 'No tests were found' "$dir/ctest.log"; then
    passed=0 failed=0
  else
    passed=0 failed=1 # ctest itself failed before it could summarise
  fi
  if ((rc != 0 && failed == 0)); then failed=1; fi
  echo "==> [$label] $passed passed, $failed failed"
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
}

# timed LABEL COMMAND...: runs it and says how long it took and how long the run has taken,
# so that a CI log shows which phase grew (the run must stay well under CI's limit).
timed() {
  local label=$1 start=$SECONDS rc before
  shift
  before=$(cpu_ticks)
  "$@"
  rc=$?
  echo "==> [$label] took $((SECONDS - start)) s ($((SECONDS / 60)) min since the run began)"
  print_busy "$label" "$before" "$(cpu_ticks)"
  return "$rc"
}

# Both trees are unity builds (CMake's UNITY_BUILD: the sources compiled eight to a unit),
# which halves the compilers' work, most of a loaded runner's time in this script
# (docs/RELIABILITY.md, "How long CI takes"); the packages and a developer's build/ compile
# each source on its own, so both ways must build (HACKING.md, "Unity builds").
unity=(-DCMAKE_UNITY_BUILD=ON)
asan_args=(-DCMAKE_BUILD_TYPE=Debug -DRLOCK_SANITIZE=ON "${unity[@]}")
asan_build_pid=

# The plain pass. Its suites mostly wait (on servers, leases, failovers), so the sanitizer
# tree is built meanwhile, in the background at the lowest priority (nice 19: it gets the
# cores only while the tests leave them idle), into build-asan/build.log.
plain_pass() {
  if ! build_tree plain build -DCMAKE_BUILD_TYPE=RelWithDebInfo "${unity[@]}"; then
    echo "==> [plain] build FAILED"
    total_failed=$((total_failed + 1))
    return 1
  fi
  if [[ ${RLOCK_SKIP_SANITIZERS:-0} != 1 ]]; then
    mkdir -p build-asan
    (renice -n 19 -p "$BASHPID" >/dev/null; build_tree asan build-asan "${asan_args[@]}") \
      >build-asan/build.log 2>&1 &
    asan_build_pid=$!
    echo "==> [asan] building in the background (nice 19): build-asan/build.log"
  fi
  run_ctest plain build
}
timed plain plain_pass

# run_soak: the soak's short form (tests/soak/soak.sh --short: a few hundred contended
# acquisitions under injected faults, then the history checker), once, on the plain build;
# then its quorum form (--short --masters 3: three masters, a Redlock lock, faults on one
# master at a time), its Sentinel form (--short --sentinel: a master, two replicas, three
# sentinels; planned and kill -9 failovers) and its Cluster form (--short --cluster: three
# masters with a replica each; CLUSTER FAILOVER, kill -9, the lock's slot migrated), about
# 100 s each. Each invocation counts as one test: PASS passed, anything else failed.
run_soak_one() {
  local label=$1 log=$2 rc
  shift 2
  echo "==> [$label] tests/soak/soak.sh $*"
  timeout 600 tests/soak/soak.sh "$@" --quiet --rlock build/rlock 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  if ((rc == 0)); then
    echo "==> [$label] 1 passed, 0 failed"
    total_passed=$((total_passed + 1))
  else
    echo "==> [$label] 0 passed, 1 failed (exit $rc; the history is kept, see above)"
    total_failed=$((total_failed + 1))
  fi
}

run_soak() {
  # the checker's own cases first: a checker that never fails proves nothing
  echo "==> [soak] tests/soak/check_test.sh"
  if bash tests/soak/check_test.sh >build/soak-check-test.log 2>&1; then
    tail -n 1 build/soak-check-test.log
    total_passed=$((total_passed + 1))
  else
    grep -v '^ok ' build/soak-check-test.log
    echo "==> [soak] check_test.sh FAILED"
    total_failed=$((total_failed + 1))
  fi
  if [[ ! -x build/rlock ]]; then
    echo "==> [soak] no build/rlock: FAILED (all four soak runs)"
    total_failed=$((total_failed + 4))
    return
  fi
  run_soak_one soak build/soak.log --short
  run_soak_one soak-quorum build/soak-quorum.log --short --masters 3
  run_soak_one soak-sentinel build/soak-sentinel.log --short --sentinel
  run_soak_one soak-cluster build/soak-cluster.log --short --cluster
}

if [[ ${RLOCK_SKIP_SOAK:-0} == 1 ]]; then
  echo "==> [soak] skipped (RLOCK_SKIP_SOAK=1)"
else
  timed soak run_soak
fi

# run_bench_smoke: bench/run.sh --smoke once, on the plain build. It passes when it exits 0
# and printed all six parts and its closing line.
run_bench_smoke() {
  local rc
  echo "==> [bench] bench/run.sh --smoke"
  timeout 300 env RLOCK=build/rlock bash bench/run.sh --smoke 2>&1 | tee build/bench-smoke.log
  rc=${PIPESTATUS[0]}
  if ((rc == 0)) && [[ $(grep -c '^== [1-6]\. ' build/bench-smoke.log) == 6 ]] &&
    grep -q '^bench: smoke run complete' build/bench-smoke.log; then
    echo "==> [bench] 1 passed, 0 failed"
    total_passed=$((total_passed + 1))
  else
    echo "==> [bench] 0 passed, 1 failed (exit $rc)"
    total_failed=$((total_failed + 1))
  fi
}

if [[ ${RLOCK_SKIP_BENCH:-0} == 1 ]]; then
  echo "==> [bench] skipped (RLOCK_SKIP_BENCH=1)"
else
  timed bench run_bench_smoke
fi

# run_packaging: tests/packaging/packaging.bats once, on the plain build: the standalone .deb
# (lintian, installed and removed again), the Debian source package and its .deb (a build
# of their own, DEB_BUILD_OPTIONS=nocheck), the RPM, the recipes. Its bats lines count.
run_packaging() {
  local rc passed failed
  echo "==> [packaging] tests/packaging/packaging.bats"
  RLOCK_PACKAGE_BUILD=build timeout 1500 bats --tap tests/packaging/packaging.bats 2>&1 |
    tee build/packaging.log
  rc=${PIPESTATUS[0]}
  passed=$(grep -c '^ok ' build/packaging.log)
  failed=$(grep -c '^not ok ' build/packaging.log)
  if ((rc != 0 && failed == 0)); then failed=1; fi
  echo "==> [packaging] $passed passed, $failed failed"
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
}

if [[ ${RLOCK_SKIP_PACKAGING:-0} == 1 ]]; then
  echo "==> [packaging] skipped (RLOCK_SKIP_PACKAGING=1)"
else
  timed packaging run_packaging
fi

# renice_tree PID: PID and every process below it back to nice 0 (where allowed: as root,
# as CI runs), the compilers it has started and those it will start.
renice_tree() {
  local pid=$1 child
  renice --priority 0 -p "$pid" >/dev/null 2>&1
  for child in $(pgrep -P "$pid" 2>/dev/null); do renice_tree "$child"; done
}

# asan_pass: the sanitizer pass, on the tree plain_pass started building (built here if it
# did not: a failed plain build); its build's log goes into this one. Nothing else runs
# now, so the background build gets its normal priority back (at nice 19 beside anything
# busy, RLOCK_TEST_LOAD's loops or another job, it would hardly move).
asan_pass() {
  local rc=1
  if [[ -n $asan_build_pid ]]; then
    echo "==> [asan] waiting for the background build"
    renice_tree "$asan_build_pid"
    wait "$asan_build_pid"
    rc=$?
    cat build-asan/build.log
  else
    build_tree asan build-asan "${asan_args[@]}"
    rc=$?
  fi
  if ((rc != 0)); then
    echo "==> [asan] build FAILED"
    total_failed=$((total_failed + 1))
    return 1
  fi
  run_ctest asan build-asan
}

if [[ ${RLOCK_SKIP_SANITIZERS:-0} == 1 ]]; then
  echo "==> [asan] skipped (RLOCK_SKIP_SANITIZERS=1)"
else
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # The sanitizer pass runs the unit tests and the suites labelled fast, medium or faults,
  # not the slow ones nor those that only set up a topology (Sentinel, Cluster, quorum,
  # DNS; TLS is fast and runs): those are mostly waiting on servers and failovers, and the
  # whole suite under the sanitizers takes longer than CI allows (HACKING.md,
  # "Sanitizers"). Nor those labelled plainonly: the completions' and the documents'
  # checks, whose rlock calls the other suites make too. RLOCK_ASAN_ALL=1 runs every test.
  if [[ ${RLOCK_ASAN_ALL:-0} == 1 ]]; then
    ctest_select=()
  else
    ctest_select=(-L '^(unit|fast|medium|faults)$' -LE '^(slow|plainonly)$')
  fi
  timed asan asan_pass
  ctest_select=()
fi

# run_fuzz: scripts/fuzz.sh once per run, not per pass (it builds its own clang tree); its
# last line, "N passed, N failed", adds to the totals.
run_fuzz() {
  local rc summary passed failed
  mkdir -p build-fuzz
  bash scripts/fuzz.sh "${RLOCK_FUZZ_SECONDS:-20}" 2>&1 | tee build-fuzz/fuzz.log
  rc=${PIPESTATUS[0]}
  summary=$(tail -n 1 build-fuzz/fuzz.log)
  if [[ $summary =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    passed=${BASH_REMATCH[1]} failed=${BASH_REMATCH[2]}
  else
    passed=0 failed=1 # fuzz.sh died before it could summarise
  fi
  if ((rc != 0 && failed == 0)); then failed=1; fi
  echo "==> [fuzz] $passed passed, $failed failed"
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
}

if [[ ${RLOCK_SKIP_FUZZ:-0} == 1 ]]; then
  echo "==> [fuzz] skipped (RLOCK_SKIP_FUZZ=1)"
else
  timed fuzz run_fuzz
fi

# check_leftovers: every live process with this run's mark, other than this script and the
# processes it is waiting in (its own command substitutions), is a leftover: named, killed,
# one failure.
check_leftovers() {
  local f pid self=$$ line
  local -a left=()
  stop_load
  for f in /proc/[0-9]*/environ; do
    pid=${f#/proc/}
    pid=${pid%/environ}
    ((pid == self || pid == BASHPID)) && continue
    grep -qsxzF -- "RLOCK_TEST_RUN=$RLOCK_TEST_RUN" "$f" ||
      [[ $(readlink "/proc/$pid/cwd" 2>/dev/null) == "$run_tmp"/* ]] || continue
    # not our own children of the moment (the pipeline running this check)
    [[ $(ps -o ppid= -p "$pid" 2>/dev/null | tr -d ' ') == "$self" ]] && continue
    left+=("$pid")
  done
  if ((${#left[@]} == 0)); then
    echo "==> [leftovers] no process started by this run is still running: 1 passed, 0 failed"
    total_passed=$((total_passed + 1))
    return 0
  fi
  echo "==> [leftovers] still running after the tests, killed now:"
  for pid in "${left[@]}"; do
    line=$(ps -o pid=,ppid=,etime=,args= -p "$pid" 2>/dev/null) && echo "      $line"
  done
  kill -KILL "${left[@]}" 2>/dev/null
  echo "==> [leftovers] 0 passed, 1 failed"
  total_failed=$((total_failed + 1))
}
check_leftovers
rm -rf "$run_tmp"

echo "$total_passed passed, $total_failed failed"
((total_failed == 0))
