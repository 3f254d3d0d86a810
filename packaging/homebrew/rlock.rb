# Homebrew formula for rlock. The url and sha256 are those of the release tarball
# (scripts/package.sh tarball prints both); the version must match CMakeLists.txt
# (tests/packaging/packaging.bats checks it). Checked here with `ruby -c` only: this
# machine has no macOS and no Homebrew.
class Rlock < Formula
  desc "Distributed lock on Redis for shell users"
  homepage "https://example.org/rlock"
  url "https://example.org/rlock/releases/rlock-0.4.0.tar.gz"
  sha256 "0000000000000000000000000000000000000000000000000000000000000000"
  license :cannot_represent

  depends_on "cli11" => :build
  depends_on "cmake" => :build
  depends_on "fmt" => :build
  depends_on "hiredis"
  depends_on "openssl@3"

  def install
    # rlock loads libssl with dlopen() by the path the build found: Homebrew's
    # opt path stays valid across OpenSSL upgrades. libstdc++ is not static on macOS.
    system "cmake", "-S", ".", "-B", "build",
           "-DRLOCK_BUILD_TESTS=OFF",
           "-DRLOCK_STATIC_RUNTIME=OFF",
           "-DOPENSSL_ROOT_DIR=#{Formula["openssl@3"].opt_prefix}",
           *std_cmake_args
    system "cmake", "--build", "build"
    system "cmake", "--install", "build", "--strip"
  end

  test do
    assert_match version.to_s, shell_output("#{bin}/rlock --version")
    # No server answers on this port: a clear 69, not a crash.
    output = shell_output("#{bin}/rlock --url redis://127.0.0.1:1/0 status k 2>&1", 69)
    assert_match "cannot connect", output
  end
end
