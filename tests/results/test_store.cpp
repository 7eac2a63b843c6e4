// The store's API: lifecycle of a sweep, exact round trips, resume helpers, sweep references.
#include "results/store/store.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "core/host.hpp"
#include "results/store/schema.hpp"
#include "tests/results/store_fixtures.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;
using namespace ncclsweep::results;
using ncclsweep::test::make_experiment;
using ncclsweep::test::make_experiments;
using ncclsweep::test::make_outcome;
using ncclsweep::test::make_sweep;

namespace {

Store open_test_store(const std::filesystem::path& path, StoreOptions options = {}) {
    return test::open_store(path, options, Durability::normal);
}

/// A child process that calls itself "ncclsweep" (its /proc comm) and waits to be killed:
/// a stand-in for a live ncclsweep running a sweep. The name is set before the parent goes on.
pid_t fork_named_ncclsweep() {
    int ready[2];
    if (pipe(ready) != 0) return -1;
    const pid_t child = fork();
    if (child == 0) {
        close(ready[0]);
        prctl(PR_SET_NAME, "ncclsweep", 0, 0, 0);
        const ssize_t written = write(ready[1], "x", 1);
        close(ready[1]);
        if (written == 1) ::pause();
        _exit(0);
    }
    close(ready[1]);
    char byte = 0;
    const bool named = child > 0 && read(ready[0], &byte, 1) == 1;
    close(ready[0]);
    return named ? child : -1;
}

void end_child(pid_t child) {
    ::kill(child, SIGKILL);
    REQUIRE(waitpid(child, nullptr, 0) == child);
}

std::int64_t pragma_int(Store& store, const char* sql) {
    Result<std::int64_t> value = store.database().query_int(sql, "test");
    REQUIRE(value.ok());
    return *value;
}

}  // namespace

TEST_CASE("a new database gets the schema, WAL mode and its version") {
    test::TempDir dir;
    Store store = open_test_store(dir.path() / "new.db");
    CHECK(pragma_int(store, "PRAGMA user_version") == current_schema_version());
    CHECK(pragma_int(store, "PRAGMA application_id") == k_application_id);
    CHECK(pragma_int(store, "PRAGMA foreign_keys") == 1);
    Result<sqlite::Statement> mode = store.database().prepare("PRAGMA journal_mode", "test");
    REQUIRE(mode.ok());
    REQUIRE(*mode->step("test"));
    CHECK(mode->column_text(0) == "wal");
    CHECK(*store.integrity_check() == "ok");
}

