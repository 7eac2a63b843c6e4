// Store: opening (pragmas, schema) and the writes of the sweep loop.
#include "results/store/store.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <system_error>

#include "core/host.hpp"
#include "core/log.hpp"
#include "results/store/json_columns.hpp"
#include "results/store/schema.hpp"

namespace ncclsweep::results {
namespace {

// Settings of this connection. journal_mode is stored in the file; the others are per connection.
Result<void> configure(sqlite::Database& db, const StoreOptions& options) {
    if (options.access == Access::read_write) {
        Result<sqlite::Statement> wal = db.prepare("PRAGMA journal_mode = WAL", "switching it to WAL mode");
        if (!wal) return wal.error();
        Result<bool> row = wal->step("switching it to WAL mode");
        if (!row) return row.error();
        if (*row && wal->column_text(0) != "wal") {
            NCCLSWEEP_LOG(warning,
                          "database {} could not use WAL mode (journal mode is '{}'); results are still "
                          "committed per experiment but readers may wait for writers",
                          db.path(), wal->column_text(0));
        }
    }
    const char* sync =
        options.durability == Durability::full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL";
    if (auto done = db.exec(sync, "setting its durability"); !done) return done.error();
    if (auto done = db.exec("PRAGMA foreign_keys = ON", "enabling foreign keys"); !done) return done.error();
    if (options.max_page_count) {
        // An integer from our own options: PRAGMA values cannot be bound.
        const std::string sql = fmt::format("PRAGMA max_page_count = {}", *options.max_page_count);
        if (auto done = db.exec(sql.c_str(), "capping its size"); !done) return done.error();
    }
    return success();
}

// A query command found a file older than this build: migrate it through a short-lived
// read-write connection, then continue read-only.
Result<void> migrate_for_reading(const std::string& path, const StoreOptions& options, int version) {
    Result<sqlite::Database> writer =
        sqlite::Database::open(path, sqlite::OpenMode::read_write, options.busy_timeout);
    Result<void> migrated = writer ? migrate(*writer) : Result<void>(writer.error());
    if (migrated) return success();
    return Error{
        migrated.error().kind,
        fmt::format("database {} has schema version {}, older than this ncclsweep's ({}), and could not "
                    "be migrated: {}",
                    path, version, current_schema_version(), migrated.error().message)};
}

}  // namespace

std::string format_timestamp(std::chrono::system_clock::time_point time) {
    const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch());
    const auto seconds = std::chrono::floor<std::chrono::seconds>(millis);
    const auto fraction = (millis - seconds).count();
    return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03d}Z", std::chrono::sys_seconds(seconds), fraction);
}

Result<Store> Store::open(const std::string& path, const StoreOptions& options) {
    const bool read_only = options.access == Access::read_only;
    if (read_only) {
        std::error_code ec;
        if (!std::filesystem::exists(path, ec)) {
            return Error::infrastructure(fmt::format(
                "no database at {}; run a sweep first (ncclsweep run SPEC) or pass --db / set NCCLSWEEP_DB",
                path));
        }
    }
    const auto mode = read_only ? sqlite::OpenMode::read_only : sqlite::OpenMode::create;
    Result<sqlite::Database> db = sqlite::Database::open(path, mode, options.busy_timeout);
    if (!db) return db.error();

    bool needs_migration = false;
    Result<int> version = check_schema(*db, needs_migration);  // also detects "not a database"
    if (!version) return version.error();
    if (read_only && *version == 0) {
        return Error::infrastructure(fmt::format(
            "database {} is empty: no sweep was recorded in it; run a sweep first or pass --db", path));
    }
    if (read_only && needs_migration) {
        if (auto migrated = migrate_for_reading(path, options, *version); !migrated) return migrated.error();
    }
    if (auto configured = configure(*db, options); !configured) return configured.error();
    if (!read_only) {
        if (auto migrated = migrate(*db); !migrated) return migrated.error();
    }
    return Store(std::move(*db), options);
}

std::string Store::now() const {
    return format_timestamp(m_options.clock ? m_options.clock() : std::chrono::system_clock::now());
}

