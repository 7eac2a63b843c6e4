#pragma once
// A SweepObserver that prints nothing and keeps what it was told: the sweep loop's unit tests
// count finished experiments and read the notices (retries, search rounds, a spent budget).
#include <string>
#include <vector>

#include "core/sweep/sweep.hpp"

namespace ncclsweep::test {

struct QuietObserver final : SweepObserver {
    std::vector<std::string> notices;  ///< every notice, in order
    int started_count = 0;             ///< started() calls (one per experiment x repeat)
    int finished_count = 0;            ///< finished() calls (one per recorded experiment)

    void started(const Experiment&, int, int, int) override { ++started_count; }
    void finished(const Experiment&, const ExperimentReport&, int, int) override { ++finished_count; }
    void notice(const std::string& message) override { notices.push_back(message); }
};

}  // namespace ncclsweep::test
