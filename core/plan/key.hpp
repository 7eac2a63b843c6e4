#pragma once
// The canonical key of an experiment: the same point gets the same key in any sweep.
#include <string>
#include <string_view>
#include <vector>

#include "core/experiment.hpp"

namespace ncclsweep::inline plan {

/// The canonical text of a point: its `name=value` pairs sorted by name and joined by ';',
/// with '\', '=' and ';' inside names and values escaped by a backslash (so it is unambiguous).
[[nodiscard]] std::string canonical_text(const std::vector<Assignment>& params);

/// The key of a canonical text: 64-bit FNV-1a as 16 lower-case hex digits.
[[nodiscard]] std::string key_of_canonical(std::string_view canonical);

/// canonical_text() then key_of_canonical().
[[nodiscard]] std::string experiment_key(const std::vector<Assignment>& params);

}  // namespace ncclsweep::inline plan
