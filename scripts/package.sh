#!/usr/bin/env bash
# Builds rlock's packages, each from the same `cmake --install` layout (prefix /usr),
# at the version `rlock --version` prints, each naming and installing LICENSE (MIT):
#
#   scripts/package.sh deb [BUILD_DIR]   the standalone Debian package (static: libc
#                                        alone at run time, packaging/deb/); its path
#                                        is the last line
#   scripts/package.sh debian            the Debian source package (packaging/debian/)
#                                        and its binary package, with dpkg-buildpackage
#                                        from the tarball; the .changes path last
#   scripts/package.sh rpm [BUILD_DIR]   an RPM, with rpmbuild and packaging/rpm/rlock.spec
#                                        (needs rpmbuild); its path is the last line
#   scripts/package.sh tarball           the source tarball the RPM, Homebrew and Arch
#                                        recipes build from, and its sha256; the path last
#
# BUILD_DIR is a configured build tree to reuse (CI passes build/); by default
# build-pkg/ is configured as a Release build. Everything is written under build-pkg/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() { echo "usage: scripts/package.sh deb|debian|rpm|tarball [BUILD_DIR]" >&2; }
what=${1:-}
out=$PWD/build-pkg
mkdir -p "$out"

build_rlock() {
  local dir=${1:-$out/build}
  if [[ ! -f $dir/CMakeCache.txt ]]; then
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DRLOCK_BUILD_TESTS=OFF >&2
  fi
  cmake --build "$dir" -j "${RLOCK_JOBS:-2}" --target rlock >&2
  echo "$dir"
}

version_of() { "$1/rlock" --version | awk '{print $2}'; }

# stage BUILD_DIR DEST: the install layout of a package, under DEST.
stage() {
  rm -rf "$2"
  DESTDIR=$2 cmake --install "$1" --prefix /usr --strip >&2
}

deb() {
  local dir version arch stage_dir deb_file libc
  dir=$(build_rlock "${1:-}")
  version=$(version_of "$dir")
  arch=$(dpkg --print-architecture)
  stage_dir=$out/deb
  stage "$dir" "$stage_dir"
  # Debian policy: a compressed man page, a copyright file and a changelog (a native
  # package: changelog.gz), permissions 0755/0644. README.md and docs/ stay uncompressed:
  # they link to each other by name (as dh_compress leaves HTML, packaging/README.md).
  gzip -9n "$stage_dir/usr/share/man/man1/rlock.1"
  # The license's text is in the copyright file, where Debian wants it (lintian:
  # extra-license-file), with the notices of what the binary links in.
  rm "$stage_dir/usr/share/doc/rlock/LICENSE"
  cp packaging/deb/copyright "$stage_dir/usr/share/doc/rlock/copyright"
  if [[ $(sed -n '1s/^rlock (\([^)]*\)).*/\1/p' packaging/deb/changelog) != "$version" ]]; then
    echo "package.sh: packaging/deb/changelog does not start with rlock ($version)" >&2
    exit 1
  fi
  gzip -9n <packaging/deb/changelog >"$stage_dir/usr/share/doc/rlock/changelog.gz"
  find "$stage_dir" -type d -exec chmod 0755 {} +
  find "$stage_dir" -type f -exec chmod 0644 {} +
  chmod 0755 "$stage_dir/usr/bin/rlock"
  # libc alone is linked (docs/INSTALL.md, "Building"); the newest symbol version it needs.
  libc=$(objdump -T "$stage_dir/usr/bin/rlock" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' |
    sort -V | tail -n 1)
  # Packed relocations (CMakeLists.txt) need glibc 2.36, a version with no symbol of its own.
  if objdump -p "$stage_dir/usr/bin/rlock" | grep -q GLIBC_ABI_DT_RELR; then
    libc=$(printf '%s\n2.36\n' "$libc" | sort -V | tail -n 1)
  fi
  mkdir -p "$stage_dir/DEBIAN"
  sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@LIBC@/$libc/" \
    -e "s/@SIZE@/$(du -sk --exclude=DEBIAN "$stage_dir" | cut -f1)/" \
    packaging/deb/control >"$stage_dir/DEBIAN/control"
  (cd "$stage_dir" && find usr -type f -exec md5sum {} + | sort -k2) >"$stage_dir/DEBIAN/md5sums"
  chmod 0644 "$stage_dir/DEBIAN/control" "$stage_dir/DEBIAN/md5sums"
  deb_file=$out/rlock_${version}_${arch}.deb
  dpkg-deb --root-owner-group -Zxz --build "$stage_dir" "$deb_file" >&2
  echo "$deb_file"
}