TEST_CASE("a sweep's experiments, outcomes and samples come back exactly") {
    test::TempDir dir;
    Store store = open_test_store(dir.path() / "s.db");
    Result<std::int64_t> sweep = store.create_sweep(make_sweep("quick", "nightly"));
    REQUIRE(sweep.ok());
    const auto planned = make_experiments(4);
    REQUIRE(store.add_experiments(*sweep, planned).ok());

    REQUIRE(store.begin_experiment(*sweep, 1, 1).ok());
    REQUIRE(store.record_experiment(*sweep, 1, make_outcome(1, 3)).ok());
    REQUIRE(store.begin_experiment(*sweep, 2, 1).ok());
    ExperimentOutcome failed;
    failed.status = ExperimentStatus::failed;
    failed.failure_class = "graph_capture";
    failed.diagnosis =
        "line before\nCUDA error: operation not permitted when stream is capturing\nline after";
    failed.detected_after_s = 0.25;
    failed.exit_signal = 9;
    failed.events.push_back({EventLevel::warning, "nccl_ignored", "NCCL_ALGO ignored at 8 KB", ""});
    REQUIRE(store.record_experiment(*sweep, 2, failed).ok());
    REQUIRE(store.begin_experiment(*sweep, 3, 1).ok());

    Result<std::vector<StoredExperiment>> loaded = store.load_experiments(*sweep);
    REQUIRE(loaded.ok());
    REQUIRE(loaded->size() == 4);
    const StoredExperiment& first = (*loaded)[0];
    CHECK(first.experiment.id == 1);
    CHECK(first.experiment.key == planned[0].key);
    CHECK(first.experiment.canonical == planned[0].canonical);
    CHECK(first.experiment.params == planned[0].params);
    CHECK(first.experiment.env == planned[0].env);
    CHECK(first.experiment.workload == planned[0].workload);
    CHECK(first.experiment.argv == planned[0].argv);
    CHECK(first.outcome.status == ExperimentStatus::ok);
    CHECK(first.outcome.samples == make_outcome(1, 3).samples);
    CHECK(first.outcome.timings == make_outcome(1, 3).timings);
    CHECK(first.outcome.exit_code == 0);
    CHECK(first.attempts == 1);
    CHECK(!first.started_at.empty());
    CHECK(!first.ended_at.empty());

    const StoredExperiment& second = (*loaded)[1];
    CHECK(second.outcome.status == ExperimentStatus::failed);
    CHECK(second.outcome.failure_class == "graph_capture");
    CHECK(second.outcome.diagnosis == failed.diagnosis);
    CHECK(second.outcome.detected_after_s == 0.25);
    CHECK(second.outcome.exit_signal == 9);
    CHECK(!second.outcome.exit_code);
    CHECK(second.outcome.samples.empty());
    REQUIRE(second.outcome.events.size() == 1);
    CHECK(second.outcome.events[0].code == "nccl_ignored");
    CHECK((*loaded)[2].outcome.status == ExperimentStatus::running);
    CHECK((*loaded)[3].outcome.status == ExperimentStatus::pending);
    CHECK((*loaded)[3].started_at.empty());

    REQUIRE(store.finish_sweep(*sweep, SweepState::interrupted, "Ctrl-C").ok());
    Result<SweepInfo> info = store.get_sweep(*sweep);
    REQUIRE(info.ok());
    CHECK(info->state == SweepState::interrupted);
    CHECK(info->end_reason == "Ctrl-C");
    CHECK(info->record.tag == "nightly");
    CHECK(info->record.spec_hash.size() == 16);
    CHECK(info->counts.ok == 1);
    CHECK(info->counts.failed == 1);
    CHECK(info->counts.running == 1);
    CHECK(info->counts.pending == 1);
    CHECK(info->counts.total() == 4);
    CHECK(info->runner_pid == static_cast<std::int64_t>(getpid()));
}

