// What-if points and the collective-times label in people's words (results/query/what_if.hpp).
#include "results/query/what_if.hpp"

#include <fmt/format.h>

#include <cmath>

namespace ncclsweep::results {

bool is_what_if(const StoredExperiment& experiment) {
    for (const Sample& sample : experiment.outcome.samples)
        if (sample.metric == k_fused_metric) return true;
    return false;
}

std::string collective_times_note(std::string_view label, bool what_if) {
    if (label == "relative")
        return what_if
                   ? "collective times relative: its fused all-reduce is priced from published one-shot "
                     "measurements of another machine"
                   : "collective times relative: NCCL's choice for this point was not measured; the model "
                     "scaled a measured choice";
    if (label == "modelled") return "collective times modelled: NCCL's estimate, nothing measured";
    return {};
}

std::string recommendation_caveat(const ExperimentRow& best) {
    const std::string note = collective_times_note(best.collective_times, best.what_if);
    return note.empty() ? std::string() : "; NOT calibrated: " + note;
}

std::optional<std::string> what_if_line(const BestExperiment& best) {
    if (!best.what_if) return std::nullopt;
    const ExperimentRow& w = *best.what_if;
    const MetricSummary* wm = w.metric(best.metric.name);
    const MetricSummary* bm = best.best.metric(best.metric.name);
    if (!wm || !bm || !(bm->summary.median > 0)) return std::nullopt;
    const bool higher = best.metric.direction == stats::Direction::higher_is_better;
    const double gain =
        higher ? wm->summary.median / bm->summary.median - 1 : 1 - wm->summary.median / bm->summary.median;
    std::string params;
    for (const auto& [name, value] : w.params) params += (params.empty() ? "" : " ") + name + "=" + value;
    std::string detail = fmt::format("experiment {}: {}", w.exp_id, params);
    if (const MetricSummary* fused = w.metric(k_fused_metric))
        detail += fmt::format(", its fused all-reduce at {:.1f} us per call", fused->summary.median);
    if (!w.collective_times.empty()) detail += ", collective times " + w.collective_times;
    const std::string what =
        gain > 0 ? fmt::format("would gain {:+.1f} % {}", 100 * gain, best.metric.name)
                 : fmt::format("would gain nothing ({:+.1f} % {})", 100 * gain, best.metric.name);
    return fmt::format(
        "what-if: a server with a fused all-reduce {} over the recommendation, experiment {} ({}); no NCCL "
        "setting deploys it: the server must run the fused kernel",
        what, best.best.exp_id, detail);
}

}  // namespace ncclsweep::results
