#pragma once
// Shared helpers for the watcher tests: a fake clock and fixture feeding.
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/watcher.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

namespace ncclsweep::test {

/// A fake clock: t0 plus a number of milliseconds.
struct FakeClock {
    Watcher::TimePoint t0 = Watcher::TimePoint(std::chrono::hours(1000));
    Watcher::TimePoint now = t0;
    /// Moves the clock forward by `seconds`.
    Watcher::TimePoint advance(double seconds) {
        now += std::chrono::duration_cast<Watcher::Clock::duration>(std::chrono::duration<double>(seconds));
        return now;
    }
};

/// The built-in catalog (compiled once).
inline std::shared_ptr<const RuleCatalog> builtin_catalog() {
    static auto catalog = [] {
        auto compiled = RuleCatalog::with_user_rules({});
        REQUIRE(compiled.ok());
        return compiled.value();
    }();
    return catalog;
}

/// Lines of a fixture under tests/fixtures/logs/.
inline std::vector<std::string> fixture_lines(const std::string& name) {
    std::istringstream in(read_file(source_path("tests/fixtures/logs/" + name)));
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    REQUIRE_FALSE(lines.empty());
    return lines;
}

/// Feeds one line at the clock's time after advancing it by `step` seconds.
inline Verdict feed(Watcher& watcher, FakeClock& clock, const std::string& text, double step = 0.001) {
    OutputLine line;
    line.text = text;
    line.when = clock.advance(step);
    return watcher.feed(line);
}

/// Feeds every line of a fixture, 1 ms apart; returns the verdict of the first line that
/// asked for a kill (or of the last line), and the index of that line in `kill_at` (-1 if none).
inline Verdict feed_fixture(Watcher& watcher, FakeClock& clock, const std::string& name, int* kill_at = nullptr) {
    Verdict last;
    int index = 0;
    if (kill_at) *kill_at = -1;
    for (const auto& text : fixture_lines(name)) {
        auto verdict = feed(watcher, clock, text);
        if (verdict.end_now && kill_at && *kill_at < 0) *kill_at = index;
        last = verdict;
        ++index;
    }
    return last;
}

/// True when `lines` contains a line containing `part`.
inline bool any_contains(const std::vector<std::string>& lines, const std::string& part) {
    for (const auto& line : lines)
        if (line.find(part) != std::string::npos) return true;
    return false;
}

}  // namespace ncclsweep::test
