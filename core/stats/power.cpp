// Levels as written, Holm's adjustment for many comparisons, and what a U test can detect
// (docs/statistics.md "Many experiments at once" and "What a diff can see").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "core/stats/stats.hpp"

namespace ncclsweep::stats {
namespace {

constexpr double k_undefined = std::numeric_limits<double>::quiet_NaN();

double min_p_equal(std::size_t n_a, std::size_t n_b) {
    // 2 / C(n_a + n_b, n_a), the most extreme two-sided p without ties.
    double c = 1;
    const std::size_t k = std::min(n_a, n_b), n = n_a + n_b;
    for (std::size_t i = 1; i <= k; ++i) c = c * static_cast<double>(n - k + i) / static_cast<double>(i);
    return std::min(1.0, 2 / c);
}

}  // namespace

std::string format_level(double value) {
    if (!std::isfinite(value)) return fmt::format("{}", value);
    return fmt::format("{:.6g}", value);
}

double level_from_confidence(double confidence) {
    // Round away the binary error of 1 - c (0.050000000000000044) at 12 decimals.
    return std::round((1 - confidence) * 1e12) / 1e12;
}

std::vector<double> holm_adjust(std::span<const double> p_values) {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < p_values.size(); ++i)
        if (!std::isnan(p_values[i])) order.push_back(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return p_values[a] < p_values[b]; });
    std::vector<double> adjusted(p_values.begin(), p_values.end());
    const double m = static_cast<double>(order.size());
    double running = 0;
    for (std::size_t rank = 0; rank < order.size(); ++rank) {
        const double scaled = std::min(1.0, p_values[order[rank]] * (m - static_cast<double>(rank)));
        running = std::max(running, scaled);  // step-down: never below an earlier (smaller) one
        adjusted[order[rank]] = running;
    }
    return adjusted;
}

double normal_quantile(double q) {
    if (!(q > 0 && q < 1)) return k_undefined;
    // Acklam's rational approximation (relative error < 1.2e-9), then one Newton step on erfc.
    static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                                   1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
    static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                   6.680131188771972e+01, -1.328068155288572e+01};
    static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                   -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
    static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                   3.754408661907416e+00};
    const double low = 0.02425, high = 1 - low;
    double x = 0;
    if (q < low) {
        const double r = std::sqrt(-2 * std::log(q));
        x = (((((c[0] * r + c[1]) * r + c[2]) * r + c[3]) * r + c[4]) * r + c[5]) /
            ((((d[0] * r + d[1]) * r + d[2]) * r + d[3]) * r + 1);
    } else if (q <= high) {
        const double r = q - 0.5, s = r * r;
        x = (((((a[0] * s + a[1]) * s + a[2]) * s + a[3]) * s + a[4]) * s + a[5]) * r /
            (((((b[0] * s + b[1]) * s + b[2]) * s + b[3]) * s + b[4]) * s + 1);
    } else {
        const double r = std::sqrt(-2 * std::log(1 - q));
        x = -(((((c[0] * r + c[1]) * r + c[2]) * r + c[3]) * r + c[4]) * r + c[5]) /
            ((((d[0] * r + d[1]) * r + d[2]) * r + d[3]) * r + 1);
    }
    const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - q;
    const double u = e * std::sqrt(2 * std::numbers::pi) * std::exp(x * x / 2);
    return x - u / (1 + x * u / 2);
}

double relative_noise(std::span<const double> samples) {
    if (samples.size() < 2) return k_undefined;
    const double m = median(samples);
    if (std::isnan(m) || m == 0) return k_undefined;
    std::vector<double> deviations;
    deviations.reserve(samples.size());
    for (double x : samples) deviations.push_back(std::fabs(x - m));
    return 1.4826 * median(deviations) / std::fabs(m);
}

double mad_small_sample_factor(std::size_t n) {
    // Croux & Rousseeuw, "Time-efficient algorithms for two highly robust estimators of scale"
    // (Computational Statistics, 1992): simulated for n <= 9, n / (n - 0.8) beyond.
    static constexpr double small[] = {1.196, 1.495, 1.363, 1.206, 1.200, 1.140, 1.129, 1.107};
    if (n < 2) return k_undefined;
    if (n <= 9) return small[n - 2];
    return static_cast<double>(n) / (static_cast<double>(n) - 0.8);
}

double relative_noise_corrected(std::span<const double> samples) {
    return relative_noise(samples) * mad_small_sample_factor(samples.size());
}

double detectable_shift(std::size_t n_a, std::size_t n_b, double noise, double alpha, double power) {
    if (n_a == 0 || n_b == 0 || !(alpha > 0 && alpha < 1) || !(power > 0 && power < 1) || !(noise >= 0))
        return k_undefined;
    if (min_p_equal(n_a, n_b) > alpha) return std::numeric_limits<double>::infinity();
    const double z = normal_quantile(1 - alpha / 2) + normal_quantile(power);
    const double spread = std::sqrt(1.0 / static_cast<double>(n_a) + 1.0 / static_cast<double>(n_b));
    return z * noise * spread * std::sqrt(std::numbers::pi / 3);
}

std::size_t samples_to_detect(double shift, double noise, double alpha, double power, std::size_t limit) {
    for (std::size_t n = 2; n <= limit; ++n) {
        const double can = detectable_shift(n, n, noise, alpha, power);
        if (std::isfinite(can) && can <= shift) return n;
    }
    return 0;
}

GateRepeats repeats_for_gate(double noise, std::size_t comparisons, double alpha, int cap) {
    GateRepeats out;
    if (noise >= 0 && alpha > 0 && alpha < 1) {
        const double level = alpha / static_cast<double>(std::max<std::size_t>(1, comparisons));
        out.needed = static_cast<int>(samples_to_detect(k_gate_shift, noise, level, k_gate_power));
    }
    out.capped = out.needed == 0 || out.needed > cap;
    out.repeats = out.capped ? cap : out.needed;
    return out;
}

}  // namespace ncclsweep::stats
