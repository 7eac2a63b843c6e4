#pragma once
// Statistics for results and diff: descriptive summaries, a distribution-free confidence
// interval for the median, the Mann–Whitney U test and the benchstat-like comparison that
// `ncclsweep diff` uses. Pure functions of their inputs (std only); docs/statistics.md says
// exactly what is computed and why.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace ncclsweep::stats {

// ---- descriptive statistics ------------------------------------------------------------
// All of these return NaN for an empty input or when any sample is NaN; infinities are
// ordered like numbers. None of them modifies or requires sorted input.

/// Median: the middle order statistic (odd n) or the mean of the two middle ones (even n).
[[nodiscard]] double median(std::span<const double> samples);

/// Quantile q in [0, 1] by linear interpolation between order statistics (Hyndman & Fan
/// type 7, the default of R and numpy): h = (n-1)q, result = x[floor h] + (h - floor h) *
/// (x[floor h + 1] - x[floor h]) on the sorted samples. NaN when q is outside [0, 1].
[[nodiscard]] double quantile(std::span<const double> samples, double q);

/// Arithmetic mean.
[[nodiscard]] double mean(std::span<const double> samples);

/// Sample standard deviation (divisor n - 1). NaN when fewer than 2 samples.
[[nodiscard]] double stddev(std::span<const double> samples);

/// Relative spread of the median: max(median - min, max - median) / |median| (0.05 = ±5%).
/// NaN when the median is 0. Descriptive only; the confidence interval is the inference.
[[nodiscard]] double relative_spread(std::span<const double> samples);

/// Geometric mean of positive values (e.g. new/base ratios for a diff summary row):
/// exp(mean(log x)). NaN when empty or when any value is <= 0 or NaN.
[[nodiscard]] double geometric_mean(std::span<const double> values);

// ---- confidence interval for the median --------------------------------------------------

/// A distribution-free interval [x(k), x(n+1-k)] for the population median.
struct ConfidenceInterval {
    double low = 0;            ///< x(lower_rank), the k-th smallest sample
    double high = 0;           ///< x(upper_rank), the k-th largest sample
    std::size_t lower_rank{};  ///< k, 1-based rank into the sorted samples
    std::size_t upper_rank{};  ///< n + 1 - k, 1-based
    double coverage = 0;       ///< exact coverage 1 - 2 P(Binomial(n, 1/2) <= k - 1), >= requested
};

/// The narrowest symmetric order-statistic interval whose exact binomial coverage is at least
/// `confidence` (default 95%). nullopt when no such interval exists — for 95% that is n < 6
/// (with n = 5 even [min, max] covers only 93.75%) — or on NaN samples or a confidence
/// outside (0, 1). An absent interval means "too few samples", never "zero width".
[[nodiscard]] std::optional<ConfidenceInterval> median_confidence_interval(std::span<const double> samples,
                                                                           double confidence = 0.95);

/// Smallest n for which median_confidence_interval(…, confidence) exists (6 for 95%); 0 when
/// confidence is outside (0, 1).
[[nodiscard]] std::size_t min_samples_for_interval(double confidence = 0.95);

/// One sample set described at once (sorts once; for `results show`).
struct Summary {
    std::size_t n = 0;                     ///< number of samples
    double median = 0;                     ///< see median()
    double mean = 0;                       ///< see mean()
    double stddev = 0;                     ///< see stddev() (NaN for n < 2)
    double min = 0;                        ///< smallest sample
    double max = 0;                        ///< largest sample
    double relative_spread = 0;            ///< see relative_spread()
    std::optional<ConfidenceInterval> ci;  ///< 95% interval of the median, absent for n < 6
};

/// Summarize samples; every field is NaN (n = 0, no interval) for empty input.
[[nodiscard]] Summary summarize(std::span<const double> samples);

// ---- Mann–Whitney U test -----------------------------------------------------------------

/// How the p-value of mann_whitney_u is computed.
enum class UTestMethod {
    automatic,  ///< exact (with ties: the permutation distribution) when n_a + n_b <= k_exact_limit
    exact,      ///< exact up to k_exact_max_pairs pairs (with ties: 100 values); normal when larger
    normal,     ///< normal approximation with tie and continuity correction
};

