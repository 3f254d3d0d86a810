#!/usr/bin/env bash
# Fuzzes rlock's parsers (tests/fuzz) with libFuzzer, each for a bounded time.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]    default 20
#
# Builds build-fuzz/ with clang (-DRLOCK_FUZZ=ON: ASan + UBSan + coverage), then runs every
# target on a scratch copy of its seed corpus (tests/fuzz/corpus/<target>/ is never written),
# with its dictionary, a per-input timeout and memory limits, so a crash, a sanitizer report,
# an exception other than rlock::Error, a broken invariant, a hang or an unbounded
# allocation fails the target. Per target, build-fuzz/fuzz/<target>/ keeps log.txt, the
# grown corpus and any crash input; replay one with build-fuzz/tests/fuzz/fuzz_<target> FILE.
#
# Environment:
#   RLOCK_FUZZ_TARGETS="url reply"   run only these (default: every tests/fuzz/corpus/<target>)
#   RLOCK_FUZZ_CXX=clang++-15        the compiler (default clang++-14, else clang++)
#   RLOCK_JOBS=N                     build parallelism, and how many targets run at once
#                                    (default 2)
# One line per target, then "N passed, N failed" (a failed build counts as one failure);
# the exit status is non-zero if anything failed. Needs no stdin or terminal.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
exec </dev/null

seconds=${1:-20}
if ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET]" >&2
  exit 64
fi
# Every target has a seed corpus: tests/fuzz/corpus/<target>/ names them all.
default_targets=$(cd tests/fuzz/corpus && printf '%s ' */ | tr -d /)
read -r -a targets <<<"${RLOCK_FUZZ_TARGETS:-$default_targets}"
jobs=${RLOCK_JOBS:-2}
dir=build-fuzz
memory_mb=512

cxx=${RLOCK_FUZZ_CXX:-}
if [[ -z $cxx ]]; then
  cxx=$(command -v clang++-14 || command -v clang++ || true)
fi
if [[ -z $cxx ]] || ! command -v "$cxx" >/dev/null; then
  echo "==> [fuzz] no clang++: run scripts/setup.sh --deps-only (or set RLOCK_FUZZ_CXX)"
  echo "0 passed, 1 failed"
  exit 1
fi

build_targets=()
for t in "${targets[@]}"; do build_targets+=("fuzz_$t"); done
echo "==> [fuzz] configure and build in $dir/ with $cxx"
start=$SECONDS
mkdir -p "$dir"
if ! cmake -S . -B "$dir" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DRLOCK_FUZZ=ON -DRLOCK_BUILD_TESTS=OFF >"$dir/configure.log" 2>&1; then
  cat "$dir/configure.log"
  echo "==> [fuzz] configure FAILED"
  echo "0 passed, 1 failed"
  exit 1
fi
if ! cmake --build "$dir" -j "$jobs" --target "${build_targets[@]}"; then
  echo "==> [fuzz] build FAILED (libFuzzer comes with libclang-rt-14-dev: scripts/setup.sh --deps-only)"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "==> [fuzz] built in $((SECONDS - start))s"

# Readable stacks: the sanitizers look for llvm-symbolizer on PATH, Debian's llvm-14 has it
# beside clang.
if ! command -v llvm-symbolizer >/dev/null; then
  symbolizer=$("$cxx" -print-prog-name=llvm-symbolizer)
  [[ -x $symbolizer ]] && export ASAN_SYMBOLIZER_PATH=$symbolizer
fi
export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# run_target NAME: fuzzes one target; prints its summary line, returns non-zero on a finding.
run_target() {
  local t=$1 bin=$dir/tests/fuzz/fuzz_$1 work=$dir/fuzz/$1 rc runs finding
  local -a args=()
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/crashes"
  cp -R "tests/fuzz/corpus/$t/." "$work/corpus/"
  [[ -f tests/fuzz/dict/$t.dict ]] && args+=("-dict=tests/fuzz/dict/$t.dict")
  # -timeout: one input running longer is a hang; the outer timeout only guards a stuck run.
  timeout -k 10 $((seconds + 60)) "$bin" "${args[@]}" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=$memory_mb -malloc_limit_mb=$memory_mb -print_final_stats=1 \
    -artifact_prefix="$work/crashes/" "$work/corpus" >"$work/log.txt" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log.txt" | tail -n 1)
  if ((rc == 0)); then
    echo "==> [fuzz] $t: passed, ${runs:-?} inputs in ${seconds}s, corpus $(find "$work/corpus" -type f | wc -l)"
    return 0
  fi
  finding=$(grep -m 1 -E 'FUZZ_CHECK failed|runtime error:|terminate called|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)' \
    "$work/log.txt" | sed "s|$PWD/||g")
  echo "==> [fuzz] $t: FAILED (exit $rc): ${finding:-see $work/log.txt}"
  # The report itself, so CI shows it: from the first error line, at most 60 lines.
  sed -n '/FUZZ_CHECK failed\|terminate called\|==ERROR\|runtime error\|ERROR: libFuzzer/,$p' \
    "$work/log.txt" | head -n 60 | sed 's/^/    /'
  find "$work/crashes" -type f | sed 's/^/    input: /'
  return 1
}

# The targets run RLOCK_JOBS at a time (each is one process on one core), each into a
# result file of its own: its lines, then its exit status and seconds on the last line.
mkdir -p "$dir/fuzz"
run_one() {
  local t=$1 start=$SECONDS rc
  run_target "$t" >"$dir/fuzz/$t.result"
  rc=$?
  echo "$rc $((SECONDS - start))" >>"$dir/fuzz/$t.result"
}
running=0
for t in "${targets[@]}"; do
  if ((running >= jobs)); then
    wait -n
    running=$((running - 1))
  fi
  run_one "$t" &
  running=$((running + 1))
done
wait
passed=0 failed=0 summary=()
for t in "${targets[@]}"; do
  result=$dir/fuzz/$t.result
  read -r rc took < <(tail -n 1 "$result" 2>/dev/null)
  sed '$d' "$result" 2>/dev/null
  summary+=("$(head -n 1 "$result" 2>/dev/null) [${took:-?}s]")
  if [[ ${rc:-1} == 0 ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
printf '%s\n' "${summary[@]}"
echo "$passed passed, $failed failed"
((failed == 0))
