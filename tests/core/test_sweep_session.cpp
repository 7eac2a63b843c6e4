// The sweep loop and the sweep session driven through a scripted FakeTarget and an in-memory
// FakeStore: order of writes, retries after a lost connection, resume selection, refused
// resumes (which must write nothing), interrupts and per-experiment failures.
#include <atomic>
#include <string>
#include <vector>

#include "core/sweep/sweep_session.hpp"
#include "core/watch/rule_catalog.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/fake_store.hpp"
#include "tests/support/fake_target.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/sweep_options.hpp"

using namespace ncclsweep;
using ncclsweep::test::fake_ok;
using ncclsweep::test::FakeRun;
using ncclsweep::test::FakeStore;
using ncclsweep::test::FakeSweep;
using ncclsweep::test::FakeTarget;

namespace {

/// Records what the loop tells people.
struct RecordingObserver final : SweepObserver {
    std::vector<std::string> events;
    void started(const Experiment& e, int index, int total, int repeat) override {
        events.push_back("started " + std::to_string(e.id) + " " + std::to_string(index) + "/" +
                         std::to_string(total) + " r" + std::to_string(repeat));
    }
    void finished(const Experiment& e, const ExperimentReport& report, int, int) override {
        events.push_back("finished " + std::to_string(e.id) + " " + std::string(to_string(report.status)));
    }
    void notice(const std::string& message) override { events.push_back("notice " + message); }
};

Experiment point(int id, const std::string& proto) {
    Experiment e;
    e.id = id;
    e.canonical = "NCCL_PROTO=" + proto;
    e.key = "key-" + proto;
    e.params = {{"NCCL_PROTO", proto}};
    e.env = {{"NCCL_PROTO", proto}};
    e.argv = {"/opt/serve", "--port", "8000"};
    return e;
}

SweepRunOptions run_options(int repeats = 1) {
    return ncclsweep::test::unit_run_options(repeats);
}

SweepRequest request_of(std::vector<Experiment> experiments, const std::string& flags = "") {
    SweepRequest request;
    request.sweep.name = "unit";
    request.sweep.fingerprint.parts = {{"--axis/--set", flags}, {"target", "local"}};
    request.sweep.fingerprint.command_line = "ncclsweep run unit.yaml" + (flags.empty() ? "" : " " + flags);
    request.experiments = std::move(experiments);
    return request;
}

/// A stored sweep of `experiments` started with `flags`, experiment ids in `done` finished ok.
FakeSweep stored_sweep(const std::vector<Experiment>& experiments, const std::string& flags,
                       std::vector<int> done) {
    FakeSweep sweep;
    sweep.sweep = request_of(experiments, flags).sweep;
    sweep.experiments = experiments;
    for (int id : done) {
        ExperimentReport report;
        report.exp_id = id;
        sweep.finished[id] = report;
    }
    sweep.state = "interrupted";
    return sweep;
}

/// Resumes sweep `id` of `store` with `request` (the plan as the spec now expands it).
Result<SweepOutcome> resume(FakeStore& store, std::int64_t id, SweepRequest request, FakeTarget& target,
                            RecordingObserver& observer) {
    std::atomic<bool> stop{false};
    request.resume_id = id;
    return run_sweep(request, target, store, observer, run_options(), stop);
}

}  // namespace

TEST_CASE(
    "sweep session: a new sweep is created then each experiment is started and recorded in plan order") {
    FakeTarget target;
    target.script = {fake_ok("tok_s", 100), fake_ok("tok_s", 200), fake_ok("tok_s", 300)};
    FakeStore store;
    RecordingObserver observer;
    std::atomic<bool> stop{false};
    auto request = request_of({point(1, "LL"), point(2, "LL128"), point(3, "Simple")});
    request.plan_warnings = {{"nccl_ignored_setting", "NCCL ignores it (experiments 1-3)"}};
    auto outcome = run_sweep(request, target, store, observer, run_options(), stop);
    REQUIRE(outcome);
    CHECK(outcome->sweep_id == 1);
    CHECK(outcome->summary.ran == 3);
    CHECK(outcome->summary.ok == 3);
    CHECK(store.writes == std::vector<std::string>{"create 1", "note nccl_ignored_setting", "started 1#1",
                                                   "finished 1 ok", "started 2#1", "finished 2 ok",
                                                   "started 3#1", "finished 3 ok", "finish done"});
    CHECK(store.current().finished.at(2).median("tok_s") == Approx(200));
    // Each experiment's environment reaches its process; the workdir is per sweep.
    REQUIRE(target.log->started.size() == 3);
    CHECK(target.log->started[2].workdir == "/fake/sweep-1/exp-3");
    bool has_proto = false;
    for (const auto& [name, value] : target.log->started[2].env)
        has_proto |= name == "NCCL_PROTO" && value == "Simple";
    CHECK(has_proto);
}

