#pragma once
// The watcher: decides, line by line, how an experiment is going.
//   initializing -> capturing -> ready -> measuring -> done,  or  failed(class) / timed_out(kind)
// Pure: lines in, verdict out. It starts no process and reads no clock — every call carries
// its time (OutputLine::when, `now`), so tests drive it with a fake clock. See docs/watcher.md.
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/nccl/effective_nccl.hpp"
#include "core/spec/spec.hpp"
#include "core/target.hpp"
#include "core/watch/rule_catalog.hpp"

namespace ncclsweep::inline watch {

/// Where an experiment stands.
enum class WatchState { initializing, capturing, ready, measuring, done, failed, timed_out };

/// Which timeout ended an experiment.
enum class TimeoutKind {
    none,
    startup,  ///< no progress (capture begin/end, ready) for `startup` s while initializing
    capture,  ///< a capture began and did not end within `capture` s
    stall,    ///< no output at all for `stall` s while running
    total,    ///< the whole experiment took longer than `total` s
};

/// What a clean exit (status 0) needs to count as done.
enum class SuccessRule {
    exit_zero,     ///< nothing more (a command without metrics)
    result_event,  ///< a tpverify `result` event (engine workloads)
    any_metric,    ///< at least one metric value (command workloads with `metrics:`)
};

/// Why the process ended.
enum class Ending {
    natural,  ///< it exited (or was killed) on its own, or because the watcher said so
    stopped,  ///< the sweep stopped it on purpose (e.g. the client finished)
};

/// Settings of one watcher.
struct WatcherOptions {
    Timeouts timeouts;  ///< seconds, 0 = none
    SuccessRule success = SuccessRule::exit_zero;
    bool record_effective_nccl = true;  ///< parse NCCL TUNING/ENV lines
    /// ncclsweep itself set NCCL_DEBUG=INFO (to read the TUNING lines): the lines NCCL prints
    /// only because of that ("NCCL WARN", "NCCL INFO") feed the effective configuration and the
    /// context, but no fatal, warning or progress rule, so the verdict and its class are what
    /// they would be without the request.
    bool nccl_debug_requested = false;
    std::size_t context_before = 20;  ///< lines kept before a fatal line
    std::size_t context_after = 5;    ///< lines stored after it (longer inside a traceback, at most 60)
    /// The settle window: after the first fatal line the verdict stays open this long (or
    /// until the traceback it belongs to has ended) so a more specific line can name the cause.
    double context_after_seconds = 0.3;
    std::size_t settle_max_lines = 2000;  ///< ... or until this many lines were read in it
    std::size_t max_line_chars = 2000;    ///< stored lines are cut to this length
};

/// The watcher settings a sweep of `spec` uses: its timeouts, and what a clean exit needs to
/// count as done — a tpverify `result` event for engine workloads, a metric value for command
/// workloads that declare `metrics:`, the exit status alone otherwise.
[[nodiscard]] WatcherOptions watcher_options_for(const Spec& spec);

/// The answer to each call.
struct Verdict {
    WatchState state = WatchState::initializing;
    bool end_now = false;  ///< the experiment has failed (fatal line or timeout); stays true
    bool settled = false;  ///< terminal and the diagnosis will not change any more: kill it now
};

/// The evidence for a failure.
struct Diagnosis {
    std::string failure_class;  ///< graph_capture, nccl, ..., timeout, exit, signal, no_result
    std::string phase;   ///< what it was doing at the fatal line: initializing, capturing, ready, measuring
    std::string cause;   ///< the most specific line seen (or, without one, `detail`)
    std::string rule;    ///< rule that matched `cause` ("timeout_stall", "exit", ...)
    std::string line;    ///< the line that decided the class ("" for timeouts/exits)
    std::string detail;  ///< one sentence: what happened
    std::string trigger_rule;         ///< first fatal rule (differs from `rule` when refined)
    std::string trigger_line;         ///< the line at which the kill was decided
    std::vector<std::string> before;  ///< lines before the trigger (oldest first), or the last lines
    std::vector<std::string> after;   ///< lines after the trigger
    /// Readable excerpt for the store and the terminal (bounded).
    [[nodiscard]] std::string text() const;
    /// One line for progress lines and summaries: "class while phase: cause", cut to `max_chars`.
    [[nodiscard]] std::string headline(std::size_t max_chars = 200) const;
};

/// A warning line (deduplicated).
struct WarningNote {
    std::string rule;
    std::string line;
    double at_s = 0;  ///< seconds since start
};

/// When each phase was reached, in seconds since start.
struct PhaseTimes {
    std::optional<double> capture_begin, capture_end, ready, measuring, end;
};

/// Line-by-line verdict state machine for one experiment (one process run).
class Watcher {
public:
    using Clock = std::chrono::steady_clock;
    using TimePoint = Clock::time_point;
    /// At most this many distinct warnings are kept (all are counted).
    static constexpr std::size_t k_max_warnings = 50;

