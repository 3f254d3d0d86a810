#!/usr/bin/env bash
# The one test command. Builds and runs every test (GoogleTest units and the bats
# suites against private redis-servers) twice, then fuzzes the parsers once:
#   1. build/       RelWithDebInfo
#   2. build-asan/  -DRLOCK_SANITIZE=ON (AddressSanitizer + UndefinedBehaviorSanitizer)
#   3. build-fuzz/  scripts/fuzz.sh: each libFuzzer target of tests/fuzz for a bounded time
# and, once, on the plain build: the soak's short form (tests/soak/soak.sh --short, then
# in quorum mode with --masters 3), a
# smoke run of the benchmark (bench/run.sh --smoke: it works; nothing is timed or asserted
# about speed) and the packaging tests (tests/packaging: the .deb, the RPM, the recipes;
# the recipe checks of docs/recipes run in the bats suites).
# Environment:
#   RLOCK_SKIP_SANITIZERS=1   skip the second pass
#   RLOCK_SKIP_FUZZ=1         skip the fuzzing step
#   RLOCK_SKIP_SOAK=1         skip the soak's short form
#   RLOCK_SKIP_BENCH=1        skip the benchmark smoke run
#   RLOCK_SKIP_PACKAGING=1    skip the packaging tests
#   RLOCK_FUZZ_SECONDS=N      seconds per fuzz target (default 20)
#   RLOCK_JOBS=N              build and ctest parallelism (default 2)
# The last line is "N passed, N failed" over the passes (each fuzz target counts as one
# test; a failed build counts as one failure); the exit status is non-zero if anything
# failed. Needs no stdin or terminal.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
exec </dev/null

jobs=${RLOCK_JOBS:-2}
total_passed=0
total_failed=0

# run_pass LABEL BUILD_DIR [CMAKE ARGS...]: configure, build, ctest; adds to the totals.
run_pass() {
  local label=$1 dir=$2 rc summary passed failed total
  shift 2
  echo "==> [$label] configure and build in $dir/"
  if ! cmake -S . -B "$dir" "$@" || ! cmake --build "$dir" -j "$jobs"; then
    echo "==> [$label] build FAILED"
    total_failed=$((total_failed + 1))
    return 1
  fi
  echo "==> [$label] ctest"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 300 2>&1 | tee "$dir/ctest.log"
  rc=${PIPESTATUS[0]}
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

run_pass plain build -DCMAKE_BUILD_TYPE=RelWithDebInfo

# run_soak: the soak's short form (tests/soak/soak.sh --short: a few hundred contended
# acquisitions under injected faults, then the history checker), once, on the plain build;
# then its quorum form (--short --masters 3: three masters, a Redlock lock, faults on one
# master at a time). Each invocation counts as one test: PASS passed, anything else failed.
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
  if [[ ! -x build/rlock ]]; then
    echo "==> [soak] no build/rlock: FAILED (both soak runs)"
    total_failed=$((total_failed + 2))
    return
  fi
  run_soak_one soak build/soak.log --short
  run_soak_one soak-quorum build/soak-quorum.log --short --masters 3
}

if [[ ${RLOCK_SKIP_SOAK:-0} == 1 ]]; then
  echo "==> [soak] skipped (RLOCK_SKIP_SOAK=1)"
else
  run_soak
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
  run_bench_smoke
fi

# run_packaging: tests/packaging/packaging.bats once, on the plain build: the .deb
# (lintian, installed and removed again), the RPM, the recipes. Its bats lines count.
run_packaging() {
  local rc passed failed
  echo "==> [packaging] tests/packaging/packaging.bats"
  RLOCK_PACKAGE_BUILD=build timeout 900 bats --tap tests/packaging/packaging.bats 2>&1 |
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
  run_packaging
fi

if [[ ${RLOCK_SKIP_SANITIZERS:-0} == 1 ]]; then
  echo "==> [asan] skipped (RLOCK_SKIP_SANITIZERS=1)"
else
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  run_pass asan build-asan -DCMAKE_BUILD_TYPE=Debug -DRLOCK_SANITIZE=ON
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
  run_fuzz
fi

echo "$total_passed passed, $total_failed failed"
((total_failed == 0))
