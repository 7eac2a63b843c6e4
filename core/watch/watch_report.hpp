#pragma once
// The verdict of `ncclsweep watch`, as text for people or JSON for machines.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/watch/supervise.hpp"
#include "core/watch/watcher.hpp"

namespace ncclsweep::inline watch {

/// What `watch` reports.
struct WatchReport {
    bool ok = false;
    std::string verdict;  ///< ok, failed, timed_out, interrupted, lost
    std::string state;    ///< the watcher's last state
    std::string failure_class;
    std::string phase;  ///< what it was doing at the fatal line (initializing, capturing, ...)
    std::string cause;  ///< the most specific line (or, without one, the detail)
    std::string rule;
    std::string line;  ///< the line that decided
    std::string detail;
    std::string diagnosis;  ///< excerpt with context
    std::optional<double> seconds_to_detection;
    std::optional<double> detection_latency_s;
    std::optional<double> settle_latency_s;  ///< fatal line -> final verdict (the settle window)
    std::optional<int> exit_code, exit_signal;
    std::map<std::string, double> metrics;  ///< last value of each
    std::string effective_nccl;
    std::size_t warnings = 0;
};

/// Builds the report from a finished watcher and its supervision.
[[nodiscard]] WatchReport make_watch_report(const Watcher& watcher, const Supervision& supervision);
/// Readable verdict (several lines).
[[nodiscard]] std::string watch_report_text(const WatchReport& report);
/// One JSON object and a newline.
[[nodiscard]] std::string watch_report_json(const WatchReport& report);

}  // namespace ncclsweep::inline watch
