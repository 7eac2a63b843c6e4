// Proof of delivery in the sweep loop (core/sweep/delivery): the evidence a run's
// sitecustomize.py leaves is read back after each run; with env_delivery sitecustomize a run
// without it is a `delivery` failure, never ok. Also the sweep's identity (uuid work directory,
// its lock), the PYTHONPATH check of the work directory and the inherited environment.
#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "core/plan/render.hpp"
#include "core/sweep/delivery.hpp"
#include "core/sweep/inherited_env.hpp"
#include "core/sweep/sweep_session.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/fake_store.hpp"
#include "tests/support/fake_target.hpp"
#include "tests/support/sweep_options.hpp"

using namespace ncclsweep;
using ncclsweep::test::fake_ok;
using ncclsweep::test::FakeRun;
using ncclsweep::test::FakeStore;
using ncclsweep::test::FakeSweep;
using ncclsweep::test::FakeTarget;

namespace {

struct QuietObserver final : SweepObserver {
    std::vector<std::string> notices;
    void started(const Experiment&, int, int, int) override {}
    void finished(const Experiment&, const ExperimentReport&, int, int) override {}
    void notice(const std::string& message) override { notices.push_back(message); }
};

Experiment point(int id, const std::string& proto) {
    Experiment e;
    e.id = id;
    e.canonical = "NCCL_PROTO=" + proto;
    e.key = "key-" + proto;
    e.params = {{"NCCL_PROTO", proto}};
    e.env = {{"NCCL_PROTO", proto}};
    e.argv = {"/opt/serve"};
    return e;
}

/// The marker line a sitecustomize.py writes in an interpreter of process group `group`.
std::string marker_line(long group, int repeat, const std::string& missing = "-",
                        const std::string& task = "-") {
    return "ncclsweep-delivered pgid=" + std::to_string(group) + " pid=" + std::to_string(group + 1) +
           " task=" + task + " repeat=" + std::to_string(repeat) + " missing=" + missing +
           " python=/usr/bin/python3\n";
}

/// A run that prints tok_s and, when `delivered`, leaves the evidence its sitecustomize.py would
/// (FakeTarget gives process groups 1000, 1001, ... in start order).
FakeRun python_run(FakeTarget& target, const std::string& marker_path, long group, int repeat,
                   bool delivered) {
    FakeRun run = fake_ok("tok_s", 100 + repeat);
    if (delivered)
        run.on_start = [&target, marker_path, group, repeat] {
            target.host_files[marker_path] += marker_line(group, repeat);
        };
    return run;
}

SweepRunOptions sitecustomize_options(int repeats = 1) {
    SweepRunOptions options = test::unit_run_options(repeats);
    options.delivery = EnvDelivery::sitecustomize;
    options.workdir = "/fake/sweep-1-u";
    return options;
}

/// The evidence files of repeats 0 and 1 of experiment 1.
const std::string k_marker = "/fake/sweep-1-u/exp-1/" + render::delivery_marker_file(0);
const std::string k_marker_1 = "/fake/sweep-1-u/exp-1/" + render::delivery_marker_file(1);

}  // namespace

TEST_CASE("delivery evidence: only lines of this run's repeat and process group or scheduler task count") {
    const std::string text =
        marker_line(1000, 0) + marker_line(999, 1) + marker_line(1001, 1, "NCCL_PROTO") +
        "ncclsweep-chained pgid=1000 pid=1001 task=- repeat=0 origin=/u/sitecustomize.py "
        "/u/sitecustomize.py raised NameError: x\n" +
        "garbage line\nncclsweep-delivered pgid=1000 pid=7 task=- repeat=0 missing=-";
    auto first = read_delivery_evidence(text, DeliveryRun{0, 1000L, ""});
    CHECK(first.interpreters == 1);  // the last line has no newline yet: still being written
    CHECK(first.delivered());
    REQUIRE(first.chained_errors.size() == 1);
    CHECK(first.chained_errors[0] == "/u/sitecustomize.py raised NameError: x");
    // An earlier attempt's line (another process group) is not evidence for this run.
    CHECK_FALSE(read_delivery_evidence(text, DeliveryRun{1, 1002L, ""}).delivered());
    auto partial = read_delivery_evidence(text, DeliveryRun{1, 1001L, ""});
    CHECK(partial.interpreters == 1);
    CHECK(partial.missing == std::vector<std::string>{"NCCL_PROTO"});
    CHECK_FALSE(partial.delivered());
    // A batch scheduler's task decides, whatever the process group.
    const std::string slurm = marker_line(55, 0, "-", "4242_3");
    CHECK(read_delivery_evidence(slurm, DeliveryRun{0, std::nullopt, "4242_3"}).delivered());
    CHECK_FALSE(read_delivery_evidence(slurm, DeliveryRun{0, std::nullopt, "4242_4"}).delivered());
    CHECK_FALSE(read_delivery_evidence("", DeliveryRun{0, 1000L, ""}).delivered());
}

