#pragma once
// The sweep loop's SweepStore over the SQLite Store: each finished experiment is one
// transaction (record_experiment), so a killed sweep loses at most the experiment in flight.
#include <cstdint>
#include <optional>

#include "core/sweep/sweep_session.hpp"
#include "results/store/store.hpp"

namespace ncclsweep::results {

/// Writes one sweep into a Store (which must outlive it).
class SweepWriter final : public SweepStore {
public:
    explicit SweepWriter(Store& store) : m_store(store) {}

    Result<std::int64_t> create(const NewSweep& sweep, const std::vector<Experiment>& experiments) override;
    Result<StoredPlan> load_plan(std::int64_t id) override;
    Result<void> reopen(std::int64_t id) override;
    Result<std::vector<int>> finished_ids() override;
    Result<std::vector<ExperimentReport>> finished_reports() override;
    Result<void> note(const std::string& code, const std::string& message) override;
    Result<void> finish(SweepEnd end, const std::string& reason) override;
    Result<void> experiment_started(int exp_id, int attempt) override;
    Result<void> experiment_finished(const ExperimentReport& report) override;
    Result<void> experiment_scheduled(int exp_id, const std::string& tasks) override;
    Result<std::map<int, std::string>> scheduled_tasks() override;

    /// The sweep being written (0 before create/resume).
    [[nodiscard]] std::int64_t sweep_id() const { return m_sweep; }

private:
    Store& m_store;
    std::int64_t m_sweep = 0;
};

/// The stored outcome for a report of the sweep loop.
[[nodiscard]] ExperimentOutcome to_outcome(const ExperimentReport& report);

/// The sweep loop's report for a stored experiment that finished (status, class, diagnosis,
/// timings, samples); empty for one that did not (pending, running, infra_error).
[[nodiscard]] std::optional<ExperimentReport> to_report(const StoredExperiment& stored);

}  // namespace ncclsweep::results
