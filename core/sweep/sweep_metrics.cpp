// One run's metrics from what the watcher saw (docs/spec.md "Metrics"): every match of a
// metric, after its warm-up, aggregated as `workload.metrics` says; the phase times and NCCL's
// effective choice.
#include <span>

#include "core/stats/stats.hpp"
#include "core/sweep/sweep_detail.hpp"

namespace ncclsweep::inline sweep::detail {
namespace {

std::optional<double> since(const std::optional<double>& a, const std::optional<double>& b) {
    if (!a || !b) return std::nullopt;
    return *b - *a;
}

}  // namespace

/// One run's value of a metric from all its matches, as `workload.metrics` says (docs/spec.md
/// "Metrics"): the matches after the first `warmup`, their last, median or mean; nullopt when
/// none is left.
std::optional<double> run_value(const std::vector<double>& matches, const MetricExtraction& extraction) {
    if (static_cast<std::size_t>(extraction.warmup) >= matches.size()) return std::nullopt;
    const std::span<const double> kept(matches.data() + extraction.warmup,
                                       matches.size() - extraction.warmup);
    switch (extraction.aggregate) {
        case Aggregate::median:
            return stats::median(kept);
        case Aggregate::mean:
            return stats::mean(kept);
        case Aggregate::last:
            break;
    }
    return kept.back();
}

void fill_from_watcher(ExperimentReport& report, const Watcher& watcher, int repeat,
                       const WorkloadSpec& workload) {
    for (const auto& [name, values] : watcher.metrics()) {
        MetricExtraction extraction;
        for (std::size_t i = 0; i < workload.metrics.size() && i < workload.metric_extraction.size(); ++i)
            if (workload.metrics[i].first == name) extraction = workload.metric_extraction[i];
        if (auto value = run_value(values, extraction)) report.samples.push_back({repeat, name, *value});
    }
    const PhaseTimes& t = watcher.phase_times();
    if (repeat == 0 || !report.ready_s) {
        report.init_s = t.capture_begin ? t.capture_begin : t.ready;
        report.capture_s = since(t.capture_begin, t.capture_end);
        report.ready_s = t.ready;
        report.measure_s = since(t.ready, t.end);
    }
    if (report.effective_nccl.empty()) report.effective_nccl = watcher.effective_nccl().summary();
    if (auto label = watcher.result_text().find("collective_times"); label != watcher.result_text().end())
        report.collective_times = weaker_collective_times(report.collective_times, label->second);
    for (const auto& warning : watcher.warnings())
        if (report.warnings.size() < 20) report.warnings.emplace_back(warning.rule, warning.line);
}

}  // namespace ncclsweep::inline sweep::detail
