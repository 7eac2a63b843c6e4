#pragma once
// An in-memory SweepStore for unit tests of the sweep session: it keeps sweeps and outcomes
// like the SQLite store does and logs every write in order, so a test can check what was
// written, in which order, and that a refused resume wrote nothing.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/sweep/sweep_session.hpp"

namespace ncclsweep::test {

/// One sweep as the fake keeps it.
struct FakeSweep {
    NewSweep sweep;
    std::vector<Experiment> experiments;
    std::map<int, ExperimentReport> finished;  ///< by exp_id
    std::map<int, int> attempts;               ///< last attempt started, by exp_id
    std::string state = "running";
    std::string reason;
    int resumes = 0;
    std::vector<std::pair<std::string, std::string>> notes;
    std::map<int, std::string> scheduled;  ///< scheduler tasks by exp_id (batch targets)
};

class FakeStore final : public SweepStore {
public:
    std::map<std::int64_t, FakeSweep> sweeps;
    std::vector<std::string> writes;    ///< every write, in order ("create 1", "started 2#1", ...)
    std::optional<Error> reopen_error;  ///< reopen fails with it (e.g. a live runner)
    int fail_finished_at = 0;           ///< the n-th experiment_finished fails (0 = never)

    /// Adds a sweep as if an earlier run had created it; returns its id.
    std::int64_t seed(FakeSweep sweep) {
        const std::int64_t id = static_cast<std::int64_t>(sweeps.size()) + 1;
        sweeps[id] = std::move(sweep);
        return id;
    }

    Result<std::int64_t> create(const NewSweep& sweep, const std::vector<Experiment>& experiments) override {
        const std::int64_t id = static_cast<std::int64_t>(sweeps.size()) + 1;
        sweeps[id] = FakeSweep{sweep, experiments, {}, {}, "running", "", 0, {}, {}};
        m_current = id;
        writes.push_back("create " + std::to_string(id));
        return id;
    }
    Result<StoredPlan> load_plan(std::int64_t id) override {
        auto it = sweeps.find(id);
        if (it == sweeps.end()) return Error::bad_input("no sweep " + std::to_string(id));
        return StoredPlan{it->second.experiments, it->second.sweep.fingerprint};
    }
    Result<void> reopen(std::int64_t id) override {
        if (reopen_error) return *reopen_error;
        auto& sweep = sweeps.at(id);
        sweep.state = "running";
        ++sweep.resumes;
        // Like the store: experiments started but not finished go back to pending.
        m_current = id;
        writes.push_back("reopen " + std::to_string(id));
        return success();
    }
    Result<std::vector<int>> finished_ids() override {
        std::vector<int> ids;
        for (const auto& [id, report] : sweeps.at(m_current).finished)
            if (report.status != RunStatus::infra_error) ids.push_back(id);
        return ids;
    }
    Result<std::vector<ExperimentReport>> finished_reports() override {
        std::vector<ExperimentReport> reports;
        for (const auto& [id, report] : sweeps.at(m_current).finished)
            if (report.status != RunStatus::infra_error) reports.push_back(report);
        return reports;
    }
    Result<void> note(const std::string& code, const std::string& message) override {
        sweeps.at(m_current).notes.emplace_back(code, message);
        writes.push_back("note " + code);
        return success();
    }
    Result<void> finish(SweepEnd end, const std::string& reason) override {
        auto& sweep = sweeps.at(m_current);
        sweep.state = end == SweepEnd::done          ? "done"
                      : end == SweepEnd::interrupted ? "interrupted"
                                                     : "failed";
        sweep.reason = reason;
        writes.push_back("finish " + sweep.state);
        return success();
    }
    Result<void> experiment_started(int exp_id, int attempt) override {
        sweeps.at(m_current).attempts[exp_id] = attempt;
        writes.push_back("started " + std::to_string(exp_id) + "#" + std::to_string(attempt));
        return success();
    }
    Result<void> experiment_finished(const ExperimentReport& report) override {
        writes.push_back("finished " + std::to_string(report.exp_id) + " " +
                         std::string(to_string(report.status)));
        if (fail_finished_at && ++m_finished_calls == fail_finished_at)
            return Error::infrastructure("database is full (fake)");
        sweeps.at(m_current).finished[report.exp_id] = report;
        return success();
    }

    Result<void> experiment_scheduled(int exp_id, const std::string& tasks) override {
        sweeps.at(m_current).scheduled[exp_id] = tasks;
        writes.push_back("scheduled " + std::to_string(exp_id) + " " + tasks);
        return success();
    }
    Result<std::map<int, std::string>> scheduled_tasks() override { return sweeps.at(m_current).scheduled; }

    /// The sweep being written.
    [[nodiscard]] FakeSweep& current() { return sweeps.at(m_current); }
    /// Its id (0 before create or reopen).
    [[nodiscard]] std::int64_t current_id() const { return m_current; }

private:
    std::int64_t m_current = 0;
    int m_finished_calls = 0;
};

}  // namespace ncclsweep::test
