#include "results/store/schema.hpp"

#include <fmt/format.h>

#include <array>

namespace ncclsweep::results {
namespace {

// Forward migrations. Step i (0-based) takes the file from version i to version i + 1.
// Never edit a released step: append a new one. Each runs inside one transaction.
constexpr std::array<const char*, 6> k_migrations = {
    // v1: sweeps, experiments, samples.
    R"sql(
CREATE TABLE sweeps (
    id             INTEGER PRIMARY KEY,
    name           TEXT NOT NULL,
    tag            TEXT,
    spec_path      TEXT NOT NULL DEFAULT '',
    spec_text      TEXT NOT NULL DEFAULT '',
    spec_hash      TEXT NOT NULL DEFAULT '',
    target         TEXT NOT NULL DEFAULT '',
    host_preflight TEXT,
    tool_version   TEXT NOT NULL DEFAULT '',
    repeats        INTEGER NOT NULL DEFAULT 1,
    created_at     TEXT NOT NULL,
    started_at     TEXT NOT NULL,
    ended_at       TEXT,
    state          TEXT NOT NULL DEFAULT 'running'
                   CHECK (state IN ('running', 'done', 'interrupted', 'failed')),
    end_reason     TEXT,
    resumes        INTEGER NOT NULL DEFAULT 0,
    runner_pid     INTEGER,
    runner_host    TEXT
);
CREATE INDEX sweeps_by_tag ON sweeps(tag, id);
CREATE TABLE experiments (
    sweep_id         INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
    exp_id           INTEGER NOT NULL CHECK (exp_id > 0),
    key              TEXT NOT NULL,
    canonical        TEXT NOT NULL,
    params           TEXT NOT NULL DEFAULT '{}',
    env              TEXT NOT NULL DEFAULT '{}',
    workload         TEXT NOT NULL DEFAULT '{}',
    argv             TEXT NOT NULL DEFAULT '[]',
    shell            INTEGER NOT NULL DEFAULT 0,
    status           TEXT NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'running', 'ok', 'failed', 'timed_out',
                                       'infra_error', 'skipped')),
    failure_class    TEXT,
    diagnosis        TEXT,
    detected_after_s REAL,
    effective_nccl   TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0,
    started_at       TEXT,
    ended_at         TEXT,
    init_s           REAL,
    capture_s        REAL,
    ready_s          REAL,
    measure_s        REAL,
    total_s          REAL,
    PRIMARY KEY (sweep_id, exp_id)
);
CREATE INDEX experiments_by_key ON experiments(key);
CREATE INDEX experiments_by_status ON experiments(sweep_id, status);
CREATE TABLE samples (
    sweep_id INTEGER NOT NULL,
    exp_id   INTEGER NOT NULL,
    repeat   INTEGER NOT NULL CHECK (repeat >= 0),
    metric   TEXT NOT NULL,
    value    REAL NOT NULL,
    PRIMARY KEY (sweep_id, exp_id, repeat, metric),
    FOREIGN KEY (sweep_id, exp_id) REFERENCES experiments(sweep_id, exp_id) ON DELETE CASCADE
) WITHOUT ROWID;
)sql",
    // v2: how the process ended, and warnings/events (per sweep or per experiment).
    R"sql(
ALTER TABLE experiments ADD COLUMN exit_code INTEGER;
ALTER TABLE experiments ADD COLUMN exit_signal INTEGER;
CREATE TABLE events (
    id       INTEGER PRIMARY KEY,
    sweep_id INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
    exp_id   INTEGER,
    at       TEXT NOT NULL,
    level    TEXT NOT NULL CHECK (level IN ('info', 'warning', 'error')),
    code     TEXT NOT NULL,
    message  TEXT NOT NULL
);
CREATE INDEX events_by_sweep ON events(sweep_id, exp_id);
)sql",
    // v3: what a sweep runs besides its points (overrides, target, engine, ...), checked by a
    // resume, its metric definitions (unit, better) and the engine backend that produced its
    // numbers ("sim" is shown as simulated); '' for sweeps recorded before (their
    // resume compares the points only; their metrics follow the default rule of core/spec/metric).
    R"sql(
ALTER TABLE sweeps ADD COLUMN plan_fingerprint TEXT NOT NULL DEFAULT '';
ALTER TABLE sweeps ADD COLUMN metrics TEXT NOT NULL DEFAULT '';
ALTER TABLE sweeps ADD COLUMN backend TEXT NOT NULL DEFAULT '';
)sql",
    // v4: a search's decisions are statuses: 'pruned' (never ran, a value of it kept failing)
    // and 'dropped' (ran, then behind the leader), the reason in `diagnosis`. SQLite cannot
    // change a CHECK in place: experiments is rebuilt with the same columns, and samples (whose
    // foreign key would cascade the rebuild's DROP into them) is copied out and back.
    R"sql(
