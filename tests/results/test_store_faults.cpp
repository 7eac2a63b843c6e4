// The store under faults: kill -9 at random points, a locked database, read-only access and
// a full disk. Each must give a clear error or a consistent file, never a partial experiment.
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <random>
#include <thread>

#include "results/store/store.hpp"
#include "tests/results/store_fixtures.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;
using namespace ncclsweep::results;
using ncclsweep::test::make_experiments;
using ncclsweep::test::make_outcome;
using ncclsweep::test::make_sweep;
using ncclsweep::test::open_store;

namespace {

constexpr int k_repeats = 5;
constexpr int k_metrics = 3;

/// Runs `attempt` in a child process that has become `nobody` (root ignores file permissions,
/// so a permission test must not run as root) and returns the text it produced.
std::string as_nobody(const std::function<std::string()>& attempt) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        close(fds[0]);
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
        const std::string text = attempt();
        const ssize_t written = write(fds[1], text.data(), text.size());
        _exit(written == static_cast<ssize_t>(text.size()) ? 0 : 4);
    }
    close(fds[1]);
    std::string text;
    char buffer[4096];
    ssize_t n = 0;
    while ((n = read(fds[0], buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<std::size_t>(n));
    close(fds[0]);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    return text;
}

// Every experiment is either finished with all its samples, or unfinished with none.
int check_consistent(Store& store, std::int64_t sweep) {
    REQUIRE(*store.integrity_check() == "ok");
    Result<std::vector<StoredExperiment>> loaded = store.load_experiments(sweep);
    REQUIRE(loaded.ok());
    int finished = 0;
    for (const StoredExperiment& e : *loaded) {
        INFO("experiment " << e.experiment.id << " status " << to_string(e.outcome.status));
        if (e.outcome.status == ExperimentStatus::ok) {
            CHECK(e.outcome.samples == make_outcome(e.experiment.id, k_repeats, k_metrics).samples);
            CHECK(!e.ended_at.empty());
            ++finished;
        } else {
            CHECK((e.outcome.status == ExperimentStatus::pending ||
                   e.outcome.status == ExperimentStatus::running));
            CHECK(e.outcome.samples.empty());
        }
    }
    return finished;
}

// The sweep loop as a child process would run it: resume, then record what is left, writing
// one byte to `progress` (when >= 0) after each committed experiment. With `stop_after` >= 0 it
// stops after that many commits and waits to be killed, so a round can never finish the sweep
// however long the parent is kept off the CPU (CI failed here once: the parent was descheduled
// and the child recorded every experiment and exited before the kill).
[[noreturn]] void run_child_sweep(const std::filesystem::path& path, std::int64_t sweep, int progress = -1,
                                  int stop_after = -1) {
    StoreOptions options;
    options.durability = Durability::normal;
    Result<Store> store = Store::open(path.string(), options);
    if (!store || !store->resume_sweep(sweep)) _exit(10);
    Result<std::vector<int>> done = store->finished_experiment_ids(sweep);
    Result<std::vector<StoredExperiment>> all = store->load_experiments(sweep);
    if (!done || !all) _exit(11);
    int committed = 0;
    for (const StoredExperiment& e : *all) {
        const int id = e.experiment.id;
        if (std::binary_search(done->begin(), done->end(), id)) continue;
        if (!store->begin_experiment(sweep, id, e.attempts + 1)) _exit(12);
        if (!store->record_experiment(sweep, id, make_outcome(id, k_repeats, k_metrics))) _exit(13);
        if (progress >= 0 && write(progress, "x", 1) != 1) _exit(15);
        if (++committed == stop_after)
            for (;;) pause();  // between transactions: a kill here is one more random point
    }
    if (!store->finish_sweep(sweep, SweepState::done)) _exit(14);
    _exit(0);
}

}  // namespace

