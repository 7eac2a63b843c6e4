#include "core/sweep/progress.hpp"
#include "core/plan/baseline.hpp"
#include "core/text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace ncclsweep::inline sweep {
namespace {
using SteadyClock = std::chrono::steady_clock;

std::string format_duration(double seconds) {
    if (seconds < 0) seconds = 0;
    int s = static_cast<int>(seconds + 0.5);
    if (s < 60) return fmt::format("{}s", s);
    if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
    return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

/// Pruned and dropped points are the search's decisions, not failures of the configuration.
bool is_failure(RunStatus status) {
    return status == RunStatus::failed || status == RunStatus::timed_out || status == RunStatus::infra_error;
}

std::string outcome_text(const ExperimentReport& report, const std::string& metric) {
    auto value = report.median(metric);
    if (report.status == RunStatus::pruned) return "pruned";
    if (report.status == RunStatus::dropped)
        return value ? fmt::format("dropped ({} {:.4g})", metric, *value) : std::string("dropped");
    if (report.status != RunStatus::ok)
        return fmt::format("{} ({})", to_string(report.status), report.failure_class);
    if (value) return fmt::format("{} {:.4g}", metric, *value);
    return "ok";
}
}  // namespace

std::string describe_params(const Experiment& experiment) {
    if (experiment.params.empty() && !experiment.defaults) return "(no axes)";
    return point_text(experiment);  // "defaults fusion=on" for NCCL's defaults point
}

std::string pick_metric(const ExperimentReport& report, const std::string& preferred) {
    auto has = [&](const std::string& name) {
        return std::any_of(report.samples.begin(), report.samples.end(),
                           [&](const SampleValue& s) { return s.metric == name; });
    };
    if (!preferred.empty() && has(preferred)) return preferred;
    if (has("tok_s")) return "tok_s";
    return report.samples.empty() ? std::string{} : report.samples.front().metric;
}

ProgressPrinter::ProgressPrinter(ProgressStyle style, std::FILE* human, std::FILE* machine, int columns)
    : m_style(style), m_columns(columns), m_human(human), m_machine(machine), m_start(SteadyClock::now()) {}

void ProgressPrinter::header(const RunHeader& h) {
    if (m_style != ProgressStyle::live && m_style != ProgressStyle::plain) return;
    std::fprintf(m_human, "# ncclsweep %s: sweep '%s', %d experiment%s x %d repeat%s\n", h.version.c_str(),
                 h.sweep.c_str(), h.experiments, h.experiments == 1 ? "" : "s", h.repeats,
                 h.repeats == 1 ? "" : "s");
    std::fprintf(m_human, "# target %s%s\n", h.target.c_str(),
                 h.host.empty() ? "" : (", host " + h.host).c_str());
    std::fprintf(m_human, "# GPUs: %s\n", h.gpus.c_str());
    std::fprintf(m_human, "# NCCL: %s\n", h.nccl.c_str());
    std::string engine;
    if (!h.ranks.empty()) engine += "ranks " + h.ranks;
    if (!h.backend.empty()) engine += (engine.empty() ? "" : ", ") + std::string("backend ") + h.backend;
    if (!engine.empty()) std::fprintf(m_human, "# %s\n", engine.c_str());
    std::fflush(m_human);
}

std::string ProgressPrinter::eta(int index, int total) const {
    double elapsed = std::chrono::duration<double>(SteadyClock::now() - m_start).count();
    if (index <= 1) return "?";
    double per = elapsed / (index - 1);
    return format_duration(per * (total - index + 1));
}

void ProgressPrinter::clear_live_line() {
    if (m_live_shown) {
        std::fputs("\r\033[K", m_human);
        m_live_shown = false;
    }
}

void ProgressPrinter::started(const Experiment& experiment, int index, int total, int repeat) {
    if (m_style != ProgressStyle::live) return;
    double elapsed = std::chrono::duration<double>(SteadyClock::now() - m_start).count();
    std::string left_out =
        m_pruned + m_dropped ? fmt::format(", pruned {}, dropped {}", m_pruned, m_dropped) : "";
    std::string line = fmt::format("[{}/{}] {} elapsed, ETA {}, failures {}{} | running #{}{}: {}{}", index,
                                   total, format_duration(elapsed), eta(index, total), m_failures, left_out,
                                   experiment.id, repeat > 0 ? fmt::format(" (repeat {})", repeat + 1) : "",
                                   describe_params(experiment), m_last.empty() ? "" : " | last: " + m_last);
    line = fit_width(line, m_columns > 0 ? m_columns - 1 : 160);
    std::fprintf(m_human, "\r\033[K%s", line.c_str());
    std::fflush(m_human);
    m_live_shown = true;
}

void ProgressPrinter::finished(const Experiment& experiment, const ExperimentReport& report, int index,
                               int total) {
    // A point of a race is reported once per round: the summary keeps its latest report.
    auto same = std::find_if(m_reports.begin(), m_reports.end(),
                             [&](const auto& e) { return e.first.id == experiment.id; });
    const bool failed_before = same != m_reports.end() && is_failure(same->second.status);
    if (same != m_reports.end())
        same->second = report;
    else
        m_reports.emplace_back(experiment, report);
    if (is_failure(report.status) && !failed_before) ++m_failures;
    if (report.status == RunStatus::pruned) ++m_pruned;
    if (report.status == RunStatus::dropped) ++m_dropped;
    std::string metric = pick_metric(report, "tok_s");
    m_last = fmt::format("#{} {}", experiment.id, outcome_text(report, metric));
    if (m_style == ProgressStyle::json) {
        nlohmann::json j;
        j["event"] = "experiment";
        j["id"] = experiment.id;
        j["key"] = experiment.key;
        j["index"] = index;
        j["total"] = total;
        j["status"] = std::string(to_string(report.status));
        nlohmann::json params = nlohmann::json::object();
        for (const auto& [name, value] : experiment.params) params[name] = value;
        j["params"] = params;
        if (!report.failure_class.empty()) j["failure_class"] = report.failure_class;
        if (!report.diagnosis.empty()) j["diagnosis"] = first_line(report.diagnosis, 500);
        if (report.detected_after_s) j["detected_after_s"] = *report.detected_after_s;
        nlohmann::json metrics = nlohmann::json::object();
        for (const auto& s : report.samples) {
            auto median = report.median(s.metric);
            if (median) metrics[s.metric] = *median;
        }
        j["metrics"] = metrics;
        std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        std::fprintf(m_machine, "%s\n", text.c_str());
        std::fflush(m_machine);
        return;
    }
    if (m_style == ProgressStyle::quiet) return;
    clear_live_line();
    if (m_style == ProgressStyle::plain || report.status != RunStatus::ok) {
        // (a pruned or dropped point shows its reason as the line below, like a failure's diagnosis)
        const double elapsed = std::chrono::duration<double>(SteadyClock::now() - m_start).count();
        std::fprintf(m_human, "[%d/%d %s] #%d %s: %s\n", index, total, format_duration(elapsed).c_str(),
                     experiment.id, describe_params(experiment).c_str(),
                     outcome_text(report, metric).c_str());
        if (report.status != RunStatus::ok && !report.diagnosis.empty())
            std::fprintf(m_human, "        %s\n", first_line(report.diagnosis, 200).c_str());
        std::fflush(m_human);
    }
}

void ProgressPrinter::notice(const std::string& message) {
    if (m_style == ProgressStyle::json || m_style == ProgressStyle::quiet) return;
    clear_live_line();
    std::fprintf(m_human, "note: %s\n", message.c_str());
    std::fflush(m_human);
}

std::string ProgressPrinter::summary_metric(const std::string& preferred) const {
    for (const auto& entry : m_reports)
        if (entry.second.status == RunStatus::ok || entry.second.status == RunStatus::dropped)
            return pick_metric(entry.second, preferred);
    return preferred;
}

}  // namespace ncclsweep::inline sweep