CREATE TABLE samples_v3 AS SELECT * FROM samples;
DROP TABLE samples;
CREATE TABLE experiments_v3 AS SELECT * FROM experiments;
DROP TABLE experiments;
CREATE TABLE experiments (
    sweep_id         INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
    exp_id           INTEGER NOT NULL CHECK (exp_id > 0),
    key              TEXT NOT NULL,
    canonical        TEXT NOT NULL,
    params           TEXT NOT NULL DEFAULT '{}',
    env              TEXT NOT NULL DEFAULT '{}',
    workload         TEXT NOT NULL DEFAULT '{}',
    argv             TEXT NOT NULL DEFAULT '[]',
    shell            INTEGER NOT NULL DEFAULT 0,
    status           TEXT NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'running', 'ok', 'failed', 'timed_out',
                                       'infra_error', 'skipped', 'pruned', 'dropped')),
    failure_class    TEXT,
    diagnosis        TEXT,
    detected_after_s REAL,
    effective_nccl   TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0,
    started_at       TEXT,
    ended_at         TEXT,
    init_s           REAL,
    capture_s        REAL,
    ready_s          REAL,
    measure_s        REAL,
    total_s          REAL,
    exit_code        INTEGER,
    exit_signal      INTEGER,
    PRIMARY KEY (sweep_id, exp_id)
);
INSERT INTO experiments SELECT sweep_id, exp_id, key, canonical, params, env, workload, argv, shell, status,
    failure_class, diagnosis, detected_after_s, effective_nccl, attempts, started_at, ended_at, init_s, capture_s,
    ready_s, measure_s, total_s, exit_code, exit_signal FROM experiments_v3;
DROP TABLE experiments_v3;
CREATE INDEX experiments_by_key ON experiments(key);
CREATE INDEX experiments_by_status ON experiments(sweep_id, status);
CREATE TABLE samples (
    sweep_id INTEGER NOT NULL,
    exp_id   INTEGER NOT NULL,
    repeat   INTEGER NOT NULL CHECK (repeat >= 0),
    metric   TEXT NOT NULL,
    value    REAL NOT NULL,
    PRIMARY KEY (sweep_id, exp_id, repeat, metric),
    FOREIGN KEY (sweep_id, exp_id) REFERENCES experiments(sweep_id, exp_id) ON DELETE CASCADE
) WITHOUT ROWID;
INSERT INTO samples SELECT sweep_id, exp_id, repeat, metric, value FROM samples_v3;
DROP TABLE samples_v3;
)sql",
    // v5: the scheduler tasks a batch target (Slurm) gave an experiment, one per repeat,
    // space-separated ("4242_0 4242_1"); NULL on targets that start commands themselves. A
    // resume re-attaches to them instead of running the experiment again.
    R"sql(
ALTER TABLE experiments ADD COLUMN scheduler_task TEXT;
)sql",
    // v6: delivery you can prove. `uuid`: a random id per sweep (32 hex digits) that names its
    // work directory, so sweeps of different databases, users or hosts never share one (sweeps
    // recorded before get one here). `inherited_env`: JSON object of the NCCL_*, CUDA_* and
    // TORCH_NCCL_* variables the workload inherited that the spec does not set; NULL for sweeps
    // recorded before (nothing was looked at). `runner_process`: the runner's identity on its
    // host (boot id and process start time), so a reused pid does not hold a sweep.
    R"sql(
ALTER TABLE sweeps ADD COLUMN uuid TEXT NOT NULL DEFAULT '';
UPDATE sweeps SET uuid = lower(hex(randomblob(16)));
CREATE UNIQUE INDEX sweeps_by_uuid ON sweeps(uuid);
ALTER TABLE sweeps ADD COLUMN inherited_env TEXT;
ALTER TABLE sweeps ADD COLUMN runner_process TEXT NOT NULL DEFAULT '';
)sql",
};

// PRAGMA cannot take bound parameters; these texts come from constants only.
std::string set_version_sql(int version) {
    return fmt::format("PRAGMA application_id = {}; PRAGMA user_version = {};", k_application_id, version);
}

}  // namespace

int current_schema_version() {
    return static_cast<int>(k_migrations.size());
}

Result<int> check_schema(sqlite::Database& db, bool& needs_migration) {
    needs_migration = false;
    Result<std::int64_t> app = db.query_int("PRAGMA application_id", "reading its application id");
    if (!app) return app.error();
    Result<std::int64_t> version = db.query_int("PRAGMA user_version", "reading its schema version");
    if (!version) return version.error();
    Result<std::int64_t> tables =
        db.query_int("SELECT count(*) FROM sqlite_schema WHERE type = 'table'", "listing its tables");
    if (!tables) return tables.error();

    if (*app != k_application_id && (*app != 0 || *version != 0 || *tables != 0)) {
        return Error::infrastructure(fmt::format(
            "{} is an SQLite database but not an ncclsweep one (application_id {:#x}, schema version {}, "
            "{} tables); pass --db with another path",
            db.path(), *app, *version, *tables));
    }
    if (*version > current_schema_version()) {
        return Error::infrastructure(fmt::format(
            "database {} has schema version {}, newer than this ncclsweep ({}) understands (version {}); "
            "upgrade ncclsweep to read it, or pass --db with another path",
            db.path(), *version, NCCLSWEEP_VERSION, current_schema_version()));
    }
    needs_migration = *version < current_schema_version();
    return static_cast<int>(*version);
}

Result<void> migrate(sqlite::Database& db) {
    bool needs_migration = false;
    Result<int> version = check_schema(db, needs_migration);
    if (!version) return version.error();
    for (int step = *version; step < current_schema_version(); ++step) {
        const std::string what = fmt::format("migrating its schema to version {}", step + 1);
        Result<sqlite::Transaction> tx = sqlite::Transaction::begin(db, what);
        if (!tx) return tx.error();
        // Another process may have migrated while we waited for the write lock.
        Result<std::int64_t> now = db.query_int("PRAGMA user_version", what);
        if (!now) return now.error();
        if (*now > step) continue;
        if (auto applied = db.exec(k_migrations[static_cast<std::size_t>(step)], what); !applied) {
            return applied.error();
        }
        if (auto stamped = db.exec(set_version_sql(step + 1).c_str(), what); !stamped) return stamped.error();
        if (auto committed = tx->commit(what); !committed) return committed.error();
    }
    return success();
}

}  // namespace ncclsweep::results
