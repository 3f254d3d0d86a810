#include "cli/suggest.h"

#include <algorithm>
#include <cctype>

namespace rlock {

namespace {

char fold(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rows of the classic table: the one before the previous is needed
  // for a swap of two neighbours.
  std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = fold(a[i - 1]) == fold(b[j - 1]) ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) && fold(a[i - 2]) == fold(b[j - 1]))
        cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::optional<std::string> closest_name(std::string_view typed,
                                        const std::vector<std::string>& candidates) {
  const size_t allowed = std::clamp<size_t>(typed.size() / 3, 1, 3);
  std::optional<std::string> best;
  size_t best_distance = allowed + 1;
  for (const std::string& c : candidates) {
    size_t d = edit_distance(typed, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  if (best || typed.size() < 3) return best;
  // "--conn" for "--connect-timeout": a start that only one name has.
  std::optional<std::string> prefixed;
  for (const std::string& c : candidates) {
    if (c.size() <= typed.size() || !std::equal(typed.begin(), typed.end(), c.begin(),
                                                [](char x, char y) { return fold(x) == fold(y); }))
      continue;
    if (prefixed) return std::nullopt;
    prefixed = c;
  }
  return prefixed;
}

}  // namespace rlock
