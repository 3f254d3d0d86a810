#!/usr/bin/env bash
# Prepares a fresh Debian machine for rlock and shows it working.
#
#   scripts/setup.sh              install packages, build build/rlock, make sure a Redis
#                                 answers on 127.0.0.1:6379, run the contention demo
#   scripts/setup.sh --deps-only  install packages only (what CI needs)
#
# Run as root, or as a user with sudo. The apt step is skipped when every package is
# already installed, so a second run is fast.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(
  build-essential cmake pkg-config
  python3                              # tests/helpers/layers.py (the layer check), protocol_doc.py
  lua5.1                               # luac5.1: tests/prelude.bats lists the scripts' globals
  libhiredis-dev libcli11-dev libfmt-dev libssl-dev libgtest-dev
  redis-server redis-tools redis-sentinel # tests/sentinel.bats: a master, a replica, sentinels
  bats bats-assert bats-support
  openssl tmux faketime jq time groff-base # groff: tests/cli.bats lints the man page
  librsvg2-bin                         # rsvg-convert: tests/timeline.bats renders the SVG
  prometheus                           # promtool: tests/history.bats checks list --prometheus
  zsh fish                             # tests/completion.bats: the zsh and fish completions, for real
  lintian rpm ruby bash-completion file # tests/packaging: the .deb, the RPM, the recipes
  debhelper dpkg-dev                   # tests/packaging: the Debian source package (dpkg-buildpackage)
  systemd                              # docs/recipes: systemd-analyze verify of the units
  clang-14 libclang-rt-14-dev llvm-14 # scripts/fuzz.sh: libFuzzer + sanitizer runtimes, symbolizer
  etcd-server etcd-client              # bench/run.sh: etcdctl lock, a baseline
  nodejs npm                           # tests/layout_interop.bats: the clients of tests/interop
)

# tests/layout_interop.bats runs clients nobody here wrote (node-redisson) and a
# re-implementation of the seeds' NestJS service: npm packages, pinned by this lock file.
interop_dir=tests/interop

usage() {
  echo "usage: scripts/setup.sh [--deps-only]"
}

deps_only=0
case ${1:-} in
  "") ;;
  --deps-only) deps_only=1 ;;
  -h | --help)
    usage
    exit 0
    ;;
  *)
    usage >&2
    exit 64
    ;;
esac

# Prints the names of the installed packages and of those they provide, one a line (a
# machine may have NodeSource's nodejs, which provides npm and conflicts with Debian's).
installed_names() {
  # shellcheck disable=SC2016 # ${Status} and the rest are dpkg-query's fields
  dpkg-query -W -f='${Status}|${Package}, ${Provides}\n' 2>/dev/null |
    sed -n 's/^install ok installed|//p' | tr ',' '\n' | sed 's/^ *//; s/ .*//' | grep .
}

install_packages() {
  local p
  local -a missing=() sudo=()
  local -A have=()
  while read -r p; do have[$p]=1; done < <(installed_names)
  for p in "${packages[@]}"; do
    if [[ -z ${have[$p]:-} ]]; then
      missing+=("$p")
    fi
  done
  if ((${#missing[@]} == 0)); then
    echo "setup: all ${#packages[@]} packages are installed"
    return 0
  fi
  if ((EUID != 0)); then
    command -v sudo >/dev/null || {
      echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
      exit 1
    }
    sudo=(sudo)
  fi
  echo "setup: installing ${missing[*]}"
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
}

# npm ci in tests/interop, unless its node_modules was installed from this very lock file
# (a stamp with the lock file's checksum, written after a successful npm ci).
install_interop_modules() {
  local stamp=$interop_dir/node_modules/.rlock-lock-sha256 sum
  sum=$(sha256sum <"$interop_dir/package-lock.json")
  if [[ -f $stamp && $(<"$stamp") == "$sum" ]]; then
    echo "setup: $interop_dir/node_modules is up to date with its package-lock.json"
    return 0
  fi
  echo "setup: installing the npm packages of $interop_dir (npm ci)"
  local try
  for try in 1 2 3; do
    npm ci --prefix "$interop_dir" --no-audit --no-fund && break
    if ((try == 3)); then
      echo "setup: npm ci failed 3 times (is the npm registry reachable?)" >&2
      exit 1
    fi
    echo "setup: npm ci failed; trying again in $((try * 5))s" >&2
    sleep $((try * 5))
  done
  echo "$sum" >"$stamp"
}

build_rlock() {
  echo "setup: building build/rlock"
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build build -j 2 --target rlock
}

ensure_redis() {
  local reply i
  reply=$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null || true)
  if [[ $reply == PONG ]]; then
    echo "setup: using the Redis that answers on 127.0.0.1:6379"
    return 0
  fi
  if [[ -n $reply ]]; then
    echo "setup: the server on 127.0.0.1:6379 answered '$reply' instead of PONG" >&2
    exit 1
  fi
  echo "setup: nothing answers on 127.0.0.1:6379; starting a throwaway redis-server there" \
    "(no persistence; stop it with: redis-cli -p 6379 shutdown nosave)"
  redis-server --port 6379 --bind 127.0.0.1 --save '' --daemonize yes >/dev/null
  for ((i = 0; i < 100; i++)); do
    [[ $(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null) == PONG ]] && return 0
    sleep 0.1
  done
  echo "setup: the throwaway redis-server did not answer within 10s" >&2
  exit 1
}

# Two runs of one lock started together: the second may only start after the first ends.
demo() {
  local out pids=() i rc=0
  out=$(mktemp)
  echo "setup: demo: two 'rlock run demo-lock' started at the same time"
  for i in 1 2; do
    # shellcheck disable=SC2016 # $$ is for the child shell: each run prints its own pid
    RLOCK_URL=redis://127.0.0.1:6379/0 build/rlock run demo-lock -- \
      sh -c 'echo "$$ start"; sleep 1; echo "$$ end"' >>"$out" </dev/null &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || rc=$?; done
  sed 's/^/    /' "$out"
  local -a lines
  mapfile -t lines <"$out"
  rm -f "$out"
  if ((rc != 0)); then
    echo "setup: demo FAILED: an rlock run exited with status $rc" >&2
    exit 1
  fi
  local a=${lines[0]%% *} b=${lines[2]%% *}
  if ((${#lines[@]} == 4)) && [[ $a != "$b" &&
    ${lines[0]} == "$a start" && ${lines[1]} == "$a end" &&
    ${lines[2]} == "$b start" && ${lines[3]} == "$b end" ]]; then
    echo "setup: serialized: $b started only after $a ended (start/end never interleave)"
  else
    echo "setup: demo FAILED: the two runs overlapped" >&2
    exit 1
  fi
}

install_packages
install_interop_modules
if ((deps_only)); then exit 0; fi
build_rlock
ensure_redis
demo
