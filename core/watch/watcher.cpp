// The watcher's state machine: phases, failures, timeouts, exits and the context window.
// Extraction of values from matching lines lives in core/watch/watcher_extract.cpp.
#include "core/watch/watcher.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <csignal>

namespace ncclsweep::inline watch {
namespace {

/// Hard cap on lines collected after a fatal line, even inside a long traceback.
constexpr std::size_t k_after_cap = 60;
constexpr std::string_view k_traceback = "Traceback (most recent call last)";

bool seconds_passed(Watcher::TimePoint now, Watcher::TimePoint since, double limit) {
    return limit > 0 && std::chrono::duration<double>(now - since).count() >= limit;
}

/// A line without the prefix a server's logger puts before each line of a traceback:
/// vLLM's "(EngineCore_DP0 pid=42) ERROR 06-01 10:00:01 [core.py:700] ".
std::string_view log_body(std::string_view text) {
    if (text.starts_with('(')) {
        const auto close = text.find(") ");
        if (close != std::string_view::npos && close < 80) text.remove_prefix(close + 2);
    }
    for (std::string_view level : {"ERROR ", "WARNING ", "INFO ", "DEBUG ", "CRITICAL "}) {
        if (!text.starts_with(level)) continue;
        const auto close = text.find("] ");
        if (close != std::string_view::npos && close < 80) text.remove_prefix(close + 2);
        break;
    }
    return text;
}

/// The exception line ("RuntimeError: ...") ends a traceback: not indented, not a header.
bool ends_traceback(std::string_view text) {
    text = log_body(text);
    if (text.empty() || text.front() == ' ' || text.front() == '\t') return false;
    return !text.starts_with("Traceback") && !text.starts_with("During handling") &&
           !text.starts_with("The above exception");
}

/// The line reads like a Python exception line: a dotted name, then a colon or nothing
/// (`torch.AcceleratorError: CUDA error: ...`, `KeyboardInterrupt`), after a logger's prefix.
bool names_exception(std::string_view text) {
    text = log_body(text);
    const auto word = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.';
    };
    if (text.empty() || std::isdigit(static_cast<unsigned char>(text.front())) != 0 || !word(text.front()))
        return false;
    std::size_t end = 0;
    while (end < text.size() && word(text[end])) ++end;
    return end == text.size() || text[end] == ':';
}

std::string signal_name(int signal) {
    switch (signal) {
        case SIGSEGV:
            return "SIGSEGV";
        case SIGABRT:
            return "SIGABRT";
        case SIGBUS:
            return "SIGBUS";
        case SIGFPE:
            return "SIGFPE";
        case SIGILL:
            return "SIGILL";
        case SIGKILL:
            return "SIGKILL";
        case SIGTERM:
            return "SIGTERM";
        case SIGINT:
            return "SIGINT";
        default:
            return fmt::format("signal {}", signal);
    }
}

}  // namespace

Watcher::Watcher(std::shared_ptr<const RuleCatalog> catalog, WatcherOptions options, TimePoint start)
    : m_catalog(std::move(catalog)),
      m_traceback_rule(m_catalog->find("python_traceback")),
      m_options(options),
      m_start(start),
      m_last_output(start),
      m_last_progress(start),
      m_state_since(start),
      m_trigger_at(start),
      m_ring(options.context_before) {}

Verdict Watcher::feed(const OutputLine& line, TimePoint now) {
    ++m_lines;
    m_last_output = std::max(m_last_output, line.when);
    const std::string_view text = line.text;
    if (m_settling && seconds_passed(line.when, m_trigger_at, m_options.context_after_seconds))
        close_settle(line.when);
    const bool settle_line = m_settling;
    // The line that ends a traceback read in the window names the exception that ended it.
    m_exception_line = settle_line && m_tb_open && ends_traceback(text) && names_exception(text);
    m_catalog->candidates(text, m_hits, m_starts);  // a metric rule's own extraction confirms it
    bool fatal_taken = false;
    for (std::size_t i = 0; i < m_hits.size(); ++i) apply(m_hits[i], m_starts[i], line, now, fatal_taken);
    if (m_exception_line && !fatal_taken && m_state == WatchState::failed && m_settling &&
        m_traceback_rule >= 0)
        // No rule names it (`ValueError: ...`): still the cause, in class python, over the
        // header and the generic lines before it.
        consider(m_catalog->rule(m_traceback_rule), "python",
                 fmt::format("the traceback ends in an exception no rule names, at {:.3f} s",
                             since_start(line.when)),
                 text, line.when, k_rank_unnamed_exception);
    m_exception_line = false;
    if (settle_line) {
        collect_after(text);
        if (++m_settle_lines >= m_options.settle_max_lines) close_settle(now);
    }
    remember(text);
    return verdict();
}

