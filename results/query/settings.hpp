#pragma once
// What each NCCL setting of a point does, judged once for every output (docs/results.md
// "Settings that count"): a setting whose value is NCCL's own effective choice at its defaults
// changes nothing; a setting is inert when the points that differ from this one only in it
// show the same effective NCCL choice and no significant difference; every other setting is a
// change, deployed with NCCL_ALGO/NCCL_PROTO scoped to the collectives it changed. `results
// best`, run's recommendation, every export and the report read these judgements, so they
// agree on every variable.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "results/query/table.hpp"

namespace ncclsweep::results {

/// One choice NCCL reported (a TUNING line) for a collective, as stored in effective_nccl.
struct CollectiveChoice {
    std::string collective;  ///< lower case as NCCL_ALGO prefixes spell it: "allreduce", "allgather"
    std::uint64_t bytes = 0;
    std::string algo;   ///< lower case: "ring", "tree", ...
    std::string proto;  ///< lower case: "ll", "ll128", "simple"
    int channels = -1;  ///< channel{Lo..Hi} as a count (Hi - Lo + 1), or nch; -1 unknown
    int threads = -1;   ///< nthreads when printed, else -1
    friend bool operator==(const CollectiveChoice&, const CollectiveChoice&) = default;
};

/// The TUNING part of a stored effective_nccl summary ("AllReduce 57344B: RING/LL ch0..0;
/// AllGather ...; env: ...; tuner: ..."), sorted as stored; empty when NCCL said nothing.
[[nodiscard]] std::vector<CollectiveChoice> collective_choices(std::string_view effective_nccl);

/// What a setting of a point does.
enum class SettingRole {
    change,       ///< it changes what NCCL does (or nothing says it does not): deploy it
    nccl_choice,  ///< its value is what NCCL chose by itself at its defaults: left to NCCL
    inert,        ///< same effective choice and no significant difference without it: left out
};

/// "change", "NCCL's own choice" or "inert".
[[nodiscard]] std::string_view role_text(SettingRole role);

/// The judgement of one environment setting of a point.
struct SettingJudgement {
    std::string name;   ///< NCCL_PROTO
    std::string value;  ///< as the point set it
    SettingRole role = SettingRole::change;
    std::string deploy_value;  ///< change: what to deploy (NCCL_ALGO/PROTO scoped per collective)
    std::string why;           ///< one sentence for people
    /// change: the collectives whose effective choice it changed ("allreduce"); empty when
    /// unknown (no TUNING lines, or a variable that TUNING lines do not show).
    std::vector<std::string> collectives;
};

/// Every environment setting of a point, judged.
struct PointSettings {
    std::vector<SettingJudgement> settings;  ///< the point's UPPER_CASE parameters, in order
    std::optional<int> defaults_id;          ///< NCCL's defaults point with the same other parameters
    std::vector<std::string> notes;          ///< scoping and what the judgements could not see
    /// Settings that change what NCCL does (the tie rule's first key).
    [[nodiscard]] int changed() const;
    /// Settings the point sets at all (the tie rule's second key: NCCL's defaults set none).
    [[nodiscard]] int set() const { return static_cast<int>(settings.size()); }
    /// Names of the settings with `role`.
    [[nodiscard]] std::vector<std::string> names(SettingRole role) const;
};

/// One collective a tuner should force to reproduce what the point's changes did: the point's
/// own effective choice for it (what was measured).
struct TunerChoice {
    std::string collective;  ///< "allreduce", "allgather"
    std::string algo;        ///< lower case: "ring", "tree"
    std::string proto;       ///< lower case: "ll", "simple"
    int channels = 0;        ///< the measured count when a change touched channels, else 0 (NCCL's own)
};

/// The tuner choices of a point with `settings` (its effective_nccl as stored): one per
/// collective a change touched, in the order NCCL reported them. nullopt when the point recorded
/// no effective choice, or a change does not say which collectives it touched (the exporter then
/// works from the values as written).
[[nodiscard]] std::optional<std::vector<TunerChoice>> tuner_choices(std::string_view effective_nccl,
                                                                    const PointSettings& settings);

/// NCCL's defaults point of `table` with the same other parameters (the non-NCCL axis values)
/// as `row`; nullptr when the sweep has none (baseline: none, no NCCL axes, another workload).
[[nodiscard]] const ExperimentRow* defaults_row_for(const SweepTable& table, const ExperimentRow& row);

/// Judges every environment setting of `row` (docs/results.md "Settings that count"). `metric`
/// decides "no significant difference" for inertness (diff's test and 3% threshold, the
/// threshold alone with too few samples).
[[nodiscard]] PointSettings judge_settings(const SweepTable& table, const ExperimentRow& row,
                                           const MetricChoice& metric);

}  // namespace ncclsweep::results
