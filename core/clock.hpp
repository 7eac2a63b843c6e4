#pragma once
// Time as the code that waits reads it: the process's steady clock, or a test's hand-moved one
// (tests/support/manual_clock.hpp). supervise, the sweep loop and the Slurm target take one, so
// their timeouts, settle windows and durations are tested without waiting for them.
#include <chrono>

namespace ncclsweep {

/// A source of steady time that can also be waited on.
class Clock {
public:
    using TimePoint = std::chrono::steady_clock::time_point;
    virtual ~Clock() = default;
    /// The current time.
    [[nodiscard]] virtual TimePoint now() const = 0;
    /// Lets `duration` pass: sleeps on the steady clock; a test's clock moves forward instead.
    virtual void sleep_for(std::chrono::steady_clock::duration duration) const = 0;
};

/// The process's steady clock (std::chrono::steady_clock and std::this_thread::sleep_for).
[[nodiscard]] const Clock& steady_clock();

/// `clock` when given, else the steady clock: how an optional `const Clock*` setting is read.
[[nodiscard]] inline const Clock& clock_or_steady(const Clock* clock) {
    return clock ? *clock : steady_clock();
}

}  // namespace ncclsweep
