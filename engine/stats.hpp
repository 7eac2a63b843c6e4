#pragma once
// Statistics shared by both backends: percentiles, the relative spread of the median, and the
// --iters / --target-rsd stopping rule.
#include <cstddef>
#include <vector>

#include "engine/options.hpp"
#include "engine/report.hpp"

namespace tpverify {

/// Percentile q in [0, 1] with linear interpolation between order statistics (the common
/// "type 7" definition: rank q*(n-1)). `values` need not be sorted; 0 when empty.
[[nodiscard]] double percentile(std::vector<double> values, double q);

/// Relative spread of the median: half the width of the distribution-free 95% interval of the
/// median (order statistics n/2 -+ 0.98*sqrt(n), 1-based, clamped) divided by the median.
/// Infinity with fewer than 3 samples or a median of 0.
[[nodiscard]] double median_relative_spread(std::vector<double> values);

/// p10/p50/p90, mean, sample count and relative spread of the median.
[[nodiscard]] PassStats summarize(const std::vector<double>& values);

/// Decides when measuring stops: after --iters samples, or with --target-rsd once the
/// spread of the median is small enough (at least k_min_samples) or --max-seconds passed.
class StopRule {
public:
    static constexpr std::size_t k_min_samples = 10;       ///< --target-rsd never stops before this
    static constexpr std::size_t k_max_samples = 1000000;  ///< hard cap for --target-rsd
    /// Takes --iters, --target-rsd and --max-seconds from the options.
    explicit StopRule(const Options& options);
    /// True when no more samples are needed; `elapsed_s` is the measuring time so far.
    [[nodiscard]] bool done(const std::vector<double>& samples, double elapsed_s);
    /// True when the stop came from the time cap rather than the target being met.
    [[nodiscard]] bool hit_time_cap() const { return m_hit_time_cap; }

private:
    int m_iters;
    double m_target_rsd;  ///< <= 0: fixed --iters
    double m_max_seconds;
    std::size_t m_next_check = k_min_samples;
    bool m_hit_time_cap = false;
};

}  // namespace tpverify
