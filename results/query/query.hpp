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
#include "results/query/settings.hpp"
#include "results/query/table.hpp"
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

/// The engine backend that produced `experiment`'s numbers: its own `backend` parameter when
/// that is not "auto", else the sweep's recorded backend ("" = unknown or a command workload).
[[nodiscard]] std::string point_backend(const SweepInfo& sweep, const Experiment& experiment);

/// "SIMULATED" wording for people when `backend` is "sim", "" otherwise.
[[nodiscard]] std::string simulated_note(std::string_view backend);

/// The best experiment of a sweep by one metric, and how sure that is (docs/statistics.md
/// "Best"): rank ok experiments by median; those diff's test and threshold cannot tell from the
/// top one form its tie group; the recommendation is the point of the group with the fewest
/// settings changed from NCCL's defaults, then the fewest set, then plan order; it is stated
/// against NCCL's defaults point of its workload.
struct BestExperiment {
    SweepInfo sweep;                         ///< the sweep it belongs to
    MetricChoice metric;                     ///< what "best" means
    ExperimentRow best;                      ///< the recommendation (see above)
    PointSettings settings;                  ///< the recommendation's settings, judged once
    int top_id = 0;                          ///< the experiment with the best median
    std::vector<ExperimentRow> tie_group;    ///< best median first; size 1 when nothing ties
    std::vector<int> tie_changed;            ///< settings changed of each tie_group member
    bool decided_by_threshold = false;       ///< some pair had too few samples for the U test
    std::size_t candidates = 0;              ///< ok experiments that have the metric
    std::optional<ExperimentRow> runner_up;  ///< the best point outside the tie group
    /// The best ok what-if point (a server change, e.g. the fused all-reduce): left out of the
    /// ranking above, shown beside it (what_if_line).
    std::optional<ExperimentRow> what_if;
    /// Runner-up (base) vs the top point (new) with the diff defaults (alpha 0.05, threshold 3%).
    std::optional<stats::Comparison> margin;
    /// NCCL's defaults point with the recommendation's other parameters (absent: none ran ok).
    std::optional<ExperimentRow> defaults;
    /// Why `defaults` is absent ("baseline: none", "failed (nccl)", ...); "" when present.
    std::string defaults_missing;
    /// NCCL's defaults (base) vs the recommendation (new) with the diff defaults.
    std::optional<stats::Comparison> versus_defaults;
    /// True when other points are indistinguishable from the top one.
    [[nodiscard]] bool tie() const { return tie_group.size() > 1; }
    /// The recommendation's gain over NCCL's defaults in the metric's good direction (0.086 =
    /// 8.6 % better); nullopt without a comparison.
    [[nodiscard]] std::optional<double> gain_over_defaults() const;
};

/// The recommendation in one line, the same wherever it is shown (run, `results best`, the
/// report, export headers): "experiment 6 (NCCL_ALGO=allreduce:tree fusion=on): +8.6 % over
/// NCCL's defaults (experiment 10, p = 0.002)" or "experiment 10 (defaults fusion=on): no
/// setting beats NCCL's defaults: leave NCCL alone".
[[nodiscard]] std::string recommendation_text(const BestExperiment& best);

/// How the tie was resolved, one sentence ("" when nothing ties): "5 points (2, 4, 6, 8, 10)
/// cannot be told apart ...; the rule: fewest settings changed from NCCL's defaults, then fewest
/// set, then plan order -> experiment 10 (0 changed)".
[[nodiscard]] std::string tie_text(const BestExperiment& best);

/// Whether diff (alpha, threshold) cannot tell `point` from `top` for `metric`: its verdict
/// is "~", or the samples are too few for the U test and the medians differ by no more than
/// the threshold (`*by_threshold` is then set).
[[nodiscard]] bool indistinguishable(const MetricSummary& point, const MetricSummary& top,
                                     const MetricChoice& metric, double alpha, double threshold,
                                     bool* by_threshold = nullptr);

/// The best experiment by `metric` under the one rule above (diff defaults alpha 0.05 and
/// threshold 3%). What-if points (ExperimentRow::what_if) are never it: the best of them is
/// `what_if`. bad_input when the metric is not recorded or no ok experiment has it (the message
/// says what to look at).
[[nodiscard]] Result<BestExperiment> best_experiment(const SweepTable& table, const MetricChoice& metric);

}  // namespace ncclsweep::results
