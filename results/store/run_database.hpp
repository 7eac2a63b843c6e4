#pragma once
// Where `ncclsweep run` records its sweep (core/sweep/run_policy.hpp's RunRecord): the SQLite
// database, opened when the run's checks have passed, written through a SweepWriter.
#include <cstdint>
#include <optional>
#include <string>

#include "core/sweep/run_policy.hpp"
#include "results/store/store.hpp"
#include "results/store/sweep_writer.hpp"

namespace ncclsweep::results {

/// The database at one path. It holds the open Store, so it is neither copied nor moved.
class RunDatabase final : public RunRecord {
public:
    explicit RunDatabase(std::string path) : m_path(std::move(path)) {}
    RunDatabase(const RunDatabase&) = delete;
    RunDatabase& operator=(const RunDatabase&) = delete;

    /// Opens the database once (created when missing); later calls return the same writer.
    Result<SweepStore*> open() override;
    Result<std::int64_t> resume_candidate(const std::string& ref, const std::string& name) override;
    [[nodiscard]] std::string where() const override { return m_path; }
    [[nodiscard]] std::int64_t recorded_sweep() const override { return m_writer ? m_writer->sweep_id() : 0; }
    Result<std::optional<NoiseHistory>> previous_samples(const std::string& name, const std::string& tag,
                                                         const std::string& metric,
                                                         std::int64_t except) override;
    Result<std::optional<int>> recorded_repeats(std::int64_t id) override;

    /// The open store (nullptr before open()), for the queries of the summary.
    [[nodiscard]] Store* store() { return m_store ? &*m_store : nullptr; }

private:
    std::string m_path;
    std::optional<Store> m_store;
    std::optional<SweepWriter> m_writer;
};

}  // namespace ncclsweep::results
