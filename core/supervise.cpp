#include "core/supervise.hpp"

namespace ncclsweep {
namespace {
using Clock = std::chrono::steady_clock;
}

Supervision supervise(Process& process, Watcher& watcher, const SuperviseOptions& options,
                      const std::atomic<bool>* stop) {
    Supervision result;
    bool killed = false;
    Ending ending = Ending::natural;
    auto kill_now = [&](Ending why) {
        if (killed) return;
        killed = true;
        ending = why;
        if (why == Ending::stopped) watcher.expect_shutdown(Clock::now());
        process.kill(options.kill_grace);
    };
    OutputLine line;
    for (;;) {
        if (stop && stop->load() && !killed) {
            result.end = SupervisionEnd::interrupted;
            kill_now(Ending::stopped);
        }
        if (!killed && options.stop_when && options.stop_when()) {
            result.end = SupervisionEnd::stopped;
            kill_now(Ending::stopped);
        }
        PollState state = process.poll(options.poll_interval, line);
        switch (state) {
            case PollState::line: {
                Verdict verdict = watcher.feed(line, Clock::now());
                if (options.on_line) options.on_line(line);
                if (verdict.end_now && !killed) {
                    result.killed_on_verdict = true;
                    kill_now(Ending::natural);
                }
                break;
            }
            case PollState::timeout: {
                Verdict verdict = watcher.tick(Clock::now());
                if (verdict.end_now && !killed) {
                    result.killed_on_verdict = true;
                    kill_now(Ending::natural);
                }
                break;
            }
            case PollState::exited:
                result.exit = process.exit_info();
                watcher.on_exit(result.exit.value_or(ExitInfo{}), Clock::now(), ending);
                return result;
            case PollState::lost:
                result.end = SupervisionEnd::lost;
                result.lost_reason = process.lost_reason();
                return result;
        }
    }
}

}  // namespace ncclsweep