TEST_CASE(
    "sweep session: a later repeat without evidence fails the point and an earlier attempt's line does not "
    "count") {
    FakeTarget target;
    // An earlier run of this experiment (another process group) left its line for repeat 1.
    target.host_files[k_marker_1] = marker_line(77, 1);
    // Repeat 0 delivered; repeat 1 ran without its settings (python -I, a reset PYTHONPATH...).
    target.script = {python_run(target, k_marker, 1000, 0, true),
                     python_run(target, k_marker_1, 1001, 1, false)};
    FakeStore store;
    QuietObserver observer;
    std::atomic<bool> stop{false};
    SweepRequest request;
    request.sweep.name = "unit";
    request.sweep.uuid = "u";
    request.experiments = {point(1, "LL")};
    SweepRunOptions options = test::unit_run_options(2);
    options.delivery = EnvDelivery::sitecustomize;
    auto outcome = run_sweep(request, target, store, observer, options, stop);
    REQUIRE(outcome);
    const ExperimentReport& report = store.current().finished.at(1);
    CHECK(report.status == RunStatus::failed);
    CHECK(report.failure_class == "delivery");
    // Repeat 0's number was measured with the settings; repeat 1's without, so it is not kept.
    REQUIRE(report.samples.size() == 1);
    CHECK(report.samples[0].repeat == 0);
}

TEST_CASE(
    "sweep session: a delivery failure is recorded with its cause and without the undelivered samples") {
    FakeTarget target;
    target.script = {python_run(target, "/fake/placeholder", 1000, 0, false)};
    FakeStore store;
    QuietObserver observer;
    std::atomic<bool> stop{false};
    SweepRequest request;
    request.sweep.name = "unit";
    request.sweep.uuid = "u";
    request.experiments = {point(1, "LL")};
    SweepRunOptions options = test::unit_run_options(1);
    options.delivery = EnvDelivery::sitecustomize;
    auto outcome = run_sweep(request, target, store, observer, options, stop);
    REQUIRE(outcome);
    const ExperimentReport& report = store.current().finished.at(1);
    CHECK(report.status == RunStatus::failed);
    CHECK(report.failure_class == "delivery");
    CHECK(report.samples.empty());
    CHECK(report.diagnosis.rfind("settings not delivered: no Python interpreter imported sitecustomize.py",
                                 0) == 0);
    CHECK(report.diagnosis.find("set target.env_delivery: env or both") != std::string::npos);
    CHECK(report.diagnosis.find("/fake/sweep-1-u/exp-1/sitecustomize.py") != std::string::npos);
    // The runner read the evidence from the experiment's directory on the host.
    CHECK(std::find(target.log->calls.begin(), target.log->calls.end(), "get " + k_marker) !=
          target.log->calls.end());
    // A run that never got its settings says nothing about them: the search would not prune on it.
    CHECK_FALSE(observation_of(report, "tok_s").says_about_setting);
    CHECK(ending_of(*outcome) == SweepEnding::nothing_succeeded);
}

TEST_CASE("sweep session: a command that never started is its own failure, with no evidence read") {
    FakeTarget target;
    FakeRun missing;
    missing.start_error = Error::bad_input("no such program /opt/serve");
    target.script = {missing};
    FakeStore store;
    QuietObserver observer;
    std::atomic<bool> stop{false};
    SweepRequest request;
    request.sweep.name = "unit";
    request.sweep.uuid = "u";
    request.experiments = {point(1, "LL")};
    auto outcome = run_sweep(request, target, store, observer, sitecustomize_options(), stop);
    REQUIRE(outcome);
    const ExperimentReport& report = store.current().finished.at(1);
    CHECK(report.status == RunStatus::failed);
    CHECK(report.exit_code == 127);
    // Not a delivery failure: nothing ran that could have imported sitecustomize.py, and the
    // evidence is not read (a host that cannot start the command may not answer a read either).
    CHECK(report.failure_class != "delivery");
    CHECK(std::none_of(target.log->calls.begin(), target.log->calls.end(),
                       [](const std::string& call) { return call.rfind("get ", 0) == 0; }));
}

