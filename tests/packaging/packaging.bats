#!/usr/bin/env bats
# Packages and package recipes (packaging/, scripts/package.sh). Run once per test run by
# scripts/test.sh on the plain build, not in both passes (and not by ctest): building the
# RPM is a whole Release build, and installing the .deb changes the machine.
#
#   RLOCK_PACKAGE_BUILD=build bats tests/packaging/packaging.bats
#
# RLOCK_PACKAGE_BUILD names a configured build tree to package (default: scripts/package.sh
# configures its own).

bats_require_minimum_version 1.5.0

load ../helpers/redis

ROOT="$BATS_TEST_DIRNAME/../.."

setup_file() {
  VERSION=$(sed -n 's/^project(rlock VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
  export VERSION
  [[ -n $VERSION ]] || fail "no version in CMakeLists.txt"
}

# package KIND: scripts/package.sh KIND; the package's path in $PKG.
package() {
  run --separate-stderr bash "$ROOT/scripts/package.sh" "$1" ${RLOCK_PACKAGE_BUILD:+"$ROOT/$RLOCK_PACKAGE_BUILD"}
  [[ $status == 0 ]] || fail "package.sh $1 failed ($status): $(tail -n 30 <<<"$stderr")"
  PKG=${lines[-1]}
  [[ -f $PKG ]] || fail "package.sh $1 printed '$PKG', which is no file"
}

@test "the .deb: its path is the last line, lintian finds no error, it holds the install layout" {
  package deb
  [[ $PKG == */rlock_${VERSION}_*.deb ]] || fail "$PKG"
  command -v lintian >/dev/null || skip "lintian is not installed"
  run lintian --fail-on error "$PKG"
  assert_success
  run dpkg-deb -c "$PKG"
  for f in ./usr/bin/rlock ./usr/share/man/man1/rlock.1.gz \
    ./usr/share/bash-completion/completions/rlock ./usr/share/zsh/vendor-completions/_rlock \
    ./usr/share/fish/vendor_completions.d/rlock.fish ./usr/share/doc/rlock/copyright; do
    assert_output --partial " $f"
  done
  run dpkg-deb -f "$PKG" Version
  assert_output "$VERSION"
  # Stripped: no symbol table left.
  dpkg-deb -x "$PKG" "$BATS_TEST_TMPDIR/x"
  run file "$BATS_TEST_TMPDIR/x/usr/bin/rlock"
  assert_output --partial "stripped"
  refute_output --partial "not stripped"
}

@test "the .deb installs: rlock --version, man -w rlock, the bash completion is found; it removes" {
  ((EUID == 0)) || skip "installing a package needs root"
  dpkg -s rlock >/dev/null 2>&1 && skip "an rlock package is installed already: left alone"
  package deb
  run dpkg -i "$PKG"
  assert_success
  run /usr/bin/rlock --version
  assert_output "rlock $VERSION"
  run man -w rlock
  assert_output /usr/share/man/man1/rlock.1.gz
  if [[ -f /usr/share/bash-completion/bash_completion ]]; then
    run bash -c 'source /usr/share/bash-completion/bash_completion
      __load_completion rlock && complete -p rlock'
    assert_output --partial "-F _rlock"
  fi
  run dpkg -r rlock
  assert_success
  [[ ! -e /usr/bin/rlock ]] || fail "/usr/bin/rlock is still there"
}

@test "the RPM: built by rpmbuild from the tarball, at the version, with the install layout" {
  command -v rpmbuild >/dev/null || skip "rpmbuild is not installed (apt-get install rpm)"
  package rpm
  run rpm -qp --queryformat '%{VERSION}' "$PKG"
  assert_output "$VERSION"
  run rpm -qpl "$PKG"
  assert_line /usr/bin/rlock
  assert_line --partial /usr/share/man/man1/rlock.1
  assert_line /usr/share/bash-completion/completions/rlock
}

@test "every recipe names the version CMakeLists.txt has" {
  grep -qx "Version: *$VERSION" "$ROOT/packaging/rpm/rlock.spec" || fail "rlock.spec"
  grep -q "rlock-$VERSION.tar.gz" "$ROOT/packaging/homebrew/rlock.rb" || fail "rlock.rb"
  grep -qx "pkgver=$VERSION" "$ROOT/packaging/arch/PKGBUILD" || fail "PKGBUILD"
}

@test "the Homebrew formula parses (ruby -c)" {
  command -v ruby >/dev/null || skip "ruby is not installed"
  run ruby -c "$ROOT/packaging/homebrew/rlock.rb"
  assert_success
  assert_output "Syntax OK"
}

@test "the Arch PKGBUILD parses and defines what makepkg needs" {
  run bash -n "$ROOT/packaging/arch/PKGBUILD"
  assert_success
  run bash -c 'set -eu; source "$1"; [[ $pkgname == rlock && -n $pkgdesc && ${#arch[@]} -gt 0 &&
    ${#source[@]} -gt 0 ]]; declare -F build package' _ "$ROOT/packaging/arch/PKGBUILD"
  assert_success
  assert_line build
  assert_line package
}

@test "the container recipe: two stages, the last runs as an unprivileged user" {
  f=$ROOT/packaging/container/Containerfile
  assert [ "$(grep -c '^FROM ' "$f")" -ge 2 ]
  last=$(awk '/^FROM /{stage=""} {stage=stage $0 "\n"} END{printf "%s", stage}' "$f")
  grep -q '^COPY --from=build ' <<<"$last" || fail "the last stage copies nothing from the build"
  user=$(sed -n 's/^USER  *//p' <<<"$last" | tail -n 1)
  [[ -n $user ]] || fail "the last stage sets no USER"
  [[ ${user%%:*} != root && ${user%%:*} != 0 ]] || fail "the last stage runs as $user"
  grep -q '^ENTRYPOINT \["/usr/bin/rlock"\]' <<<"$last" || fail "no rlock entry point"
  ! grep -qi 'build-essential\|cmake' <<<"$last" || fail "build tools in the final image"
}