TEST_CASE("sweep session: every repeat is a sample of the same experiment") {
    FakeTarget target;
    target.script = {fake_ok("tok_s", 10), fake_ok("tok_s", 30), fake_ok("tok_s", 20)};
    FakeStore store;
    RecordingObserver observer;
    std::atomic<bool> stop{false};
    auto outcome = run_sweep(request_of({point(1, "LL")}), target, store, observer, run_options(3), stop);
    REQUIRE(outcome);
    const auto& report = store.current().finished.at(1);
    CHECK(report.samples.size() == 3);
    CHECK(report.median("tok_s") == Approx(20));
    CHECK(observer.events.front() == "started 1 1/1 r0");
}

TEST_CASE(
    "sweep session: a lost connection is retried after a reconnect and the retry is recorded as attempt 2") {
    FakeTarget target;
    FakeRun lost;
    lost.end = FakeRun::End::lost;
    target.script = {lost, fake_ok("tok_s", 50)};
    FakeStore store;
    RecordingObserver observer;
    std::atomic<bool> stop{false};
    auto outcome = run_sweep(request_of({point(1, "LL")}), target, store, observer, run_options(), stop);
    REQUIRE(outcome);
    CHECK(target.log->reconnects == 1);
    CHECK(store.writes ==
          std::vector<std::string>{"create 1", "started 1#1", "started 1#2", "finished 1 ok", "finish done"});
    CHECK(store.current().finished.at(1).attempts == 2);
    bool noticed = false;
    for (const auto& e : observer.events)
        noticed |= e.find("notice experiment 1: connection to fake lost") == 0;
    CHECK(noticed);
}

TEST_CASE(
    "sweep session: a connection lost on every attempt is an infrastructure error and the sweep is failed") {
    FakeTarget target;
    target.fallback.end = FakeRun::End::lost;
    FakeStore store;
    RecordingObserver observer;
    std::atomic<bool> stop{false};
    auto options = run_options();
    options.max_attempts = 2;
    auto outcome =
        run_sweep(request_of({point(1, "LL"), point(2, "Simple")}), target, store, observer, options, stop);
    REQUIRE_FALSE(outcome);
    CHECK(outcome.error().kind == ErrorKind::infrastructure);
    CHECK(outcome.error().message.find("2 attempts") != std::string::npos);
    CHECK(store.current().finished.at(1).status == RunStatus::infra_error);
    CHECK(store.current().state == "failed");
    CHECK(store.current().finished.count(2) == 0);  // nothing after the host went away
}

TEST_CASE(
    "sweep session: a lost run on a target that halted stops the sweep at once and records nothing for it") {
    // Slurm's shared-work-directory check and pending_timeout: no retry can get past them, and
    // the experiment must stay unrecorded so that --resume runs it again.
    FakeTarget target;
    FakeRun lost;
    lost.end = FakeRun::End::lost;
    lost.lost_reason = "task 7_0 wrote nothing here";
    lost.on_start = [&target] { target.halt = Error::infrastructure("the work directory /w is not shared"); };
    target.script = {lost};
    target.fallback = fake_ok("tok_s", 1);
    FakeStore store;
    RecordingObserver observer;
    std::atomic<bool> stop{false};
    auto outcome = run_sweep(request_of({point(1, "LL"), point(2, "Simple")}), target, store, observer,
                             run_options(), stop);
    REQUIRE_FALSE(outcome);
    CHECK(outcome.error().kind == ErrorKind::infrastructure);
    CHECK(outcome.error().message == "the work directory /w is not shared");
    CHECK(target.log->reconnects == 0);
    CHECK(target.log->started.size() == 1);
    CHECK(store.current().finished.empty());
    for (const auto& e : observer.events) CHECK(e.find("retrying") == std::string::npos);
}