Result<void> Store::require_sweep(std::int64_t sweep, std::string_view what) {
    Result<sqlite::Statement*> stmt = m_db.cached("SELECT 1 FROM sweeps WHERE id = ?1", what);
    if (!stmt) return stmt.error();
    Result<bool> row = (*stmt)->bind(1, sweep).step(what);
    if (!row) return row.error();
    (*stmt)->reset();
    if (!*row)
        return Error::internal(fmt::format("sweep {} is not in database {} (while {})", sweep, path(), what));
    return success();
}

Result<std::int64_t> Store::create_sweep(const SweepRecord& record) {
    return insert_sweep(record);
}

Result<std::int64_t> Store::create_sweep(const SweepRecord& record, std::span<const Experiment> experiments) {
    const std::string what =
        fmt::format("recording a new sweep '{}' with {} experiments", record.name, experiments.size());
    Result<sqlite::Transaction> tx = sqlite::Transaction::begin(m_db, what);
    if (!tx) return tx.error();
    Result<std::int64_t> id = insert_sweep(record);
    if (!id) return id.error();
    if (auto added = insert_experiments(*id, experiments, what); !added) return added.error();
    if (auto committed = tx->commit(what); !committed) return committed.error();
    return *id;
}

Result<std::int64_t> Store::insert_sweep(const SweepRecord& r) {
    const std::string what = fmt::format("recording a new sweep '{}'", r.name);
    Result<sqlite::Statement*> stmt = m_db.cached(
        "INSERT INTO sweeps (name, tag, spec_path, spec_text, spec_hash, target, host_preflight, "
        "tool_version, "
        "repeats, created_at, started_at, state, runner_pid, runner_host, plan_fingerprint, metrics, "
        "backend, uuid, inherited_env, runner_process) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, 'running', ?11, ?12, ?13, ?14, ?15, "
        "coalesce(?16, lower(hex(randomblob(16)))), ?17, ?18) RETURNING id",
        what);
    if (!stmt) return stmt.error();
    auto& s = **stmt;
    s.bind(1, r.name).bind_text_or_null(2, r.tag).bind(3, r.spec_path).bind(4, r.spec_text);
    s.bind(5, r.spec_hash.empty() ? detail::fnv1a_hex(r.spec_text) : r.spec_hash);
    s.bind(6, r.target).bind_text_or_null(7, r.host_preflight).bind(8, r.tool_version);
    s.bind(9, std::int64_t{r.repeats}).bind(10, now());
    s.bind(11, std::int64_t{getpid()}).bind(12, host_name()).bind(13, r.plan_fingerprint);
    s.bind(14, r.metrics.empty() ? std::string() : metrics_to_json(r.metrics)).bind(15, r.backend);
    s.bind_text_or_null(16, r.uuid);
    if (r.inherited_known)
        s.bind(17, detail::assignments_to_json(r.inherited_env));
    else
        s.bind(17, std::optional<std::int64_t>());
    s.bind(18, process_identity(getpid()));
    Result<bool> row = s.step(what);
    if (!row) return row.error();
    if (!*row) return Error::internal(fmt::format("database {} returned no id while {}", path(), what));
    const std::int64_t id = s.column_int64(0);
    if (auto done = s.run(what); !done) return done.error();
    return id;
}

Result<void> Store::add_experiments(std::int64_t sweep, std::span<const Experiment> experiments) {
    const std::string what =
        fmt::format("adding {} planned experiments to sweep {}", experiments.size(), sweep);
    if (auto found = require_sweep(sweep, what); !found) return found.error();
    Result<sqlite::Transaction> tx = sqlite::Transaction::begin(m_db, what);
    if (!tx) return tx.error();
    if (auto added = insert_experiments(sweep, experiments, what); !added) return added.error();
    return tx->commit(what);
}

Result<void> Store::insert_experiments(std::int64_t sweep, std::span<const Experiment> experiments,
                                       std::string_view what) {
    Result<sqlite::Statement*> stmt = m_db.cached(
        "INSERT INTO experiments (sweep_id, exp_id, key, canonical, params, env, workload, argv, shell, "
        "status) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'pending')",
        what);
    if (!stmt) return stmt.error();
    for (const Experiment& e : experiments) {
        auto& s = **stmt;
        s.bind(1, sweep).bind(2, std::int64_t{e.id}).bind(3, e.key).bind(4, e.canonical);
        s.bind(5, detail::assignments_to_json(e.params)).bind(6, detail::assignments_to_json(e.env));
        s.bind(7, detail::assignments_to_json(e.workload)).bind(8, detail::strings_to_json(e.argv));
        s.bind(9, std::int64_t{e.shell ? 1 : 0});
        if (auto done = s.run(what); !done) {
            return Error{done.error().kind, fmt::format("experiment {}: {}", e.id, done.error().message)};
        }
    }
    return success();
}