void Watcher::apply(int index, std::size_t start, const OutputLine& line, TimePoint now, bool& fatal_taken) {
    const Rule& rule = m_catalog->rule(index);
    const std::string_view text = line.text;
    if (m_options.nccl_debug_requested && rule.severity != Severity::info &&
        (text.find("NCCL WARN") != std::string_view::npos ||
         text.find("NCCL INFO") != std::string_view::npos))
        return;  // a line only our NCCL_DEBUG=INFO made NCCL print decides nothing
    switch (rule.severity) {
        case Severity::fatal: {
            if (fatal_taken) return;  // the first fatal rule of a line (priority order) decides
            fatal_taken = true;
            std::string cls = rule.failure_class;
            std::string detail;
            if (rule.extract == Extract::tpverify_error) cls = tpverify_class_of(index, text, detail);
            if (m_shutdown || m_state == WatchState::done) {
                warn(rule.name, text, line.when);
                return;
            }
            if (m_state == WatchState::failed && m_settling) {
                consider(rule, std::move(cls), std::move(detail), text, line.when);
                return;
            }
            if (!terminal())
                fail(rule, std::move(cls), detail.empty() ? describe(rule, line.when) : detail, line, now);
            return;
        }
        case Severity::warning:
            warn(rule.name, text, line.when);
            extract(index, start, text, line.when);
            return;
        case Severity::progress:
            if (rule.extract == Extract::json_event)
                json_event(text, line.when);
            else {
                effect(rule.effect, line.when);
                extract(index, start, text, line.when);
            }
            return;
        case Severity::info:
            if (rule.extract == Extract::nccl_effective) {
                if (m_options.record_effective_nccl) m_effective.add_line(text);
            } else {
                extract(index, start, text, line.when);
            }
            return;
    }
}

void Watcher::fail(const Rule& rule, std::string failure_class, std::string detail, const OutputLine& line,
                   TimePoint now) {
    const std::string_view text = line.text;
    m_diag.phase = std::string(to_string(m_state));
    m_state = WatchState::failed;
    m_kill = true;
    m_diag.trigger_rule = rule.name;
    m_diag.trigger_line = stored(text);
    m_diag.before = last_lines();
    m_diag.after.clear();
    m_trigger_at = line.when;
    m_settling = m_options.context_after_seconds > 0 && m_options.settle_max_lines > 0;
    m_after_open = m_settling && m_options.context_after > 0;
    m_after_lines = m_settle_lines = 0;
    m_tb_open = text.find(k_traceback) != std::string_view::npos;
    m_tb_closed = false;
    m_capture_evidence = false;
    m_cause_rank = -1;
    consider(rule, std::move(failure_class), std::move(detail), text, line.when);
    m_detected_s = since_start(line.when);
    m_latency_s = std::max(0.0, std::chrono::duration<double>(now - line.when).count());
    m_times.end = m_detected_s;
    if (!m_settling) m_settle_s = m_latency_s;
}

int Watcher::cause_rank(const Rule& rule, std::string_view text) const {
    // A source line quoted inside a traceback ("    raise Exception(...)") names no cause.
    const std::string_view body = log_body(text);
    if (body.starts_with(' ') || body.starts_with('\t')) return 0;
    // The exception line ending a traceback decides over the generic lines before it (the
    // header, "Scheduler hit an exception", a device assert), whatever wrote them when.
    if (rule.generic) return m_exception_line ? k_rank_generic_exception : 0;
    // NCCL's own WARN names the algorithm, token or call; the exceptions built on it do not.
    if (text.find("NCCL WARN") != std::string_view::npos) return k_rank_nccl_warn;
    return k_rank_specific;
}

