// compare(): the per-metric verdict of `ncclsweep diff` (benchstat-like: significant AND
// larger than a minimum effect).
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/stats/stats.hpp"

namespace ncclsweep::stats {
namespace {

Result<void> check_samples(std::span<const double> samples, std::string_view side) {
    const auto bad = std::find_if(samples.begin(), samples.end(), [](double x) { return !std::isfinite(x); });
    if (bad == samples.end()) return success();
    return Error::bad_input(
        fmt::format("{} sample #{} is {}; metric samples must be finite numbers (check the "
                    "metric extraction of that experiment)",
                    side, (bad - samples.begin()) + 1, *bad));
}

double relative_delta(double base, double candidate) {
    if (base != 0) return (candidate - base) / std::fabs(base);
    if (candidate == 0) return 0;
    return std::copysign(std::numeric_limits<double>::infinity(), candidate);
}

std::string percent(double fraction) {
    return fmt::format("{:.1f}%", fraction * 100);
}

}  // namespace

std::string_view verdict_name(Verdict verdict) {
    switch (verdict) {
        case Verdict::improvement:
            return "improvement";
        case Verdict::regression:
            return "regression";
        case Verdict::no_change:
            return "no_change";
        case Verdict::insufficient_samples:
            return "insufficient_samples";
    }
    return "no_change";
}

Result<Comparison> compare(std::span<const double> base, std::span<const double> candidate,
                           const CompareOptions& options) {
    if (!(options.alpha > 0 && options.alpha < 1)) {
        return Error::bad_input(
            fmt::format("alpha {} is outside (0, 1); use a significance level such as 0.05", options.alpha));
    }
    if (!(options.threshold >= 0) || !std::isfinite(options.threshold)) {
        return Error::bad_input(fmt::format(
            "threshold {} is not a finite fraction >= 0; use e.g. 0.03 for 3%", options.threshold));
    }
    if (auto ok = check_samples(base, "base"); !ok) return ok.error();
    if (auto ok = check_samples(candidate, "new"); !ok) return ok.error();

    Comparison c;
    c.base = summarize(base);
    c.candidate = summarize(candidate);
    c.test = mann_whitney_u(base, candidate, options.alpha);
    c.p_value = c.test.p_value;
    c.delta = (base.empty() || candidate.empty()) ? std::numeric_limits<double>::quiet_NaN()
                                                  : relative_delta(c.base.median, c.candidate.median);

    if (base.empty() || candidate.empty()) {
        c.verdict = Verdict::insufficient_samples;
        c.reason = fmt::format("no samples on the {} side", base.empty() ? "base" : "new");
        return c;
    }
    if (c.test.too_few) {
        c.verdict = Verdict::insufficient_samples;
        if (c.test.min_possible_p > options.alpha) {
            c.reason = fmt::format(
                "too few samples (n={}+{}): the smallest possible p is {:.3g} > alpha {}; "
                "need >= {} samples per side",
                base.size(), candidate.size(), c.test.min_possible_p, format_level(options.alpha),
                c.test.needed_per_side);
        } else {
            c.reason = fmt::format("too few samples (n={}+{}): need >= {} samples per side", base.size(),
                                   candidate.size(), c.test.needed_per_side);
        }
        return c;
    }
    if (!(c.p_value <= options.alpha)) {
        c.verdict = Verdict::no_change;
        c.reason =
            fmt::format("not significant (p={:.3g} > alpha {})", c.p_value, format_level(options.alpha));
        return c;
    }
    if (!(std::fabs(c.delta) > options.threshold)) {
        c.verdict = Verdict::no_change;
        c.reason =
            fmt::format("significant (p={:.3g}) but |delta| {} is not above the threshold {}", c.p_value,
                        percent(std::fabs(c.delta)), format_level(options.threshold * 100) + "%");
        return c;
    }
    const bool went_up = c.delta > 0;
    const bool good = went_up == (options.direction == Direction::higher_is_better);
    c.verdict = good ? Verdict::improvement : Verdict::regression;
    c.reason = fmt::format("significant (p={:.3g} <= alpha {}) and |delta| {} > threshold {}", c.p_value,
                           format_level(options.alpha), percent(std::fabs(c.delta)),
                           format_level(options.threshold * 100) + "%");
    return c;
}

}  // namespace ncclsweep::stats