TEST_CASE("a running sweep whose runner is gone reads as such, a live or remote runner does not") {
    test::TempDir dir;
    Store store = open_test_store(dir.path() / "runner.db");
    Result<std::int64_t> sweep = store.create_sweep(make_sweep("running"));
    REQUIRE(sweep.ok());
    // Its runner is this very process (pid and identity recorded with it): alive.
    CHECK(store.get_sweep(*sweep)->runner_alive == std::optional<bool>(true));
    CHECK(store.get_sweep(*sweep)->runner_process == process_identity(getpid()));
    // The same pid under another identity is a reused pid (another program, or after a reboot).
    REQUIRE(store.database().exec("UPDATE sweeps SET runner_process = 'other-boot:1'", "test").ok());
    CHECK(store.get_sweep(*sweep)->runner_alive == std::optional<bool>(false));
    // Recorded before identities (schema < 6): this process is no ncclsweep, so not a runner.
    REQUIRE(store.database().exec("UPDATE sweeps SET runner_process = ''", "test").ok());
    CHECK(store.get_sweep(*sweep)->runner_alive == std::optional<bool>(false));
    // A live ncclsweep runs it.
    const pid_t runner = fork_named_ncclsweep();
    REQUIRE(runner > 0);
    const std::string live_runner =
        fmt::format("UPDATE sweeps SET runner_pid = {}, runner_process = '{}' WHERE id = {}", runner,
                    process_identity(runner), *sweep);
    REQUIRE(store.database().exec(live_runner.c_str(), "test").ok());
    Result<SweepInfo> live = store.get_sweep(*sweep);
    REQUIRE(live.ok());
    CHECK(live->state == SweepState::running);
    REQUIRE(live->runner_alive.has_value());
    CHECK(*live->runner_alive);
    CHECK(state_text(*live) == "running");
    end_child(runner);

    // A runner that exited but was not reaped yet (a zombie: a container without an init reaps
    // late) is gone, even with its identity recorded: it cannot run anything any more.
    int exit_now[2];
    REQUIRE(pipe(exit_now) == 0);
    const pid_t zombie = fork();
    REQUIRE(zombie >= 0);
    if (zombie == 0) {
        close(exit_now[1]);
        char byte = 0;
        (void)read(exit_now[0], &byte, 1);
        _exit(0);
    }
    const std::string zombie_identity = process_identity(zombie);
    REQUIRE_FALSE(zombie_identity.empty());
    const std::string as_zombie =
        fmt::format("UPDATE sweeps SET runner_pid = {}, runner_process = '{}' WHERE id = {}", zombie,
                    zombie_identity, *sweep);
    REQUIRE(store.database().exec(as_zombie.c_str(), "test").ok());
    CHECK(store.get_sweep(*sweep)->runner_alive == std::optional<bool>(true));
    close(exit_now[1]);  // the child reads EOF and exits; nobody reaps it yet
    for (int i = 0; i < 2000 && probe_process(zombie, zombie_identity) == ProcessLiveness::running; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(probe_process(zombie, zombie_identity) == ProcessLiveness::gone);
    CHECK(::kill(zombie, 0) == 0);  // the pid still exists: only its state says it is gone
    CHECK(store.get_sweep(*sweep)->runner_alive == std::optional<bool>(false));
    close(exit_now[0]);
    REQUIRE(waitpid(zombie, nullptr, 0) == zombie);
    REQUIRE(store.database().exec("UPDATE sweeps SET runner_process = ''", "test").ok());

    // A runner that exited (a reaped child: its pid is free), as after kill -9.
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) _exit(0);
    REQUIRE(waitpid(child, nullptr, 0) == child);
    const std::string dead = fmt::format("UPDATE sweeps SET runner_pid = {} WHERE id = {}", child, *sweep);
    REQUIRE(store.database().exec(dead.c_str(), "test").ok());
    Result<SweepInfo> gone = store.get_sweep(*sweep);
    REQUIRE(gone.ok());
    REQUIRE(gone->runner_alive.has_value());
    CHECK_FALSE(*gone->runner_alive);
    CHECK(state_text(*gone) == "running, runner gone");
    Result<std::vector<SweepInfo>> listed = store.list_sweeps();
    REQUIRE(listed.ok());
    REQUIRE(listed->size() == 1);
    CHECK(listed->front().runner_alive == std::optional<bool>(false));

    // Another host's runner cannot be probed from here; a finished sweep needs no runner.
    REQUIRE(store.database().exec("UPDATE sweeps SET runner_host = 'elsewhere.invalid'", "test").ok());
    CHECK_FALSE(store.get_sweep(*sweep)->runner_alive.has_value());
    CHECK(state_text(*store.get_sweep(*sweep)) == "running");
    REQUIRE(store.finish_sweep(*sweep, SweepState::done, "").ok());
    CHECK_FALSE(store.get_sweep(*sweep)->runner_alive.has_value());
}

TEST_CASE("resuming a sweep that a live process still runs is refused, and allowed once it is gone") {
    test::TempDir dir;
    Store store = open_test_store(dir.path() / "resume.db");
    Result<std::int64_t> sweep = store.create_sweep(make_sweep("busy"));
    REQUIRE(sweep.ok());
    REQUIRE(store.add_experiments(*sweep, make_experiments(2)).ok());
    // The sweep's runner: another live ncclsweep on this host.
    const pid_t runner = fork_named_ncclsweep();
    REQUIRE(runner > 0);
    const std::string set_runner =
        fmt::format("UPDATE sweeps SET runner_pid = {}, runner_process = '{}' WHERE id = {}", runner,
                    process_identity(runner), *sweep);
    REQUIRE(store.database().exec(set_runner.c_str(), "test").ok());
    Result<int> refused = store.resume_sweep(*sweep);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().kind == ErrorKind::infrastructure);
    CHECK(refused.error().message.find("still being run by pid " + std::to_string(runner)) !=
          std::string::npos);
    CHECK(store.get_sweep(*sweep)->resumes == 0);  // nothing changed

    end_child(runner);
    Result<int> resumed = store.resume_sweep(*sweep);
    INFO((resumed.ok() ? std::string() : resumed.error().message));
    REQUIRE(resumed.ok());
    CHECK(store.get_sweep(*sweep)->resumes == 1);
    CHECK(store.get_sweep(*sweep)->runner_pid == std::int64_t{getpid()});
    // This process is the runner now: resuming again (e.g. after a lost connection) is allowed.
    CHECK(store.resume_sweep(*sweep).ok());
}

