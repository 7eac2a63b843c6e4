// supervise(): one process under a watcher, driven through the scripted FakeProcess: lines in
// order, the kill on a fatal line, interrupts, stop_when and lost connections.
#include "core/watch/supervise.hpp"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/watch/rule_catalog.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/fake_target.hpp"

using namespace ncclsweep;
using ncclsweep::test::FakeLog;
using ncclsweep::test::FakeProcess;
using ncclsweep::test::FakeRun;

namespace {

Watcher supervise_watcher() {
    auto catalog = RuleCatalog::with_user_rules({});
    REQUIRE(catalog);
    WatcherOptions options;
    options.timeouts = Timeouts{0, 0, 0, 0};
    return Watcher(*catalog, options, Watcher::Clock::now());
}

SuperviseOptions quick() {
    SuperviseOptions options;
    options.kill_grace = std::chrono::milliseconds(0);
    options.poll_interval = std::chrono::milliseconds(1);
    return options;
}

}  // namespace

TEST_CASE("supervise: lines reach on_line in order and a clean exit ends it with its status") {
    auto log = std::make_shared<FakeLog>();
    FakeRun run;
    run.lines = {{Stream::out, "one"}, {Stream::err, "two"}, {Stream::out, "three"}};
    run.exit = ExitInfo{3, 0};
    FakeProcess process(run, log, 1);
    Watcher watcher = supervise_watcher();
    SuperviseOptions options = quick();
    std::vector<std::string> seen;
    options.on_line = [&seen](const OutputLine& line) { seen.push_back(line.text); };
    Supervision s = supervise(process, watcher, options, nullptr);
    CHECK(s.end == SupervisionEnd::exited);
    REQUIRE(s.exit);
    CHECK(s.exit->exit_code == 3);
    CHECK(seen == std::vector<std::string>{"one", "two", "three"});
    CHECK(log->kills == 0);
    CHECK_FALSE(s.killed_on_verdict);
}

TEST_CASE("supervise: on_idle gets the time whenever a poll brings no line") {
    auto log = std::make_shared<FakeLog>();
    std::atomic<bool> stop{false};
    FakeRun run;
    run.lines = {{Stream::out, "one"}, {Stream::out, "two"}};
    run.end = FakeRun::End::hang;
    FakeProcess process(run, log, 1);
    Watcher watcher = supervise_watcher();
    SuperviseOptions options = quick();
    std::vector<std::string> order;
    std::vector<std::chrono::steady_clock::time_point> idle_at;
    options.on_line = [&order](const OutputLine& line) { order.push_back(line.text); };
    options.on_idle = [&](std::chrono::steady_clock::time_point now) {
        order.push_back("idle");
        idle_at.push_back(now);
        if (idle_at.size() == 3) stop = true;
    };
    supervise(process, watcher, options, &stop);
    REQUIRE(order.size() >= 5);
    CHECK(order[0] == "one");
    CHECK(order[1] == "two");
    CHECK(order[2] == "idle");
    CHECK(idle_at.size() >= 3);
    CHECK(idle_at[1] >= idle_at[0]);
}

TEST_CASE("supervise: a fatal line kills the group at once and the lines after it are not waited for") {
    auto log = std::make_shared<FakeLog>();
    FakeRun run;
    run.lines = {{Stream::err, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"},
                 {Stream::out, "never read"}};
    run.end = FakeRun::End::hang;  // it would never end on its own
    FakeProcess process(run, log, 1);
    Watcher watcher = supervise_watcher();
    Supervision s = supervise(process, watcher, quick(), nullptr);
    CHECK(s.end == SupervisionEnd::exited);
    CHECK(s.killed_on_verdict);
    CHECK(log->kills == 1);
    CHECK(watcher.failure_class() == "oom");
}

TEST_CASE("supervise: the stop flag interrupts a process that would run forever") {
    auto log = std::make_shared<FakeLog>();
    std::atomic<bool> stop{false};
    FakeRun run;
    run.end = FakeRun::End::hang;
    run.on_drained = [&stop]() { stop = true; };
    FakeProcess process(run, log, 1);
    Watcher watcher = supervise_watcher();
    Supervision s = supervise(process, watcher, quick(), &stop);
    CHECK(s.end == SupervisionEnd::interrupted);
    CHECK(log->kills == 1);
}

TEST_CASE("supervise: stop_when ends the process on purpose exactly once") {
    auto log = std::make_shared<FakeLog>();
    FakeRun run;
    run.end = FakeRun::End::hang;
    FakeProcess process(run, log, 1);
    Watcher watcher = supervise_watcher();
    SuperviseOptions options = quick();
    int asked = 0;
    options.stop_when = [&asked]() { return ++asked >= 3; };
    Supervision s = supervise(process, watcher, options, nullptr);
    CHECK(s.end == SupervisionEnd::stopped);
    CHECK(asked == 3);
    CHECK(log->kills == 1);
}

TEST_CASE("supervise: a lost connection ends it as lost with the target's reason and no kill") {
    auto log = std::make_shared<FakeLog>();
    FakeRun run;
    run.lines = {{Stream::out, "starting"}};
    run.end = FakeRun::End::lost;
    run.lost_reason = "ssh channel closed";
    FakeProcess process(run, log, 1);
    Watcher watcher = supervise_watcher();
    Supervision s = supervise(process, watcher, quick(), nullptr);
    CHECK(s.end == SupervisionEnd::lost);
    CHECK(s.lost_reason == "ssh channel closed");
    CHECK(log->kills == 0);
    CHECK_FALSE(s.exit);
}