std::string Watcher::resolve_class(const std::string& raw) const {
    // A CUDA or NCCL failure while capturing (or next to a line that says capture failed) is a
    // capture failure, whichever line said it first: NCCL_DEBUG adds lines, not classes.
    if ((raw == "nccl" || raw == "cuda") && (m_diag.phase == "capturing" || m_capture_evidence))
        return "graph_capture";
    return raw;
}

void Watcher::consider(const Rule& rule, std::string failure_class, std::string detail, std::string_view text,
                       TimePoint when, int rank) {
    if (failure_class == "graph_capture") m_capture_evidence = true;
    if (rank < 0) rank = cause_rank(rule, text);
    if (rank > m_cause_rank) {
        m_cause_rank = rank;
        m_cause_class = std::move(failure_class);
        m_diag.rule = rule.name;
        m_diag.line = m_diag.cause = stored(text);
        m_diag.detail = !detail.empty() ? std::move(detail) : describe(rule, when);
        if (rule.name != m_diag.trigger_rule)
            m_diag.detail +=
                fmt::format(" (after {} at {:.3f} s)", m_diag.trigger_rule, since_start(m_trigger_at));
    }
    m_diag.failure_class = resolve_class(m_cause_class);
}

void Watcher::collect_after(std::string_view text) {
    if (text.find(k_traceback) != std::string_view::npos)
        m_tb_open = true;
    else if (m_tb_open && ends_traceback(text)) {
        m_tb_open = false;
        m_tb_closed = true;
    }
    if (!m_after_open) return;
    m_diag.after.push_back(stored(text));
    ++m_after_lines;
    if ((m_after_lines >= m_options.context_after && !m_tb_open) || m_after_lines >= k_after_cap)
        m_after_open = false;
}

void Watcher::close_settle(TimePoint at) {
    if (!m_settling) return;
    m_settling = false;
    m_after_open = false;
    m_settle_s = std::max(0.0, std::chrono::duration<double>(at - m_trigger_at).count());
}

Verdict Watcher::end_settle(TimePoint now) {
    close_settle(now);
    return verdict();
}

Verdict Watcher::tick(TimePoint now) {
    if (m_settling && seconds_passed(now, m_trigger_at, m_options.context_after_seconds)) close_settle(now);
    if (terminal() || m_exited || m_shutdown) return verdict();
    const auto& limits = m_options.timeouts;
    if (seconds_passed(now, m_start, limits.total))
        time_out(TimeoutKind::total, now);
    else if (seconds_passed(now, m_last_output, limits.stall))
        time_out(TimeoutKind::stall, now);
    else if (m_state == WatchState::capturing && seconds_passed(now, m_state_since, limits.capture))
        time_out(TimeoutKind::capture, now);
    else if (m_state == WatchState::initializing && seconds_passed(now, m_last_progress, limits.startup))
        time_out(TimeoutKind::startup, now);
    return verdict();
}

void Watcher::time_out(TimeoutKind kind, TimePoint now) {
    const auto& limits = m_options.timeouts;
    const auto phase = to_string(m_state);
    std::string detail;
    switch (kind) {
        case TimeoutKind::total:
            detail = fmt::format("total timeout: still running after {} s (while {})", limits.total, phase);
            break;
        case TimeoutKind::stall:
            detail = fmt::format("stall timeout: no output for {} s (while {})", limits.stall, phase);
            break;
        case TimeoutKind::capture:
            detail = fmt::format("capture timeout: graph capture began and did not end within {} s",
                                 limits.capture);
            break;
        case TimeoutKind::startup:
            detail = fmt::format("startup timeout: no progress (capture or ready) for {} s", limits.startup);
            break;
        case TimeoutKind::none:
            break;
    }
    m_diag.phase = std::string(to_string(m_state));
    m_state = WatchState::timed_out;
    m_timeout = kind;
    m_kill = true;
    m_diag.failure_class = "timeout";
    m_diag.rule = m_diag.trigger_rule = fmt::format("timeout_{}", to_string(kind));
    m_diag.cause = detail;
    m_diag.detail = std::move(detail);
    m_diag.before = last_lines();
    m_detected_s = since_start(now);
    m_latency_s = m_settle_s = 0.0;
    m_times.end = m_detected_s;
}