TEST_CASE("sweep session: a reconnect that fails stops the sweep without a second attempt") {
    FakeTarget target;
    target.fallback.end = FakeRun::End::lost;
    target.reconnect_error = Error::infrastructure("host unreachable");
    FakeStore store;
    RecordingObserver observer;
    std::atomic<bool> stop{false};
    auto outcome = run_sweep(request_of({point(1, "LL")}), target, store, observer, run_options(), stop);
    REQUIRE_FALSE(outcome);
    CHECK(outcome.error().message.find("could not reconnect: host unreachable") != std::string::npos);
    CHECK(target.log->started.size() == 1);
    CHECK(store.current().state == "failed");
}

TEST_CASE("sweep session: a failing experiment is a result and the sweep goes on") {
    FakeTarget target;
    FakeRun crash;
    crash.lines = {{Stream::err, "something went wrong"}};
    crash.exit = ExitInfo{1, 0};
    target.script = {crash, fake_ok("tok_s", 9)};
    FakeStore store;
    RecordingObserver observer;
    std::atomic<bool> stop{false};
    auto outcome = run_sweep(request_of({point(1, "LL"), point(2, "Simple")}), target, store, observer,
                             run_options(), stop);
    REQUIRE(outcome);
    CHECK(outcome->summary.failed == 1);
    CHECK(outcome->summary.ok == 1);
    const auto& failed = store.current().finished.at(1);
    CHECK(failed.status == RunStatus::failed);
    CHECK(failed.exit_code == 1);
    CHECK(store.current().state == "done");
}

TEST_CASE("sweep session: a command that cannot start fails its experiment with status 127 - not the host") {
    FakeTarget target;
    FakeRun missing;
    missing.start_error = Error::bad_input("no such program /opt/serve");
    target.script = {missing};
    FakeStore store;
    RecordingObserver observer;
    std::atomic<bool> stop{false};
    auto outcome = run_sweep(request_of({point(1, "LL")}), target, store, observer, run_options(), stop);
    REQUIRE(outcome);
    CHECK(target.log->reconnects == 0);
    const auto& report = store.current().finished.at(1);
    CHECK(report.status == RunStatus::failed);
    CHECK(report.exit_code == 127);
    CHECK(report.diagnosis.find("no such program") != std::string::npos);
}

TEST_CASE("sweep session: a client placeholder that names no parameter fails the experiment as config") {
    FakeTarget target;
    FakeStore store;
    RecordingObserver observer;
    std::atomic<bool> stop{false};
    auto options = run_options();
    options.workload.client = {SpecValue{"/opt/bench", {}}, SpecValue{"--rate={rate}", {}}};
    auto outcome = run_sweep(request_of({point(1, "LL")}), target, store, observer, options, stop);
    REQUIRE(outcome);
    const auto& report = store.current().finished.at(1);
    CHECK(report.status == RunStatus::failed);
    CHECK(report.failure_class == "config");
    CHECK(report.diagnosis.find("client:") == 0);
    CHECK(report.diagnosis.find("{rate}") != std::string::npos);
    CHECK(target.log->started.empty());  // nothing started for a point that cannot run
}

TEST_CASE(
    "sweep session: an interrupt kills the running group, records nothing for it and ends interrupted") {
    FakeTarget target;
    std::atomic<bool> stop{false};
    FakeRun hanging;
    hanging.end = FakeRun::End::hang;
    hanging.lines = {{Stream::out, "loading"}};
    hanging.on_drained = [&stop]() { stop = true; };
    target.script = {fake_ok("tok_s", 1), hanging};
    FakeStore store;
    RecordingObserver observer;
    auto outcome = run_sweep(request_of({point(1, "LL"), point(2, "LL128"), point(3, "Simple")}), target,
                             store, observer, run_options(), stop);
    REQUIRE(outcome);
    CHECK(outcome->summary.interrupted);
    CHECK(target.log->kills == 1);
    CHECK(target.log->started.size() == 2);  // experiment 3 never started
    CHECK(store.writes == std::vector<std::string>{"create 1", "started 1#1", "finished 1 ok", "started 2#1",
                                                   "finish interrupted"});
}

