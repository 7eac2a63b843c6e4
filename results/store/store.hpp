#pragma once
// The SQLite store (docs/results-schema.md): one file, WAL, foreign keys, busy timeout,
// versioned schema. Every experiment is committed with its samples in one transaction when it
// ends, so a sweep killed at any moment (even kill -9) leaves a consistent database.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/experiment.hpp"
#include "core/result.hpp"
#include "results/store/records.hpp"
#include "results/store/sqlite.hpp"

namespace ncclsweep::results {

/// Default database path when neither --db nor NCCLSWEEP_DB is given.
inline constexpr const char* k_default_db_path = "./ncclsweep.db";

/// How hard a commit tries to reach the disk.
enum class Durability {
    full,    ///< synchronous=FULL: a committed experiment survives a crash of the OS or power loss
    normal,  ///< synchronous=NORMAL: survives a crash/kill -9 of ncclsweep; a power loss may drop
             ///< the last commits (the file stays consistent)
};

/// How the store is opened.
enum class Access {
    read_write,  ///< create the file if missing, migrate it if older (sweeps)
    read_only,   ///< queries: the file must exist; an older file is migrated first when writable
};

/// Options of Store::open.
struct StoreOptions {
    Access access = Access::read_write;
    Durability durability = Durability::full;
    std::chrono::milliseconds busy_timeout{5000};  ///< wait this long for another writer
    /// Caps the file at this many pages (SQLITE_FULL beyond it); tests use it to simulate a full disk.
    std::optional<std::int64_t> max_page_count;
    /// Clock for the timestamps the store writes (tests make it deterministic).
    std::function<std::chrono::system_clock::time_point()> clock;
};

/// ISO-8601 UTC with milliseconds, e.g. "2025-11-29T15:33:07.123Z" (the store's time format).
[[nodiscard]] std::string format_timestamp(std::chrono::system_clock::time_point time);

/// The store: one open connection. Move-only. Not thread-safe (one thread per Store).
class Store {
public:
    /// Opens (or creates) the database at `path`. Errors: locked, read-only, not a database,
    /// missing (read_only), newer schema than this build knows: all infrastructure errors.
    [[nodiscard]] static Result<Store> open(const std::string& path, const StoreOptions& options = {});

    // ---- writing a sweep (the sweep loop) ----

    /// Records a new sweep in state `running` and returns its id.
    [[nodiscard]] Result<std::int64_t> create_sweep(const SweepRecord& record);
    /// Records a new sweep and its planned experiments in one transaction (a crash leaves
    /// either both or neither) and returns its id.
    [[nodiscard]] Result<std::int64_t> create_sweep(const SweepRecord& record,
                                                    std::span<const Experiment> experiments);
    /// Adds the planned experiments (status pending) in one transaction.
    [[nodiscard]] Result<void> add_experiments(std::int64_t sweep, std::span<const Experiment> experiments);
    /// Marks experiment `exp_id` running (its `attempt`-th start, 1-based); committed at once.
    [[nodiscard]] Result<void> begin_experiment(std::int64_t sweep, int exp_id, int attempt);
    /// Stores how the experiment ended with all its samples and events, replacing any samples
    /// of an earlier attempt: one transaction, so it is either complete or absent.
    [[nodiscard]] Result<void> record_experiment(std::int64_t sweep, int exp_id,
                                                 const ExperimentOutcome& outcome);
    /// Adds an event to the sweep (exp_id empty) or to one experiment; committed at once.
    [[nodiscard]] Result<void> add_event(std::int64_t sweep, std::optional<int> exp_id, const Event& event);
    /// Ends the sweep in `state` (done, interrupted, failed) with an optional reason.
    [[nodiscard]] Result<void> finish_sweep(std::int64_t sweep, SweepState state,
                                            std::string_view reason = {});

    // ---- resuming ----