/// automatic uses the exact distribution up to this many samples in total (ties included).
inline constexpr std::size_t k_exact_limit = 50;

/// UTestMethod::exact is honoured up to n_a * n_b pairs of this size (cost grows as pairs squared).
inline constexpr std::size_t k_exact_max_pairs = 10000;

/// Outcome of a two-sided Mann–Whitney U test of samples a against b.
struct UTestResult {
    double u = 0;          ///< U of sample a: pairs (x in a, y in b) with x > y, ties count 1/2
    double p_value = 1;    ///< two-sided p; NaN when a side is empty or a sample is NaN
    bool exact = false;    ///< p comes from the exact distribution (else normal approximation)
    bool too_few = false;  ///< a side has < 4 samples or min_possible_p > alpha: say "too few"
    /// Smallest two-sided p these samples can give: 2 / C(n_a+n_b, n_a) without ties; with ties
    /// and an exact test, what the tied values allow (larger). No p_value is ever below it.
    double min_possible_p = 1;
    std::size_t needed_per_side = 4;  ///< samples per side (equal sizes) at which alpha becomes reachable
};

/// Two-sided Mann–Whitney U (Wilcoxon rank-sum) test with mid-ranks for ties: exact (the
/// permutation distribution of the mid-rank sum when values tie) up to k_exact_limit samples,
/// else the normal approximation, never below min_possible_p. `alpha` only decides `too_few`;
/// the p-value does not depend on it.
[[nodiscard]] UTestResult mann_whitney_u(std::span<const double> a, std::span<const double> b,
                                         double alpha = 0.05, UTestMethod method = UTestMethod::automatic);

/// Exact two-sided p for U = u with sizes n_a, n_b and no ties: min(1, 2 P(U <= min(u, n_a n_b - u))).
/// NaN when a size is 0. Costs O((n_a n_b)^2) time; meant for n_a n_b <= k_exact_max_pairs.
[[nodiscard]] double mann_whitney_exact_p(double u, std::size_t n_a, std::size_t n_b);

// ---- levels, multiple comparisons and power -----------------------------------------------

/// A level or fraction as people wrote it: the shortest decimal with at most 6 significant
/// digits ("0.05" for 1 - 0.95, not 0.050000000000000044).
[[nodiscard]] std::string format_level(double value);

/// 1 - confidence as the level people mean (0.95 -> exactly the double nearest 0.05).
[[nodiscard]] double level_from_confidence(double confidence);

/// Holm's step-down adjustment of `p_values` (any order; NaN stays NaN and is not counted):
/// sorted ascending, p_(i) x (m - i + 1), made non-decreasing and capped at 1. Rejecting where
/// the adjusted p <= alpha keeps the chance of any false alarm among the m tests <= alpha,
/// whatever their dependence (Holm 1979).
[[nodiscard]] std::vector<double> holm_adjust(std::span<const double> p_values);

/// The standard normal quantile: z with Phi(z) = q, for q in (0, 1) (NaN outside).
[[nodiscard]] double normal_quantile(double q);

/// Robust relative noise of samples: 1.4826 x MAD / |median| (the standard deviation of a
/// normal sample, not moved by one straggler). NaN below 2 samples or at a zero median.
[[nodiscard]] double relative_noise(std::span<const double> samples);

/// Croux & Rousseeuw's small-sample factor b_n for the MAD (1.196, 1.495, 1.363, 1.206, 1.200,
/// 1.140, 1.129, 1.107 for n = 2..9, then n / (n - 0.8)): 1.4826 x MAD of n normal samples
/// underestimates sigma on average by this factor. NaN below 2.
[[nodiscard]] double mad_small_sample_factor(std::size_t n);

/// relative_noise x mad_small_sample_factor(n): the noise estimate without the MAD's
/// small-sample bias (docs/statistics.md "repeats: auto").
[[nodiscard]] double relative_noise_corrected(std::span<const double> samples);

