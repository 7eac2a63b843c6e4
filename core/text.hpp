#pragma once
// Small text helpers shared across core/.
#include <cstddef>
#include <string_view>

namespace ncclsweep {

/// Levenshtein distance between `a` and `b` (for "did you mean" suggestions).
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace ncclsweep
