#!/usr/bin/env bats
# ctest-labels: fast
# Mutual exclusion under contention: 8 contenders run 20 critical sections each through
# `rlock run`. The critical section detects overlap with an atomic mkdir and does a
# read-modify-write of a counter file; the fences it sees must strictly increase.

load helpers/redis

bats_require_minimum_version 1.5.0

setup_file() { redis_start; }

setup() {
  T=$BATS_TEST_TMPDIR
}

@test "8 contenders x 20 runs: never two inside, the counter ends at 160, fences increase" {
  contenders=8 runs=20
  dir=$T/m
  mkdir -p "$dir"
  echo 0 >"$dir/counter"
  : >"$dir/fences"
  : >"$dir/errors"
  # the critical section
  cat >"$dir/cs.sh" <<'EOF'
dir=$1
if ! mkdir "$dir/inside" 2>/dev/null; then
  echo "OVERLAP fence $RLOCK_FENCE" >> "$dir/errors"
fi
echo "$RLOCK_FENCE" >> "$dir/fences"
n=$(cat "$dir/counter")
n=$((n + 1))
echo "$n" > "$dir/counter"
rmdir "$dir/inside" 2>/dev/null || echo "OVERLAP gone fence $RLOCK_FENCE" >> "$dir/errors"
EOF
  # one contender: RUNS runs in a row; every status but 0 is an error
  cat >"$dir/contender.sh" <<'EOF'
rlock=$1 dir=$2 runs=$3 i=0
while [ "$i" -lt "$runs" ]; do
  "$rlock" run --ttl 5s mutex -- sh "$dir/cs.sh" "$dir" || echo "FAILED status $?" >> "$dir/errors"
  i=$((i + 1))
done
EOF
  for ((c = 0; c < contenders; c++)); do
    # a bound for a hang, not a speed: 160 handoffs take ~10s idle, ~60s under ASan and load
    bg_start "c$c" timeout "$(slack 150)" sh "$dir/contender.sh" "$RLOCK" "$dir" "$runs"
  done
  for pid in "${BG_PIDS[@]}"; do
    rc=0
    wait "$pid" || rc=$?
    ((rc == 0)) || echo "contender exited $rc" >>"$dir/errors"
  done

  assert_equal "$(cat "$dir/errors")" ""
  assert_equal "$(cat "$dir/counter")" $((contenders * runs))
  mapfile -t fences <"$dir/fences"
  assert_equal "${#fences[@]}" $((contenders * runs))
  prev=0
  for f in "${fences[@]}"; do
    [[ $f =~ ^[0-9]+$ ]] || fail "not a fence: '$f'"
    ((f > prev)) || fail "fence $f after $prev in append order"
    prev=$f
  done
  assert_equal "$(sort -u "$dir/fences" | wc -l)" $((contenders * runs))
  run -1 "$RLOCK" status mutex
}
