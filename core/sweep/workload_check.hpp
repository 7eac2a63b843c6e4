#pragma once
// The engine's view of a plan before anything runs (`plan` and `run`): its parameters checked
// against `tpverify --describe --json`, and each distinct command line against
// `tpverify --validate`.
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/spec/engine_validate.hpp"
#include "core/spec/metric.hpp"
#include "core/spec/spec.hpp"
#include "core/target.hpp"

namespace ncclsweep::inline sweep {

/// What a workload measures and with what.
struct CheckedWorkload {
    std::vector<MetricDefinition> metrics;  ///< declared by the spec or the engine
    std::string backend;                    ///< "sim", "cuda" or "" (command workload / unknown)
};

/// For an `engine:` spec: checks its engine parameters against what the engine at
/// `engine_path` on `target` says (`--describe --json`), then asks it (`--validate`) whether it
/// can run each of the plan's distinct command lines `runs` (tp: 3 for a model of 64 heads
/// cannot: bad_input at the value's place), and returns the engine's metric definitions. An
/// engine that cannot describe itself or validate (not on this machine, older build) is a
/// logged warning, and the check is left to the engine when it runs. Command workloads: their
/// own metric definitions, nothing asked.
[[nodiscard]] Result<CheckedWorkload> check_engine_spec(const Spec& spec, const std::string& engine_path,
                                                        const std::vector<EngineRun>& runs, Target& target);

}  // namespace ncclsweep::inline sweep
