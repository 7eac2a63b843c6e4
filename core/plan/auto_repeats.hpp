#pragma once
// `repeats: auto` (docs/spec.md "Repeats"): the repeats a nightly gate needs, from the noise of
// the previous sweep of the same spec. The database is read by the caller (RunRecord); this is
// the decision and the words for it, tested without one (tests/core/test_auto_repeats.cpp).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/experiment.hpp"
#include "core/spec/spec.hpp"

namespace ncclsweep::inline plan {

/// One metric's samples per experiment key in an earlier sweep (its ok experiments).
struct NoiseHistory {
    std::int64_t sweep_id = 0;
    std::map<std::string, std::vector<double>> samples;  ///< by experiment key
};

/// What `repeats: auto` decided.
struct AutoRepeatsDecision {
    int repeats = 0;      ///< what every experiment runs
    double noise = 0;     ///< the relative noise per run it used (0 without history)
    int from_sweep = 0;   ///< the sweep the noise came from (0 = none)
    int experiments = 0;  ///< of this plan, how many the noise was measured on
    bool capped = false;  ///< more than `max` would be needed: the gate sees less than 5%
    std::string line;     ///< "repeats: auto -> 14 (noise 2.7% per run from sweep 41; ...)"
};

/// The repeats for `experiments` (the Holm family of the gate's diff: one comparison each) at
/// `spec`'s alpha: the largest over the experiments of `history` that this plan also has (same
/// key, at least 2 samples) of their small-sample corrected relative noise
/// (stats::relative_noise_corrected), then
/// stats::repeats_for_gate, capped at spec.max. Without such an experiment, spec.fallback, and
/// the line says so. `metric` and `source` ("tag 'nightly'", "sweep name 'nightly'") are for
/// the line.
[[nodiscard]] AutoRepeatsDecision decide_auto_repeats(const AutoRepeatsSpec& spec,
                                                      const std::vector<Experiment>& experiments,
                                                      const std::optional<NoiseHistory>& history,
                                                      const std::string& metric, const std::string& source);

/// What `plan` says of `repeats: auto` for `experiments` experiments: decided at run time, how,
/// and what it would pick at a few noise levels.
[[nodiscard]] std::string auto_repeats_plan_line(const AutoRepeatsSpec& spec, std::size_t experiments);

}  // namespace ncclsweep::inline plan
