#pragma once
// A Clock that moves only when told to (advance) or when something waits on it (sleep_for moves
// it forward at once): timeouts, settle windows and durations in unit tests are exact and take
// no wall-clock time. Safe to share between the sweep loop's worker threads.
#include <atomic>
#include <chrono>
#include <thread>

#include "core/clock.hpp"

namespace ncclsweep::test {

class ManualClock final : public Clock {
public:
    [[nodiscard]] TimePoint now() const override {
        return TimePoint(std::chrono::steady_clock::duration(m_ticks.load()));
    }
    /// Moves the clock by `duration` at once (and lets other threads run: a loop that waits on
    /// this clock does not starve them).
    void sleep_for(std::chrono::steady_clock::duration duration) const override {
        advance(duration);
        std::this_thread::yield();
    }
    /// Moves the clock forward by `duration`.
    void advance(std::chrono::steady_clock::duration duration) const { m_ticks += duration.count(); }
    /// Seconds since the clock was made.
    [[nodiscard]] double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::duration(m_ticks.load()) - k_start)
            .count();
    }

private:
    static constexpr std::chrono::steady_clock::duration k_start = std::chrono::hours(1);
    mutable std::atomic<std::chrono::steady_clock::rep> m_ticks{k_start.count()};
};

}  // namespace ncclsweep::test