TEST_CASE("hostile names and values are stored as data, never as SQL") {
    test::TempDir dir;
    Store store = open_test_store(dir.path() / "hostile.db");
    const std::string evil = "'); DROP TABLE sweeps; --";
    const std::string unicode =
        "tok/s \xE2\x9C\x93 \xF0\x9F\x9A\x80 \"quoted\" \\back\\ \n\t$(rm -rf /) `id`";
    SweepRecord record = make_sweep(evil, evil);
    record.spec_text = unicode;
    record.host_preflight = R"({"gpus":["H100 \"SXM\""]})";
    Result<std::int64_t> sweep = store.create_sweep(record);
    REQUIRE(sweep.ok());
    Experiment e = make_experiment(1);
    e.params = {{evil, unicode}, {"NCCL_ALGO", evil}};
    e.env = {{"X", std::string("nul\0inside", 10)}};
    e.argv = {"/bin/sh", "-c", evil};
    e.key = evil;
    e.canonical = unicode;
    REQUIRE(store.add_experiments(*sweep, std::span<const Experiment>(&e, 1)).ok());
    ExperimentOutcome o = make_outcome(1, 1);
    o.status = ExperimentStatus::failed;
    o.failure_class = evil;
    o.diagnosis = std::string("binary \xff\xfe garbage\0end", 22);
    o.samples = {{0, evil, 1.5}, {0, unicode, 2.5}};
    REQUIRE(store.record_experiment(*sweep, 1, o).ok());

    Result<SweepInfo> info = store.get_sweep(*sweep);
    REQUIRE(info.ok());
    CHECK(info->record.name == evil);
    CHECK(info->record.tag == evil);
    CHECK(info->record.spec_text == unicode);
    CHECK(info->record.host_preflight == record.host_preflight);
    Result<std::vector<StoredExperiment>> loaded = store.load_experiments(*sweep);
    REQUIRE(loaded.ok());
    REQUIRE(loaded->size() == 1);
    const StoredExperiment& s = loaded->front();
    CHECK(s.experiment.params == e.params);
    CHECK(s.experiment.env == e.env);
    CHECK(s.experiment.argv == e.argv);
    CHECK(s.experiment.key == evil);
    CHECK(s.experiment.canonical == unicode);
    CHECK(s.outcome.failure_class == evil);
    CHECK(s.outcome.diagnosis == o.diagnosis);
    std::vector<Sample> expected = o.samples;
    std::sort(expected.begin(), expected.end(),
              [](const Sample& a, const Sample& b) { return a.metric < b.metric; });
    CHECK(s.outcome.samples == expected);
    Result<std::int64_t> by_tag = store.resolve_sweep_ref("latest:" + evil);
    REQUIRE(by_tag.ok());
    CHECK(*by_tag == *sweep);
    CHECK(*store.integrity_check() == "ok");
}

TEST_CASE("resume helpers: finished ids, reset of running experiments, exactly-once records") {
    test::TempDir dir;
    Store store = open_test_store(dir.path() / "r.db");
    const std::int64_t sweep = *store.create_sweep(make_sweep("r"));
    REQUIRE(store.add_experiments(sweep, make_experiments(7)).ok());
    const ExperimentStatus ends[] = {ExperimentStatus::ok, ExperimentStatus::failed,
                                     ExperimentStatus::timed_out, ExperimentStatus::skipped,
                                     ExperimentStatus::infra_error};
    for (int id = 1; id <= 5; ++id) {
        REQUIRE(store.begin_experiment(sweep, id, 1).ok());
        ExperimentOutcome o = make_outcome(id, 2);
        o.status = ends[id - 1];
        REQUIRE(store.record_experiment(sweep, id, o).ok());
    }
    REQUIRE(store.begin_experiment(sweep, 6, 1).ok());  // killed while running; 7 never started
    CHECK(*store.finished_experiment_ids(sweep) == std::vector<int>{1, 2, 3, 4});
    REQUIRE(store.finish_sweep(sweep, SweepState::interrupted).ok());

    Result<int> reset = store.resume_sweep(sweep);
    REQUIRE(reset.ok());
    CHECK(*reset == 1);
    Result<SweepInfo> info = store.get_sweep(sweep);
    CHECK(info->state == SweepState::running);
    CHECK(info->resumes == 1);
    CHECK(info->ended_at.empty());
    CHECK(info->counts.pending == 2);
    CHECK(info->counts.infra_error == 1);
    CHECK(*store.reset_unfinished(sweep) == 0);

    // The infra_error experiment is retried: its earlier samples are replaced, not added to.
    REQUIRE(store.begin_experiment(sweep, 5, 2).ok());
    CHECK((*store.load_experiments(sweep))[4].outcome.samples.empty());  // the new attempt starts bare
    REQUIRE(store.record_experiment(sweep, 5, make_outcome(5, 3)).ok());
    Result<std::vector<StoredExperiment>> loaded = store.load_experiments(sweep);
    REQUIRE(loaded.ok());
    CHECK((*loaded)[4].attempts == 2);
    CHECK((*loaded)[4].outcome.samples == make_outcome(5, 3).samples);
    CHECK(*store.finished_experiment_ids(sweep) == std::vector<int>{1, 2, 3, 4, 5});
}

