#!/usr/bin/env bats
# Packages and package recipes (packaging/, scripts/package.sh). Run once per test run by
# scripts/test.sh on the plain build, not in both passes (and not by ctest): building the
# RPM and the Debian source package are whole builds, and installing the .deb changes the
# machine. The versions of the recipes are checked by tests/versions.bats (label fast).
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

# has_functions_library BINARY: the binary carries rlock's Redis 7 Functions library
# (generated at build time by Python: a recipe without python3 builds a binary without it).
has_functions_library() {
  grep -qa '#!lua name=rlock_' "$1" || fail "$1 has no Functions library: is python3 a build dependency?"
}

@test "the standalone .deb: its path is the last line, lintian-clean, the install layout, the license and the notices of what it links in" {
  package deb
  [[ $PKG == */rlock_${VERSION}_*.deb ]] || fail "$PKG"
  command -v lintian >/dev/null || skip "lintian is not installed"
  run lintian --fail-on error,warning "$PKG"
  assert_success
  refute_output --regexp '^[EW]: '
  run dpkg-deb -c "$PKG"
  for f in ./usr/bin/rlock ./usr/share/man/man1/rlock.1.gz \
    ./usr/share/bash-completion/completions/rlock ./usr/share/zsh/vendor-completions/_rlock \
    ./usr/share/fish/vendor_completions.d/rlock.fish ./usr/share/doc/rlock/copyright \
    ./usr/share/doc/rlock/README.md ./usr/share/doc/rlock/docs/GUIDE.md \
    ./usr/share/doc/rlock/docs/DECISIONS.md ./usr/share/doc/rlock/docs/recipes/cron.md; do
    assert_output --partial " $f"
  done
  run dpkg-deb -f "$PKG" Version
  assert_output "$VERSION"
  run dpkg-deb -f "$PKG" Maintainer
  assert_output "the rlock authors <rlock@rlock.invalid>"
  run dpkg-deb -f "$PKG" Homepage
  assert_output ""
  # Stripped: no symbol table left.
  dpkg-deb -x "$PKG" "$BATS_TEST_TMPDIR/x"
  run file "$BATS_TEST_TMPDIR/x/usr/bin/rlock"
  assert_output --partial "stripped"
  refute_output --partial "not stripped"
  has_functions_library "$BATS_TEST_TMPDIR/x/usr/bin/rlock"
  # The license: named in the machine-readable copyright file, its text there in full,
  # not a second time as a loose LICENSE file.
  copyright=$BATS_TEST_TMPDIR/x/usr/share/doc/rlock/copyright
  grep -qx 'Copyright: 2026 the rlock authors' "$copyright" || fail "$(cat "$copyright")"
  assert_equal "$(grep -c '^License: Expat$' "$copyright")" 2
  diff <(sed -n '/^Permission/,$p' "$ROOT/LICENSE") \
    <(awk '/^License: Expat$/ { p = 1; next } p && /^$/ { p = 0 } p' "$copyright" |
      sed -n '/^ Permission/,$p' | sed -e 's/^ //' -e 's/^\.$//')
  [[ ! -e $BATS_TEST_TMPDIR/x/usr/share/doc/rlock/LICENSE ]] || fail "a second copy of LICENSE"
  # Static: libc alone at run time; the notices of everything linked or compiled in.
  run readelf -d "$BATS_TEST_TMPDIR/x/usr/bin/rlock"
  refute_output --regexp 'NEEDED.*(hiredis|fmt|stdc\+\+|gcc_s|ssl)'
  for notice in '^Copyright: 2009-2011, Salvatore Sanfilippo' '^Copyright: 2017-2020 University of Cincinnati' \
    '^Copyright: 2012-2020 Victor Zverovich' '^Copyright: 1995-2020, The OpenSSL Project Authors' \
    '^Copyright: 1986-2019 Free Software Foundation' '^License: BSD-3-Clause$' \
    '^License: Expat with embedded exception$' '^License: Apache-2.0$' \
    '^License: GPL-3\+ with GCC-exception-3.1 exception$' '^ GCC RUNTIME LIBRARY EXCEPTION$' \
    '^ 2. Redistributions in binary form must reproduce'; do
    grep -qE -- "$notice" "$copyright" || fail "no '$notice' in the copyright file"
  done
  # The installed README's links into docs/ work where it is installed.
  links=$(grep -oE '\]\(docs/[^)#]*' "$BATS_TEST_TMPDIR/x/usr/share/doc/rlock/README.md" | cut -c3- | sort -u)
  [[ -n $links ]] || fail "README.md links to nothing in docs/"
  for l in $links; do
    [[ -e $BATS_TEST_TMPDIR/x/usr/share/doc/rlock/$l ]] || fail "README.md links to $l, not installed"
  done
}

