// Replies built by hand for unit tests: what a server could send, well-formed
// or hostile, without a server.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "net/reply.h"

namespace rlock::test {

inline Reply str(std::string s) {
  Reply r;
  r.type = Reply::Type::String;
  r.str = std::move(s);
  return r;
}

inline Reply num(long long n) {
  Reply r;
  r.type = Reply::Type::Integer;
  r.integer = n;
  return r;
}

inline Reply arr(std::vector<Reply> e) {
  Reply r;
  r.type = Reply::Type::Array;
  r.elements = std::move(e);
  return r;
}

}  // namespace rlock::test
