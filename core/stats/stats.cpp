// Descriptive statistics and the order-statistic confidence interval of the median.
#include "core/stats/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace ncclsweep::stats {
namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

bool has_nan(std::span<const double> samples) {
    return std::any_of(samples.begin(), samples.end(), [](double x) { return std::isnan(x); });
}

/// Sorted copy of the samples; empty when the input is empty or holds a NaN.
std::vector<double> sorted_copy(std::span<const double> samples) {
    if (samples.empty() || has_nan(samples)) return {};
    std::vector<double> sorted(samples.begin(), samples.end());
    std::sort(sorted.begin(), sorted.end());
    return sorted;
}

double median_of_sorted(const std::vector<double>& sorted) {
    const std::size_t n = sorted.size();
    if (n % 2 == 1) return sorted[n / 2];
    const double lo = sorted[n / 2 - 1];
    const double hi = sorted[n / 2];
    return lo == hi ? lo : (lo + hi) / 2;  // lo == hi keeps a median of two equal infinities
}

double relative_spread_of_sorted(const std::vector<double>& sorted) {
    const double m = median_of_sorted(sorted);
    if (m == 0) return k_nan;
    return std::max(m - sorted.front(), sorted.back() - m) / std::fabs(m);
}

/// log of the Binomial(n, 1/2) probability of exactly k successes.
double log_binomial_half_pmf(std::size_t n, std::size_t k) {
    const auto dn = static_cast<double>(n);
    const auto dk = static_cast<double>(k);
    return std::lgamma(dn + 1) - std::lgamma(dk + 1) - std::lgamma(dn - dk + 1) - dn * std::log(2.0);
}

std::optional<ConfidenceInterval> interval_of_sorted(const std::vector<double>& sorted, double confidence) {
    const std::size_t n = sorted.size();
    if (n == 0 || !(confidence > 0 && confidence < 1)) return std::nullopt;
    // [x(k), x(n+1-k)] misses the median when fewer than k samples lie below it or fewer than
    // k above it: coverage(k) = 1 - 2 P(B <= k-1), B ~ Binomial(n, 1/2). It falls as k grows,
    // so walk k upwards while the next interval still covers enough.
    double tail = 0;  // P(B <= k-1)
    std::optional<ConfidenceInterval> best;
    for (std::size_t k = 1; 2 * k <= n + 1; ++k) {
        tail += std::exp(log_binomial_half_pmf(n, k - 1));
        const double coverage = 1 - 2 * tail;
        if (coverage < confidence) break;
        best = ConfidenceInterval{sorted[k - 1], sorted[n - k], k, n + 1 - k, coverage};
    }
    return best;
}

}  // namespace

double median(std::span<const double> samples) {
    const auto sorted = sorted_copy(samples);
    return sorted.empty() ? k_nan : median_of_sorted(sorted);
}

double quantile(std::span<const double> samples, double q) {
    if (!(q >= 0 && q <= 1)) return k_nan;
    const auto sorted = sorted_copy(samples);
    if (sorted.empty()) return k_nan;
    const double h = static_cast<double>(sorted.size() - 1) * q;
    const auto lo = static_cast<std::size_t>(std::floor(h));
    const double fraction = h - std::floor(h);
    if (fraction == 0 || lo + 1 >= sorted.size()) return sorted[lo];
    return sorted[lo] + fraction * (sorted[lo + 1] - sorted[lo]);
}

double mean(std::span<const double> samples) {
    if (samples.empty()) return k_nan;
    return std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
}

double stddev(std::span<const double> samples) {
    if (samples.size() < 2) return k_nan;
    const double m = mean(samples);
    double squares = 0;
    for (const double x : samples) squares += (x - m) * (x - m);
    return std::sqrt(squares / static_cast<double>(samples.size() - 1));
}

double relative_spread(std::span<const double> samples) {
    const auto sorted = sorted_copy(samples);
    return sorted.empty() ? k_nan : relative_spread_of_sorted(sorted);
}

double geometric_mean(std::span<const double> values) {
    if (values.empty()) return k_nan;
    double log_sum = 0;
    for (const double x : values) {
        if (!(x > 0)) return k_nan;  // also catches NaN
        log_sum += std::log(x);
    }
    return std::exp(log_sum / static_cast<double>(values.size()));
}

std::optional<ConfidenceInterval> median_confidence_interval(std::span<const double> samples,
                                                             double confidence) {
    return interval_of_sorted(sorted_copy(samples), confidence);
}

std::size_t min_samples_for_interval(double confidence) {
    if (!(confidence > 0 && confidence < 1)) return 0;
    // The widest interval [min, max] covers 1 - 2 (1/2)^n.
    std::size_t n = 1;
    while (1 - 2 * std::pow(0.5, static_cast<double>(n)) < confidence) ++n;
    return n;
}

Summary summarize(std::span<const double> samples) {
    Summary summary;
    summary.n = samples.size();
    const auto sorted = sorted_copy(samples);
    if (sorted.empty()) {
        summary.median = summary.mean = summary.stddev = summary.min = summary.max = summary.relative_spread =
            k_nan;
        return summary;
    }
    summary.median = median_of_sorted(sorted);
    summary.mean = mean(sorted);
    summary.stddev = stddev(sorted);
    summary.min = sorted.front();
    summary.max = sorted.back();
    summary.relative_spread = relative_spread_of_sorted(sorted);
    summary.ci = interval_of_sorted(sorted, 0.95);
    return summary;
}

}  // namespace ncclsweep::stats
