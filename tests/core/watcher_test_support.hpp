#pragma once
// Shared helpers for the watcher tests: a fake clock and fixture feeding.
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/watch/watcher.hpp"
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
inline Verdict feed_fixture(Watcher& watcher, FakeClock& clock, const std::string& name,
                            int* kill_at = nullptr) {
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

/// One line of a recording under tests/fixtures/recorded/ ("SECONDS<TAB>out|err<TAB>TEXT").
struct RecordedLine {
    double at = 0;
    std::string stream;  ///< out, err, or exit/signal for the last record
    std::string text;
};

/// The records of tests/fixtures/recorded/NAME.rec, in order (the last one is exit or signal).
inline std::vector<RecordedLine> recorded_lines(const std::string& name) {
    std::istringstream in(read_file(source_path("tests/fixtures/recorded/" + name + ".rec")));
    std::vector<RecordedLine> records;
    for (std::string line; std::getline(in, line);) {
        const auto tab1 = line.find('\t');
        const auto tab2 = line.find('\t', tab1 + 1);
        REQUIRE(tab2 != std::string::npos);
        records.push_back(
            {std::stod(line.substr(0, tab1)), line.substr(tab1 + 1, tab2 - tab1 - 1), line.substr(tab2 + 1)});
    }
    REQUIRE_FALSE(records.empty());
    return records;
}

/// Feeds a recording with its own timing (each line judged when it was read); the exit record
/// ends it. Returns the time (s since start) of the first line that failed the run, or -1.
inline double feed_recording(Watcher& watcher, FakeClock& clock, const std::string& name) {
    double failed_at = -1;
    for (const auto& record : recorded_lines(name)) {
        const auto when = clock.t0 + std::chrono::duration_cast<Watcher::Clock::duration>(
                                         std::chrono::duration<double>(record.at));
        // Time passes between lines as it did: the watcher is ticked every 10 ms, as supervise() would.
        for (auto t = clock.now + std::chrono::milliseconds(10); t < when; t += std::chrono::milliseconds(10))
            watcher.tick(t);
        clock.now = when;
        if (record.stream == "exit" || record.stream == "signal") {
            ExitInfo exit;
            (record.stream == "exit" ? exit.exit_code : exit.signal) = std::stoi(record.text);
            watcher.on_exit(exit, when);
            break;
        }
        OutputLine line;
        line.stream = record.stream == "err" ? Stream::err : Stream::out;
        line.text = record.text;
        line.when = when;
        if (watcher.feed(line).end_now && failed_at < 0) failed_at = record.at;
    }
    return failed_at;
}

/// True when `lines` contains a line containing `part`.
inline bool any_contains(const std::vector<std::string>& lines, const std::string& part) {
    for (const auto& line : lines)
        if (line.find(part) != std::string::npos) return true;
    return false;
}

}  // namespace ncclsweep::test