/// The smallest relative shift a two-sided U test at `alpha` detects with probability `power`
/// between n_a and n_b samples of relative noise `noise`: (z(1 - alpha/2) + z(power)) x noise x
/// sqrt(1/n_a + 1/n_b) x sqrt(pi/3) (the normal shift formula, widened by the U test's
/// efficiency 3/pi). Infinity when no p at these sizes can reach alpha (2 / C(N, n_a) > alpha).
[[nodiscard]] double detectable_shift(std::size_t n_a, std::size_t n_b, double noise, double alpha,
                                      double power);

/// The fewest samples per side (both sides alike) for which detectable_shift <= `shift`; 0 when
/// more than `limit` would be needed.
[[nodiscard]] std::size_t samples_to_detect(double shift, double noise, double alpha, double power,
                                            std::size_t limit = 1000);

/// The slowdown a nightly gate is asked to catch, and in what share of nights (docs/statistics.md):
/// diff's "repeats:" hint and `repeats: auto` both use them.
inline constexpr double k_gate_shift = 0.05;
inline constexpr double k_gate_power = 0.9;

/// What `repeats: auto` runs (docs/statistics.md "repeats: auto").
struct GateRepeats {
    int repeats = 0;      ///< what to run: `needed`, or `cap` when more would be needed
    int needed = 0;       ///< what the model asks for; 0 when more than 1000
    bool capped = false;  ///< `needed` is 0 or above `cap`: the gate will see less than 5%
};

/// The repeats per experiment that catch a k_gate_shift change of one experiment in k_gate_power
/// of nights at relative `noise` per run, when a diff tests `comparisons` experiments with
/// Holm's correction at `alpha` (so the first step is at alpha / comparisons): samples_to_detect
/// at that level, capped at `cap`. A NaN or negative noise, or alpha outside (0, 1), gives
/// `cap`, marked capped.
[[nodiscard]] GateRepeats repeats_for_gate(double noise, std::size_t comparisons, double alpha, int cap);

// ---- comparison for diff -----------------------------------------------------------------

/// Which way a metric is good (tok_s: higher; latency: lower).
enum class Direction { higher_is_better, lower_is_better };

/// What a comparison concludes.
enum class Verdict {
    improvement,           ///< significant and |delta| > threshold, in the good direction
    regression,            ///< significant and |delta| > threshold, in the bad direction
    no_change,             ///< "~": not significant, or not larger than the threshold
    insufficient_samples,  ///< the test cannot reach alpha with these sample counts
};

/// Stable lower-case name for JSON and tables: "improvement", "regression", "no_change",
/// "insufficient_samples".
[[nodiscard]] std::string_view verdict_name(Verdict verdict);

/// Default minimum effect that counts as a change: 3% (smaller deltas are "~" even when
/// significant). `diff`, "best" (results/) and the race of core/search all start from it.
inline constexpr double k_default_threshold = 0.03;
/// Default significance level of the U test.
inline constexpr double k_default_alpha = 0.05;

/// Settings of compare().
struct CompareOptions {
    double alpha = 0.05;                                ///< significance level, in (0, 1)
    double threshold = 0.0;                             ///< minimum |delta| fraction that counts (0.03 = 3%)
    Direction direction = Direction::higher_is_better;  ///< which sign of delta is good
};

/// One metric of one experiment, base versus new.
struct Comparison {
    Summary base;        ///< summary of the base samples (base.median is the base median)
    Summary candidate;   ///< summary of the new samples
    double delta = 0;    ///< (new median - base median) / |base median|; ±inf when base median is 0
    double p_value = 1;  ///< two-sided Mann–Whitney p (NaN when a side is empty)
    UTestResult test;    ///< the full test result
    Verdict verdict = Verdict::no_change;  ///< the conclusion
    std::string reason;  ///< one line for people, e.g. "not significant (p=0.310 > alpha 0.05)"
};

/// Compare base and new samples of one metric the way `ncclsweep diff` reports it: a change
/// counts only if the U test is significant (p <= alpha) AND |delta| > threshold. Fails
/// (bad_input) on a non-finite sample, alpha outside (0, 1) or a negative/non-finite threshold.
[[nodiscard]] Result<Comparison> compare(std::span<const double> base, std::span<const double> candidate,
                                         const CompareOptions& options = {});

}  // namespace ncclsweep::stats
