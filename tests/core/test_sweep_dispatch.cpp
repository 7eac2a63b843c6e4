// The sweep loop's dispatcher with fakes: a target with several slots (a pool) runs experiments
// concurrently and records each once; a batch target (Slurm) gets every experiment x repeat in
// one submit whose tasks are recorded, and a resume hands the stored tasks back to it.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/sweep/sweep_session.hpp"
#include "core/watch/rule_catalog.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/fake_store.hpp"
#include "tests/support/fake_target.hpp"
#include "tests/support/quiet_observer.hpp"
#include "tests/support/sweep_options.hpp"

using namespace ncclsweep;
using ncclsweep::test::fake_ok;
using ncclsweep::test::FakeRun;
using ncclsweep::test::FakeStore;
using ncclsweep::test::FakeSweep;
using ncclsweep::test::FakeTarget;
using ncclsweep::test::QuietObserver;
using ncclsweep::test::unit_run_options;

namespace {

Experiment point(int id) {
    Experiment e;
    e.id = id;
    e.canonical = "n=" + std::to_string(id);
    e.key = "key-" + std::to_string(id);
    e.env = {{"NCCL_MIN_NCHANNELS", std::to_string(id)}};
    e.argv = {"/opt/serve"};
    return e;
}

/// Holds every host's starts until each host has started one: the hosts share the work whatever
/// the machine's load, with no sleep deciding who runs first. A dispatcher that never hands a
/// host work leaves the gate closed: after a minute it gives up and says so (`stuck`) instead of
/// hanging the test.
struct StartGate {
    explicit StartGate(int hosts) : m_hosts(hosts) {}
    void arrive(int host) {
        std::unique_lock lock(m_mutex);
        m_started.insert(host);
        m_changed.notify_all();
        if (!m_changed.wait_for(lock, std::chrono::minutes(1),
                                [this] { return static_cast<int>(m_started.size()) == m_hosts; }))
            stuck = true;
    }
    std::atomic<bool> stuck{false};

private:
    int m_hosts;
    std::mutex m_mutex;
    std::condition_variable m_changed;
    std::set<int> m_started;
};

/// Hosts as slots; each FakeTarget is used by one worker thread only. Each host's runs pass
/// `gate` when one is given.
struct FakePool final : Target {
    std::vector<std::unique_ptr<FakeTarget>> hosts;
    explicit FakePool(int n, StartGate* gate = nullptr) {
        for (int i = 0; i < n; ++i) {
            hosts.push_back(std::make_unique<FakeTarget>());
            FakeRun run = fake_ok("tok_s", 1);
            if (gate) run.on_start = [gate, i] { gate->arrive(i); };
            hosts.back()->fallback = run;
        }
    }
    [[nodiscard]] std::string describe() const override { return "pool"; }
    Result<std::string> prepare_workdir(const std::string& id) override { return "/fake/" + id; }
    Result<void> put_file(const std::string&, const std::string&) override { return success(); }
    Result<std::unique_ptr<Process>> start(const Command& c) override { return hosts.front()->start(c); }
    Result<std::string> capture(const std::vector<std::string>&, std::chrono::seconds) override {
        return std::string();
    }
    [[nodiscard]] int slots() const override { return static_cast<int>(hosts.size()); }
    Target& slot_target(int slot) override { return *hosts.at(static_cast<std::size_t>(slot)); }
};

/// A batch scheduler: records what it was given and answers task ids "7_i".
struct FakeBatch final : Target {
    FakeTarget inner;
    std::vector<BatchItem> submitted;
    int submits = 0, cancels = 0;
    [[nodiscard]] std::string describe() const override { return "batch"; }
    Result<std::string> prepare_workdir(const std::string& id) override { return inner.prepare_workdir(id); }
    Result<void> put_file(const std::string& p, const std::string& c) override {
        return inner.put_file(p, c);
    }
    Result<std::unique_ptr<Process>> start(const Command& c) override { return inner.start(c); }
    Result<std::string> capture(const std::vector<std::string>& a, std::chrono::seconds t) override {
        return inner.capture(a, t);
    }
    [[nodiscard]] bool schedules_batches() const override { return true; }
    Result<std::vector<std::string>> submit(const std::vector<BatchItem>& items) override {
        ++submits;
        submitted = items;
        std::vector<std::string> tasks;
        for (std::size_t i = 0; i < items.size(); ++i)
            tasks.push_back(items[i].previous_task.empty() ? "7_" + std::to_string(i)
                                                           : items[i].previous_task);
        return tasks;
    }
    void cancel_all() override { ++cancels; }
};

}  // namespace

