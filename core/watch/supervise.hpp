#pragma once
// Drives one started process under a Watcher: poll lines, feed them, check timeouts, kill the
// process group once the watcher's verdict is final (at once for a timeout; after the short
// settle window for a fatal line, so the lines already written are read), and collect the end.
// Shared by `ncclsweep watch` and the sweep loop.
#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "core/clock.hpp"
#include "core/target.hpp"
#include "core/watch/watcher.hpp"

namespace ncclsweep::inline watch {

/// How supervision ended.
enum class SupervisionEnd {
    exited,       ///< the process ended (on its own or killed on the watcher's verdict)
    lost,         ///< the connection to the host was lost: an infrastructure failure
    interrupted,  ///< the stop flag was raised (Ctrl-C); the group was killed
    stopped,      ///< `stop_when` asked to end it (e.g. a client finished); the group was killed
};

/// Settings of supervise().
struct SuperviseOptions {
    std::chrono::milliseconds kill_grace{2000};    ///< SIGTERM -> SIGKILL
    std::chrono::milliseconds poll_interval{100};  ///< tick granularity when no output arrives
    /// After a fatal line the group is killed when the watcher's settle window closes: at most
    /// WatcherOptions::context_after_seconds later, or sooner once the traceback has ended and
    /// no line arrived for this long (the pipes are drained).
    std::chrono::milliseconds settle_quiet{30};
    /// Called for every line after the watcher saw it (e.g. to echo it); may be empty.
    std::function<void(const OutputLine&)> on_line;
    /// Called with the time when a poll returned no line within its wait (the output is quiet
    /// for now: e.g. to write an echo gathered in large pieces); may be empty.
    std::function<void(std::chrono::steady_clock::time_point)> on_idle;
    /// Checked after every poll; returning true stops the process on purpose (Ending::stopped).
    std::function<bool()> stop_when;
    /// The time the watcher is told (line arrivals, ticks, the exit); nullptr = the steady clock.
    /// The process's poll does the waiting: a test's process waits on the test's clock.
    const Clock* clock = nullptr;
};

/// What supervise() saw.
struct Supervision {
    SupervisionEnd end = SupervisionEnd::exited;
    std::optional<ExitInfo> exit;
    std::string lost_reason;
    bool killed_on_verdict = false;  ///< the watcher's fatal line/timeout triggered the kill
};

/// Runs `process` to its end under `watcher`. `stop` (may be null) interrupts it.
Supervision supervise(Process& process, Watcher& watcher, const SuperviseOptions& options,
                      const std::atomic<bool>* stop);

}  // namespace ncclsweep::inline watch