TEST_CASE("API misuse is reported, not silently accepted") {
    test::TempDir dir;
    Store store = open_test_store(dir.path() / "m.db");
    const std::int64_t sweep = *store.create_sweep(make_sweep("m"));
    REQUIRE(store.add_experiments(sweep, make_experiments(2)).ok());
    Result<void> unknown = store.begin_experiment(sweep, 99, 1);
    REQUIRE(!unknown.ok());
    CHECK(unknown.error().message.find("experiment 99 of sweep") != std::string::npos);
    Result<void> unknown_outcome = store.record_experiment(sweep, 99, make_outcome(99, 1));
    REQUIRE(!unknown_outcome.ok());
    CHECK(unknown_outcome.error().kind == ErrorKind::internal);
    CHECK(unknown_outcome.error().message.find("experiment 99 of sweep") != std::string::npos);
    ExperimentOutcome pending;
    pending.status = ExperimentStatus::pending;
    CHECK(!store.record_experiment(sweep, 1, pending).ok());
    CHECK(!store.finish_sweep(sweep, SweepState::running).ok());
    CHECK(!store.add_experiments(sweep + 1, make_experiments(1)).ok());
    Result<void> duplicate = store.add_experiments(sweep, make_experiments(1));
    REQUIRE(!duplicate.ok());
    CHECK(duplicate.error().kind == ErrorKind::internal);
    ExperimentOutcome twice = make_outcome(1, 1);
    twice.samples.push_back(twice.samples.front());
    CHECK(!store.record_experiment(sweep, 1, twice).ok());
    CHECK(store.load_experiments(sweep)->front().outcome.status == ExperimentStatus::pending);
}

TEST_CASE("sweep references: ids, latest, latest~N, latest:TAG, latest:TAG~N and their errors") {
    test::TempDir dir;
    Store store = open_test_store(dir.path() / "refs.db");
    Result<std::int64_t> none = store.resolve_sweep_ref("latest");
    REQUIRE(!none.ok());
    CHECK(none.error().message.find("no sweeps") != std::string::npos);

    const std::int64_t a = *store.create_sweep(make_sweep("a", "nightly"));
    const std::int64_t b = *store.create_sweep(make_sweep("b"));
    const std::int64_t c = *store.create_sweep(make_sweep("c", "nightly"));
    const std::int64_t d = *store.create_sweep(make_sweep("d", "pr~7"));
    CHECK(*store.resolve_sweep_ref(std::to_string(b)) == b);
    CHECK(*store.resolve_sweep_ref("latest") == d);
    CHECK(*store.resolve_sweep_ref("latest~1") == c);
    CHECK(*store.resolve_sweep_ref("latest~3") == a);
    CHECK(*store.resolve_sweep_ref("latest:nightly") == c);
    CHECK(*store.resolve_sweep_ref("latest:nightly~1") == a);
    CHECK(*store.resolve_sweep_ref("latest:nightly~0") == c);
    CHECK(*store.resolve_sweep_ref("latest:pr~7~0") == d);  // a tag ending in ~N needs an explicit ~0

    Result<std::int64_t> missing_tag = store.resolve_sweep_ref("latest:weekly");
    REQUIRE(!missing_tag.ok());
    CHECK(missing_tag.error().kind == ErrorKind::bad_input);
    CHECK(missing_tag.error().message.find("no sweep tagged 'weekly'") != std::string::npos);
    Result<std::int64_t> too_far = store.resolve_sweep_ref("latest:nightly~2");
    REQUIRE(!too_far.ok());
    CHECK(too_far.error().message.find("only 2") != std::string::npos);
    Result<std::int64_t> no_id = store.resolve_sweep_ref("42");
    REQUIRE(!no_id.ok());
    CHECK(no_id.error().message.find("no sweep 42") != std::string::npos);
    for (const char* bad :
         {"", "-1", "latest:", "latest~x", "newest", "17abc", "latest~-1", "99999999999999999999"}) {
        Result<std::int64_t> r = store.resolve_sweep_ref(bad);
        INFO(bad);
        REQUIRE(!r.ok());
        CHECK(r.error().kind == ErrorKind::bad_input);
    }

    Result<std::vector<SweepInfo>> all = store.list_sweeps();
    REQUIRE(all.ok());
    REQUIRE(all->size() == 4);
    CHECK(all->front().id == d);
    Result<std::vector<SweepInfo>> nightly = store.list_sweeps("nightly", 1);
    REQUIRE(nightly->size() == 1);
    CHECK(nightly->front().id == c);
}

