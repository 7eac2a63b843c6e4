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
#include "core/stats.hpp"
#include "results/records.hpp"

namespace ncclsweep::results {

class Store;

/// Default minimum effect that counts as a change: 3% (smaller deltas are "~" even when significant).
inline constexpr double k_default_threshold = 0.03;
/// Default significance level of the U test.
inline constexpr double k_default_alpha = 0.05;

/// Which way `metric` is good, from its name. Rates (holding `tok_s`, `per_s`, `throughput`,
/// `bandwidth`, `gbps`) are higher-is-better; times and spreads (a `_us`, `_ms` or `_ns` word,
/// a trailing `_s`, or `latency`, `ttft`, `itl`, `tpot`, `rsd`) lower-is-better; anything
/// else higher-is-better. `name:lower` / `name:higher` overrides it (parse_metric_choice).
[[nodiscard]] stats::Direction metric_direction(std::string_view metric);

/// "higher is better" or "lower is better".
[[nodiscard]] std::string_view direction_text(stats::Direction direction);

/// A metric chosen on the command line, with the direction that makes it better.
struct MetricChoice {
    std::string name;  ///< e.g. "tok_s"
    stats::Direction direction = stats::Direction::higher_is_better;
    friend bool operator==(const MetricChoice&, const MetricChoice&) = default;
};

/// Parses "tok_s", "verify_us_p50:lower" or "goodput:higher"; without a suffix the direction
/// comes from metric_direction(). bad_input for an empty name or an unknown suffix.
[[nodiscard]] Result<MetricChoice> parse_metric_choice(std::string_view text);

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
    std::string failure_class;           ///< "" when ok
    std::string diagnosis;               ///< one line (core/text.hpp first_line)
    std::string effective_nccl;          ///< what NCCL actually used ("" = not seen)
    int attempts = 0;                    ///< how many times it was started
    std::optional<double> total_s;       ///< seconds start to end, when it ended
    std::vector<MetricSummary> metrics;  ///< one per metric recorded, sorted by name
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

/// The best experiment of a sweep by one metric, and how sure that is.
struct BestExperiment {
    SweepInfo sweep;                         ///< the sweep it belongs to
    MetricChoice metric;                     ///< what "best" means
    ExperimentRow best;                      ///< the ok experiment with the best median
    std::size_t candidates = 0;              ///< ok experiments that have the metric
    std::optional<ExperimentRow> runner_up;  ///< the second best, when there is one
    /// Runner-up (base) vs best (new) with the diff defaults (alpha 0.05, threshold 3%).
    std::optional<stats::Comparison> margin;
};

/// The ok experiment with the best median of `metric` (ties: the lower id). bad_input when the
/// metric is not recorded or no ok experiment has it (the message says what to look at).
[[nodiscard]] Result<BestExperiment> best_experiment(const SweepTable& table, const MetricChoice& metric);

}  // namespace ncclsweep::results
