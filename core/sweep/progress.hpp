#pragma once
// How a running sweep looks: a live progress line on a TTY, one plain line per experiment
// otherwise, or JSON lines for machines; and the summary table at the end.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/spec/metric.hpp"
#include "core/sweep/sweep.hpp"

namespace ncclsweep::inline sweep {

/// Output style of the progress printer.
enum class ProgressStyle {
    live,   ///< one updating line on stderr (TTY)
    plain,  ///< one line per experiment on stderr
    json,   ///< one JSON object per experiment on stdout; nothing decorative
};

/// A SweepObserver that prints progress and remembers every report for the summary.
class ProgressPrinter final : public SweepObserver {
public:
    /// `human` receives progress lines (stderr), `machine` JSON lines (stdout).
    ProgressPrinter(ProgressStyle style, std::FILE* human, std::FILE* machine);

    void started(const Experiment& experiment, int index, int total, int repeat) override;
    void finished(const Experiment& experiment, const ExperimentReport& report, int index, int total) override;
    void notice(const std::string& message) override;

    /// Prints the summary table (best median first, which way is better from `definitions` or
    /// the default rule of core/metric; then failures with their class) to `out`.
    void print_summary(std::FILE* out, const std::string& metric, const std::vector<MetricDefinition>& definitions) const;
    /// The metric print_summary shows for `preferred`: it, else tok_s, else the first one an ok
    /// experiment reported ("" when none did).
    [[nodiscard]] std::string summary_metric(const std::string& preferred) const;
    /// Reports seen so far, in order.
    [[nodiscard]] const std::vector<std::pair<Experiment, ExperimentReport>>& reports() const { return m_reports; }

private:
    [[nodiscard]] std::string eta(int index, int total) const;
    void clear_live_line();

    ProgressStyle m_style;
    std::FILE* m_human;
    std::FILE* m_machine;
    std::chrono::steady_clock::time_point m_start;
    std::vector<std::pair<Experiment, ExperimentReport>> m_reports;
    int m_failures = 0;  ///< failed, timed out or infra_error (not pruned or dropped)
    int m_pruned = 0;
    int m_dropped = 0;
    std::string m_last;
    bool m_live_shown = false;
};

/// The changed parameters of an experiment as "NAME=v name=v".
[[nodiscard]] std::string describe_params(const Experiment& experiment);
/// The metric shown for an experiment: `preferred` when present, else tok_s, else the first.
[[nodiscard]] std::string pick_metric(const ExperimentReport& report, const std::string& preferred);

}  // namespace ncclsweep::sweep