Result<void> Store::clear_samples_of_updated(std::int64_t sweep, int exp_id, std::string_view what) {
    if (m_db.changes() != 1) {
        return Error::internal(
            fmt::format("experiment {} of sweep {} is not in database {}", exp_id, sweep, path()));
    }
    Result<sqlite::Statement*> clear =
        m_db.cached("DELETE FROM samples WHERE sweep_id = ?1 AND exp_id = ?2", what);
    if (!clear) return clear.error();
    return (*clear)->bind(1, sweep).bind(2, std::int64_t{exp_id}).run(what);
}

Result<void> Store::begin_experiment(std::int64_t sweep, int exp_id, int attempt) {
    const std::string what = fmt::format("starting experiment {} of sweep {}", exp_id, sweep);
    Result<sqlite::Transaction> tx = sqlite::Transaction::begin(m_db, what);
    if (!tx) return tx.error();
    Result<sqlite::Statement*> update = m_db.cached(
        "UPDATE experiments SET status = 'running', attempts = ?3, started_at = ?4, ended_at = NULL, "
        "failure_class = NULL, diagnosis = NULL, detected_after_s = NULL, effective_nccl = NULL, "
        "init_s = NULL, capture_s = NULL, ready_s = NULL, measure_s = NULL, total_s = NULL, "
        "exit_code = NULL, exit_signal = NULL WHERE sweep_id = ?1 AND exp_id = ?2",
        what);
    if (!update) return update.error();
    (*update)->bind(1, sweep).bind(2, std::int64_t{exp_id}).bind(3, std::int64_t{attempt}).bind(4, now());
    if (auto done = (*update)->run(what); !done) return done.error();
    if (auto cleared = clear_samples_of_updated(sweep, exp_id, what); !cleared) return cleared.error();
    return tx->commit(what);
}

Result<void> Store::record_experiment(std::int64_t sweep, int exp_id, const ExperimentOutcome& o) {
    const std::string what = fmt::format("recording experiment {} of sweep {}", exp_id, sweep);
    if (o.status == ExperimentStatus::pending || o.status == ExperimentStatus::running) {
        return Error::internal(fmt::format("{}: status '{}' is not an outcome", what, to_string(o.status)));
    }
    Result<sqlite::Transaction> tx = sqlite::Transaction::begin(m_db, what);
    if (!tx) return tx.error();
    Result<sqlite::Statement*> update = m_db.cached(
        "UPDATE experiments SET status = ?3, failure_class = ?4, diagnosis = ?5, detected_after_s = ?6, "
        "effective_nccl = ?7, init_s = ?8, capture_s = ?9, ready_s = ?10, measure_s = ?11, total_s = ?12, "
        "exit_code = ?13, exit_signal = ?14, ended_at = ?15 WHERE sweep_id = ?1 AND exp_id = ?2",
        what);
    if (!update) return update.error();
    auto& u = **update;
    u.bind(1, sweep).bind(2, std::int64_t{exp_id}).bind(3, to_string(o.status));
    u.bind_text_or_null(4, o.failure_class).bind_text_or_null(5, o.diagnosis).bind(6, o.detected_after_s);
    u.bind_text_or_null(7, o.effective_nccl).bind(8, o.timings.init_s).bind(9, o.timings.capture_s);
    u.bind(10, o.timings.ready_s).bind(11, o.timings.measure_s).bind(12, o.timings.total_s);
    u.bind(13, o.exit_code).bind(14, o.exit_signal).bind(15, now());
    if (auto done = u.run(what); !done) return done.error();
    if (auto cleared = clear_samples_of_updated(sweep, exp_id, what); !cleared) return cleared.error();
    Result<sqlite::Statement*> insert = m_db.cached(
        "INSERT INTO samples (sweep_id, exp_id, repeat, metric, value) VALUES (?1, ?2, ?3, ?4, ?5)", what);
    if (!insert) return insert.error();
    for (const Sample& sample : o.samples) {
        (*insert)->bind(1, sweep).bind(2, std::int64_t{exp_id}).bind(3, std::int64_t{sample.repeat});
        (*insert)->bind(4, sample.metric).bind(5, sample.value);
        if (auto done = (*insert)->run(what); !done) return done.error();
    }
    for (const Event& event : o.events) {
        if (auto added = add_event(sweep, exp_id, event); !added) return added.error();
    }
    if (!o.collective_times.empty())
        if (auto added =
                add_event(sweep, exp_id,
                          {EventLevel::info, std::string(k_collective_times_event), o.collective_times, {}});
            !added)
            return added.error();
    return tx->commit(what);
}

