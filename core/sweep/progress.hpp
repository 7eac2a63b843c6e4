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
    plain,  ///< one line per experiment on stderr, with the time elapsed
    json,   ///< one JSON object per experiment on stdout; nothing decorative
    quiet,  ///< no progress lines and no notes (-q); the summary still goes to stdout
};

/// What the run header says about a sweep before it starts (nccl-tests prints the same kind
/// of facts above its table): where it runs and on what.
struct RunHeader {
    std::string version;  ///< ncclsweep's version
    std::string sweep;    ///< the sweep's name
    int experiments = 0;  ///< experiments to run
    int repeats = 1;      ///< repeats of each
    std::string target;   ///< Target::describe()
    std::string host;     ///< host name ("" = unknown)
    std::string gpus;     ///< e.g. "8 x NVIDIA H100 80GB, driver 550.54" or "none found"
    std::string nccl;     ///< e.g. "2.21.5 (torch)" or "not found"
    std::string ranks;    ///< e.g. "8 (tp)" or "" when the workload does not say
    std::string backend;  ///< the engine's backend ("" for a plain command)
};

/// A SweepObserver that prints progress and remembers every report for the summary.
class ProgressPrinter final : public SweepObserver {
public:
    /// `human` receives progress lines (stderr), `machine` JSON lines (stdout). `columns` is
    /// the terminal's width: the live line is cut to fit it (0 = no limit).
    ProgressPrinter(ProgressStyle style, std::FILE* human, std::FILE* machine, int columns = 0);

    /// Prints the run header ("# ..." lines) to the human stream (live and plain styles only).
    void header(const RunHeader& header);

    void started(const Experiment& experiment, int index, int total, int repeat) override;
    void finished(const Experiment& experiment, const ExperimentReport& report, int index,
                  int total) override;
    void notice(const std::string& message) override;

    /// Prints the summary table (best median first, which way is better from `definitions` or
    /// the default rule of core/metric; the header carries the unit; a ± column always filled,
    /// with a footnote where an experiment has too few samples for a 95% interval; then
    /// failures with their class) and hyperfine's closing comparison ("#2 ... ran 1.62 ± 0.03
    /// times faster than #3 ...") to `out`. Lines are cut to `columns` (0 = no limit).
    void print_summary(std::FILE* out, const std::string& metric,
                       const std::vector<MetricDefinition>& definitions, int columns = 0) const;
    /// The metric print_summary shows for `preferred`: it, else tok_s, else the first one an ok
    /// experiment reported ("" when none did).
    [[nodiscard]] std::string summary_metric(const std::string& preferred) const;
    /// Adds an experiment that finished before this process started (a resume): it enters the
    /// summary like the others; nothing is printed.
    void remember(const Experiment& experiment, const ExperimentReport& report) {
        m_reports.emplace_back(experiment, report);
    }
    /// Reports seen so far, in order.
    [[nodiscard]] const std::vector<std::pair<Experiment, ExperimentReport>>& reports() const {
        return m_reports;
    }

private:
    [[nodiscard]] std::string eta(int index, int total) const;
    void clear_live_line();

    ProgressStyle m_style;
    int m_columns = 0;
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
/// "1.62 ± 0.03": the ratio of two medians (`better` over `worse`, each > 0) and its
/// uncertainty, propagating each side's relative standard deviation as hyperfine does.
struct Ratio {
    double value = 0;   ///< >= 1 when `better` really is better
    double spread = 0;  ///< ± (0 when a side has fewer than two samples)
};
[[nodiscard]] Ratio ratio_of(const stats::Summary& better, const stats::Summary& worse,
                             stats::Direction direction);

}  // namespace ncclsweep::inline sweep