Verdict Watcher::on_exit(const ExitInfo& exit, TimePoint now, Ending ending) {
    if (m_exited) return verdict();
    m_exited = true;
    close_settle(now);
    if (m_shutdown) ending = Ending::stopped;
    if (m_state == WatchState::failed || m_state == WatchState::timed_out) return verdict();
    if (m_state == WatchState::done) {
        if (!exit.success() && ending == Ending::natural)
            warn("exit",
                 fmt::format("exited with status {} (signal {}) after its result", exit.exit_code,
                             exit.signal),
                 now);
        return verdict();
    }
    if (ending == Ending::natural && exit.signal != 0)
        fail_at_exit(
            "signal", "signal",
            fmt::format("killed by {} without a matching rule; see its last lines", signal_name(exit.signal)),
            now);
    else if (ending == Ending::natural && exit.exit_code != 0)
        fail_at_exit(
            "exit", "exit",
            fmt::format("exited with status {} without a matching rule; see its last lines", exit.exit_code),
            now);
    else if (m_options.success == SuccessRule::result_event && !m_got_result)
        fail_at_exit("no_result", "no_result", "ended without a result event; see its last lines", now);
    else if (m_options.success == SuccessRule::any_metric && m_metric_values == 0)
        fail_at_exit("no_metrics", "no_metrics",
                     "ended without any metric value; check the workload's metrics regexes", now);
    else {
        m_state = WatchState::done;
        m_times.end = since_start(now);
    }
    return verdict();
}

void Watcher::fail_at_exit(std::string failure_class, std::string rule, std::string detail, TimePoint now) {
    m_diag.phase = std::string(to_string(m_state));
    m_state = WatchState::failed;
    m_diag.cause = detail;
    m_diag.failure_class = std::move(failure_class);
    m_diag.rule = m_diag.trigger_rule = std::move(rule);
    m_diag.detail = std::move(detail);
    m_diag.before = last_lines();
    m_detected_s = since_start(now);
    m_latency_s = m_settle_s = 0.0;
    m_times.end = m_detected_s;
}

void Watcher::mark_measuring(TimePoint now) {
    effect(PhaseEffect::measuring, now);
}

void Watcher::expect_shutdown(TimePoint) {
    m_shutdown = true;
}

void Watcher::effect(PhaseEffect effect, TimePoint when) {
    if (terminal()) return;
    const double t = since_start(when);
    auto enter = [&](WatchState state, std::optional<double>& stamp) {
        if (m_state != state) m_state_since = when;
        m_state = state;
        if (!stamp) stamp = t;
        m_last_progress = when;
    };
    switch (effect) {
        case PhaseEffect::none:
            return;
        case PhaseEffect::capture_begin:
            if (m_state == WatchState::initializing || m_state == WatchState::capturing)
                enter(WatchState::capturing, m_times.capture_begin);
            return;
        case PhaseEffect::capture_end:
            if (m_state == WatchState::initializing || m_state == WatchState::capturing)
                enter(WatchState::initializing, m_times.capture_end);
            return;
        case PhaseEffect::ready:
            if (m_state == WatchState::initializing || m_state == WatchState::capturing)
                enter(WatchState::ready, m_times.ready);
            return;
        case PhaseEffect::measuring:
            if (m_state != WatchState::measuring) enter(WatchState::measuring, m_times.measuring);
            return;
        case PhaseEffect::done:
            m_got_result = true;
            m_state = WatchState::done;
            m_times.end = t;
            return;
    }
}

bool Watcher::terminal() const {
    return m_state == WatchState::done || m_state == WatchState::failed || m_state == WatchState::timed_out;
}

Verdict Watcher::verdict() const {
    return Verdict{m_state, m_kill, terminal() && (!m_settling || m_exited)};
}

double Watcher::since_start(TimePoint t) const {
    return std::chrono::duration<double>(t - m_start).count();
}

WatcherOptions watcher_options_for(const Spec& spec) {
    WatcherOptions options;
    options.timeouts = spec.timeouts;
    if (!spec.workload.engine.empty())
        options.success = SuccessRule::result_event;
    else if (!spec.workload.metrics.empty())
        options.success = SuccessRule::any_metric;
    else
        options.success = SuccessRule::exit_zero;
    return options;
}

}  // namespace ncclsweep::inline watch