TEST_CASE("sweep session: delivered runs are ok, and with both or env no evidence is required") {
    for (EnvDelivery delivery : {EnvDelivery::sitecustomize, EnvDelivery::both, EnvDelivery::env}) {
        INFO(static_cast<int>(delivery));
        FakeTarget target;
        const bool write = delivery == EnvDelivery::sitecustomize;
        target.script = {python_run(target, k_marker, 1000, 0, write),
                         python_run(target, k_marker_1, 1001, 1, write)};
        FakeStore store;
        QuietObserver observer;
        std::atomic<bool> stop{false};
        SweepRequest request;
        request.sweep.name = "unit";
        request.sweep.uuid = "u";
        request.experiments = {point(1, "LL")};
        SweepRunOptions options = test::unit_run_options(2);
        options.delivery = delivery;
        auto outcome = run_sweep(request, target, store, observer, options, stop);
        REQUIRE(outcome);
        const ExperimentReport& report = store.current().finished.at(1);
        CHECK(report.status == RunStatus::ok);
        CHECK(report.samples.size() == 2);
        // env delivery writes no sitecustomize.py and reads nothing back.
        const bool read_back = std::find(target.log->calls.begin(), target.log->calls.end(),
                                         "get " + k_marker) != target.log->calls.end();
        CHECK(read_back == (delivery != EnvDelivery::env));
    }
}

TEST_CASE(
    "sweep session: an error of the sitecustomize the sweep's shadows becomes a warning of the experiment") {
    FakeTarget target;
    FakeRun run = fake_ok("tok_s", 1);
    run.on_start = [&target] {
        target.host_files[k_marker] +=
            marker_line(1000, 0) +
            "ncclsweep-chained pgid=1000 pid=1001 task=- repeat=0 origin=/etc/s.py "
            "/etc/s.py raised ImportError: no module named apport\n";
    };
    target.script = {run};
    FakeStore store;
    QuietObserver observer;
    std::atomic<bool> stop{false};
    SweepRequest request;
    request.sweep.name = "unit";
    request.sweep.uuid = "u";
    request.experiments = {point(1, "LL")};
    SweepRunOptions options = test::unit_run_options(1);
    options.delivery = EnvDelivery::sitecustomize;
    REQUIRE(run_sweep(request, target, store, observer, options, stop));
    const ExperimentReport& report = store.current().finished.at(1);
    CHECK(report.status == RunStatus::ok);
    REQUIRE(report.warnings.size() == 1);
    CHECK(report.warnings[0].first == "sitecustomize_chain");
    CHECK(report.warnings[0].second == "/etc/s.py raised ImportError: no module named apport");
}

TEST_CASE(
    "sweep session: a work directory that cannot go on PYTHONPATH stops the sweep before anything runs") {
    CHECK(check_pythonpath_dir("/scratch/a", EnvDelivery::sitecustomize, "local"));
    CHECK(check_pythonpath_dir("/scratch/a:b", EnvDelivery::env, "local"));
    for (EnvDelivery delivery : {EnvDelivery::sitecustomize, EnvDelivery::both})
        for (const std::string& dir :
             {std::string("/a:b/w"), std::string("/a\nb"), std::string("/a\0b", 4)}) {
            auto refused = check_pythonpath_dir(dir, delivery, "ssh://me@gpu:22");
            REQUIRE_FALSE(refused);
            CHECK(refused.error().kind == ErrorKind::bad_input);
            CHECK(refused.error().message.find("cannot go on PYTHONPATH") != std::string::npos);
            CHECK(refused.error().message.find("ssh://me@gpu:22") != std::string::npos);
        }
    // Through run_sweep: the root resolves to a path with ':' (the current directory, say).
    struct ColonTarget final : Target {
        FakeTarget inner;
        [[nodiscard]] std::string describe() const override { return "local"; }
        Result<std::string> prepare_workdir(const std::string& id) override { return "/home/a:b/" + id; }
        Result<void> lock_workdir(const std::string& h) override { return inner.lock_workdir(h); }
        Result<void> put_file(const std::string& p, const std::string& c) override {
            return inner.put_file(p, c);
        }
        Result<std::optional<std::string>> get_file(const std::string& p, std::size_t l) override {
            return inner.get_file(p, l);
        }
        Result<std::unique_ptr<Process>> start(const Command& c) override { return inner.start(c); }
        Result<std::string> capture(const std::vector<std::string>& a, std::chrono::seconds t) override {
            return inner.capture(a, t);
        }
    } target;
    FakeStore store;
    QuietObserver observer;
    std::atomic<bool> stop{false};
    SweepRequest request;
    request.sweep.name = "unit";
    request.experiments = {point(1, "LL")};
    SweepRunOptions options = test::unit_run_options(1);
    options.delivery = EnvDelivery::both;
    auto outcome = run_sweep(request, target, store, observer, options, stop);
    REQUIRE_FALSE(outcome);
    CHECK(outcome.error().kind == ErrorKind::bad_input);
    CHECK(target.inner.log->started.empty());
    CHECK(store.current().state == "failed");
}

