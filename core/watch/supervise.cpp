#include "core/watch/supervise.hpp"

namespace ncclsweep::inline watch {

Supervision supervise(Process& process, Watcher& watcher, const SuperviseOptions& options,
                      const std::atomic<bool>* stop) {
    const Clock& clock = clock_or_steady(options.clock);
    Supervision result;
    bool killed = false;
    Ending ending = Ending::natural;
    auto kill_now = [&](Ending why) {
        if (killed) return;
        killed = true;
        ending = why;
        if (why == Ending::stopped) watcher.expect_shutdown(clock.now());
        process.kill(options.kill_grace);
    };
    OutputLine line;
    // Lines read in one chunk share their `when`: the clock is read once per chunk, and each of
    // its lines is judged at that time (under a millisecond early for the chunk's last lines).
    Clock::TimePoint chunk_read{}, judged{};
    for (;;) {
        if (stop && stop->load() && !killed) {
            result.end = SupervisionEnd::interrupted;
            kill_now(Ending::stopped);
        }
        if (!killed && options.stop_when && options.stop_when()) {
            result.end = SupervisionEnd::stopped;
            kill_now(Ending::stopped);
        }
        // Settling: the watcher has failed the run and reads what is already written before
        // its verdict is final; a short wait tells a drained pipe from a busy one.
        const bool settling = !killed && watcher.verdict().end_now && !watcher.verdict().settled;
        PollState state = process.poll(settling ? options.settle_quiet : options.poll_interval, line);
        switch (state) {
            case PollState::line: {
                if (line.when != chunk_read) {
                    chunk_read = line.when;
                    judged = clock.now();
                }
                watcher.feed(line, judged);
                if (options.on_line) options.on_line(line);
                break;
            }
            case PollState::timeout: {
                const auto now = clock.now();
                watcher.tick(now);
                if (options.on_idle) options.on_idle(now);
                if (settling && watcher.settle_may_end_when_quiet()) watcher.end_settle(now);
                break;
            }
            case PollState::exited:
                result.exit = process.exit_info();
                watcher.on_exit(result.exit.value_or(ExitInfo{}), clock.now(), ending);
                return result;
            case PollState::lost:
                result.end = SupervisionEnd::lost;
                result.lost_reason = process.lost_reason();
                return result;
        }
        const Verdict verdict = watcher.verdict();
        if (!killed && verdict.end_now && verdict.settled) {
            result.killed_on_verdict = true;
            kill_now(Ending::natural);
        }
    }
}

}  // namespace ncclsweep::inline watch
