// "Did you mean …?": the known name closest to a mistyped one.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlock {

/// The optimal string alignment distance between `a` and `b`: insertions,
/// deletions, substitutions and swaps of two neighbours ("wiat" → "wait")
/// count one each. ASCII letters are compared without case.
size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate a user most likely meant by `typed`, or nullopt when none is
/// close: at most one edit per three characters (one at least, three at most),
/// or the start (three characters or more) of exactly one candidate. Ties go
/// to the earlier candidate.
std::optional<std::string> closest_name(std::string_view typed,
                                        const std::vector<std::string>& candidates);

}  // namespace rlock
