#pragma once
// What a sweep runs, besides the points themselves: the command-line overrides, the target,
// the engine, repeats, timeouts and the workload's fixed parts. Stored with the sweep so that
// `run --resume` can refuse a resume that would mix configurations, naming what differs.
#include <string>
#include <utility>
#include <vector>

#include "core/experiment.hpp"
#include "core/plan/planner.hpp"
#include "core/result.hpp"
#include "core/spec/spec.hpp"

namespace ncclsweep::inline plan {

/// The settings a sweep ran with, as (what, value) pairs in a fixed order, plus the command
/// line that started it (kept for the resume hint, not compared).
struct PlanFingerprint {
    std::vector<std::pair<std::string, std::string>> parts;
    std::string command_line;  ///< e.g. "ncclsweep run study.yaml --set tokens=8"
    /// Versioned JSON text as stored in the database.
    [[nodiscard]] std::string to_json() const;
    /// Parses to_json()'s text; bad_input when it is not one ("" is an empty fingerprint).
    [[nodiscard]] static Result<PlanFingerprint> from_json(const std::string& text);
};

/// The fingerprint of `spec` (overrides already applied) run with `overrides` and `options`.
[[nodiscard]] PlanFingerprint fingerprint_of(const Spec& spec, const std::vector<Override>& overrides,
                                             const PlanOptions& options);

/// One sentence per setting that differs ("--axis/--set: was '…', now '…'"); empty when the
/// same. A stored fingerprint without parts (a sweep recorded before fingerprints) has none.
[[nodiscard]] std::vector<std::string> fingerprint_differences(const PlanFingerprint& stored,
                                                               const PlanFingerprint& now);

/// One sentence per planned point that differs from the stored one (count, point, command,
/// environment, workload parameters); at most `limit` sentences, then "and N more".
[[nodiscard]] std::vector<std::string> plan_differences(const std::vector<Experiment>& stored,
                                                        const std::vector<Experiment>& planned,
                                                        std::size_t limit = 5);

}  // namespace ncclsweep::inline plan
