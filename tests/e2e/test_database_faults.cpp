// Reliability of the store, end to end: a database locked by another process, on a read-only
// file system, or on a full disk gives a clear error and exit 3, never corruption, and a later
// run (or --resume) works.
#include <sqlite3.h>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/skip.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

/// A small tmpfs mounted on a directory for one test; unmounted when it goes.
struct TmpfsMount {
    std::filesystem::path at;
    bool mounted = false;
    TmpfsMount(std::filesystem::path where, const std::string& size) : at(std::move(where)) {
        std::filesystem::create_directories(at);
        auto r = run_command({"mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", at.string()});
        mounted = r.exit_code == 0;
        if (!mounted)
            skip_test("mount",
                      "cannot mount a tmpfs here (needs root and a kernel that allows it): " + r.err);
    }
    ~TmpfsMount() {
        if (mounted) run_command({"umount", "-l", at.string()});
    }
    TmpfsMount(const TmpfsMount&) = delete;
    TmpfsMount& operator=(const TmpfsMount&) = delete;
    /// Remounts read-only (`ro`) or read-write (`rw`); true on success.
    bool remount(const std::string& mode) const {
        return run_command({"mount", "-o", "remount," + mode, at.string()}).exit_code == 0;
    }
};

/// A spec of `count` instant command experiments, each reporting tok/s = its number.
std::string quick_spec(const std::string& name, int count) {
    std::string values;
    for (int i = 1; i <= count; ++i) values += (i > 1 ? ", " : "") + std::to_string(i);
    return "sweep: " + name +
           "\ntarget: local\n"
           "workload:\n"
           "  command: [/bin/echo, \"tok/s: {n}\"]\n"
           "  metrics:\n"
           "    tok_s: 'tok/s: ([0-9.]+)'\n"
           "axes:\n"
           "  n: [" +
           values + "]\n";
}

std::string scalar(const std::string& db, const std::string& sql) {
    auto rows = sqlite_rows(db, sql);
    return rows.empty() || rows[0].empty() ? "" : rows[0][0];
}

}  // namespace

TEST_CASE(
    "database faults: locked by another process -> exit 3 naming the lock and no change and a later run "
    "works") {
    TempDir dir;
    auto spec = dir.write("s.yaml", quick_spec("locked", 2));
    std::string db = (dir.path() / "r.db").string();
    REQUIRE(run_ncclsweep({"run", spec.string(), "--db", db}).exit_code == 0);

    // This test process is "another process" to ncclsweep: it holds the write lock.
    sqlite3* holder = nullptr;
    REQUIRE(sqlite3_open(db.c_str(), &holder) == SQLITE_OK);
    REQUIRE(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
    auto locked = run_ncclsweep({"run", spec.string(), "--db", db});
    sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(holder);
    INFO(locked.err);
    CHECK(locked.exit_code == 3);
    CHECK(locked.err.find("locked by another process") != std::string::npos);
    CHECK(locked.err.find(db) != std::string::npos);
    CHECK(scalar(db, "SELECT count(*) FROM sweeps") == "1");  // nothing half-written

    CHECK(integrity_check(db) == "ok");
    auto later = run_ncclsweep({"run", spec.string(), "--db", db});
    INFO(later.err);
    CHECK(later.exit_code == 0);
    CHECK(scalar(db, "SELECT count(*) FROM sweeps") == "2");
}

TEST_CASE(
    "database faults: a read-only file system -> exit 3 saying it is read-only and the file is untouched") {
    TempDir dir;
    TmpfsMount mount(dir.path() / "ro", "1m");
    if (!mount.mounted) return;
    auto spec = dir.write("s.yaml", quick_spec("readonly", 2));
    std::string db = (mount.at / "r.db").string();
    REQUIRE(run_ncclsweep({"run", spec.string(), "--db", db}).exit_code == 0);
    const std::string before = read_file(db);
    REQUIRE(mount.remount("ro"));
    for (bool resume : {false, true}) {
        std::vector<std::string> args{"run", spec.string(), "--db", db};
        if (resume) args.push_back("--resume");
        auto r = run_ncclsweep(args);
        INFO(r.err);
        CHECK(r.exit_code == 3);
        // SQLite reports SQLITE_READONLY or, when it cannot create the WAL index, SQLITE_CANTOPEN;
        // either way the message says what is wrong: the file system is mounted read-only.
        CHECK(r.err.find("is read-only") != std::string::npos);
        CHECK(r.err.find("mounted read-only") != std::string::npos);
        CHECK(r.err.find(db) != std::string::npos);
    }
    REQUIRE(mount.remount("rw"));
    CHECK(read_file(db) == before);
    CHECK(integrity_check(db) == "ok");
    CHECK(run_ncclsweep({"run", spec.string(), "--db", db}).exit_code == 0);
}

TEST_CASE(
    "database faults: disk full mid-sweep -> exit 3 disk full with earlier experiments intact and --resume "
    "finishes") {
    TempDir dir;
    TmpfsMount mount(dir.path() / "full", "1m");
    if (!mount.mounted) return;
    std::string db = (mount.at / "r.db").string();
    auto first = dir.write("first.yaml", quick_spec("first", 3));
    REQUIRE(run_ncclsweep({"run", first.string(), "--db", db}).exit_code == 0);

    // Fill the file system, then give back 160 kB: room for the plan and a few experiments.
    const auto filler = mount.at / "filler";
    run_command({"dd", "if=/dev/zero", "of=" + filler.string(), "bs=4k"});
    REQUIRE(run_command({"truncate", "-s", "-160k", filler.string()}).exit_code == 0);
    auto spec = dir.write("s.yaml", quick_spec("full", 30));
    auto r = run_ncclsweep({"run", spec.string(), "--db", db});
    INFO(r.err);
    CHECK(r.exit_code == 3);
    CHECK(r.err.find("disk full") != std::string::npos);
    CHECK(r.err.find("--resume") != std::string::npos);
    CHECK(integrity_check(db) == "ok");
    // The first sweep and whatever the second finished before the disk filled are intact.
    CHECK(scalar(db, "SELECT count(*) FROM experiments WHERE sweep_id = 1 AND status = 'ok'") == "3");
    CHECK(scalar(db, "SELECT count(*) FROM samples WHERE sweep_id = 1") == "3");
    const int finished =
        std::stoi(scalar(db, "SELECT count(*) FROM experiments WHERE sweep_id = 2 AND status = 'ok'"));
    CHECK(finished < 30);
    CHECK(scalar(db, "SELECT count(*) FROM samples WHERE sweep_id = 2") == std::to_string(finished));

    std::filesystem::remove(filler);
    auto resumed = run_ncclsweep({"run", spec.string(), "--db", db, "--resume"});
    INFO(resumed.err);
    CHECK(resumed.exit_code == 0);
    CHECK(integrity_check(db) == "ok");
    CHECK(scalar(db, "SELECT count(*) FROM experiments WHERE sweep_id = 2 AND status = 'ok'") == "30");
    CHECK(scalar(db, "SELECT count(*) FROM samples WHERE sweep_id = 2") == "30");
    CHECK(scalar(db, "SELECT sum(value) FROM samples WHERE sweep_id = 2") == "465.0");
}