tarball() {
  local version=${1:-} file
  [[ -n $version ]] || version=$(sed -n 's/^project(rlock VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
  file=$out/rlock-$version.tar.gz
  git archive --format=tar.gz --prefix="rlock-$version/" -o "$file" HEAD
  echo "sha256 $(sha256sum "$file" | cut -d' ' -f1)" >&2
  echo "$file"
}

# debian: the Debian source package, as a distribution builds it: the upstream tarball
# (rlock_VERSION.orig.tar.gz, `git archive` of HEAD) unpacked, packaging/debian/ copied
# to debian/, then dpkg-buildpackage -us -uc (source and binary; DEB_BUILD_OPTIONS from
# the environment: nocheck skips the unit tests). Everything under build-pkg/debian/.
debian() {
  local version top src changes
  command -v dpkg-buildpackage >/dev/null || {
    echo "package.sh: dpkg-buildpackage is not installed (apt-get install dpkg-dev debhelper)" >&2
    exit 69
  }
  version=$(sed -n 's/^project(rlock VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
  if [[ $(sed -n '1s/^rlock (\([0-9.]*\)-[0-9]*).*/\1/p' packaging/debian/changelog) != "$version" ]]; then
    echo "package.sh: packaging/debian/changelog does not start with rlock ($version-N)" >&2
    exit 1
  fi
  top=$out/debian
  rm -rf "$top"
  mkdir -p "$top"
  tarball "$version" >/dev/null
  cp "$out/rlock-$version.tar.gz" "$top/rlock_$version.orig.tar.gz"
  tar -xzf "$top/rlock_$version.orig.tar.gz" -C "$top"
  src=$top/rlock-$version
  cp -a "$src/packaging/debian" "$src/debian"
  (cd "$src" && dpkg-buildpackage -us -uc) >&2
  changes=$(find "$top" -maxdepth 1 -name "rlock_${version}-*.changes" | head -n 1)
  [[ -n $changes ]] || {
    echo "package.sh: dpkg-buildpackage made no .changes" >&2
    exit 1
  }
  echo "$changes"
}

rpm() {
  local dir version top file
  command -v rpmbuild >/dev/null || {
    echo "package.sh: rpmbuild is not installed (apt-get install rpm)" >&2
    exit 69
  }
  dir=$(build_rlock "${1:-}")
  version=$(version_of "$dir")
  top=$out/rpm
  rm -rf "$top"
  mkdir -p "$top/SOURCES" "$top/SPECS"
  tarball "$version" >/dev/null
  cp "$out/rlock-$version.tar.gz" "$top/SOURCES/"
  cp packaging/rpm/rlock.spec "$top/SPECS/"
  # --nodeps: the build requirements are the distribution's (Fedora's names in the
  # spec); here the host's -dev packages stand in for them.
  rpmbuild --define "_topdir $top" --nodeps -bb "$top/SPECS/rlock.spec" >&2
  file=$(find "$top/RPMS" -name "rlock-$version-*.rpm" | head -n 1)
  [[ -n $file ]] || {
    echo "package.sh: rpmbuild made no package" >&2
    exit 1
  }
  echo "$file"
}

case $what in
  deb) deb "${2:-}" ;;
  debian) debian ;;
  rpm) rpm "${2:-}" ;;
  tarball) tarball ;;
  -h | --help) usage ;;
  *)
    usage
    exit 64
    ;;
esac