@test "the Debian source package: dpkg-buildpackage from the tarball, lintian-clean, linked dynamically, docs/recipes shipped" {
  command -v dpkg-buildpackage >/dev/null || skip "dpkg-buildpackage is not installed (apt-get install dpkg-dev)"
  command -v dh >/dev/null || skip "debhelper is not installed"
  # The suite has run already: the build skips the unit tests.
  DEB_BUILD_OPTIONS="nocheck parallel=${RLOCK_JOBS:-2}" package debian
  [[ $PKG == */rlock_${VERSION}-1_*.changes ]] || fail "$PKG"
  dir=$(dirname "$PKG")
  [[ $stderr == *"dpkg-source: info: building rlock using existing ./rlock_${VERSION}.orig.tar.gz"* ]] ||
    fail "no source package built: $(tail -n 20 <<<"$stderr")"
  # The source package unpacks by itself: upstream tarball and packaging.
  run dpkg-source -x "$dir/rlock_${VERSION}-1.dsc" "$BATS_TEST_TMPDIR/src"
  assert_success
  [[ -x $BATS_TEST_TMPDIR/src/debian/rules && -f $BATS_TEST_TMPDIR/src/CMakeLists.txt ]] ||
    fail "the unpacked source has no debian/rules or CMakeLists.txt"
  command -v lintian >/dev/null || skip "lintian is not installed"
  run lintian --fail-on error,warning "$PKG"
  assert_success
  refute_output --regexp '^[EW]: '
  deb=$(ls "$dir"/rlock_"${VERSION}"-1_*.deb)
  run dpkg-deb -f "$deb" Version
  assert_output "$VERSION-1"
  # Linked as Debian links: the shared libraries, named by dpkg-shlibdeps.
  run dpkg-deb -f "$deb" Depends
  assert_output --regexp 'libhiredis[0-9.]+'
  assert_output --regexp 'libfmt[0-9]+'
  assert_output --regexp 'libstdc\+\+6'
  run dpkg-deb -f "$deb" Recommends
  assert_output --regexp '^libssl3'
  dpkg-deb -x "$deb" "$BATS_TEST_TMPDIR/x"
  run readelf -d "$BATS_TEST_TMPDIR/x/usr/bin/rlock"
  assert_output --regexp 'NEEDED.*libhiredis'
  assert_output --regexp 'NEEDED.*libfmt'
  assert_output --regexp 'NEEDED.*libstdc\+\+'
  has_functions_library "$BATS_TEST_TMPDIR/x/usr/bin/rlock"
  run dpkg-deb -c "$deb"
  for f in ./usr/bin/rlock ./usr/share/man/man1/rlock.1.gz ./usr/share/bash-completion/completions/rlock \
    ./usr/share/zsh/vendor-completions/_rlock ./usr/share/fish/vendor_completions.d/rlock.fish \
    ./usr/share/doc/rlock/copyright ./usr/share/doc/rlock/changelog.Debian.gz \
    ./usr/share/doc/rlock/README.md ./usr/share/doc/rlock/docs/GUIDE.md \
    ./usr/share/doc/rlock/docs/recipes/stuck-lock.md; do
    assert_output --partial " $f"
  done
  refute_output --partial "/usr/share/doc/rlock/LICENSE"
  # Every recipe the tree has is shipped.
  for r in "$ROOT"/docs/recipes/*.md; do
    assert_output --partial " ./usr/share/doc/rlock/docs/recipes/${r##*/}"
  done
  grep -qx 'License: Expat' "$BATS_TEST_TMPDIR/x/usr/share/doc/rlock/copyright" || fail "no license"
}

@test "LICENSE: MIT, the rlock authors; the tarball has it at the top" {
  grep -qx 'MIT License' "$ROOT/LICENSE"
  grep -qx 'Copyright (c) 2026 the rlock authors' "$ROOT/LICENSE"
  package tarball
  run tar -tzf "$PKG"
  assert_line "rlock-$VERSION/LICENSE"
  # `cmake --install` (the layout every package starts from) puts it with the docs.
  grep -q 'README.md LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR}' "$ROOT/CMakeLists.txt"
}

