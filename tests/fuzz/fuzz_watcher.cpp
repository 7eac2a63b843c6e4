// Fuzz target: bytes -> lines -> Watcher::feed on a fake clock, with tick / mark_measuring /
// expect_shutdown / on_exit driven by control lines, against the built-in rules plus a ready
// rule and a metric rule like a `command:` workload's. Input format: one line per '\n';
//   "\x01t<digit>"  time passes (<digit> x 0.7 s) and tick() runs
//   "\x01m" mark_measuring, "\x01s" expect_shutdown, "\x01x<byte>" on_exit(code or signal)
//   "\x02..."      a stderr line; anything else a stdout line 10 ms after the previous one.
// Settings (success rule, context sizes, line cut) come from a checksum of the input.
// Invariants: end_now never goes back to false; a settled verdict keeps its state and class;
// the class is set exactly when failed/timed_out; every kept line and list stays bounded.
#include <cstdint>
#include <memory>
#include <string>

#include "core/watch/watcher.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ncclsweep;

namespace {

std::shared_ptr<const RuleCatalog> catalog() {
    static const auto compiled = [] {
        Rule ready;
        ready.name = "fuzz_ready";
        ready.pattern = R"(server (is )?ready on port (\d+))";
        ready.severity = Severity::progress;
        ready.effect = PhaseEffect::ready;
        Rule metric;
        metric.name = "fuzz_metric";
        metric.pattern = R"(throughput:\s*([-+0-9.eE]+))";
        metric.severity = Severity::progress;
        metric.extract = Extract::single_group;
        metric.metric = "throughput";
        auto result = RuleCatalog::with_user_rules({ready, metric});
        FUZZ_CHECK(result.ok(), result.ok() ? "" : result.error().message);
        return result.value();
    }();
    return compiled;
}

struct Checker {
    Checker(const Watcher& w, const WatcherOptions& o) : watcher(w), options(o) {}
    const Watcher& watcher;
    const WatcherOptions& options;
    bool ended = false, settled = false;
    WatchState settled_state = WatchState::initializing;
    std::string settled_class;

    void operator()(const Verdict& verdict) {
        FUZZ_CHECK(verdict.state == watcher.state(), "verdict and state disagree");
        FUZZ_CHECK(!ended || verdict.end_now, "end_now went back to false");
        ended = verdict.end_now;
        if (settled) {
            FUZZ_CHECK(verdict.settled && verdict.state == settled_state, "a settled verdict changed");
            FUZZ_CHECK(watcher.failure_class() == settled_class, "a settled diagnosis changed its class");
        } else if (verdict.settled) {
            settled = true;
            settled_state = verdict.state;
            settled_class = watcher.failure_class();
        }
        const bool failed = verdict.state == WatchState::failed || verdict.state == WatchState::timed_out;
        FUZZ_CHECK(failed == !watcher.failure_class().empty(), std::string(to_string(verdict.state)));
        FUZZ_CHECK((verdict.state == WatchState::timed_out) == (watcher.timeout_kind() != TimeoutKind::none),
                   std::string(to_string(watcher.timeout_kind())));
        FUZZ_CHECK(watcher.warnings().size() <= Watcher::k_max_warnings, "too many warnings kept");
        FUZZ_CHECK(watcher.warning_count() >= watcher.warnings().size(), "warning count");
        const auto last = watcher.last_lines();
        FUZZ_CHECK(last.size() <= options.context_before, "ring larger than context_before");
        for (const auto& line : last) FUZZ_CHECK(line.size() <= options.max_line_chars, "ring line not cut");
        const auto& diag = watcher.diagnosis();
        const std::size_t stored_limit = options.max_line_chars + 40;  // "... [N more bytes]"
        FUZZ_CHECK(diag.line.size() <= stored_limit && diag.trigger_line.size() <= stored_limit,
                   "diagnosis line");
        FUZZ_CHECK(diag.before.size() <= options.context_before, "before context");
        FUZZ_CHECK(diag.after.size() <= 64 + options.context_after, "after context unbounded");
        for (const auto& line : diag.after) FUZZ_CHECK(line.size() <= stored_limit, "after line not cut");
        FUZZ_CHECK(diag.text().size() <= 16384 + 16, "diagnosis text unbounded");
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string input = fuzz::as_text(data, size);
    const std::uint64_t bits = fuzz::checksum(input);
    WatcherOptions options;
    options.timeouts = Timeouts{5, 4, 3, 60};
    options.success = static_cast<SuccessRule>(bits % 3);
    options.context_before = (bits >> 8) % 24;
    options.context_after = (bits >> 16) % 8;
    options.context_after_seconds = static_cast<double>((bits >> 24) % 4) * 0.25;
    options.max_line_chars = 8 + (bits >> 32) % 300;
    options.record_effective_nccl = ((bits >> 48) & 1) == 0;

    using namespace std::chrono;
    Watcher::TimePoint now{hours(1000)};
    Watcher watcher(catalog(), options, now);
    Checker check(watcher, options);
    std::size_t fed = 0;
    for (const auto& text : fuzz::split(input, '\n')) {
        if (text.size() >= 2 && text[0] == '\x01') {
            const char op = text[1];
            const unsigned char arg = text.size() > 2 ? static_cast<unsigned char>(text[2]) : 0;
            if (op == 't') {
                now += milliseconds(700 * (arg % 10));
                check(watcher.tick(now));
            } else if (op == 'm') {
                watcher.mark_measuring(now);
            } else if (op == 's') {
                watcher.expect_shutdown(now);
            } else if (op == 'x') {
                const ExitInfo exit{arg < 128 ? arg : 0, arg >= 128 ? arg - 128 : 0};
                check(watcher.on_exit(exit, now, (arg & 1) ? Ending::stopped : Ending::natural));
                FUZZ_CHECK(watcher.verdict().settled, "an exited process must settle");
                return 0;  // nothing comes after the exit
            }
            check(watcher.verdict());
            continue;
        }
        OutputLine line;
        line.stream = !text.empty() && text[0] == '\x02' ? Stream::err : Stream::out;
        line.text = text;
        now += milliseconds(10);
        line.when = now;
        check(watcher.feed(line, now + milliseconds(static_cast<long>(bits % 3))));
        FUZZ_CHECK(watcher.line_count() == ++fed, "line count");
    }
    check(watcher.on_exit(ExitInfo{static_cast<int>(bits >> 56) % 3, 0}, now + milliseconds(10)));
    FUZZ_CHECK(watcher.verdict().settled, "an exited process must settle");
    return 0;
}
