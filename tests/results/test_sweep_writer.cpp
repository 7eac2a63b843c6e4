// SweepWriter: the sweep session's SweepStore over the real SQLite store, driven through the
// FakeTarget: the fingerprint is kept, a resume reads before it writes, a refused resume leaves
// the database file byte-identical, and outcomes land as the loop reports them.
#include "results/store/sweep_writer.hpp"

#include <atomic>
#include <filesystem>
#include <string>

#include "core/watch/rule_catalog.hpp"
#include "tests/results/store_fixtures.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/fake_target.hpp"
#include "tests/support/quiet_observer.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;
using namespace ncclsweep::results;
using ncclsweep::test::fake_ok;
using ncclsweep::test::FakeRun;
using ncclsweep::test::FakeTarget;
using ncclsweep::test::make_experiments;

namespace {

Store open_writer_store(const std::filesystem::path& path) {
    return test::open_store(path, {}, Durability::normal);
}

SweepRunOptions run_options() {
    SweepRunOptions options;
    options.sweep_name = "writer";
    options.workload.command = {SpecValue{"tpverify", {}}};
    options.workload.metrics = {{"tok_s", "tok_s=([0-9.]+)"}};
    options.watcher.success = SuccessRule::any_metric;
    options.watcher.timeouts = Timeouts{0, 0, 0, 0};
    auto rules = rules_from_workload(options.workload);
    REQUIRE(rules);
    options.catalog = *RuleCatalog::with_user_rules(*rules);
    options.kill_grace = std::chrono::milliseconds(0);
    return options;
}

SweepRequest request_with(const std::string& flags, int experiments = 3) {
    SweepRequest request;
    request.sweep.name = "writer";
    request.sweep.spec_path = "writer.yaml";
    request.sweep.target = "fake";
    request.sweep.repeats = 1;
    request.sweep.fingerprint.parts = {{"--axis/--set", flags}, {"target", "local"}};
    request.sweep.fingerprint.command_line = "ncclsweep run writer.yaml " + flags;
    request.experiments = make_experiments(experiments);
    return request;
}

/// Runs a new sweep whose second experiment is interrupted; returns its id.
std::int64_t interrupted_sweep(const std::filesystem::path& db, const std::string& flags) {
    Store store = open_writer_store(db);
    SweepWriter writer(store);
    FakeTarget target;
    std::atomic<bool> stop{false};
    FakeRun hanging;
    hanging.end = FakeRun::End::hang;
    hanging.on_drained = [&stop]() { stop = true; };
    target.script = {fake_ok("tok_s", 5), hanging};
    test::QuietObserver observer;
    auto outcome = run_sweep(request_with(flags), target, writer, observer, run_options(), stop);
    REQUIRE(outcome);
    REQUIRE(outcome->summary.interrupted);
    return outcome->sweep_id;
}

std::string file_bytes(const std::filesystem::path& path) {
    std::string bytes = test::read_file(path);
    REQUIRE_FALSE(bytes.empty());
    return bytes;
}

}  // namespace

TEST_CASE("sweep writer: the fingerprint is stored with the sweep and read back by load_plan") {
    test::TempDir dir;
    const auto db = dir.path() / "s.db";
    const auto id = interrupted_sweep(db, "--set tokens=8");
    Store store = open_writer_store(db);
    SweepWriter writer(store);
    auto plan = writer.load_plan(id);
    REQUIRE(plan);
    CHECK(plan->experiments.size() == 3);
    CHECK(plan->experiments[1].argv == make_experiments(3)[1].argv);
    CHECK(plan->fingerprint.parts == request_with("--set tokens=8").sweep.fingerprint.parts);
    CHECK(plan->fingerprint.command_line == "ncclsweep run writer.yaml --set tokens=8");
    auto info = store.get_sweep(id);
    REQUIRE(info);
    CHECK(info->state == SweepState::interrupted);
    CHECK(info->counts.ok == 1);
}

