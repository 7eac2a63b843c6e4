#pragma once
// `ncclsweep diff BASE NEW`: experiments matched by canonical key, per metric medians, delta,
// Mann–Whitney p and a benchstat-like verdict (core/stats compare: significant AND larger than
// the threshold), status changes (ok -> failed is a regression), points on one side only, and a
// geometric-mean summary per metric. Pure functions over two SweepTables, plus a loader.
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/stats/stats.hpp"
#include "results/query/query.hpp"

namespace ncclsweep::results {

/// Settings of a diff.
struct DiffOptions {
    std::vector<MetricChoice> metrics{{"tok_s", stats::Direction::higher_is_better}};  ///< compared metrics
    double alpha = k_default_alpha;          ///< significance level, in (0, 1)
    double threshold = k_default_threshold;  ///< minimum |delta| fraction that counts
};

/// One metric of one matched experiment.
struct MetricDiff {
    MetricChoice metric;                                 ///< name and direction
    std::optional<stats::Comparison> comparison;         ///< absent when the experiment was not compared
    stats::Verdict verdict = stats::Verdict::no_change;  ///< the comparison's verdict (after Holm)
    /// Holm-adjusted p over every comparison of the diff (NaN when the test could not be run).
    double p_adjusted = std::numeric_limits<double>::quiet_NaN();
    /// Robust relative noise of one run here: the larger of the two sides' (NaN below 2 samples).
    double noise = std::numeric_limits<double>::quiet_NaN();
    /// The same with the small-sample correction (stats::relative_noise_corrected): what the
    /// repeats hint sizes for.
    double noise_corrected = std::numeric_limits<double>::quiet_NaN();
    /// The smallest relative change this comparison could have caught in 90 % of nights: the
    /// larger of the threshold and the U test's detectable shift at alpha / (comparisons) with
    /// these sample sizes and noise; infinity when no p at these sizes can pass Holm.
    double detectable = std::numeric_limits<double>::quiet_NaN();
};

/// One experiment present in both sweeps.
struct ExperimentDiff {
    std::string key;                  ///< canonical key both share
    std::string canonical;            ///< its "a=1;B=2" text
    std::vector<Assignment> changed;  ///< values of the varying parameters (of either sweep)
    int base_id = 0;                  ///< experiment id in the base sweep
    int new_id = 0;                   ///< experiment id in the new sweep
    ExperimentStatus base_status = ExperimentStatus::pending;
    ExperimentStatus new_status = ExperimentStatus::pending;
    std::string base_failure_class;  ///< "" when ok
    std::string new_failure_class;   ///< "" when ok
    std::string new_diagnosis;       ///< one line, for a new failure
    /// Verdict from the status alone: regression (ok -> failed/timed_out), improvement
    /// (failed/timed_out -> ok), insufficient_samples (a side not measured: pending, running,
    /// infra_error, skipped), no_change otherwise (metrics then decide when both are ok).
    stats::Verdict status_verdict = stats::Verdict::no_change;
    std::string status_note;          ///< e.g. "ok -> failed (graph_capture)"; "" when both ok
    std::vector<MetricDiff> metrics;  ///< one per compared metric (empty unless both ok)
    /// Overall: regression if the status or any metric regressed, else improvement if any
    /// improved, else insufficient_samples if any was, else no_change.
    [[nodiscard]] stats::Verdict verdict() const;
};

/// An experiment present in one sweep only.
struct UnmatchedExperiment {
    int exp_id = 0;         ///< id in its sweep
    std::string key;        ///< canonical key
    std::string canonical;  ///< "a=1;B=2"
    ExperimentStatus status = ExperimentStatus::pending;
};

/// Geometric mean of new/base medians of one metric over experiments ok on both sides.
struct GeomeanSummary {
    MetricChoice metric;          ///< name and direction
    double ratio = 0;             ///< geomean(new median / base median); NaN when no experiment qualifies
    std::size_t experiments = 0;  ///< how many experiments entered it
};

/// How a diff keeps false alarms down and what it could see (docs/statistics.md "diff").
struct DiffPower {
    int comparisons = 0;  ///< metric comparisons Holm's correction ran over (tests that could run)
    double noise =
        std::numeric_limits<double>::quiet_NaN();  ///< the noisiest experiment's, corrected, first metric
    /// Repeats per side that catch a 5 % change of one experiment in 90 % of nights at `noise`,
    /// with Holm over `comparisons`; 0 when unknown (no noise estimate) or beyond 1000.
    std::size_t repeats_for_5_percent = 0;
};

/// Verdict counts over matched experiments (each counted once, by ExperimentDiff::verdict).
struct DiffCounts {
    int regressions = 0;
    int improvements = 0;
    int unchanged = 0;
    int insufficient = 0;
};

/// The whole diff of two sweeps.
struct SweepDiff {
    SweepInfo base;                                 ///< the base sweep
    SweepInfo candidate;                            ///< the new sweep
    DiffOptions options;                            ///< what was asked
    std::vector<std::string> varying;               ///< parameters shown per experiment
    std::vector<ExperimentDiff> experiments;        ///< matched, in new-sweep id order
    std::vector<UnmatchedExperiment> only_in_base;  ///< keys the new sweep lacks
    std::vector<UnmatchedExperiment> only_in_new;   ///< keys the base sweep lacks
    std::vector<GeomeanSummary> geomeans;           ///< one per metric
    DiffCounts counts;                              ///< verdict counts
    DiffPower power;                                ///< Holm's family and the repeats hint
    /// Settings the two sweeps ran with that differ, one sentence each ("topology: pcie-gen5 ->
    /// pcie-gen4"), filled by diff_sweeps (setting_differences); empty when they ran alike.
    std::vector<std::string> settings_changed;
    /// True when any matched experiment regressed (what --fail-on-regression gates on).
    [[nodiscard]] bool has_regression() const { return counts.regressions > 0; }
};

/// Compares two sweep tables. bad_input when a metric is recorded in neither sweep (the message
/// lists what is), or on alpha/threshold outside their ranges.
[[nodiscard]] Result<SweepDiff> diff_tables(const SweepTable& base, const SweepTable& candidate,
                                            const DiffOptions& options);

/// A sweep's fixed settings: the engine args and environment that every experiment of it shares
/// (its first experiment's, minus the parameters that vary), "topology" -> "pcie-gen5".
using FixedSettings = std::vector<std::pair<std::string, std::string>>;

/// The settings of two recorded sweeps that differ (see SweepDiff::settings_changed): fixed
/// engine args and env (`--set` included), the plan's other parts (target, repeats, timeouts,
/// ...), backend and version.
[[nodiscard]] std::vector<std::string> setting_differences(const SweepRecord& base,
                                                           const FixedSettings& base_fixed,
                                                           const SweepRecord& candidate,
                                                           const FixedSettings& candidate_fixed);

/// Loads both references from `store` and diffs them.
[[nodiscard]] Result<SweepDiff> diff_sweeps(Store& store, std::string_view base_ref, std::string_view new_ref,
                                            const DiffOptions& options);

/// Short word for a verdict in tables: "regression", "improvement", "~", "too few samples".
[[nodiscard]] std::string_view verdict_word(stats::Verdict verdict);

}  // namespace ncclsweep::results
