#pragma once
// Sweep tables for `ncclsweep results`: every experiment of a sweep with its changed
// parameters, a median + 95% interval + n per metric (core/stats), status, failure class,
// one-line diagnosis and effective NCCL config; sorting by a metric and the best experiment.
// Pure functions over what Store::load_experiments returns, plus thin loaders.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/experiment.hpp"
#include "core/result.hpp"
#include "core/spec/metric.hpp"
#include "core/stats/stats.hpp"
#include "results/store/records.hpp"

namespace ncclsweep::results {

class Store;

/// Default minimum effect that counts as a change (core/stats: diff, best and the race share it).
inline constexpr double k_default_threshold = stats::k_default_threshold;
/// Default significance level of the U test (core/stats).
inline constexpr double k_default_alpha = stats::k_default_alpha;

/// Which way `metric` is good when nothing declares it: core default_direction (docs/spec.md
/// "Metrics"). A sweep's stored definitions win (resolve_metric); `name:lower` /
/// `name:higher` on the command line wins over both (parse_metric_choice).
[[nodiscard]] stats::Direction metric_direction(std::string_view metric);

/// "higher is better" or "lower is better".
[[nodiscard]] std::string_view direction_text(stats::Direction direction);

/// A metric chosen on the command line (core/spec/metric.hpp).
using spec::MetricChoice;
using spec::parse_metric_choice;

/// `choice` as `sweep` defines its metric: unless the choice named a direction itself, the
/// direction comes from the sweep's stored definition (spec or engine), else the default rule.
[[nodiscard]] MetricChoice resolve_metric(const MetricChoice& choice, const SweepRecord& sweep);

/// One metric of one experiment: its samples and their median with a 95% interval.
struct MetricSummary {
    std::string metric;          ///< metric name
    std::vector<double> values;  ///< the samples, in repeat order
    stats::Summary summary;      ///< n, median, ci (absent below 6 samples), ...
};

/// One experiment as `results show` lists it.
struct ExperimentRow {
    int exp_id = 0;                   ///< the planner's id within the sweep
    std::string key;                  ///< canonical key (matches across sweeps)
    std::string canonical;            ///< sorted "a=1;B=2" text of the key
    std::vector<Assignment> params;   ///< every axis value of the point
    std::vector<Assignment> changed;  ///< the values of the sweep's varying parameters ("-" = unset)
    ExperimentStatus status = ExperimentStatus::pending;
    std::string failure_class;   ///< "" when ok
    std::string diagnosis;       ///< one line (core/text.hpp first_line)
    std::string effective_nccl;  ///< what NCCL actually used ("" = not seen)
    /// What the engine's collective times rest on: "calibrated", "relative", "modelled" ("" =
    /// the engine did not say; docs/engine.md "Pricing").
    std::string collective_times;
    /// It ran a kernel no NCCL setting deploys (tpverify's fused all-reduce, is_what_if): shown as a
    /// what-if, never recommended.
    bool what_if = false;
    int attempts = 0;                    ///< how many times it was started
    std::optional<double> total_s;       ///< seconds start to end, when it ended
    std::vector<MetricSummary> metrics;  ///< one per metric recorded, sorted by name
    std::vector<std::string> inert;      ///< settings NCCL ignores for this point (core inert_settings)
    /// Settings that count for "simplest": the point's parameters that are set (not "" or
    /// "unset") and not inert.
    [[nodiscard]] int settings_that_count() const;
    /// The summary of `metric`, or nullptr when this experiment has no sample of it.
    [[nodiscard]] const MetricSummary* metric(std::string_view metric) const;
};

/// A sweep as a table: its bookkeeping, its varying parameters and one row per experiment.
struct SweepTable {
    SweepInfo sweep;                   ///< id, name, tag, target, times, counts
    std::vector<std::string> varying;  ///< parameters whose value differs between experiments
    std::vector<std::string> metrics;  ///< every metric recorded in the sweep, sorted
    std::vector<std::string> columns;  ///< the metrics a table shows (see default_columns)
    std::vector<ExperimentRow> rows;   ///< experiment id order unless sorted
};

/// Names of the parameters that differ between `experiments` (or are missing in some), in
/// first-seen order. With a single experiment, all of its parameters.
[[nodiscard]] std::vector<std::string> varying_parameters(std::span<const StoredExperiment> experiments);

/// The same over bare parameter lists (e.g. the experiments a diff matched).
[[nodiscard]] std::vector<std::string> varying_parameters(
    std::span<const std::vector<Assignment>* const> params);

/// The table of one sweep. Samples are summarized with stats::summarize.
[[nodiscard]] SweepTable build_sweep_table(const SweepInfo& sweep,
                                           std::span<const StoredExperiment> experiments);

/// The same, taking the experiments over (moves their strings instead of copying them; what
/// load_sweep_table uses for large sweeps).
[[nodiscard]] SweepTable build_sweep_table(const SweepInfo& sweep,
                                           std::vector<StoredExperiment>&& experiments);

/// Resolves `ref` ("17", "latest", "latest:TAG~1", ...) and builds its table. Errors come from
/// the store (bad reference: bad_input; database: infrastructure).
[[nodiscard]] Result<SweepTable> load_sweep_table(Store& store, std::string_view ref);

/// Metrics a table shows by default: tok_s and verify_us_p50 when recorded, else the first
/// three recorded metrics.
[[nodiscard]] std::vector<std::string> default_columns(std::span<const std::string> recorded);

/// Checks that `metric` is recorded in the sweep; the error lists the recorded metrics.
[[nodiscard]] Result<void> require_metric(const SweepTable& table, std::string_view metric);

/// Sorts rows best first by the median of `metric` (ties and rows without it keep id order,
/// rows without it last) and puts `metric` first among the columns. bad_input when the sweep
/// has no sample of `metric`.
[[nodiscard]] Result<void> sort_rows(SweepTable& table, const MetricChoice& metric);

/// The settings NCCL ignores for `experiment` (core inert_settings over the spec stored with
/// `sweep`; empty when this build cannot read that spec).
[[nodiscard]] std::vector<std::string> inert_settings_of(const SweepInfo& sweep,
                                                         const Experiment& experiment);

/// The engine backend that produced `experiment`'s numbers: its own `backend` parameter when
/// that is not "auto", else the sweep's recorded backend ("" = unknown or a command workload).
[[nodiscard]] std::string point_backend(const SweepInfo& sweep, const Experiment& experiment);

/// "SIMULATED" wording for people when `backend` is "sim", "" otherwise.
[[nodiscard]] std::string simulated_note(std::string_view backend);

/// The best experiment of a sweep by one metric, and how sure that is (docs/statistics.md
/// "Best"): rank ok experiments by median; those diff's test and threshold cannot tell from the
/// top one form its tie group; the recommendation is the simplest point of the group.
struct BestExperiment {
    SweepInfo sweep;                         ///< the sweep it belongs to
    MetricChoice metric;                     ///< what "best" means
    ExperimentRow best;                      ///< the recommendation: simplest of the tie group
    int top_id = 0;                          ///< the experiment with the best median
    std::vector<ExperimentRow> tie_group;    ///< best median first; size 1 when nothing ties
    bool decided_by_threshold = false;       ///< some pair had too few samples for the U test
    std::size_t candidates = 0;              ///< ok experiments that have the metric
    std::optional<ExperimentRow> runner_up;  ///< the best point outside the tie group
    /// The best ok what-if point (a server change, e.g. the fused all-reduce): left out of the
    /// ranking above, shown beside it (what_if_line).
    std::optional<ExperimentRow> what_if;
    /// Runner-up (base) vs the top point (new) with the diff defaults (alpha 0.05, threshold 3%).
    std::optional<stats::Comparison> margin;
    /// True when other points are indistinguishable from the top one.
    [[nodiscard]] bool tie() const { return tie_group.size() > 1; }
};

/// Whether diff (alpha, threshold) cannot tell `point` from `top` for `metric`: its verdict
/// is "~", or the samples are too few for the U test and the medians differ by no more than
/// the threshold (`*by_threshold` is then set).
[[nodiscard]] bool indistinguishable(const MetricSummary& point, const MetricSummary& top,
                                     const MetricChoice& metric, double alpha, double threshold,
                                     bool* by_threshold = nullptr);

/// The best experiment by `metric` under the one rule above (diff defaults alpha 0.05 and
/// threshold 3%); ties in simplicity go to the better median, then the lower id. What-if points
/// (ExperimentRow::what_if) are never it: the best of them is `what_if`. bad_input when
/// the metric is not recorded or no ok experiment has it (the message says what to look at).
[[nodiscard]] Result<BestExperiment> best_experiment(const SweepTable& table, const MetricChoice& metric);

}  // namespace ncclsweep::results
