#include "core/watch/watch_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ncclsweep::inline watch {

WatchReport make_watch_report(const Watcher& watcher, const Supervision& supervision) {
    WatchReport report;
    report.state = std::string(to_string(watcher.state()));
    switch (supervision.end) {
        case SupervisionEnd::lost:
            report.verdict = "lost";
            break;
        case SupervisionEnd::interrupted:
            report.verdict = "interrupted";
            break;
        default:
            report.verdict = watcher.state() == WatchState::failed      ? "failed"
                             : watcher.state() == WatchState::timed_out ? "timed_out"
                                                                        : "ok";
    }
    report.ok = report.verdict == "ok";
    const Diagnosis& d = watcher.diagnosis();
    report.failure_class = watcher.failure_class();
    report.phase = d.phase;
    report.cause = d.cause;
    report.rule = d.rule;
    report.line = d.line.empty() ? d.trigger_line : d.line;
    report.detail = d.detail;
    if (!report.ok) report.diagnosis = d.text();
    report.seconds_to_detection = watcher.seconds_to_detection();
    report.detection_latency_s = watcher.detection_latency();
    report.settle_latency_s = watcher.settle_latency();
    if (supervision.exit) {
        report.exit_code = supervision.exit->exit_code;
        if (supervision.exit->signal) report.exit_signal = supervision.exit->signal;
    }
    for (const auto& [name, values] : watcher.metrics())
        if (!values.empty()) report.metrics[name] = values.back();
    report.effective_nccl = watcher.effective_nccl().summary();
    report.warnings = watcher.warning_count();
    return report;
}

std::string watch_report_text(const WatchReport& r) {
    std::string out;
    if (r.ok) {
        out += "verdict: ok";
    } else {
        out += fmt::format("verdict: {}", r.verdict);
        if (!r.failure_class.empty())
            out += r.phase.empty() ? fmt::format(" ({})", r.failure_class)
                                   : fmt::format(" ({} while {})", r.failure_class, r.phase);
        if (r.seconds_to_detection)
            out += fmt::format(", detected {:.2f} s after start", *r.seconds_to_detection);
    }
    out += '\n';
    if (!r.ok && !r.cause.empty()) out += "  cause: " + r.cause + "\n";
    if (!r.detail.empty() && r.detail != r.cause) out += "  " + r.detail + "\n";
    if (r.exit_code || r.exit_signal)
        out += r.exit_signal ? fmt::format("  killed by signal {}\n", *r.exit_signal)
                             : fmt::format("  exit status {}\n", *r.exit_code);
    for (const auto& [name, value] : r.metrics) out += fmt::format("  {} = {:.6g}\n", name, value);
    if (!r.effective_nccl.empty()) out += "  NCCL used: " + r.effective_nccl + "\n";
    if (r.warnings) out += fmt::format("  {} warning line(s)\n", r.warnings);
    if (!r.diagnosis.empty()) {
        out += "  --- diagnosis ---\n";
        std::size_t start = 0;
        while (start < r.diagnosis.size()) {
            std::size_t end = r.diagnosis.find('\n', start);
            if (end == std::string::npos) end = r.diagnosis.size();
            out += "  " + r.diagnosis.substr(start, end - start) + "\n";
            start = end + 1;
        }
    }
    return out;
}

std::string watch_report_json(const WatchReport& r) {
    nlohmann::json j;
    j["verdict"] = r.verdict;
    j["state"] = r.state;
    j["class"] = r.failure_class.empty() ? nlohmann::json() : nlohmann::json(r.failure_class);
    j["phase"] = r.phase.empty() ? nlohmann::json() : nlohmann::json(r.phase);
    j["cause"] = r.cause.empty() ? nlohmann::json() : nlohmann::json(r.cause);
    j["rule"] = r.rule.empty() ? nlohmann::json() : nlohmann::json(r.rule);
    j["line"] = r.line.empty() ? nlohmann::json() : nlohmann::json(r.line);
    j["detail"] = r.detail;
    j["diagnosis"] = r.diagnosis;
    j["seconds_to_detection"] =
        r.seconds_to_detection ? nlohmann::json(*r.seconds_to_detection) : nlohmann::json();
    j["detection_latency_s"] =
        r.detection_latency_s ? nlohmann::json(*r.detection_latency_s) : nlohmann::json();
    j["settle_latency_s"] = r.settle_latency_s ? nlohmann::json(*r.settle_latency_s) : nlohmann::json();
    j["exit_code"] = r.exit_code ? nlohmann::json(*r.exit_code) : nlohmann::json();
    j["exit_signal"] = r.exit_signal ? nlohmann::json(*r.exit_signal) : nlohmann::json();
    j["metrics"] = r.metrics;
    j["effective_nccl"] = r.effective_nccl;
    j["warnings"] = r.warnings;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace ncclsweep::inline watch