    /// A watcher for a run that started at `start`, matching against `catalog`.
    Watcher(std::shared_ptr<const RuleCatalog> catalog, WatcherOptions options, TimePoint start);

    /// One output line; `now` is when it is being judged (for detection latency).
    Verdict feed(const OutputLine& line, TimePoint now);
    /// One output line judged at line.when.
    Verdict feed(const OutputLine& line) { return feed(line, line.when); }
    /// Time passes without output: checks the timeouts and closes the settle window once
    /// `context_after_seconds` have passed since the fatal line.
    Verdict tick(TimePoint now);
    /// True while the settle window is open and a traceback read in it has ended: once the
    /// pipes are drained, end_settle() may close the window early.
    [[nodiscard]] bool settle_may_end_when_quiet() const { return m_settling && m_tb_closed && !m_tb_open; }
    /// Closes the settle window now: the diagnosis is final (verdict().settled).
    Verdict end_settle(TimePoint now);
    /// The process ended. Non-zero exit without a fatal line = "exit" (or "signal"); a clean
    /// exit without what `success` needs = "no_result" / "no_metrics".
    Verdict on_exit(const ExitInfo& exit, TimePoint now, Ending ending = Ending::natural);
    /// The sweep started measuring (e.g. started the client): ready -> measuring.
    void mark_measuring(TimePoint now);
    /// The sweep is stopping the process on purpose: fatal lines from now on are warnings
    /// (servers print tracebacks when killed) and timeouts stop.
    void expect_shutdown(TimePoint now);

    /// Current verdict.
    [[nodiscard]] Verdict verdict() const;
    /// Current state.
    [[nodiscard]] WatchState state() const { return m_state; }
    /// True from the fatal line or timeout on: kill the process group now, do not wait.
    [[nodiscard]] bool must_kill_now() const { return m_kill; }
    /// Failure class ("" unless failed/timed_out).
    [[nodiscard]] const std::string& failure_class() const { return m_diag.failure_class; }
    /// Which timeout fired (none unless timed_out).
    [[nodiscard]] TimeoutKind timeout_kind() const { return m_timeout; }
    /// Evidence for the failure (empty unless failed/timed_out).
    [[nodiscard]] const Diagnosis& diagnosis() const { return m_diag; }
    /// Seconds from start to the fatal line / timeout, when there was one.
    [[nodiscard]] std::optional<double> seconds_to_detection() const { return m_detected_s; }
    /// Seconds from the fatal line's arrival to the verdict (the `now` given to feed).
    [[nodiscard]] std::optional<double> detection_latency() const { return m_latency_s; }
    /// Seconds from the fatal line's arrival to the end of the settle window (final verdict).
    [[nodiscard]] std::optional<double> settle_latency() const { return m_settle_s; }
    /// Metric name -> values in arrival order (result-event fields, named groups, workload metrics).
    [[nodiscard]] const std::map<std::string, std::vector<double>>& metrics() const { return m_metrics; }
    /// The text fields of a tpverify `result` event ("collective_times": "calibrated", ...), at
    /// most 64 of them, each cut to max_line_chars.
    [[nodiscard]] const std::map<std::string, std::string>& result_text() const { return m_result_text; }
    /// Distinct warnings, at most k_max_warnings.
    [[nodiscard]] const std::vector<WarningNote>& warnings() const { return m_warnings; }
    /// All warning lines seen, including repeats and those not kept.
    [[nodiscard]] std::size_t warning_count() const { return m_warning_count; }
    /// What NCCL reported it used.
    [[nodiscard]] const nccl::EffectiveNccl& effective_nccl() const { return m_effective; }
    /// When each phase was reached.
    [[nodiscard]] const PhaseTimes& phase_times() const { return m_times; }
    /// The last lines (oldest first), at most options.context_before.
    [[nodiscard]] std::vector<std::string> last_lines() const;
    /// Lines fed so far.
    [[nodiscard]] std::size_t line_count() const { return m_lines; }

private:
    void apply(int index, std::size_t start, const OutputLine& line, TimePoint now, bool& fatal_taken);
    void fail(const Rule& rule, std::string failure_class, std::string detail, const OutputLine& line,
              TimePoint now);
    void time_out(TimeoutKind kind, TimePoint now);
    void fail_at_exit(std::string failure_class, std::string rule, std::string detail, TimePoint now);
    void warn(const std::string& rule, std::string_view text, TimePoint when);
    void effect(PhaseEffect effect, TimePoint when);
    void json_event(std::string_view text, TimePoint when);
    void add_metric(const std::string& name, double value, TimePoint when);
    void extract(int index, std::size_t start, std::string_view text, TimePoint when);
    [[nodiscard]] std::string tpverify_class_of(int index, std::string_view text, std::string& detail) const;
    [[nodiscard]] std::string describe(const Rule& rule, TimePoint when) const;
    void collect_after(std::string_view text);
    /// A fatal line read while the diagnosis is open: it becomes the cause when its rank
    /// (cause_rank(), unless given) is above the cause's so far.
    void consider(const Rule& rule, std::string failure_class, std::string detail, std::string_view text,
                  TimePoint when, int rank = -1);
    void close_settle(TimePoint at);
    [[nodiscard]] int cause_rank(const Rule& rule, std::string_view text) const;
    [[nodiscard]] std::string resolve_class(const std::string& raw) const;
    void remember(std::string_view text);
    [[nodiscard]] std::string stored(std::string_view text) const;
    [[nodiscard]] double since_start(TimePoint t) const;
    [[nodiscard]] bool terminal() const;

