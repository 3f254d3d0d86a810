# Homebrew formula for rlock. There is no release address yet: the url is the tarball
# `scripts/package.sh tarball` writes into build-pkg/ of this tree (it prints the sha256
# to add once the tarball is published somewhere, with its address as the url); the
# version must match CMakeLists.txt (tests/packaging/packaging.bats checks it). Checked
# here with `ruby -c` only: this machine has no macOS and no Homebrew.
class Rlock < Formula
  desc "Distributed lock on Redis for shell users"
  url "file://#{File.expand_path("../../build-pkg/rlock-0.5.0.tar.gz", __dir__)}"
  license "MIT"

  depends_on "cli11" => :build
  depends_on "cmake" => :build
  depends_on "fmt"
  depends_on "hiredis"
  depends_on "openssl@3"

  uses_from_macos "python" => :build

  def install
    # rlock loads libssl with dlopen() by the path the build found: Homebrew's
    # opt path stays valid across OpenSSL upgrades. hiredis, fmt and the C++ runtime are
    # Homebrew's shared libraries (packaging/README.md).
    system "cmake", "-S", ".", "-B", "build",
           "-DRLOCK_BUILD_TESTS=OFF",
           "-DRLOCK_STATIC_DEPS=OFF",
           "-DRLOCK_STATIC_RUNTIME=OFF",
           "-DOPENSSL_ROOT_DIR=#{Formula["openssl@3"].opt_prefix}",
           "-DRLOCK_ZSH_COMPLETION_DIR=#{zsh_completion}",
           *std_cmake_args
    system "cmake", "--build", "build"
    system "cmake", "--install", "build", "--strip"
    # Homebrew also keeps LICENSE in the keg's top directory (its metafiles).
  end

  test do
    assert_match(/^rlock #{Regexp.escape(version.to_s)} \(protocol \d+\)$/, shell_output("#{bin}/rlock --version"))
    # No server answers on this port: a clear 69, not a crash.
    output = shell_output("#{bin}/rlock --url redis://127.0.0.1:1/0 status k 2>&1", 69)
    assert_match "cannot connect", output
  end
end
