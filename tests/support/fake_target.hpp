#pragma once
// A scripted Target/Process for unit tests of the sweep loop: each start() takes the next
// FakeRun (what the process prints and how it ends) and every call is logged in order, so tests
// can check retries, kills, interrupts and the order of side effects without a host.
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.hpp"
#include "core/target.hpp"

namespace ncclsweep::test {

/// What one started process does.
struct FakeRun {
    /// How it ends once its lines are read.
    enum class End {
        exit,  ///< exits with `exit`
        lost,  ///< the connection is lost (PollState::lost with `lost_reason`)
        hang,  ///< prints nothing more until killed (then ends by SIGKILL)
    };
    std::vector<std::pair<Stream, std::string>> lines;
    End end = End::exit;
    ExitInfo exit{0, 0};
    std::string lost_reason = "connection reset by peer";
    /// Called when the process is started (e.g. to raise a stop flag).
    std::function<void()> on_start;
    /// Called at the first poll that finds no more lines to give.
    std::function<void()> on_drained;
    /// start() fails with this error instead of starting anything.
    std::optional<Error> start_error;
    /// A batch scheduler ended it (Slurm's TIMEOUT, OUT_OF_MEMORY): scheduler_end() once exited.
    std::optional<SchedulerEnd> scheduler_end;
};

/// The target's shared record of what happened, in order.
struct FakeLog {
    std::vector<std::string>
        calls;                     ///< "prepare sweep-1", "put <path>", "start <argv0>", "kill", "reconnect"
    std::vector<Command> started;  ///< every started command
    std::vector<std::pair<std::string, std::string>> files;  ///< path, content of put_file
    int kills = 0;
    int reconnects = 0;
};

/// A process that plays one FakeRun. Its lines are all in the pipe at once; once they are read,
/// a hanging process makes poll() wait its full `wait` on `clock` (a test's ManualClock moves on
/// at once; without one, the steady clock sleeps), as a silent real process would.
class FakeProcess final : public Process {
public:
    FakeProcess(FakeRun run, std::shared_ptr<FakeLog> log, long group, const Clock* clock = nullptr)
        : m_run(std::move(run)), m_log(std::move(log)), m_group(group), m_clock(clock_or_steady(clock)) {}

    PollState poll(std::chrono::milliseconds wait, OutputLine& line) override {
        if (m_next < m_run.lines.size() && !m_killed) {
            const auto& [stream, text] = m_run.lines[m_next++];
            line = OutputLine{stream, text, m_clock.now(), false};
            return PollState::line;
        }
        if (!m_drained) {
            m_drained = true;
            if (m_run.on_drained) m_run.on_drained();
        }
        if (m_killed) {
            m_exit = ExitInfo{0, 9};
            return PollState::exited;
        }
        switch (m_run.end) {
            case FakeRun::End::exit:
                m_exit = m_run.exit;
                return PollState::exited;
            case FakeRun::End::lost:
                return PollState::lost;
            case FakeRun::End::hang:
                m_clock.sleep_for(wait);
                return PollState::timeout;
        }
        return PollState::timeout;
    }
    void kill(std::chrono::milliseconds /*grace*/) override {
        m_killed = true;
        ++m_log->kills;
        m_log->calls.push_back("kill");
    }
    [[nodiscard]] std::optional<ExitInfo> exit_info() const override { return m_exit; }
    [[nodiscard]] std::string lost_reason() const override { return m_run.lost_reason; }
    [[nodiscard]] std::optional<SchedulerEnd> scheduler_end() const override {
        return m_exit ? m_run.scheduler_end : std::nullopt;
    }
    [[nodiscard]] std::optional<long> process_group() const override { return m_group; }

private:
    FakeRun m_run;
    std::shared_ptr<FakeLog> m_log;
    long m_group = 0;
    const Clock& m_clock;
    std::size_t m_next = 0;
    bool m_killed = false;
    bool m_drained = false;
    std::optional<ExitInfo> m_exit;
};

/// A host whose processes play the scripted runs in order (then `fallback` for every start).
class FakeTarget final : public Target {
public:
    std::deque<FakeRun> script;
    FakeRun fallback;
    /// When set and the script is empty, answers each start by its command (e.g. by NCCL_ALGO).
    std::function<FakeRun(const Command&)> respond;
    std::shared_ptr<FakeLog> log = std::make_shared<FakeLog>();
    std::optional<Error> prepare_error;    ///< prepare_workdir fails with it
    std::optional<Error> reconnect_error;  ///< reconnect fails with it
    std::optional<Error> halt;             ///< halt_reason() (set it from a run's on_start)
    /// What slots() and schedules_batches() say (for the run's policy; the loop's own tests of
    /// several slots and of batches use targets of their own).
    int slot_count = 1;
    bool batches = false;
    std::string name = "fake";     ///< describe()
    const Clock* clock = nullptr;  ///< what its processes wait on (nullptr = the steady clock)
    /// When set, answers capture() (e.g. the engine's --describe and --validate); "" otherwise.
    std::function<Result<std::string>(const std::vector<std::string>& argv)> answer;

    [[nodiscard]] std::string describe() const override { return name; }
    [[nodiscard]] int slots() const override { return slot_count; }
    [[nodiscard]] bool schedules_batches() const override { return batches; }
    Result<std::string> prepare_workdir(const std::string& sweep_id) override {
        log->calls.push_back("prepare " + sweep_id);
        if (prepare_error) return *prepare_error;
        return "/fake/" + sweep_id;
    }
    Result<void> put_file(const std::string& path, const std::string& content) override {
        log->calls.push_back("put " + path);
        log->files.emplace_back(path, content);
        return success();
    }
    Result<std::unique_ptr<Process>> start(const Command& command) override {
        log->calls.push_back("start " + (command.argv.empty() ? std::string() : command.argv.front()));
        log->started.push_back(command);
        FakeRun run = fallback;
        if (!script.empty()) {
            run = std::move(script.front());
            script.pop_front();
        } else if (respond) {
            run = respond(command);
        }
        if (run.start_error) return *run.start_error;
        if (run.on_start) run.on_start();
        return std::unique_ptr<Process>(
            std::make_unique<FakeProcess>(std::move(run), log, m_next_group++, clock));
    }
    Result<std::string> capture(const std::vector<std::string>& argv,
                                std::chrono::seconds /*timeout*/) override {
        log->calls.push_back("capture " + (argv.empty() ? std::string() : argv.front()));
        if (answer) return answer(argv);
        return std::string();
    }
    [[nodiscard]] std::optional<Error> halt_reason() const override { return halt; }
    Result<void> reconnect() override {
        ++log->reconnects;
        log->calls.push_back("reconnect");
        if (reconnect_error) return *reconnect_error;
        return success();
    }

private:
    long m_next_group = 1000;
};

/// A run that prints `metric=value` and exits 0.
inline FakeRun fake_ok(const std::string& metric, double value) {
    FakeRun run;
    run.lines.emplace_back(Stream::out, metric + "=" + std::to_string(value));
    return run;
}

}  // namespace ncclsweep::test
