#include "lock/holder_token.h"

#include <fmt/format.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <sys/random.h>  // getentropy
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/sha1.h"
#include "proc/procinfo.h"

namespace rlock {

namespace {

constexpr size_t kHalf = 16;  // hex digits of R and of H

bool lower_hex(std::string_view s) {
  return s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

uint64_t start_of(long pid) {
  if (auto info = proc_info(static_cast<pid_t>(pid))) return info->start;
  return 0;
}

// Redisson's ids are UUIDs (version 4: hex digit 12 is '4', digit 16 one of
// 89ab): R and H are written with those digits forced.
void as_uuid_digits(std::string& r, std::string& h) {
  r[12] = '4';
  h[0] = "89ab"[(h[0] <= '9' ? h[0] - '0' : h[0] - 'a' + 10) & 3];
}

// The ancestors of `self` (itself first), at most 256 generations, pid 1
// included (a container's entrypoint may hold a lock for its life).
template <class F>
std::optional<long> find_ancestor(pid_t self, F matches) {
  pid_t pid = self;
  for (int i = 0; i < 256 && pid >= 1; ++i) {
    auto info = proc_info(pid);
    if (!info) return std::nullopt;
    if (matches(static_cast<long>(pid), info->start)) return static_cast<long>(pid);
    if (pid == 1) break;
    pid = info->ppid;
  }
  return std::nullopt;
}

}  // namespace

std::string random_hex(size_t bytes) {
  unsigned char b[32];
  bytes = std::min(bytes, sizeof b);
  if (getentropy(b, bytes) != 0)
    throw Error(ErrorKind::Protocol, fmt::format("cannot get random bytes: {}", strerror(errno)));
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * bytes, '0');
  for (size_t i = 0; i < bytes; ++i) {
    out[2 * i] = kDigits[b[i] >> 4];
    out[2 * i + 1] = kDigits[b[i] & 0xf];
  }
  return out;
}

HostIdentity this_host() {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  return {host, boot_id()};
}

std::string holder_binding(std::string_view r, const HostIdentity& host, long pid, uint64_t start) {
  // Fields separated by NUL (none of them holds one) after a version tag.
  std::string msg = fmt::format("rlock-holder-v1{}{}{}{}{}{}{}{}{}{}", '\0', r, '\0', host.host,
                                '\0', host.boot, '\0', pid, '\0', start);
  auto sha = sha1_hex(msg);
  return std::string(sha.data(), kHalf);
}

std::string bound_token(Layout layout, long pid) {
  std::string r = random_hex(8);
  if (layout == Layout::Redisson) r[12] = '4';
  std::string h = holder_binding(r, this_host(), pid, start_of(pid));
  if (layout != Layout::Redisson) return r + h;
  as_uuid_digits(r, h);
  return fmt::format("{}-{}-{}-{}-{}:{}", r.substr(0, 8), r.substr(8, 4), r.substr(12, 4),
                     h.substr(0, 4), h.substr(4), pid);
}

std::optional<long> bound_holder(Layout layout, std::string_view token, pid_t self) {
  std::string r, h;
  long named = 0;  // Redisson: the pid its id names
  if (layout == Layout::Redisson) {
    // 8-4-4-4-12 ":" pid
    size_t colon = token.find(':');
    if (colon != 36 || token[8] != '-' || token[13] != '-' || token[18] != '-' || token[23] != '-')
      return std::nullopt;
    std::string_view pid = token.substr(colon + 1);
    if (pid.empty() || pid.size() > 10 || pid.find_first_not_of("0123456789") != pid.npos ||
        pid[0] == '0')
      return std::nullopt;
    named = std::stol(std::string(pid));
    std::string hex = fmt::format("{}{}{}{}{}", token.substr(0, 8), token.substr(9, 4),
                                  token.substr(14, 4), token.substr(19, 4), token.substr(24, 12));
    r = hex.substr(0, kHalf);
    h = hex.substr(kHalf);
  } else {
    if (token.size() != 2 * kHalf) return std::nullopt;
    r = token.substr(0, kHalf);
    h = token.substr(kHalf);
  }
  if (!lower_hex(r) || !lower_hex(h)) return std::nullopt;
  HostIdentity host = this_host();
  return find_ancestor(self, [&](long pid, uint64_t start) {
    if (named != 0 && pid != named) return false;
    std::string want = holder_binding(r, host, pid, start);
    if (layout == Layout::Redisson) {
      std::string rr = r;
      as_uuid_digits(rr, want);
    }
    return want == h;
  });
}

}  // namespace rlock