Result<void> Store::add_event(std::int64_t sweep, std::optional<int> exp_id, const Event& event) {
    const std::string what = exp_id
                                 ? fmt::format("adding an event to experiment {} of sweep {}", *exp_id, sweep)
                                 : fmt::format("adding an event to sweep {}", sweep);
    Result<sqlite::Statement*> stmt = m_db.cached(
        "INSERT INTO events (sweep_id, exp_id, at, level, code, message) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        what);
    if (!stmt) return stmt.error();
    auto& s = **stmt;
    s.bind(1, sweep).bind(2, exp_id ? std::optional<std::int64_t>(*exp_id) : std::nullopt);
    s.bind(3, event.at.empty() ? now() : event.at).bind(4, to_string(event.level));
    s.bind(5, event.code).bind(6, event.message);
    return s.run(what);
}

Result<void> Store::finish_sweep(std::int64_t sweep, SweepState state, std::string_view reason) {
    const std::string what = fmt::format("marking sweep {} {}", sweep, to_string(state));
    if (state == SweepState::running)
        return Error::internal(fmt::format("{}: 'running' is not an end state", what));
    Result<sqlite::Statement*> stmt =
        m_db.cached("UPDATE sweeps SET state = ?2, ended_at = ?3, end_reason = ?4 WHERE id = ?1", what);
    if (!stmt) return stmt.error();
    (*stmt)->bind(1, sweep).bind(2, to_string(state)).bind(3, now()).bind_text_or_null(4, reason);
    if (auto done = (*stmt)->run(what); !done) return done.error();
    if (m_db.changes() != 1)
        return Error::internal(fmt::format("sweep {} is not in database {}", sweep, path()));
    return success();
}

Result<void> Store::set_scheduler_task(std::int64_t sweep, int exp_id, const std::string& tasks) {
    const std::string what =
        fmt::format("recording the scheduler tasks of experiment {} of sweep {}", exp_id, sweep);
    Result<sqlite::Statement*> stmt =
        m_db.cached("UPDATE experiments SET scheduler_task = ?3 WHERE sweep_id = ?1 AND exp_id = ?2", what);
    if (!stmt) return stmt.error();
    (*stmt)->bind(1, sweep).bind(2, std::int64_t{exp_id}).bind_text_or_null(3, tasks);
    if (auto done = (*stmt)->run(what); !done) return done.error();
    if (m_db.changes() != 1)
        return Error::internal(
            fmt::format("experiment {} of sweep {} is not in database {}", exp_id, sweep, path()));
    return success();
}

Result<std::map<int, std::string>> Store::scheduler_tasks(std::int64_t sweep) {
    const std::string what = fmt::format("reading the scheduler tasks of sweep {}", sweep);
    Result<sqlite::Statement*> stmt = m_db.cached(
        "SELECT exp_id, scheduler_task FROM experiments WHERE sweep_id = ?1 AND scheduler_task IS NOT NULL",
        what);
    if (!stmt) return stmt.error();
    (*stmt)->bind(1, sweep);
    std::map<int, std::string> tasks;
    for (;;) {
        Result<bool> row = (*stmt)->step(what);
        if (!row) return row.error();
        if (!*row) break;
        tasks[static_cast<int>((*stmt)->column_int64(0))] = (*stmt)->column_text(1);
    }
    return tasks;
}

Result<std::vector<int>> Store::finished_experiment_ids(std::int64_t sweep) {
    const std::string what = fmt::format("reading finished experiments of sweep {}", sweep);
    if (auto found = require_sweep(sweep, what); !found) return found.error();
    Result<sqlite::Statement*> stmt =
        m_db.cached("SELECT exp_id, status FROM experiments WHERE sweep_id = ?1 ORDER BY exp_id", what);
    if (!stmt) return stmt.error();
    (*stmt)->bind(1, sweep);
    std::vector<int> ids;
    for (;;) {
        Result<bool> row = (*stmt)->step(what);
        if (!row) return row.error();
        if (!*row) break;
        const auto status = parse_experiment_status((*stmt)->column_text(1));
        if (status && is_finished(*status)) ids.push_back(static_cast<int>((*stmt)->column_int64(0)));
    }
    return ids;
}

Result<int> Store::reset_unfinished_in_tx(std::int64_t sweep, std::string_view what) {
    Result<sqlite::Statement*> stmt = m_db.cached(
        "UPDATE experiments SET status = 'pending' WHERE sweep_id = ?1 AND status = 'running'", what);
    if (!stmt) return stmt.error();
    if (auto done = (*stmt)->bind(1, sweep).run(what); !done) return done.error();
    const int reset = static_cast<int>(m_db.changes());
    Result<sqlite::Statement*> clear = m_db.cached(
        "DELETE FROM samples WHERE sweep_id = ?1 AND exp_id IN "
        "(SELECT exp_id FROM experiments WHERE sweep_id = ?1 AND status = 'pending')",
        what);
    if (!clear) return clear.error();
    if (auto done = (*clear)->bind(1, sweep).run(what); !done) return done.error();
    return reset;
}

Result<int> Store::reset_unfinished(std::int64_t sweep) {
    const std::string what = fmt::format("resetting unfinished experiments of sweep {}", sweep);
    if (auto found = require_sweep(sweep, what); !found) return found.error();
    Result<sqlite::Transaction> tx = sqlite::Transaction::begin(m_db, what);
    if (!tx) return tx.error();
    Result<int> reset = reset_unfinished_in_tx(sweep, what);
    if (!reset) return reset.error();
    if (auto committed = tx->commit(what); !committed) return committed.error();
    return *reset;
}

Result<int> Store::resume_sweep(std::int64_t sweep) {
    const std::string what = fmt::format("resuming sweep {}", sweep);
    if (auto found = require_sweep(sweep, what); !found) return found.error();
    Result<sqlite::Transaction> tx = sqlite::Transaction::begin(m_db, what);
    if (!tx) return tx.error();
    // Two runners of one sweep would run its unfinished experiments twice: refuse while the
    // process that runs it is alive (checked inside the write transaction, so two resumes
    // cannot both pass).
    Result<sqlite::Statement*> runner =
        m_db.cached("SELECT state, runner_pid, runner_host, runner_process FROM sweeps WHERE id = ?1", what);
    if (!runner) return runner.error();
    Result<bool> row = (*runner)->bind(1, sweep).step(what);
    if (!row) return row.error();
    SweepInfo current;
    if (*row) {
        current.state = parse_sweep_state((*runner)->column_text(0)).value_or(SweepState::failed);
        current.runner_pid = (*runner)->column_optional_int64(1);
        current.runner_host = (*runner)->column_text(2);
        current.runner_process = (*runner)->column_text(3);
    }
    (*runner)->reset();
    if (probe_runner(current) == true && current.runner_pid != std::int64_t{getpid()}) {
        return Error::infrastructure(
            fmt::format("sweep {} is still being run by pid {} on this host; stop that ncclsweep first "
                        "(Ctrl-C, or kill {}), "
                        "then resume",
                        sweep, *current.runner_pid, *current.runner_pid));
    }
    Result<sqlite::Statement*> stmt = m_db.cached(
        "UPDATE sweeps SET state = 'running', started_at = ?2, ended_at = NULL, end_reason = NULL, "
        "resumes = resumes + 1, runner_pid = ?3, runner_host = ?4, runner_process = ?5 WHERE id = ?1",
        what);
    if (!stmt) return stmt.error();
    (*stmt)->bind(1, sweep).bind(2, now()).bind(3, std::int64_t{getpid()}).bind(4, host_name());
    (*stmt)->bind(5, process_identity(getpid()));
    if (auto done = (*stmt)->run(what); !done) return done.error();
    Result<int> reset = reset_unfinished_in_tx(sweep, what);
    if (!reset) return reset.error();
    if (auto committed = tx->commit(what); !committed) return committed.error();
    return *reset;
}

}  // namespace ncclsweep::results