TEST_CASE("sweep session: a stop raised between experiments starts nothing more") {
    FakeTarget target;
    std::atomic<bool> stop{false};
    FakeRun first = fake_ok("tok_s", 1);
    first.on_drained = [&stop]() { stop = true; };  // raised as the process exits on its own
    target.script = {first};
    FakeStore store;
    RecordingObserver observer;
    auto outcome = run_sweep(request_of({point(1, "LL"), point(2, "Simple")}), target, store, observer,
                             run_options(), stop);
    REQUIRE(outcome);
    CHECK(outcome->summary.interrupted);
    CHECK(target.log->started.size() == 1);
    CHECK(target.log->kills == 0);
    CHECK(store.writes ==
          std::vector<std::string>{"create 1", "started 1#1", "finished 1 ok", "finish interrupted"});
}

TEST_CASE("sweep session: a resume runs only the experiments that have not finished") {
    const std::vector<Experiment> plan = {point(1, "LL"), point(2, "LL128"), point(3, "Simple")};
    FakeStore store;
    const auto id = store.seed(stored_sweep(plan, "--set tokens=8", {1, 3}));
    FakeTarget target;
    target.fallback = fake_ok("tok_s", 7);
    RecordingObserver observer;
    auto outcome = resume(store, id, request_of(plan, "--set tokens=8"), target, observer);
    REQUIRE(outcome);
    CHECK(outcome->skipped_finished == 2);
    CHECK(outcome->summary.ran == 1);
    CHECK(store.writes ==
          std::vector<std::string>{"reopen 1", "started 2#1", "finished 2 ok", "finish done"});
    CHECK(store.sweeps.at(id).resumes == 1);
    CHECK(observer.events.front() == "started 2 1/1 r0");
}

TEST_CASE("sweep session: a resume with different overrides is refused - names them and writes nothing") {
    const std::vector<Experiment> plan = {point(1, "LL"), point(2, "Simple")};
    FakeStore store;
    const auto id = store.seed(stored_sweep(plan, "--set inject=nccl_hang@2", {1}));
    FakeTarget target;
    RecordingObserver observer;
    auto outcome = resume(store, id, request_of(plan, "--set topology=nvlink"), target, observer);
    REQUIRE_FALSE(outcome);
    CHECK(outcome.error().kind == ErrorKind::bad_input);
    const std::string& message = outcome.error().message;
    CHECK(message.find("--axis/--set: was '--set inject=nccl_hang@2', now '--set topology=nvlink'") !=
          std::string::npos);
    // The way out reproduces the command line the sweep started with.
    CHECK(message.find("ncclsweep run unit.yaml --set inject=nccl_hang@2 --resume 1") != std::string::npos);
    CHECK(store.writes.empty());
    CHECK(store.sweeps.at(id).state == "interrupted");
    CHECK(store.sweeps.at(id).resumes == 0);
    CHECK(target.log->calls.empty());
}

TEST_CASE(
    "sweep session: a resume whose points now run a different command is refused naming the experiment") {
    std::vector<Experiment> plan = {point(1, "LL"), point(2, "Simple")};
    FakeStore store;
    const auto id = store.seed(stored_sweep(plan, "", {}));
    plan[1].argv = {"/opt/serve", "--port", "9000"};  // an edited fixed argument
    FakeTarget target;
    RecordingObserver observer;
    auto outcome = resume(store, id, request_of(plan), target, observer);
    REQUIRE_FALSE(outcome);
    CHECK(outcome.error().message.find(
              "experiment 2's command was '/opt/serve --port 8000', now '/opt/serve --port 9000'") !=
          std::string::npos);
    CHECK(store.writes.empty());
}

TEST_CASE("sweep session: a resume whose plan has a different number of points is refused") {
    const std::vector<Experiment> plan = {point(1, "LL"), point(2, "Simple")};
    FakeStore store;
    const auto id = store.seed(stored_sweep(plan, "", {}));
    FakeTarget target;
    RecordingObserver observer;
    auto outcome = resume(store, id, request_of({point(1, "LL")}), target, observer);
    REQUIRE_FALSE(outcome);
    CHECK(outcome.error().message.find("the sweep has 2 experiments, the spec now plans 1") !=
          std::string::npos);
    CHECK(store.writes.empty());
}

