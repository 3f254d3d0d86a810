#!/usr/bin/env bats
# ctest-labels: fast
# One version everywhere: `project(rlock VERSION …)` in CMakeLists.txt is the release's
# number, and `rlock --version`, the man page's header, every package recipe (packaging/:
# the Debian source package and the standalone .deb, the RPM, Arch, Homebrew, the
# container image), docs/PROTOCOL.md's protocol version and the docs (README.md, docs/,
# docs/recipes/) agree with it. The docs may name older releases ("0.4.0 does not know
# --done-for"), never a newer one, and a package's file name is this release's.

bats_require_minimum_version 1.5.0

load helpers/redis

ROOT="$BATS_TEST_DIRNAME/.."

setup_file() {
  VERSION=$(sed -n 's/^project(rlock VERSION \([0-9.]*\) .*/\1/p' "$ROOT/CMakeLists.txt")
  PROTOCOL=$(sed -n 's/^inline constexpr int kProtocolVersion = \([0-9]*\);$/\1/p' \
    "$ROOT/src/lock/scripts.h")
  export VERSION PROTOCOL
  [[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "no version in CMakeLists.txt: '$VERSION'"
  [[ $PROTOCOL =~ ^[0-9]+$ ]] || fail "no kProtocolVersion in src/lock/scripts.h"
}

# first_match FILE SED_EXPR: the first line of FILE that the sed expression prints.
first_match() { sed -n "$2" "$1" | head -n 1; }

@test "rlock --version: CMake's version and the protocol version; the protocol's number in the prelude and PROTOCOL.md" {
  run --separate-stderr "$RLOCK" --version
  assert_success
  assert_output "rlock $VERSION (protocol $PROTOCOL)"
  # Scripts read the second word (scripts/package.sh, docs/recipes).
  assert_equal "$(awk '{print $2}' <<<"$output")" "$VERSION"
  assert_equal "$(first_match "$ROOT/src/lock/lua/prelude.lua" 's/^-- rlock lock protocol \([0-9]*\) .*/\1/p')" \
    "$PROTOCOL"
  proto=$ROOT/docs/PROTOCOL.md
  grep -qF "**Protocol version: $PROTOCOL** (rlock $VERSION;" "$proto" ||
    fail "PROTOCOL.md: $(grep -F '**Protocol version' "$proto")"
  # The "Versions" table's row of this protocol names this release.
  assert_equal "$(first_match "$proto" "/^## Versions\$/,\$ s/^| $PROTOCOL | \([^|]*\) |.*/\1/p")" "$VERSION"
  run grep -n 'SEE ALSO' -A 8 "$ROOT/man/rlock.1"
  assert_output --partial "protocol version $PROTOCOL;"
}

@test "the man page and every package recipe are at CMake's version" {
  check() { # check WHAT FOUND
    [[ $2 == "$VERSION" ]] || fail "$1 says '$2', CMakeLists.txt $VERSION"
  }
  check "man/rlock.1 .TH" "$(first_match "$ROOT/man/rlock.1" 's/^\.TH RLOCK 1 "[^"]*" "rlock \([^"]*\)".*/\1/p')"
  # The Debian source package (0.5.0-1: the Debian revision after the dash) and the
  # standalone .deb's changelog (the version itself, as the binary package has it).
  check "packaging/debian/changelog" \
    "$(first_match "$ROOT/packaging/debian/changelog" 's/^rlock (\([0-9.]*\)-[0-9]*) .*/\1/p')"
  check "packaging/deb/changelog" \
    "$(first_match "$ROOT/packaging/deb/changelog" 's/^rlock (\([^)]*\)) .*/\1/p')"
  spec=$ROOT/packaging/rpm/rlock.spec
  check "rlock.spec Version" "$(first_match "$spec" 's/^Version: *//p')"
  check "rlock.spec %changelog" "$(first_match "$spec" 's/^\* .* - \([0-9.]*\)-[0-9]*$/\1/p')"
  check "PKGBUILD" "$(first_match "$ROOT/packaging/arch/PKGBUILD" 's/^pkgver=//p')"
  check "rlock.rb" "$(first_match "$ROOT/packaging/homebrew/rlock.rb" 's/.*rlock-\([0-9.]*\)\.tar\.gz.*/\1/p')"
  check "Containerfile" \
    "$(first_match "$ROOT/packaging/container/Containerfile" 's/.*org\.opencontainers\.image\.version="\([^"]*\)".*/\1/p')"
  # Their checks of the built binary expect the line it prints.
  grep -qF "grep -qx 'rlock %{version} (protocol [0-9]*)'" "$spec" || fail "rlock.spec %check"
  grep -qF 'grep -qx "rlock $pkgver (protocol [0-9]*)"' "$ROOT/packaging/arch/PKGBUILD" ||
    fail "PKGBUILD check()"
}

@test "the docs name no rlock newer than CMake's, and every package file name is this version's" {
  local -a docs=("$ROOT/README.md" "$ROOT/man/rlock.1" "$ROOT/packaging/README.md" "$ROOT"/docs/*.md
    "$ROOT"/docs/recipes/*.md)
  # rlock's own versions as the docs write them: "rlock 0.4.0", "v0.5.0", a bare 0.x.y
  # (rlock is below 1.0; the Redis versions the docs name are 6 and 7).
  found=$(grep -HnoE '(rlock[ _-]|\bv)[0-9]+\.[0-9]+\.[0-9]+|\b0\.[0-9]+\.[0-9]+\b' "${docs[@]}")
  [[ -n $found ]] || fail "no version found at all: the pattern is wrong"
  while IFS= read -r hit; do
    v=$(grep -oE '[0-9]+\.[0-9]+\.[0-9]+$' <<<"$hit")
    newest=$(printf '%s\n%s\n' "$v" "$VERSION" | sort -V | tail -n 1)
    [[ $newest == "$VERSION" ]] || fail "${hit#"$ROOT"/} is newer than CMakeLists.txt's $VERSION"
  done <<<"$found"
  # A package's or tarball's name is the one scripts/package.sh writes for this release.
  while IFS= read -r hit; do
    [[ $hit == *"_${VERSION}_"* || $hit == *"-${VERSION}.tar"* || $hit == *"_${VERSION}-"* ]] ||
      fail "${hit#"$ROOT"/} is not this release's file ($VERSION)"
  done < <(grep -HnoE 'rlock(_[0-9]+\.[0-9]+\.[0-9]+[_-]|-[0-9]+\.[0-9]+\.[0-9]+\.tar)' "${docs[@]}")
  # "The release after 0.4.0", "the next release": the release has a number.
  run grep -HniE 'release after [0-9]|the next release' "${docs[@]}"
  assert_output ""
}