TEST_CASE(
    "sweep writer: a resume with other overrides is refused and the database file stays byte-identical") {
    test::TempDir dir;
    const auto db = dir.path() / "s.db";
    const auto id = interrupted_sweep(db, "--set inject=nccl_hang@2");
    const std::string before = file_bytes(db);
    {
        Store store = open_writer_store(db);
        SweepWriter writer(store);
        FakeTarget target;
        test::QuietObserver observer;
        std::atomic<bool> stop{false};
        auto request = request_with("--set topology=nvlink");
        request.resume_id = id;
        auto outcome = run_sweep(request, target, writer, observer, run_options(), stop);
        REQUIRE_FALSE(outcome);
        CHECK(outcome.error().kind == ErrorKind::bad_input);
        CHECK(outcome.error().message.find("--set topology=nvlink") != std::string::npos);
        CHECK(writer.sweep_id() == 0);
        CHECK(target.log->calls.empty());
    }
    CHECK(file_bytes(db) == before);
    Store store = open_writer_store(db);
    auto info = store.get_sweep(id);
    REQUIRE(info);
    CHECK(info->state == SweepState::interrupted);
    CHECK(info->resumes == 0);
}

TEST_CASE("sweep writer: an accepted resume reopens the sweep and runs what did not finish") {
    test::TempDir dir;
    const auto db = dir.path() / "s.db";
    const auto id = interrupted_sweep(db, "--set tokens=8");
    Store store = open_writer_store(db);
    SweepWriter writer(store);
    FakeTarget target;
    target.fallback = fake_ok("tok_s", 9);
    test::QuietObserver observer;
    std::atomic<bool> stop{false};
    auto request = request_with("--set tokens=8");
    request.resume_id = id;
    auto outcome = run_sweep(request, target, writer, observer, run_options(), stop);
    REQUIRE(outcome);
    CHECK(outcome->skipped_finished == 1);
    CHECK(target.log->started.size() == 2);
    auto info = store.get_sweep(id);
    REQUIRE(info);
    CHECK(info->state == SweepState::done);
    CHECK(info->resumes == 1);
    CHECK(info->counts.ok == 3);
    auto loaded = store.load_experiments(id);
    REQUIRE(loaded);
    CHECK((*loaded)[2].outcome.samples == std::vector<Sample>{{0, "tok_s", 9}});
}

TEST_CASE("sweep writer: a sweep recorded before fingerprints loads with an empty one") {
    test::TempDir dir;
    const auto db = dir.path() / "s.db";
    const auto id = interrupted_sweep(db, "");
    Store store = open_writer_store(db);
    REQUIRE(store.database().exec("UPDATE sweeps SET plan_fingerprint = ''", "test"));
    SweepWriter writer(store);
    auto plan = writer.load_plan(id);
    REQUIRE(plan);
    CHECK(plan->fingerprint.parts.empty());
    CHECK(plan->experiments.size() == 3);
}

TEST_CASE("sweep writer: outcomes map status - exit and samples for the store") {
    ExperimentReport report;
    report.exp_id = 4;
    report.status = RunStatus::timed_out;
    report.failure_class = "hang";
    report.exit_signal = 9;
    report.samples = {{0, "tok_s", 1.5}, {1, "tok_s", 2.5}};
    report.warnings = {{"nccl_warn", "NCCL WARN something"}};
    ExperimentOutcome outcome = to_outcome(report);
    CHECK(outcome.status == ExperimentStatus::timed_out);
    CHECK(outcome.failure_class == "hang");
    CHECK(outcome.exit_signal == 9);
    CHECK_FALSE(outcome.exit_code);
    CHECK(outcome.samples == std::vector<Sample>{{0, "tok_s", 1.5}, {1, "tok_s", 2.5}});
    REQUIRE(outcome.events.size() == 1);
    CHECK(outcome.events[0].code == "nccl_warn");
}