TEST_CASE("sweep session: a work directory another runner holds is refused with that runner's name") {
    FakeTarget target;
    target.lock_error =
        Error::infrastructure("local: the work directory /w is in use by sweep 3 (x) of database /d.db");
    FakeStore store;
    QuietObserver observer;
    std::atomic<bool> stop{false};
    SweepRequest request;
    request.sweep.name = "unit";
    request.experiments = {point(1, "LL")};
    auto outcome = run_sweep(request, target, store, observer, test::unit_run_options(1), stop);
    REQUIRE_FALSE(outcome);
    CHECK(outcome.error().message.find("sweep 3 (x) of database /d.db") != std::string::npos);
    CHECK(target.log->started.empty());
}

TEST_CASE(
    "inherited environment: NCCL, CUDA and torch's NCCL variables no experiment sets, minus the runner's") {
    const std::string env =
        "HOME=/root\nNCCL_PROTO=Simple\nNCCL_SOCKET_IFNAME=lo\nCUDA_VISIBLE_DEVICES=0,1\n"
        "TORCH_NCCL_BLOCKING_WAIT=1\nNCCL_DEBUG=WARN\nMY_NCCL_X=1\nNCCL_ALGO=Tree\nmulti=line1\nline2\n"
        "NCCL_IB_HCA=mlx5_0\n";
    std::vector<Experiment> experiments = {point(1, "LL"), point(2, "Simple")};
    experiments[0].env.emplace_back("NCCL_ALGO", "Ring");  // set by one experiment only: still inherited by 2
    auto inherited = inherited_settings(env, experiments, {{"NCCL_DEBUG", "INFO"}});
    CHECK(inherited == std::vector<Assignment>{{"CUDA_VISIBLE_DEVICES", "0,1"},
                                               {"NCCL_ALGO", "Tree"},
                                               {"NCCL_IB_HCA", "mlx5_0"},
                                               {"NCCL_SOCKET_IFNAME", "lo"},
                                               {"TORCH_NCCL_BLOCKING_WAIT", "1"}});
    CHECK(inherited_warning({}, "local").empty());
    const std::string warning = inherited_warning(inherited, "local");
    CHECK(warning.find("5 variables the spec does not set") != std::string::npos);
    CHECK(warning.find("NCCL_SOCKET_IFNAME=lo") != std::string::npos);
    CHECK(inherited_differences({{"A", "1"}, {"B", "2"}}, {{"B", "3"}, {"C", "4"}}) ==
          std::vector<std::string>{"inherited A: 1 -> (not set)", "inherited B: 2 -> 3",
                                   "inherited C: (not set) -> 4"});
}

TEST_CASE("sweep session: a resume under another inherited environment is refused and writes nothing") {
    FakeStore store;
    FakeSweep stored;
    stored.sweep.name = "unit";
    stored.sweep.uuid = "u";
    stored.sweep.inherited_env = {{"NCCL_SOCKET_IFNAME", "lo"}};
    stored.experiments = {point(1, "LL")};
    stored.state = "interrupted";
    const auto id = store.seed(stored);
    FakeTarget target;
    QuietObserver observer;
    std::atomic<bool> stop{false};
    SweepRequest request;
    request.sweep.name = "unit";
    request.experiments = {point(1, "LL")};
    request.sweep.inherited_env = {{"NCCL_SOCKET_IFNAME", "eth0"}};
    request.resume_id = id;
    auto outcome = run_sweep(request, target, store, observer, test::unit_run_options(1), stop);
    REQUIRE_FALSE(outcome);
    CHECK(outcome.error().kind == ErrorKind::bad_input);
    CHECK(outcome.error().message.find("inherited NCCL_SOCKET_IFNAME: lo -> eth0") != std::string::npos);
    CHECK(store.writes.empty());
    // The same environment resumes, in the directory of the stored uuid.
    request.sweep.inherited_env = stored.sweep.inherited_env;
    target.fallback = fake_ok("tok_s", 1);
    REQUIRE(run_sweep(request, target, store, observer, test::unit_run_options(1), stop));
    CHECK(target.log->calls.front() == "prepare sweep-1-u");
}
