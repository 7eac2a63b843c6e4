#pragma once
// The table of one sweep (results/query): every experiment with its changed parameters, a
// median + 95% interval + n per metric, status, diagnosis and effective NCCL config.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/experiment.hpp"
#include "core/spec/metric.hpp"
#include "core/stats/stats.hpp"
#include "results/store/records.hpp"

namespace ncclsweep::results {

/// A metric chosen on the command line (core/spec/metric.hpp).
using spec::MetricChoice;
using spec::parse_metric_choice;

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
    bool defaults = false;               ///< NCCL's defaults point (core/plan/baseline.hpp)
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
    /// The spec's zip groups (parameters that only change together), when its stored spec reads.
    std::vector<std::vector<std::string>> zip;
};

}  // namespace ncclsweep::results