    /// Ids of experiments a resume must not run again (is_finished(status)), ascending.
    [[nodiscard]] Result<std::vector<int>> finished_experiment_ids(std::int64_t sweep);
    /// Stores the scheduler tasks a batch target gave experiment `exp_id` (space-separated, one
    /// per repeat); committed at once.
    [[nodiscard]] Result<void> set_scheduler_task(std::int64_t sweep, int exp_id, const std::string& tasks);
    /// The scheduler tasks stored for the sweep's experiments, by experiment id (those with none
    /// are absent).
    [[nodiscard]] Result<std::map<int, std::string>> scheduler_tasks(std::int64_t sweep);
    /// Puts experiments left `running` by a killed sweep back to `pending`; returns how many.
    [[nodiscard]] Result<int> reset_unfinished(std::int64_t sweep);
    /// Marks the sweep running again (started_at = now, resumes + 1, this process as runner)
    /// and resets unfinished experiments, in one transaction; returns how many were reset.
    /// Refused (infrastructure) while another live process on this host is running the sweep.
    [[nodiscard]] Result<int> resume_sweep(std::int64_t sweep);

    // ---- queries ----

    /// Resolves "17", "latest", "latest~1", "latest:TAG", "latest:TAG~N" to a sweep id.
    /// A malformed reference is bad_input; a reference with no match says what exists.
    [[nodiscard]] Result<std::int64_t> resolve_sweep_ref(std::string_view ref);
    /// The sweep `run --resume [REF]` continues: REF resolved as resolve_sweep_ref, or for ""
    /// and "auto" the newest unfinished sweep named `name` (bad_input when there is none).
    [[nodiscard]] Result<std::int64_t> resume_candidate(std::string_view ref, std::string_view name);
    /// Sweeps, newest first, with counts per status; `tag` filters when not empty; `limit` 0 = all.
    [[nodiscard]] Result<std::vector<SweepInfo>> list_sweeps(std::string_view tag = {}, int limit = 0);
    /// One sweep with its counts; error when there is no such id.
    [[nodiscard]] Result<SweepInfo> get_sweep(std::int64_t sweep);
    /// All experiments of a sweep in id order with outcome, samples (repeat, metric order) and events.
    [[nodiscard]] Result<std::vector<StoredExperiment>> load_experiments(std::int64_t sweep);
    /// Resolves `ref` (as resolve_sweep_ref) and loads that sweep with all its experiments.
    [[nodiscard]] Result<LoadedSweep> load_sweep(std::string_view ref);
    /// Events of the sweep itself (exp_id NULL), oldest first.
    [[nodiscard]] Result<std::vector<Event>> load_sweep_events(std::int64_t sweep);

    // ---- maintenance ----

    /// PRAGMA integrity_check: "ok" when the file is sound, otherwise SQLite's findings.
    [[nodiscard]] Result<std::string> integrity_check();
    /// The database file.
    [[nodiscard]] const std::string& path() const { return m_db.path(); }
    /// The underlying connection (tests, and future query code in results/).
    [[nodiscard]] sqlite::Database& database() { return m_db; }

private:
    Store(sqlite::Database db, StoreOptions options) : m_db(std::move(db)), m_options(std::move(options)) {}
    [[nodiscard]] std::string now() const;
    [[nodiscard]] Result<std::int64_t> insert_sweep(const SweepRecord& record);
    [[nodiscard]] Result<void> insert_experiments(std::int64_t sweep, std::span<const Experiment> experiments,
                                                  std::string_view what);
    [[nodiscard]] Result<void> require_sweep(std::int64_t sweep, std::string_view what);
    [[nodiscard]] Result<int> reset_unfinished_in_tx(std::int64_t sweep, std::string_view what);
    /// After an UPDATE of one experiment's row: an internal error unless exactly that row changed,
    /// then its samples deleted (a new attempt or outcome replaces them all).
    [[nodiscard]] Result<void> clear_samples_of_updated(std::int64_t sweep, int exp_id,
                                                        std::string_view what);

    sqlite::Database m_db;
    StoreOptions m_options;
};

}  // namespace ncclsweep::results