TEST_CASE("list_sweeps counts experiments per status for each sweep") {
    test::TempDir dir;
    Store store = open_test_store(dir.path() / "l.db");
    const std::int64_t first = *store.create_sweep(make_sweep("first"));
    const std::int64_t second = *store.create_sweep(make_sweep("second"));
    REQUIRE(store.add_experiments(first, make_experiments(3)).ok());
    REQUIRE(store.add_experiments(second, make_experiments(2)).ok());
    REQUIRE(store.record_experiment(first, 2, make_outcome(2, 1)).ok());
    REQUIRE(store.finish_sweep(second, SweepState::done).ok());
    Result<std::vector<SweepInfo>> sweeps = store.list_sweeps();
    REQUIRE(sweeps->size() == 2);
    CHECK((*sweeps)[0].id == second);
    CHECK((*sweeps)[0].state == SweepState::done);
    CHECK((*sweeps)[0].counts.pending == 2);
    CHECK((*sweeps)[1].counts.ok == 1);
    CHECK((*sweeps)[1].counts.pending == 2);
}

TEST_CASE("timestamps are ISO-8601 UTC from the store's clock") {
    using namespace std::chrono;
    CHECK(format_timestamp(sys_days{year{2025} / 11 / 29} + hours{15} + minutes{3} + seconds{7} +
                           milliseconds{45}) == "2025-11-29T15:03:07.045Z");
    test::TempDir dir;
    StoreOptions options;
    options.clock = [] { return system_clock::time_point(seconds{86400}); };
    Store store = open_test_store(dir.path() / "t.db", options);
    const std::int64_t sweep = *store.create_sweep(make_sweep("t"));
    CHECK(store.get_sweep(sweep)->created_at == "1970-01-02T00:00:00.000Z");
}

TEST_CASE("a sweep created with its plan is all or nothing") {
    test::TempDir dir;
    Store store = open_test_store(dir.path() / "atomic.db");
    Result<std::int64_t> sweep = store.create_sweep(make_sweep("whole"), make_experiments(5));
    REQUIRE(sweep.ok());
    CHECK(store.get_sweep(*sweep)->counts.pending == 5);

    auto broken = make_experiments(3);
    broken.push_back(make_experiment(2));  // a duplicate id: the insert fails half-way
    Result<std::int64_t> refused = store.create_sweep(make_sweep("broken"), broken);
    REQUIRE(!refused.ok());
    CHECK(refused.error().message.find("experiment 2") != std::string::npos);
    Result<std::vector<SweepInfo>> sweeps = store.list_sweeps();
    REQUIRE(sweeps->size() == 1);  // neither the sweep row nor its first experiments remain
    CHECK(sweeps->front().id == *sweep);
    Result<std::int64_t> count = store.database().query_int("SELECT count(*) FROM experiments", "test");
    CHECK(*count == 5);
}