TEST_CASE("sweep session: a sweep recorded before fingerprints resumes when its points match") {
    const std::vector<Experiment> plan = {point(1, "LL")};
    FakeStore store;
    FakeSweep old = stored_sweep(plan, "", {});
    old.sweep.fingerprint = PlanFingerprint{};
    const auto id = store.seed(old);
    FakeTarget target;
    target.fallback = fake_ok("tok_s", 3);
    RecordingObserver observer;
    auto outcome = resume(store, id, request_of(plan, "--set anything=1"), target, observer);
    REQUIRE(outcome);
    CHECK(outcome->summary.ok == 1);
}

TEST_CASE("sweep session: a resume refused by the store (live runner) runs nothing") {
    const std::vector<Experiment> plan = {point(1, "LL")};
    FakeStore store;
    const auto id = store.seed(stored_sweep(plan, "", {}));
    store.reopen_error = Error::infrastructure("sweep 1 is still being run by pid 42 on this host");
    FakeTarget target;
    RecordingObserver observer;
    auto outcome = resume(store, id, request_of(plan), target, observer);
    REQUIRE_FALSE(outcome);
    CHECK(outcome.error().kind == ErrorKind::infrastructure);
    CHECK(target.log->calls.empty());
    CHECK(store.writes.empty());
}

TEST_CASE("sweep session: a work directory that cannot be prepared fails the new sweep") {
    FakeTarget target;
    target.prepare_error = Error::infrastructure("disk full");
    FakeStore store;
    RecordingObserver observer;
    std::atomic<bool> stop{false};
    auto outcome = run_sweep(request_of({point(1, "LL")}), target, store, observer, run_options(), stop);
    REQUIRE_FALSE(outcome);
    CHECK(store.current().state == "failed");
    CHECK(store.current().reason == "disk full");
    CHECK(target.log->started.empty());
}

TEST_CASE("sweep session: a store that cannot record an outcome stops the sweep before the next experiment") {
    FakeTarget target;
    target.fallback = fake_ok("tok_s", 1);
    FakeStore store;
    store.fail_finished_at = 1;
    RecordingObserver observer;
    std::atomic<bool> stop{false};
    auto outcome = run_sweep(request_of({point(1, "LL"), point(2, "Simple")}), target, store, observer,
                             run_options(), stop);
    REQUIRE_FALSE(outcome);
    CHECK(outcome.error().message.find("database is full") != std::string::npos);
    CHECK(target.log->started.size() == 1);
    CHECK(store.current().state == "failed");
}

TEST_CASE(
    "sweep session: the check before each experiment gets the process groups the previous one started") {
    FakeTarget target;
    target.fallback = fake_ok("tok_s", 1);
    FakeStore store;
    RecordingObserver observer;
    std::atomic<bool> stop{false};
    auto options = run_options();
    std::vector<std::vector<long>> seen;
    options.before_experiment = [&seen](const std::vector<long>& groups) -> Result<void> {
        seen.push_back(groups);
        if (seen.size() == 3) return Error::infrastructure("GPU 0 still held by pid 77");
        return success();
    };
    auto outcome = run_sweep(request_of({point(1, "LL"), point(2, "LL128"), point(3, "Simple")}), target,
                             store, observer, options, stop);
    REQUIRE_FALSE(outcome);
    REQUIRE(seen.size() == 3);
    CHECK(seen[0].empty());
    CHECK(seen[1] == std::vector<long>{1000});
    CHECK(seen[2] == std::vector<long>{1001});
    CHECK(store.current().finished.size() == 2);
    CHECK(store.current().state == "failed");
}

namespace {

FakeRun ended_by_scheduler(const std::string& state) {
    FakeRun run;
    run.lines = {{Stream::out, "started"}};
    run.exit = ExitInfo{0, 15};
    run.scheduler_end = SchedulerEnd{
        state, state == "TIMEOUT" ? "Slurm ended task 4_0 at its time limit (target.slurm.time 00:01:00)"
                                  : "Slurm ended task 4_0 for its memory"};
    return run;
}

}  // namespace

