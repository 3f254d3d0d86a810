#!/usr/bin/env bash
# The one test command. Builds and runs every test (GoogleTest units and the bats
# suites against private redis-servers) twice:
#   1. build/       RelWithDebInfo
#   2. build-asan/  -DRLOCK_SANITIZE=ON (AddressSanitizer + UndefinedBehaviorSanitizer)
# Environment:
#   RLOCK_SKIP_SANITIZERS=1   run the first pass only
#   RLOCK_JOBS=N              build and ctest parallelism (default 2)
# The last line is "N passed, N failed" over both passes (a failed build counts as one
# failure); the exit status is non-zero if anything failed. Needs no stdin or terminal.
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

if [[ ${RLOCK_SKIP_SANITIZERS:-0} == 1 ]]; then
  echo "==> [asan] skipped (RLOCK_SKIP_SANITIZERS=1)"
else
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  run_pass asan build-asan -DCMAKE_BUILD_TYPE=Debug -DRLOCK_SANITIZE=ON
fi

echo "$total_passed passed, $total_failed failed"
((total_failed == 0))