TEST_CASE("kill -9 at random points leaves complete experiments only, and resume finishes exactly once") {
    test::TempDir dir;
    const auto path = dir.path() / "killed.db";
    constexpr int k_experiments = 800;
    std::int64_t sweep = 0;
    {
        Store store = open_store(path);
        sweep = *store.create_sweep(make_sweep("killed"));
        REQUIRE(store.add_experiments(sweep, make_experiments(k_experiments)).ok());
        // This process recorded it and lives on: it hands the sweep over as a stopped runner would.
        REQUIRE(store.finish_sweep(sweep, SweepState::interrupted).ok());
    }
    // Each round lets the child commit a random number of experiments (whatever the machine's
    // speed), then kills it a random few microseconds later: inside one of its next transactions,
    // or, on a busy machine, while it waits after k_slack more commits. 20 rounds of at most
    // 30 + k_slack commits stay below the 800 experiments, so no round can end the sweep.
    std::mt19937 random(20251129);
    std::uniform_int_distribution<int> commits(1, 30);
    std::uniform_int_distribution<int> delay_us(0, 3000);
    constexpr int k_slack = 5;
    int previous = 0;
    for (int round = 0; round < 20; ++round) {
        const int wanted = commits(random);
        int progress[2];
        REQUIRE(pipe(progress) == 0);
        const pid_t child = fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            close(progress[0]);
            run_child_sweep(path, sweep, progress[1], wanted + k_slack);
        }
        close(progress[1]);
        int seen = 0;
        char buffer[64];
        while (seen < wanted) {
            const ssize_t n = read(progress[0], buffer, std::min<std::size_t>(sizeof buffer, wanted - seen));
            if (n <= 0) break;
            seen += static_cast<int>(n);
        }
        std::this_thread::sleep_for(std::chrono::microseconds(delay_us(random)));
        ::kill(child, SIGKILL);
        int status = 0;
        REQUIRE(waitpid(child, &status, 0) == child);
        close(progress[0]);
        INFO("round " << round << ": child status " << status);
        REQUIRE(WIFSIGNALED(status));
        Store store = open_store(path);
        const int finished = check_consistent(store, sweep);
        CHECK(finished >= previous + wanted);  // committed experiments are never lost
        previous = finished;
    }

    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) run_child_sweep(path, sweep);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    Store store = open_store(path);
    CHECK(check_consistent(store, sweep) == k_experiments);
    CHECK(store.get_sweep(sweep)->state == SweepState::done);
    CHECK(store.get_sweep(sweep)->resumes >= 1);
    CHECK(store.get_sweep(sweep)->resumes <= 21);
}

TEST_CASE("a database locked by another process gives a 'locked' error after the busy timeout") {
    test::TempDir dir;
    const auto path = dir.path() / "locked.db";
    StoreOptions options;
    options.busy_timeout = std::chrono::milliseconds(200);
    Store store = open_store(path, options);
    const std::int64_t sweep = *store.create_sweep(make_sweep("locked"));
    REQUIRE(store.add_experiments(sweep, make_experiments(3)).ok());
    REQUIRE(store.record_experiment(sweep, 1, make_outcome(1, k_repeats, k_metrics)).ok());

    int locked[2];
    int release[2];
    REQUIRE(pipe(locked) == 0);
    REQUIRE(pipe(release) == 0);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {  // another process holds the write lock until told to let go
        sqlite3* db = nullptr;
        if (sqlite3_open(path.string().c_str(), &db) != SQLITE_OK) _exit(20);
        if (sqlite3_exec(db, "BEGIN IMMEDIATE; UPDATE sweeps SET name = 'other'", nullptr, nullptr, nullptr))
            _exit(21);
        char byte = 'L';
        if (write(locked[1], &byte, 1) != 1) _exit(22);
        if (read(release[0], &byte, 1) != 1) _exit(23);
        sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
        sqlite3_close(db);
        _exit(0);
    }
    char byte = 0;
    REQUIRE(read(locked[0], &byte, 1) == 1);

    const auto before = std::chrono::steady_clock::now();
    Result<void> blocked = store.record_experiment(sweep, 2, make_outcome(2, k_repeats, k_metrics));
    const auto waited = std::chrono::steady_clock::now() - before;
    REQUIRE(!blocked.ok());
    CHECK(blocked.error().kind == ErrorKind::infrastructure);
    CHECK(blocked.error().message.find("is locked by another process") != std::string::npos);
    CHECK(blocked.error().message.find("busy for 0.2 s") != std::string::npos);
    CHECK(blocked.error().message.find("recording experiment 2 of sweep") != std::string::npos);
    CHECK(waited >= std::chrono::milliseconds(150));
    CHECK(store.load_experiments(sweep).ok());  // readers are not blocked in WAL mode

    REQUIRE(write(release[1], "R", 1) == 1);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    for (int fd : {locked[0], locked[1], release[0], release[1]}) close(fd);

    REQUIRE(store.record_experiment(sweep, 2, make_outcome(2, k_repeats, k_metrics)).ok());
    CHECK(check_consistent(store, sweep) == 2);
    CHECK(store.get_sweep(sweep)->record.name == "locked");
}