    /// Ranks of a cause (docs/watcher.md, "Class, phase and cause"): a higher one replaces it.
    static constexpr int k_rank_unnamed_exception = 1;  ///< an exception line no rule names
    static constexpr int k_rank_generic_exception = 2;  ///< an exception line a generic rule names
    static constexpr int k_rank_specific = 3;           ///< a specific rule's line
    static constexpr int k_rank_nccl_warn = 4;          ///< a specific rule's NCCL WARN line

    std::shared_ptr<const RuleCatalog> m_catalog;
    int m_traceback_rule = -1;  ///< python_traceback: the rule of an exception line no rule names
    WatcherOptions m_options;
    TimePoint m_start, m_last_output, m_last_progress, m_state_since, m_trigger_at;
    WatchState m_state = WatchState::initializing;
    TimeoutKind m_timeout = TimeoutKind::none;
    Diagnosis m_diag;
    bool m_kill = false, m_exited = false, m_shutdown = false, m_got_result = false;
    bool m_after_open = false, m_settling = false, m_tb_open = false, m_tb_closed = false,
         m_capture_evidence = false;
    bool m_exception_line = false;  ///< the line being fed ends a traceback read in the window
    int m_cause_rank = -1;
    std::string m_cause_class;  ///< class of the rule behind the cause, before the capture override
    std::size_t m_after_lines = 0, m_settle_lines = 0, m_lines = 0, m_metric_values = 0, m_warning_count = 0;
    std::vector<std::string> m_ring;  ///< last lines, circular
    std::size_t m_ring_next = 0, m_ring_count = 0;
    std::vector<int> m_hits;            ///< reused match buffer
    std::vector<std::size_t> m_starts;  ///< where each hit's literal start is (RuleCatalog::candidates)
    std::map<std::string, std::vector<double>> m_metrics;
    std::map<std::string, std::string> m_result_text;
    std::vector<WarningNote> m_warnings;
    nccl::EffectiveNccl m_effective;
    PhaseTimes m_times;
    std::optional<double> m_detected_s, m_latency_s, m_settle_s;
};

/// Text of a WatchState ("initializing", ..., "timed_out").
[[nodiscard]] std::string_view to_string(WatchState state);
/// Text of a TimeoutKind ("startup", ...).
[[nodiscard]] std::string_view to_string(TimeoutKind kind);
/// Class for a tpverify failure line from its phase, API and error text
/// (out of memory -> oom, timeout -> hang, capture -> graph_capture, nccl* -> nccl, cu* -> cuda).
[[nodiscard]] std::string tpverify_failure_class(std::string_view phase, std::string_view api,
                                                 std::string_view what);

}  // namespace ncclsweep::inline watch
