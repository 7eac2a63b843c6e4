// Two-sided Mann–Whitney U test: mid-ranks, exact null distribution for small samples without
// ties, normal approximation with tie and continuity correction otherwise.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/stats/stats.hpp"

namespace ncclsweep::stats {
namespace {

constexpr double k_no_value = std::numeric_limits<double>::quiet_NaN();
constexpr std::size_t k_min_per_side = 4;

/// U of sample a, the tie term sum(t^3 - t) over groups of t equal values, and every pooled
/// value's doubled mid-rank (an integer) with whether it belongs to a.
struct Ranking {
    double u = 0;
    double tie_term = 0;
    std::vector<long> doubled_ranks;  ///< 2 x mid-rank of each pooled value, sorted order
    long doubled_rank_sum_a = 0;      ///< 2 x rank sum of sample a
};

Ranking rank_samples(std::span<const double> a, std::span<const double> b) {
    std::vector<std::pair<double, bool>> pooled;  // value, belongs to a
    pooled.reserve(a.size() + b.size());
    for (const double x : a) pooled.emplace_back(x, true);
    for (const double y : b) pooled.emplace_back(y, false);
    std::sort(pooled.begin(), pooled.end(),
              [](const auto& lhs, const auto& rhs) { return lhs.first < rhs.first; });

    Ranking ranking;
    ranking.doubled_ranks.reserve(pooled.size());
    std::size_t i = 0;
    while (i < pooled.size()) {
        std::size_t j = i + 1;
        while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
        // Positions i..j-1 (0-based) share the mid-rank of ranks i+1..j: doubled, i+1+j.
        const auto doubled = static_cast<long>(i + 1 + j);
        for (std::size_t k = i; k < j; ++k) {
            ranking.doubled_ranks.push_back(doubled);
            if (pooled[k].second) ranking.doubled_rank_sum_a += doubled;
        }
        const auto t = static_cast<double>(j - i);
        ranking.tie_term += t * t * t - t;
        i = j;
    }
    const auto n_a = static_cast<double>(a.size());
    ranking.u = static_cast<double>(ranking.doubled_rank_sum_a) / 2 - n_a * (n_a + 1) / 2;
    return ranking;
}

/// The exact permutation test on the pooled (doubled, mid-) ranks: every choice of n_a of the N
/// ranks for sample a is equally likely under the null hypothesis, ties included. Counts the
/// choices by their rank sum (dynamic programming over the values), then the two-sided p is the
/// share of choices whose sum lies at least as far from its mean n_a (N + 1) as the observed one.
/// Also gives the smallest p these ranks allow (the most extreme sum). Exact in doubles for
/// N <= 100 (at most C(100, 50) ~ 1e29 choices, well within the range of a double).
struct PermutationP {
    double p = 1;
    double min_p = 1;
};

PermutationP permutation_p(const std::vector<long>& doubled_ranks, std::size_t n_a, long observed_sum) {
    const std::size_t n = doubled_ranks.size();
    long total_sum = 0;
    for (long r : doubled_ranks) total_sum += r;
    // ways[k][s]: choices of k ranks among those seen so far with doubled sum s.
    std::vector<std::vector<double>> ways(n_a + 1,
                                          std::vector<double>(static_cast<std::size_t>(total_sum) + 1, 0));
    ways[0][0] = 1;
    long reachable = 0;
    for (std::size_t item = 0; item < n; ++item) {
        const long r = doubled_ranks[item];
        reachable += r;
        for (std::size_t k = std::min(n_a, item + 1); k >= 1; --k) {
            auto& to = ways[k];
            const auto& from = ways[k - 1];
            for (long s = reachable; s >= r; --s)
                to[static_cast<std::size_t>(s)] += from[static_cast<std::size_t>(s - r)];
        }
    }
    const long mean = static_cast<long>(n_a) * static_cast<long>(n + 1);  // doubled
    const auto& dist = ways[n_a];
    double all = 0, extreme = 0, farthest_mass = 0;
    long farthest = -1;
    const long observed = std::labs(observed_sum - mean);
    for (std::size_t s = 0; s < dist.size(); ++s) {
        if (dist[s] == 0) continue;
        all += dist[s];
        const long deviation = std::labs(static_cast<long>(s) - mean);
        if (deviation >= observed) extreme += dist[s];
        if (deviation > farthest) {
            farthest = deviation;
            farthest_mass = 0;
        }
        if (deviation == farthest) farthest_mass += dist[s];
    }
    PermutationP out;
    out.p = all > 0 ? std::min(1.0, extreme / all) : 1.0;
    out.min_p = all > 0 ? std::min(1.0, farthest_mass / all) : 1.0;
    return out;
}

/// Largest pooled size for which the permutation distribution with ties is computed exactly.
constexpr std::size_t k_exact_ties_limit = 100;

/// P(U = u), u = 0..n_a*n_b, under the null hypothesis without ties. Recurrence on the
/// largest pooled value: it belongs to a with probability i/(i+j), and then beats all j
/// values of b; P(i,j)[u] = i/(i+j) P(i-1,j)[u-j] + j/(i+j) P(i,j-1)[u].
std::vector<double> exact_distribution(std::size_t n_a, std::size_t n_b) {
    std::vector<std::vector<double>> previous(n_b + 1, std::vector<double>{1.0});  // i = 0
    for (std::size_t i = 1; i <= n_a; ++i) {
        std::vector<std::vector<double>> current(n_b + 1);
        current[0] = {1.0};
        for (std::size_t j = 1; j <= n_b; ++j) {
            std::vector<double> dist(i * j + 1, 0.0);
            const double p_a = static_cast<double>(i) / static_cast<double>(i + j);
            const double p_b = 1 - p_a;
            const auto& from_a = previous[j];     // sizes (i-1, j)
            const auto& from_b = current[j - 1];  // sizes (i, j-1)
            for (std::size_t u = 0; u < from_a.size(); ++u) dist[u + j] += p_a * from_a[u];
            for (std::size_t u = 0; u < from_b.size(); ++u) dist[u] += p_b * from_b[u];
            current[j] = std::move(dist);
        }
        previous = std::move(current);
    }
    return previous[n_b];
}

double binomial_coefficient(std::size_t n, std::size_t k) {
    k = std::min(k, n - k);
    double c = 1;
    for (std::size_t i = 1; i <= k; ++i) c = c * static_cast<double>(n - k + i) / static_cast<double>(i);
    return c;
}

double normal_p(double u, std::size_t n_a, std::size_t n_b, double tie_term) {
    const auto na = static_cast<double>(n_a);
    const auto nb = static_cast<double>(n_b);
    const double n = na + nb;
    const double mu = na * nb / 2;
    const double variance = na * nb / 12 * ((n + 1) - tie_term / (n * (n - 1)));
    if (!(variance > 0)) return 1.0;  // every value equal: no evidence of a difference
    const double z = (std::fabs(u - mu) - 0.5) / std::sqrt(variance);
    return std::clamp(std::erfc(z / std::sqrt(2.0)), 0.0, 1.0);
}

std::size_t needed_per_side(double alpha) {
    if (!(alpha > 0)) return 0;
    std::size_t m = k_min_per_side;
    while (2 / binomial_coefficient(2 * m, m) > alpha) ++m;
    return m;
}

}  // namespace

double mann_whitney_exact_p(double u, std::size_t n_a, std::size_t n_b) {
    if (n_a == 0 || n_b == 0 || std::isnan(u)) return k_no_value;
    const auto dist = exact_distribution(n_a, n_b);
    const double pairs = static_cast<double>(n_a * n_b);
    const double smaller = std::min(u, pairs - u);
    double tail = 0;
    for (std::size_t v = 0; v < dist.size() && static_cast<double>(v) <= smaller + 1e-9; ++v) tail += dist[v];
    return std::min(1.0, 2 * tail);
}

UTestResult mann_whitney_u(std::span<const double> a, std::span<const double> b, double alpha,
                           UTestMethod method) {
    UTestResult result;
    const std::size_t total = a.size() + b.size();
    result.min_possible_p =
        (a.empty() || b.empty()) ? 1.0 : std::min(1.0, 2 / binomial_coefficient(total, a.size()));
    result.needed_per_side = needed_per_side(alpha);
    result.too_few = a.size() < k_min_per_side || b.size() < k_min_per_side || !(alpha > 0) ||
                     result.min_possible_p > alpha;

    const auto is_nan = [](double x) { return std::isnan(x); };
    if (a.empty() || b.empty() || std::any_of(a.begin(), a.end(), is_nan) ||
        std::any_of(b.begin(), b.end(), is_nan)) {
        result.u = k_no_value;
        result.p_value = k_no_value;
        return result;
    }

    const Ranking ranking = rank_samples(a, b);
    result.u = ranking.u;
    const bool ties = ranking.tie_term > 0;
    bool use_exact = false;
    switch (method) {
        case UTestMethod::automatic:
            use_exact = total <= k_exact_limit;
            break;
        case UTestMethod::exact:
            use_exact = ties ? total <= k_exact_ties_limit : a.size() * b.size() <= k_exact_max_pairs;
            break;
        case UTestMethod::normal:
            break;
    }
    result.exact = use_exact;
    if (use_exact && ties) {
        // Ties: the permutation distribution of the mid-rank sums, which no normal approximation
        // can undercut; its smallest p is what these values allow (above the tie-free bound).
        const PermutationP exact = permutation_p(ranking.doubled_ranks, a.size(), ranking.doubled_rank_sum_a);
        result.p_value = exact.p;
        result.min_possible_p = std::max(result.min_possible_p, exact.min_p);
        result.too_few = result.too_few || result.min_possible_p > alpha;
    } else if (use_exact) {
        result.p_value = mann_whitney_exact_p(ranking.u, a.size(), b.size());
    } else {
        // The approximation may not claim more than the sizes allow: never below 2 / C(N, n_a).
        result.p_value =
            std::max(normal_p(ranking.u, a.size(), b.size(), ranking.tie_term), result.min_possible_p);
    }
    return result;
}

}  // namespace ncclsweep::stats