TEST_CASE("sweep session: a task ended at the scheduler's time limit is retried as a new task, not a crash") {
    FakeTarget target;
    target.script = {ended_by_scheduler("TIMEOUT"), fake_ok("tok_s", 50)};
    FakeStore store;
    RecordingObserver observer;
    std::atomic<bool> stop{false};
    auto outcome = run_sweep(request_of({point(1, "LL")}), target, store, observer, run_options(), stop);
    REQUIRE(outcome);
    CHECK(target.log->started.size() == 2);
    CHECK(target.log->reconnects == 0);  // nothing was disconnected
    CHECK(store.writes ==
          std::vector<std::string>{"create 1", "started 1#1", "started 1#2", "finished 1 ok", "finish done"});
    CHECK(store.current().finished.at(1).attempts == 2);
    bool noticed = false;
    for (const auto& e : observer.events)
        noticed |= e.find("notice experiment 1: Slurm ended task 4_0 at its time limit") == 0 &&
                   e.find("retrying as a new task (attempt 2 of 3)") != std::string::npos;
    CHECK(noticed);
}

TEST_CASE(
    "sweep session: a time limit on every attempt is a timeout of class scheduler_time_limit and the sweep "
    "goes on") {
    FakeTarget target;
    target.script = {ended_by_scheduler("TIMEOUT"), ended_by_scheduler("TIMEOUT")};
    target.fallback = fake_ok("tok_s", 7);
    FakeStore store;
    RecordingObserver observer;
    std::atomic<bool> stop{false};
    auto options = run_options();
    options.max_attempts = 2;
    auto outcome =
        run_sweep(request_of({point(1, "LL"), point(2, "Simple")}), target, store, observer, options, stop);
    REQUIRE(outcome);
    const auto& first = store.current().finished.at(1);
    CHECK(first.status == RunStatus::timed_out);
    CHECK(first.failure_class == "scheduler_time_limit");
    CHECK(first.attempts == 2);
    CHECK(first.diagnosis.find("time limit") != std::string::npos);
    CHECK(store.current().finished.at(2).status == RunStatus::ok);
    CHECK(target.log->started.size() == 3);
}

TEST_CASE(
    "sweep session: a task the scheduler ended for its memory fails once - the same memory would end it "
    "again") {
    FakeTarget target;
    target.script = {ended_by_scheduler("OUT_OF_MEMORY")};
    target.fallback = fake_ok("tok_s", 7);
    FakeStore store;
    RecordingObserver observer;
    std::atomic<bool> stop{false};
    auto outcome = run_sweep(request_of({point(1, "LL")}), target, store, observer, run_options(), stop);
    REQUIRE(outcome);
    CHECK(target.log->started.size() == 1);
    CHECK(store.current().finished.at(1).status == RunStatus::failed);
    CHECK(store.current().finished.at(1).failure_class == "scheduler_memory");
}

TEST_CASE("sweep session: timeouts and durations run on the injected clock, not the wall clock") {
    // A server that prints one line and then hangs, with a 30 s stall timeout: on a ManualClock
    // shared by the loop and the target, the timeout passes in simulated time, exactly.
    const test::ManualClock clock;
    FakeTarget target;
    target.clock = &clock;
    FakeRun hanging;
    hanging.lines = {{Stream::out, "loading weights"}};
    hanging.end = FakeRun::End::hang;
    target.script = {hanging, fake_ok("tok_s", 7)};
    SweepRunOptions options = run_options();
    options.clock = &clock;
    options.watcher.timeouts.stall = 30;
    FakeStore store;
    RecordingObserver observer;
    std::atomic<bool> stop{false};
    const double began = clock.seconds();
    auto outcome =
        run_sweep(request_of({point(1, "LL"), point(2, "Simple")}), target, store, observer, options, stop);
    REQUIRE(outcome);
    const auto& hung = store.current().finished.at(1);
    CHECK(hung.status == RunStatus::timed_out);
    CHECK(hung.diagnosis.find("stall timeout") != std::string::npos);
    // Detected at the first poll (100 ms each) that reached 30 s without output, and killed then.
    REQUIRE(hung.detected_after_s);
    CHECK(*hung.detected_after_s >= 30.0);
    CHECK(*hung.detected_after_s <= 30.1 + 1e-9);
    REQUIRE(hung.total_s);
    CHECK(*hung.total_s == Approx(*hung.detected_after_s).margin(0.1));
    CHECK(target.log->kills == 1);
    CHECK(store.current().finished.at(2).status == RunStatus::ok);
    CHECK(clock.seconds() - began == Approx(*hung.total_s).margin(0.2));
}