@test "every recipe names the MIT license, the rlock authors, and no placeholder address" {
  grep -qx 'License: *MIT' "$ROOT/packaging/rpm/rlock.spec" || fail "rlock.spec"
  grep -qx '%license LICENSE' "$ROOT/packaging/rpm/rlock.spec" || fail "rlock.spec %license"
  grep -qx '  license "MIT"' "$ROOT/packaging/homebrew/rlock.rb" || fail "rlock.rb"
  grep -qx "license=('MIT')" "$ROOT/packaging/arch/PKGBUILD" || fail "PKGBUILD"
  grep -q 'usr/share/licenses/$pkgname/LICENSE' "$ROOT/packaging/arch/PKGBUILD" ||
    fail "PKGBUILD installs no license file"
  grep -q 'org.opencontainers.image.licenses="MIT"' "$ROOT/packaging/container/Containerfile" ||
    fail "Containerfile"
  grep -qx 'Maintainer: the rlock authors <rlock@rlock.invalid>' "$ROOT/packaging/deb/control" ||
    fail "deb/control"
  grep -qx 'Maintainer: the rlock authors <rlock@rlock.invalid>' "$ROOT/packaging/debian/control" ||
    fail "debian/control"
  run grep -rniE --exclude=README.md \
    'example\.(org|com)|none-chosen-yet|not-chosen|^Homepage:|^URL:|^ *homepage |^url=' \
    "$ROOT/packaging"
  assert_output ""
}

@test "zsh completion where each platform's zsh looks for it" {
  grep -q -- '-DRLOCK_ZSH_COMPLETION_DIR=%{_datadir}/zsh/site-functions' \
    "$ROOT/packaging/rpm/rlock.spec" || fail "rlock.spec"
  grep -q -- '-DRLOCK_ZSH_COMPLETION_DIR=share/zsh/site-functions' \
    "$ROOT/packaging/arch/PKGBUILD" || fail "PKGBUILD"
  grep -q -- '"-DRLOCK_ZSH_COMPLETION_DIR=#{zsh_completion}"' \
    "$ROOT/packaging/homebrew/rlock.rb" || fail "rlock.rb"
}

@test "the .deb installs: rlock --version, man -w rlock, the bash completion is found; it removes" {
  ((EUID == 0)) || skip "installing a package needs root"
  dpkg -s rlock >/dev/null 2>&1 && skip "an rlock package is installed already: left alone"
  package deb
  run dpkg -i "$PKG"
  assert_success
  run /usr/bin/rlock --version
  assert_output --regexp "^rlock $VERSION \(protocol [0-9]+\)$"
  run man -w rlock
  assert_output /usr/share/man/man1/rlock.1.gz
  grep -q '^License: Expat$' /usr/share/doc/rlock/copyright || fail "no license installed"
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
  # %check ran, on the binary just built.
  [[ $stderr == *"Executing(%check)"* ]] || fail "no %check: $(tail -n 20 <<<"$stderr")"
  run rpm -qpl "$PKG"
  assert_line /usr/bin/rlock
  assert_line --partial /usr/share/man/man1/rlock.1
  assert_line /usr/share/bash-completion/completions/rlock
  assert_line /usr/share/zsh/site-functions/_rlock
  assert_line /usr/share/fish/vendor_completions.d/rlock.fish
  # The directories it puts files in that no base package owns, it owns.
  for d in /usr/share/doc/rlock /usr/share/zsh/site-functions \
    /usr/share/fish/vendor_completions.d /usr/share/bash-completion/completions; do
    assert_line "$d"
  done
  refute_line /usr/share/doc/rlock/LICENSE
  # The documents in the tree's layout, the recipes included.
  assert_line /usr/share/doc/rlock/README.md
  assert_line /usr/share/doc/rlock/docs/GUIDE.md
  assert_line /usr/share/doc/rlock/docs/recipes/cron.md
  # The license: named, and installed as a license file.
  run rpm -qp --queryformat '%{LICENSE}' "$PKG"
  assert_output MIT
  run rpm -qpL "$PKG"
  assert_output /usr/share/licenses/rlock/LICENSE
  run rpm -qp --queryformat '[%{FILEDIGESTS} %{FILENAMES}\n]' "$PKG"
  assert_line "$(sha256sum "$ROOT/LICENSE" | cut -d' ' -f1) /usr/share/licenses/rlock/LICENSE"
  # Not stripped by hand: rpmbuild took the debugging information out (Debian's
  # brp-strip here; find-debuginfo, into a -debuginfo package, on Fedora).
  command -v rpm2archive >/dev/null || return 0
  (cd "$BATS_TEST_TMPDIR" && rpm2archive -n <"$PKG" | tar -x ./usr/bin/rlock)
  run readelf -S "$BATS_TEST_TMPDIR/usr/bin/rlock"
  assert_success
  refute_output --partial ".debug_info"
  has_functions_library "$BATS_TEST_TMPDIR/usr/bin/rlock"
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
    ${#source[@]} -gt 0 ]]; declare -F build check package' _ "$ROOT/packaging/arch/PKGBUILD"
  assert_success
  assert_line build
  assert_line check
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
  grep -q 'org.opencontainers.image.licenses="MIT"' <<<"$last" || fail "no license label"
}
