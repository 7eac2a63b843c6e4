// Percentiles, the relative spread of the median, and the stopping rule.
#include "engine/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace tpverify {

double percentile(std::vector<double> values, double q) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    q = std::clamp(q, 0.0, 1.0);
    const double rank = q * static_cast<double>(values.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(rank));
    const std::size_t hi = std::min(lo + 1, values.size() - 1);
    const double frac = rank - static_cast<double>(lo);
    return values[lo] + (values[hi] - values[lo]) * frac;
}

double median_relative_spread(std::vector<double> values) {
    const std::size_t n = values.size();
    if (n < 3) return std::numeric_limits<double>::infinity();
    std::sort(values.begin(), values.end());
    const double median = percentile(values, 0.5);
    if (median == 0) return std::numeric_limits<double>::infinity();
    const double half = 0.98 * std::sqrt(static_cast<double>(n));  // 1.96 * sqrt(n) / 2
    const double center = static_cast<double>(n) / 2.0;
    // 1-based order statistics, clamped to the sample.
    const auto lo =
        static_cast<std::size_t>(std::clamp(std::floor(center - half), 1.0, static_cast<double>(n)));
    const auto hi =
        static_cast<std::size_t>(std::clamp(std::ceil(center + half), 1.0, static_cast<double>(n)));
    return (values[hi - 1] - values[lo - 1]) / 2.0 / median;
}

PassStats summarize(const std::vector<double>& values) {
    PassStats s;
    s.samples = static_cast<int>(values.size());
    if (values.empty()) return s;
    std::vector<double> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    s.p10_us = percentile(sorted, 0.10);
    s.p50_us = percentile(sorted, 0.50);
    s.p90_us = percentile(sorted, 0.90);
    s.mean_us = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size());
    const double rsd = median_relative_spread(sorted);
    s.rsd = std::isfinite(rsd) ? rsd : 0;
    return s;
}

StopRule::StopRule(const Options& options)
    : m_iters(options.iters),
      m_target_rsd(options.target_rsd.value_or(0)),
      m_max_seconds(options.max_seconds) {}

bool StopRule::done(const std::vector<double>& samples, double elapsed_s) {
    if (m_target_rsd <= 0) return samples.size() >= static_cast<std::size_t>(m_iters);
    if (elapsed_s >= m_max_seconds || samples.size() >= k_max_samples) {
        m_hit_time_cap = elapsed_s >= m_max_seconds;
        return true;
    }
    if (samples.size() < m_next_check) return false;
    // Re-check after every sample while small, then every ~5% so long runs stay cheap.
    m_next_check = samples.size() + std::max<std::size_t>(1, samples.size() / 20);
    return median_relative_spread(samples) <= m_target_rsd;
}

}  // namespace tpverify
