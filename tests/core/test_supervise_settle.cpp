// supervise() with a scripted Process: after the first fatal line the lines already written are
// read before the group is killed, and the kill comes once the watcher's verdict is final. Time
// is a ManualClock: a silent poll moves it by its wait, so the settle times are exact.
#include <csignal>
#include <deque>

#include "core/watch/supervise.hpp"
#include "tests/core/watcher_test_support.hpp"
#include "tests/support/manual_clock.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

/// A process whose output is a fixed list of lines, all "already in the pipe"; afterwards it
/// stays silent (poll waits its full wait on the clock and times out) until killed.
class ScriptedProcess final : public Process {
public:
    ScriptedProcess(std::vector<std::string> lines, const Watcher& watcher, const ManualClock& clock)
        : m_watcher(watcher), m_clock(clock) {
        for (auto& l : lines) m_lines.push_back(std::move(l));
    }
    PollState poll(std::chrono::milliseconds wait, OutputLine& line) override {
        if (m_killed) return PollState::exited;
        if (m_lines.empty()) {
            m_clock.sleep_for(wait);
            return PollState::timeout;
        }
        line.text = m_lines.front();
        line.when = m_clock.now();
        m_lines.pop_front();
        ++m_read;
        return PollState::line;
    }
    void kill(std::chrono::milliseconds) override {
        ++m_kills;
        m_killed = true;
        m_read_at_kill = m_read;
        m_settled_at_kill = m_watcher.verdict().settled;
    }
    [[nodiscard]] std::optional<ExitInfo> exit_info() const override { return ExitInfo{0, SIGTERM}; }

    int m_kills = 0;
    std::size_t m_read = 0, m_read_at_kill = 0;
    bool m_settled_at_kill = false;

private:
    const Watcher& m_watcher;
    const ManualClock& m_clock;
    std::deque<std::string> m_lines;
    bool m_killed = false;
};

}  // namespace

TEST_CASE("supervise: the lines after the first fatal line are read before the kill") {
    const ManualClock clock;
    Watcher watcher(builtin_catalog(), WatcherOptions{}, clock.now());
    ScriptedProcess process(
        {"Capture cuda graph begin.",
         "Traceback (most recent call last):", "  File \"runner.py\", line 9, in capture",
         "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing",
         "Search for `cudaErrorStreamCaptureUnsupported' for more information."},
        watcher, clock);
    SuperviseOptions options;
    options.clock = &clock;
    auto supervision = supervise(process, watcher, options, nullptr);
    CHECK(supervision.killed_on_verdict);
    CHECK(process.m_kills == 1);
    CHECK(process.m_read_at_kill == 5);  // everything already written was read first
    CHECK(process.m_settled_at_kill);
    CHECK(watcher.failure_class() == "graph_capture");
    CHECK(watcher.diagnosis().cause ==
          "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing");
    REQUIRE(watcher.settle_latency());
    // The traceback ended and the pipe stayed quiet for one settle_quiet wait: no need to wait
    // for the window (context_after_seconds).
    CHECK(*watcher.settle_latency() == Approx(0.030));
    CHECK(*watcher.settle_latency() < WatcherOptions{}.context_after_seconds);
}

TEST_CASE("supervise: without a traceback the kill waits for the settle window and not longer") {
    const ManualClock clock;
    Watcher watcher(builtin_catalog(), WatcherOptions{}, clock.now());
    ScriptedProcess process({"node1:1:1 [0] misc/nvmlwrap.cc:182 NCCL WARN Cuda failure 'out of memory'"},
                            watcher, clock);
    SuperviseOptions options;
    options.clock = &clock;
    auto supervision = supervise(process, watcher, options, nullptr);
    CHECK(supervision.killed_on_verdict);
    CHECK(process.m_settled_at_kill);
    CHECK(watcher.failure_class() == "oom");
    REQUIRE(watcher.settle_latency());
    // The window closes at the first wait that reaches context_after_seconds: within one
    // settle_quiet wait of it.
    const double window = WatcherOptions{}.context_after_seconds;
    CHECK(*watcher.settle_latency() >= window);
    CHECK(*watcher.settle_latency() <= window + 0.030 + 1e-9);
}