TEST_CASE("a read-only database answers queries and refuses writes with a clear error") {
    test::TempDir dir;
    const auto path = dir.path() / "ro.db";
    std::int64_t sweep = 0;
    {
        Store store = open_store(path);
        sweep = *store.create_sweep(make_sweep("ro"));
        REQUIRE(store.add_experiments(sweep, make_experiments(2)).ok());
        REQUIRE(store.record_experiment(sweep, 1, make_outcome(1, k_repeats, k_metrics)).ok());
    }
    StoreOptions read_only;
    read_only.access = Access::read_only;
    Store store = open_store(path, read_only);
    CHECK(check_consistent(store, sweep) == 1);
    Result<std::int64_t> refused = store.create_sweep(make_sweep("more"));
    REQUIRE(!refused.ok());
    CHECK(refused.error().kind == ErrorKind::infrastructure);
    CHECK(refused.error().message.find("is read-only") != std::string::npos);
    CHECK(refused.error().message.find(path.string()) != std::string::npos);

    // File permissions: root ignores them, so as root the write is tried by a child process
    // that has become `nobody`; its message comes back through a pipe.
    REQUIRE(chmod(path.c_str(), 0444) == 0);
    std::string message;
    if (geteuid() == 0) {
        REQUIRE(chmod(dir.path().c_str(), 0755) == 0);  // nobody may reach the file
        message = as_nobody([&] {
            auto writer = Store::open(path.string());
            if (!writer.ok()) return writer.error().message;
            auto denied = writer->record_experiment(sweep, 2, make_outcome(2, k_repeats, k_metrics));
            return denied.ok() ? std::string("written") : denied.error().message;
        });
    } else {
        Store writer = open_store(path);
        Result<void> denied = writer.record_experiment(sweep, 2, make_outcome(2, k_repeats, k_metrics));
        REQUIRE(!denied.ok());
        message = denied.error().message;
    }
    INFO(message);
    CHECK(message != "written");
    CHECK(message.find("read-only") != std::string::npos);
    REQUIRE(chmod(path.c_str(), 0644) == 0);
    Store reader = open_store(path, read_only);
    CHECK(check_consistent(reader, sweep) == 1);  // the refused write left nothing behind
}

TEST_CASE(
    "a database that cannot be created says why: a missing directory, a directory read-only for this user") {
    test::TempDir dir;
    auto missing = Store::open((dir.path() / "no-such-dir" / "r.db").string());
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().kind == ErrorKind::infrastructure);
    CHECK(missing.error().message.find("does not exist") != std::string::npos);

    // A directory this user may not write to. Root writes anywhere, so as root the attempt is
    // made by a child process that has become `nobody`; its message comes back through a pipe.
    const auto locked = dir.path() / "locked";
    std::filesystem::create_directory(locked);
    const std::string path = (locked / "r.db").string();
    std::string message;
    if (geteuid() == 0) {
        message = as_nobody([&] {
            auto opened = Store::open(path);
            return opened.ok() ? std::string("opened") : opened.error().message;
        });
    } else {
        REQUIRE(chmod(locked.c_str(), 0555) == 0);
        auto opened = Store::open(path);
        message = opened.ok() ? "opened" : opened.error().message;
        chmod(locked.c_str(), 0755);
    }
    INFO(message);
    CHECK(message.find("is read-only") != std::string::npos);
    CHECK(message.find("directory " + locked.string() + " is read-only for this user") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("a full disk (SQLITE_FULL) is reported with the experiment and keeps earlier data intact") {
    test::TempDir dir;
    const auto path = dir.path() / "full.db";
    std::int64_t sweep = 0;
    std::int64_t pages = 0;
    {
        Store store = open_store(path);
        sweep = *store.create_sweep(make_sweep("full"));
        REQUIRE(store.add_experiments(sweep, make_experiments(200)).ok());
        pages = *store.database().query_int("PRAGMA page_count", "test");
    }
    StoreOptions capped;
    capped.max_page_count = pages + 8;
    Store store = open_store(path, capped);
    Result<void> failure;
    int failed_id = 0;
    for (int id = 1; id <= 200 && failure.ok(); ++id) {
        failed_id = id;
        failure = store.begin_experiment(sweep, id, 1);
        if (!failure) break;
        ExperimentOutcome outcome = make_outcome(id, k_repeats, k_metrics);
        outcome.diagnosis = std::string(4000, 'd');
        failure = store.record_experiment(sweep, id, outcome);
    }
    REQUIRE(!failure.ok());
    CHECK(failure.error().kind == ErrorKind::infrastructure);
    CHECK(failure.error().message.find("disk full (SQLITE_FULL)") != std::string::npos);
    CHECK(failure.error().message.find(fmt::format("experiment {} of sweep {}", failed_id, sweep)) !=
          std::string::npos);
    CHECK(failed_id > 1);

    Store reopened = open_store(path);
    CHECK(check_consistent(reopened, sweep) == failed_id - 1);
    REQUIRE(reopened.record_experiment(sweep, failed_id, make_outcome(failed_id, k_repeats, k_metrics)).ok());
    CHECK(check_consistent(reopened, sweep) == failed_id);
}
