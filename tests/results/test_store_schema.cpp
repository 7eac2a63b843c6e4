// Schema versions: migration of an older file, refusal of a newer one, foreign files.
#include <sqlite3.h>

#include "results/store/schema.hpp"
#include "results/store/store.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;
using namespace ncclsweep::results;

namespace {

// Runs SQL on a plain sqlite3 handle, as another program (or an older ncclsweep) would.
void raw_exec(const std::filesystem::path& path, const char* sql) {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.string().c_str(), &db) == SQLITE_OK);
    char* message = nullptr;
    const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &message);
    INFO((message ? message : ""));
    sqlite3_free(message);
    sqlite3_close(db);
    REQUIRE(rc == SQLITE_OK);
}

// Version 1 of the schema as released, frozen here on purpose (independent of schema.cpp).
constexpr const char* k_v1_database = R"sql(
PRAGMA journal_mode = WAL;
CREATE TABLE sweeps (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT, spec_path TEXT NOT NULL DEFAULT '',
  spec_text TEXT NOT NULL DEFAULT '', spec_hash TEXT NOT NULL DEFAULT '', target TEXT NOT NULL DEFAULT '',
  host_preflight TEXT, tool_version TEXT NOT NULL DEFAULT '', repeats INTEGER NOT NULL DEFAULT 1,
  created_at TEXT NOT NULL, started_at TEXT NOT NULL, ended_at TEXT,
  state TEXT NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done', 'interrupted', 'failed')),
  end_reason TEXT, resumes INTEGER NOT NULL DEFAULT 0, runner_pid INTEGER, runner_host TEXT);
CREATE INDEX sweeps_by_tag ON sweeps(tag, id);
CREATE TABLE experiments (sweep_id INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  exp_id INTEGER NOT NULL CHECK (exp_id > 0), key TEXT NOT NULL, canonical TEXT NOT NULL,
  params TEXT NOT NULL DEFAULT '{}', env TEXT NOT NULL DEFAULT '{}', workload TEXT NOT NULL DEFAULT '{}',
  argv TEXT NOT NULL DEFAULT '[]', shell INTEGER NOT NULL DEFAULT 0,
  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'ok', 'failed', 'timed_out',
  'infra_error', 'skipped')), failure_class TEXT, diagnosis TEXT, detected_after_s REAL, effective_nccl TEXT,
  attempts INTEGER NOT NULL DEFAULT 0, started_at TEXT, ended_at TEXT, init_s REAL, capture_s REAL,
  ready_s REAL, measure_s REAL, total_s REAL, PRIMARY KEY (sweep_id, exp_id));
CREATE INDEX experiments_by_key ON experiments(key);
CREATE INDEX experiments_by_status ON experiments(sweep_id, status);
CREATE TABLE samples (sweep_id INTEGER NOT NULL, exp_id INTEGER NOT NULL, repeat INTEGER NOT NULL CHECK (repeat >= 0),
  metric TEXT NOT NULL, value REAL NOT NULL, PRIMARY KEY (sweep_id, exp_id, repeat, metric),
  FOREIGN KEY (sweep_id, exp_id) REFERENCES experiments(sweep_id, exp_id) ON DELETE CASCADE) WITHOUT ROWID;
INSERT INTO sweeps (id, name, tag, created_at, started_at, state) VALUES
  (4, 'old', 'nightly', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z', 'done');
INSERT INTO experiments (sweep_id, exp_id, key, canonical, params, status, failure_class) VALUES
  (4, 1, 'abc', 'NCCL_ALGO=Ring', '{"NCCL_ALGO":"Ring"}', 'ok', NULL),
  (4, 2, 'def', 'NCCL_ALGO=Tree', '{"NCCL_ALGO":"Tree"}', 'failed', 'nccl');
INSERT INTO samples VALUES (4, 1, 0, 'tok_s', 101.5), (4, 1, 1, 'tok_s', 102.5);
PRAGMA application_id = 1313035095;
PRAGMA user_version = 1;
)sql";

}  // namespace

TEST_CASE("a version-1 database is migrated on open and keeps its data") {
    test::TempDir dir;
    const auto path = dir.path() / "v1.db";
    raw_exec(path, k_v1_database);

    StoreOptions options;
    options.access = Access::read_only;  // a query command migrates too (the file is writable)
    Result<Store> store = Store::open(path.string(), options);
    INFO((store ? std::string() : store.error().message));
    REQUIRE(store.ok());
    CHECK(*store->database().query_int("PRAGMA user_version", "test") == current_schema_version());
    CHECK(*store->resolve_sweep_ref("latest:nightly") == 4);
    Result<std::vector<StoredExperiment>> loaded = store->load_experiments(4);
    REQUIRE(loaded.ok());
    REQUIRE(loaded->size() == 2);
    CHECK((*loaded)[0].experiment.params == std::vector<Assignment>{{"NCCL_ALGO", "Ring"}});
    CHECK((*loaded)[0].outcome.samples == std::vector<Sample>{{0, "tok_s", 101.5}, {1, "tok_s", 102.5}});
    CHECK(!(*loaded)[0].outcome.exit_code);  // column added by v2, NULL for old rows
    CHECK((*loaded)[1].outcome.failure_class == "nccl");
    CHECK(*store->integrity_check() == "ok");

    // The writer can now use what v2 added.
    Result<Store> writer = Store::open(path.string());
    REQUIRE(writer.ok());
    CHECK(writer->add_event(4, 2, {EventLevel::info, "note", "migrated", ""}).ok());
}

TEST_CASE("a database from a newer ncclsweep is refused with a clear message") {
    test::TempDir dir;
    const auto path = dir.path() / "future.db";
    { REQUIRE(Store::open(path.string()).ok()); }
    const std::string bump = "PRAGMA user_version = " + std::to_string(current_schema_version() + 5) + ";";
    raw_exec(path, bump.c_str());
    for (Access access : {Access::read_write, Access::read_only}) {
        StoreOptions options;
        options.access = access;
        Result<Store> store = Store::open(path.string(), options);
        REQUIRE(!store.ok());
        CHECK(store.error().kind == ErrorKind::infrastructure);
        CHECK(store.error().message.find("newer than this ncclsweep") != std::string::npos);
        CHECK(store.error().message.find("upgrade ncclsweep") != std::string::npos);
        CHECK(store.error().message.find(path.string()) != std::string::npos);
    }
}

TEST_CASE("files that are not ncclsweep databases are refused and left untouched") {
    test::TempDir dir;
    const auto text = dir.write("notes.db", std::string(4096, 'x'));
    Result<Store> garbage = Store::open(text.string());
    REQUIRE(!garbage.ok());
    CHECK(garbage.error().message.find("is not an SQLite database") != std::string::npos);
    CHECK(test::read_file(text) == std::string(4096, 'x'));

    const auto other = dir.path() / "other.db";
    raw_exec(other, "CREATE TABLE customers (id INTEGER); PRAGMA user_version = 3;");
    Result<Store> foreign = Store::open(other.string());
    REQUIRE(!foreign.ok());
    CHECK(foreign.error().message.find("not an ncclsweep one") != std::string::npos);

    StoreOptions read_only;
    read_only.access = Access::read_only;
    Result<Store> missing = Store::open((dir.path() / "absent.db").string(), read_only);
    REQUIRE(!missing.ok());
    CHECK(missing.error().message.find("no database at") != std::string::npos);
    CHECK(!std::filesystem::exists(dir.path() / "absent.db"));
}
