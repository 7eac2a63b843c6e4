#pragma once
// Helpers for the results/diff/printer tests: stored experiments and sweeps with known content,
// built in memory (no database) so every number in a test or golden file is chosen here.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "results/store/records.hpp"

namespace ncclsweep::test {

/// A stored experiment with `params`, `status` and tok_s / verify_us_p50 samples (one per repeat).
inline results::StoredExperiment stored_experiment(int id, std::vector<Assignment> params,
                                                   results::ExperimentStatus status,
                                                   std::vector<double> tok_s,
                                                   std::vector<double> verify_us = {}) {
    results::StoredExperiment s;
    Experiment& e = s.experiment;
    e.id = id;
    e.params = std::move(params);
    std::vector<Assignment> sorted = e.params;
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [name, value] : sorted)
        e.canonical += (e.canonical.empty() ? "" : ";") + name + "=" + value;
    e.key = "key:" + e.canonical;
    s.outcome.status = status;
    s.attempts = 1;
    for (std::size_t r = 0; r < tok_s.size(); ++r)
        s.outcome.samples.push_back({static_cast<int>(r), "tok_s", tok_s[r]});
    for (std::size_t r = 0; r < verify_us.size(); ++r)
        s.outcome.samples.push_back({static_cast<int>(r), "verify_us_p50", verify_us[r]});
    if (status == results::ExperimentStatus::ok) {
        s.outcome.effective_nccl = "AllReduce: Ring/LL, 2 channels";
        s.outcome.timings.total_s = 1.5;
    }
    return s;
}

/// The same experiment as failed with `failure_class` and a multi-line diagnosis.
inline results::StoredExperiment failed_experiment(
    int id, std::vector<Assignment> params, std::string failure_class,
    results::ExperimentStatus status = results::ExperimentStatus::failed) {
    auto s = stored_experiment(id, std::move(params), status, {});
    s.outcome.failure_class = failure_class;
    s.outcome.diagnosis =
        failure_class + ": the process reported an error\nline (rule): details\n--- before ---\n  x\n";
    return s;
}

/// A sweep record with fixed times, so printed output is reproducible.
inline results::SweepInfo sweep_info(std::int64_t id, std::string name, std::string tag = {}) {
    results::SweepInfo info;
    info.id = id;
    info.record.name = std::move(name);
    info.record.tag = std::move(tag);
    info.record.target = "local";
    info.record.spec_path = "experiments/nightly.yaml";
    info.record.repeats = 5;
    info.state = results::SweepState::done;
    info.created_at = "2025-11-29T02:00:0" + std::to_string(id % 10) + ".000Z";
    info.started_at = info.created_at;
    info.ended_at = "2025-11-29T02:01:0" + std::to_string(id % 10) + ".000Z";
    return info;
}

/// `info` with counts filled from `experiments`.
inline results::SweepInfo with_counts(results::SweepInfo info,
                                      const std::vector<results::StoredExperiment>& experiments) {
    info.counts = {};
    for (const auto& e : experiments) ++info.counts.at(e.outcome.status);
    return info;
}

/// Five samples around `center` (+-0.2%), distinct, so a U test between distant centers is exact.
inline std::vector<double> around(double center, int n = 5) {
    std::vector<double> values;
    for (int i = 0; i < n; ++i) values.push_back(center * (1 + 0.001 * (i - n / 2)));
    return values;
}

}  // namespace ncclsweep::test
