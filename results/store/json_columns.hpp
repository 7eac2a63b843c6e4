#pragma once
// JSON text of the experiments' list columns (params, env, workload, argv). Internal to results/.
#include <string>
#include <string_view>
#include <vector>

#include "core/experiment.hpp"

namespace ncclsweep::results::detail {

/// {"NAME":"value",...} in the given order (a repeated name keeps its last value, as in an
/// environment). Invalid UTF-8 is replaced by U+FFFD rather than failing.
[[nodiscard]] std::string assignments_to_json(const std::vector<Assignment>& assignments);
/// The pairs of a JSON object in stored order; empty for malformed text.
[[nodiscard]] std::vector<Assignment> assignments_from_json(std::string_view text);
/// ["a","b",...].
[[nodiscard]] std::string strings_to_json(const std::vector<std::string>& strings);
/// The strings of a JSON array; empty for malformed text.
[[nodiscard]] std::vector<std::string> strings_from_json(std::string_view text);
/// FNV-1a 64 of `text` as 16 hex digits (spec hash when the caller gives none).
[[nodiscard]] std::string fnv1a_hex(std::string_view text);

}  // namespace ncclsweep::results::detail