TEST_CASE("sweep loop: a target with two slots runs experiments on both and records each once") {
    StartGate gate(2);
    FakePool pool(2, &gate);
    FakeStore store;
    QuietObserver observer;
    std::atomic<bool> stop{false};
    SweepRequest request;
    request.sweep.name = "unit";
    for (int id = 1; id <= 6; ++id) request.experiments.push_back(point(id));
    auto outcome = run_sweep(request, pool, store, observer, unit_run_options(), stop);
    REQUIRE(outcome);
    CHECK(outcome->summary.ran == 6);
    CHECK(outcome->summary.ok == 6);
    CHECK(observer.finished_count == 6);
    CHECK(store.current().finished.size() == 6);
    // Each experiment started once, and both hosts took some.
    std::set<std::string> started;
    for (const auto& host : pool.hosts) {
        CHECK(!host->log->started.empty());
        for (const auto& command : host->log->started)
            for (const auto& [name, value] : command.env)
                if (name == "NCCLSWEEP_EXPERIMENT_ID") CHECK(started.insert(value).second);
    }
    CHECK(started.size() == 6);
    CHECK_FALSE(gate.stuck);
}

TEST_CASE("sweep loop: Ctrl-C stops every slot and nothing unfinished is recorded") {
    // Ctrl-C comes once both hosts run an experiment that would never end on its own.
    std::atomic<bool> stop{false};
    std::atomic<int> running{0};
    FakePool pool(2);
    for (auto& host : pool.hosts) {
        host->fallback.end = FakeRun::End::hang;
        host->fallback.on_start = [&] {
            if (++running == 2) stop = true;
        };
    }
    FakeStore store;
    QuietObserver observer;
    SweepRequest request;
    request.sweep.name = "unit";
    for (int id = 1; id <= 4; ++id) request.experiments.push_back(point(id));
    auto outcome = run_sweep(request, pool, store, observer, unit_run_options(), stop);
    REQUIRE(outcome);
    CHECK(running == 2);
    CHECK(outcome->summary.interrupted);
    CHECK(store.current().finished.empty());
    CHECK(store.current().state == "interrupted");
    for (const auto& host : pool.hosts) CHECK(host->log->kills == 1);
}

TEST_CASE(
    "sweep loop: a batch target gets every experiment x repeat in one submit and each task is recorded") {
    FakeBatch batch;
    batch.inner.fallback = fake_ok("tok_s", 1);
    FakeStore store;
    QuietObserver observer;
    std::atomic<bool> stop{false};
    SweepRequest request;
    request.sweep.name = "unit";
    for (int id = 1; id <= 3; ++id) request.experiments.push_back(point(id));
    auto outcome = run_sweep(request, batch, store, observer, unit_run_options(2), stop);
    REQUIRE(outcome);
    CHECK(outcome->summary.ok == 3);
    CHECK(batch.submits == 1);
    REQUIRE(batch.submitted.size() == 6);
    CHECK(batch.submitted[0].key == "exp-1/rep-0");
    CHECK(batch.submitted[5].key == "exp-3/rep-1");
    CHECK(batch.submitted[5].command.workdir == "/fake/sweep-1/exp-3");
    CHECK(store.current().scheduled.at(1) == "7_0 7_1");
    CHECK(store.current().scheduled.at(3) == "7_4 7_5");
    // Every start names the task it follows.
    REQUIRE(batch.inner.log->started.size() == 6);
    CHECK(batch.inner.log->started[1].batch_key == "exp-1/rep-1");
    CHECK(batch.cancels == 0);
}

TEST_CASE("sweep session: a resume hands the stored scheduler tasks back to the batch target") {
    FakeBatch batch;
    batch.inner.fallback = fake_ok("tok_s", 1);
    FakeStore store;
    FakeSweep stored;
    stored.sweep.name = "unit";
    stored.experiments = {point(1), point(2), point(3)};
    ExperimentReport done;
    done.exp_id = 1;
    stored.finished[1] = done;
    stored.scheduled = {{1, "40_0"}, {2, "40_1"}, {3, "40_2"}};
    stored.state = "interrupted";
    const auto id = store.seed(stored);
    QuietObserver observer;
    std::atomic<bool> stop{false};
    SweepRequest request;
    request.sweep.name = "unit";
    request.experiments = {point(1), point(2), point(3)};
    request.resume_id = id;
    auto outcome = run_sweep(request, batch, store, observer, unit_run_options(), stop);
    REQUIRE(outcome);
    CHECK(outcome->skipped_finished == 1);
    REQUIRE(batch.submitted.size() == 2);
    CHECK(batch.submitted[0].previous_task == "40_1");
    CHECK(batch.submitted[1].previous_task == "40_2");
    CHECK(store.current().finished.size() == 3);
}
