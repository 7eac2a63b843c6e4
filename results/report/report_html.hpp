#pragma once
// The visual report of `ncclsweep report` (docs/export.md): one self-contained HTML file with
// inline CSS and server-side SVG (no script, no network): metric bars with intervals, a heat
// map over two axes, failures by class and, against a base sweep, per-experiment change.
// build_report computes what is drawn; render_html only formats it (every text escaped).
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/stats/stats.hpp"
#include "results/export/exports.hpp"

namespace ncclsweep::results::report {

/// What the report shows.
struct ReportOptions {
    std::string metric = "tok_s";  ///< the metric of bars, heat map and deltas
    std::vector<std::string>
        heatmap_axes;            ///< two parameter names; empty = the two that explain most variance
    std::size_t max_bars = 300;  ///< more experiments: the best max_bars are drawn
};

/// One experiment as a bar (or a failure marker when it has no value).
struct Bar {
    int id = 0;
    std::string label;                          ///< varying parameters, "NCCL_ALGO=Ring tokens=8"
    std::string status;                         ///< ok, failed, ...
    std::string failure_class;                  ///< "" when ok
    std::optional<exports::MetricStats> stats;  ///< absent: nothing measured
    bool best = false;                          ///< the best experiment of the sweep
    bool dropped = false;                       ///< dropped by a search: drawn grey, with its samples
    std::string collective_times;               ///< calibrated | relative | modelled ("" = not said)
    bool what_if = false;                       ///< needs a server change (the fused all-reduce)
};

/// One cell of the heat map: the best median over the experiments at (x, y).
struct HeatCell {
    std::optional<double> value;  ///< best median among the cell's ok experiments
    int experiments = 0;          ///< experiments at this (x, y)
    int failed = 0;               ///< of which failed/timed out/infra_error
    std::string failure_class;    ///< most common failure class of the cell ("" when none)
};

/// A heat map over two parameters.
struct Heatmap {
    std::string x_axis, y_axis;
    std::vector<std::string> x_values, y_values;
    std::vector<HeatCell> cells;  ///< row-major: cells[y * x_values.size() + x]
    bool aggregated = false;      ///< some cell holds several experiments (other axes vary)
    /// The colour scale's reference: the best median of the whole sweep (not just of the map),
    /// so a map of slow points is coloured slow; and the experiment that has it.
    std::optional<double> reference;
    int reference_id = 0;
    /// Experiments that lack one of the two axes (an include point's extra key), listed beside the
    /// map with their values: nothing is left out without a word.
    std::vector<std::string> off_map;
    bool chosen_by_variance = false;  ///< the axes were picked by explained variance (no --heatmap)
    double x_share = 0, y_share = 0;  ///< share of the variance of log(median) each axis explains
};

/// A failed experiment in the failure list.
struct FailureEntry {
    int id = 0;
    std::string label;
    std::string status;
    std::string diagnosis_line;
};

/// All failures of one class.
struct FailureGroup {
    std::string failure_class;
    std::vector<FailureEntry> entries;
};

/// One experiment matched by canonical key between base and new sweep.
struct DeltaRow {
    int id = 0;       ///< id in the new sweep
    int base_id = 0;  ///< id in the base sweep
    std::string label;
    std::string base_status, new_status;
    std::optional<double> base_median, new_median;
    std::optional<double> delta;  ///< (new - base) / |base|
    std::string verdict;  ///< improvement, regression, no_change, insufficient_samples, or a status change
};

/// Everything the page draws.
struct ReportData {
    exports::SweepData const* sweep = nullptr;
    exports::SweepData const* base = nullptr;  ///< --vs, or null
    std::string metric;
    stats::Direction direction = stats::Direction::higher_is_better;
    std::vector<Bar> bars;
    std::size_t bars_omitted = 0;  ///< experiments not drawn because of max_bars
    std::optional<Heatmap> heatmap;
    std::string heatmap_note;  ///< why there is no heat map
    std::vector<FailureGroup> failures;
    std::vector<FailureEntry> left_out;  ///< pruned and dropped by a search, with the reason
    std::string recommendation;          ///< results best's line (recommendation_text), "" without one
    std::string tie;                     ///< how its tie was resolved (tie_text), "" without a tie
    std::vector<DeltaRow> deltas;
    int only_in_base = 0, only_in_new = 0;
    /// Under the bars: "The recommendation, experiment N, is NOT calibrated: ..." when it is not,
    /// and the what-if line (results/query/what_if.hpp); "" each when none.
    std::string caveat, what_if;
};

/// Computes the report. bad_input for a heat-map axis that is not a parameter of the sweep
/// (naming those that are) or not exactly two axes.
[[nodiscard]] Result<ReportData> build_report(const exports::SweepData& sweep, const exports::SweepData* base,
                                              const ReportOptions& options);

/// The whole HTML document.
[[nodiscard]] std::string render_html(const ReportData& data);

/// SVG of the bars with whiskers (CI or min..max) and failure markers.
[[nodiscard]] std::string bars_svg(const ReportData& data);
/// SVG of the heat map (failed cells marked with their class).
[[nodiscard]] std::string heatmap_svg(const Heatmap& map, stats::Direction direction);
/// SVG of the per-experiment change in percent against the base.
[[nodiscard]] std::string delta_svg(const ReportData& data);
/// "#rrggbb" on a perceptual colour ramp for t in [0, 1] (dark blue to yellow).
[[nodiscard]] std::string ramp_colour(double t);
/// `text` broken at spaces into lines of at most `max_chars` characters; a word longer than
/// that is broken after a '=', ',', ':' or ';' inside it (only where it has none, at the limit).
[[nodiscard]] std::vector<std::string> wrap_words(const std::string& text, std::size_t max_chars);
/// Span of the heat map's colour scale: the largest shortfall of a cell from the reference (the
/// sweep's best median; the best cell without one) as a fraction of it, but at least 5% (so 0.6%
/// apart never looks like the whole ramp), rounded up to a 1-2-5 step.
[[nodiscard]] double heatmap_span(const Heatmap& map, stats::Direction direction);

}  // namespace ncclsweep::results::report
