#pragma once
// NCCL's defaults point (docs/spec.md "Baseline"): in a sweep with NCCL axes, the point that
// sets none of the swept NCCL variables, one per combination of the other axes. The planner
// adds it; everything that reads a sweep back recognises it by the same rule, so it is labelled
// `defaults` wherever points are named and every recommendation is stated against it.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/experiment.hpp"

namespace ncclsweep::inline plan {

/// How the defaults point is named wherever points are shown.
inline constexpr std::string_view k_defaults_label = "defaults";

/// True for a variable NCCL reads (NCCL_*): an axis of it is a "swept NCCL variable".
[[nodiscard]] bool is_nccl_variable(std::string_view name);

/// The NCCL variables some point of `points` sets among its parameters, in first-seen order.
[[nodiscard]] std::vector<std::string> swept_nccl_variables(std::span<const Experiment* const> points);

/// Sets Experiment::defaults on each of `points` by the one rule: the sweep sweeps NCCL variables
/// and the point sets none of them. What a stored sweep's loader calls.
void mark_defaults_points(std::span<Experiment* const> points);

/// The point as people read it: "defaults fusion=on" for the defaults point, else its
/// parameters "NCCL_PROTO=LL fusion=on" ("defaults" alone, or "no axes", when it has none).
[[nodiscard]] std::string point_text(const Experiment& experiment);

}  // namespace ncclsweep::inline plan
