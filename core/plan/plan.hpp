#pragma once
// Whole-plan checks: load + override + validate a spec, then walk every experiment once
// through nccl::check_environment, stopping at the first error and grouping warnings.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/experiment.hpp"
#include "core/nccl/nccl.hpp"
#include "core/plan/planner.hpp"
#include "core/result.hpp"
#include "core/spec/spec.hpp"

namespace ncclsweep::inline plan {

/// A set of experiment ids kept as sorted ranges; ids must be added in increasing order.
class IdRanges {
public:
    /// Adds `id` (>= every id added before).
    void add(int id);
    /// How many ids.
    [[nodiscard]] std::uint64_t count() const { return m_count; }
    /// True if `id` was added.
    [[nodiscard]] bool contains(int id) const;
    /// The [first, last] ranges in order.
    [[nodiscard]] const std::vector<std::pair<int, int>>& ranges() const { return m_ranges; }
    /// Compact text such as "1-4,9" (every range: the form JSON carries).
    [[nodiscard]] std::string to_string() const;
    /// For people: "1-96, 120-200, 250" with at most `max_ranges` ranges, then "and N more
    /// ranges" (a warning over millions of points stays one short line).
    [[nodiscard]] std::string to_text(std::size_t max_ranges) const;

private:
    std::vector<std::pair<int, int>> m_ranges;
    std::uint64_t m_count = 0;
};

/// Ranges a person reads in a warning line before "and N more ranges".
inline constexpr std::size_t k_warning_ranges = 12;

/// One warning and the experiments it applies to.
struct WarningGroup {
    std::string code;     ///< nccl::Finding::code
    std::string message;  ///< what and what to do
    IdRanges experiments;
};

/// What a full pass over the plan found.
struct PlanSummary {
    std::uint64_t count = 0;             ///< experiments (after exclude and include)
    std::vector<WarningGroup> warnings;  ///< identical warnings grouped, in order of first appearance
    IdRanges defaults;                   ///< NCCL's defaults points (Experiment::defaults)
    /// How many warning groups mention experiment `id`.
    [[nodiscard]] int warnings_for(int id) const;
};

/// load_spec, apply_overrides, validate_spec: the spec every subcommand plans from.
[[nodiscard]] Result<Spec> prepare_spec(const std::string& path, const std::vector<Override>& overrides);

/// What nccl::check_environment should know about an experiment's workload: the largest
/// collective (tokens x hidden x 2 bytes; hidden from `hidden` or the `model` preset, tpverify
/// defaults tokens 4 and kimi-k2.5) and the `topology` parameter when one is given.
[[nodiscard]] nccl::WorkloadContext workload_context(const Spec& spec, const Experiment& experiment);

/// The settings of `experiment` NCCL is expected to ignore for its workload (the plan's
/// "ignored at this message size" and "buffer of a protocol it disables" warnings), sorted.
/// They cannot make the point better or worse, so "best" does not count them and exports mark them.
[[nodiscard]] std::vector<std::string> inert_settings(const Spec& spec, const Experiment& experiment);

/// Walks every experiment once: counts them, stops (bad_input, located) at the first NCCL error
/// of any experiment, and groups the warnings by code and message. `each`, when given, sees
/// every experiment that passed its check, in order, as the walk reaches it: a caller that
/// needs more from the plan (run's experiments, the engine's distinct command lines) takes it
/// from this one walk instead of expanding the plan again.
[[nodiscard]] Result<PlanSummary> check_plan(const Spec& spec, const PlanOptions& options,
                                             const std::function<void(const Experiment&)>& each = {});

}  // namespace ncclsweep::inline plan
