// Statistics checked against independently produced values: published tables (Mann–Whitney
// critical values; order-statistic intervals for the median) and SciPy 1.10.1 / NumPy (Debian 12
// python3-scipy), never against this code's own output. Reference commands are quoted per case;
// "mwu(a, b, m)" means
//   /usr/bin/python3 -c 'from scipy import stats; print(stats.mannwhitneyu(a, b,
//       alternative="two-sided", method=m))'
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/stats/stats.hpp"
#include "tests/support/catch.hpp"

namespace st = ncclsweep::stats;
using Samples = std::vector<double>;

TEST_CASE("descriptive statistics match numpy", "[stats]") {
    // numpy.quantile(x, q) (default method "linear" = type 7), numpy.median, numpy.std(ddof=1).
    const Samples x{3, 1, 4, 1, 5, 9, 2, 6};
    CHECK(st::quantile(x, 0.0) == Approx(1.0));
    CHECK(st::quantile(x, 0.1) == Approx(1.0));
    CHECK(st::quantile(x, 0.25) == Approx(1.75));
    CHECK(st::quantile(x, 0.5) == Approx(3.5));
    CHECK(st::quantile(x, 0.9) == Approx(6.9));
    CHECK(st::quantile(x, 1.0) == Approx(9.0));
    CHECK(st::median(x) == Approx(3.5));
    CHECK(st::mean(x) == Approx(3.875));
    CHECK(st::stddev(x) == Approx(2.748376143938713));
    CHECK(st::median(Samples{7, 3, 5}) == Approx(5.0));
    // scipy.stats.gmean([1.1, 0.9, 1.25, 0.8]) = 0.9974905699336812
    CHECK(st::geometric_mean(Samples{1.1, 0.9, 1.25, 0.8}) == Approx(0.9974905699336812));
    // Spread by hand: median 3.5, max 9 -> (9 - 3.5) / 3.5.
    CHECK(st::relative_spread(x) == Approx(5.5 / 3.5));
    CHECK(st::relative_spread(Samples{100, 98, 103}) == Approx(0.03));
}

TEST_CASE("descriptive statistics reject empty and invalid input with NaN", "[stats]") {
    const Samples empty;
    CHECK(std::isnan(st::median(empty)));
    CHECK(std::isnan(st::mean(empty)));
    CHECK(std::isnan(st::stddev(Samples{1.0})));
    CHECK(std::isnan(st::quantile(Samples{1, 2}, 1.5)));
    CHECK(std::isnan(st::median(Samples{1, std::nan(""), 3})));
    CHECK(std::isnan(st::geometric_mean(Samples{1.0, 0.0})));
    CHECK(std::isnan(st::geometric_mean(Samples{1.0, -2.0})));
    CHECK(std::isnan(st::relative_spread(Samples{-1, 0, 1})));
    const auto summary = st::summarize(empty);
    CHECK(summary.n == 0);
    CHECK(std::isnan(summary.median));
    CHECK_FALSE(summary.ci.has_value());
}

TEST_CASE("median interval follows the binomial order-statistic table", "[stats]") {
    // Table "Confidence Intervals for the Population Median" (order statistics, coverage):
    // n=6 [x(1),x(6)] 96.9%; n=9 [x(2),x(8)] 96.1%; n=10 [x(2),x(9)] 97.9%; n=17 [x(5),x(13)]
    // 95.1%; n=20 [x(6),x(15)] 95.9%; n=5 [x(1),x(5)] only 93.8%. Exact coverages from
    // 1 - 2*scipy.stats.binom.cdf(k-1, n, 0.5).
    struct Row {
        std::size_t n, lower, upper;
        double coverage;
    };
    const Row rows[] = {{6, 1, 6, 0.96875},
                        {9, 2, 8, 0.9609375},
                        {10, 2, 9, 0.978515625},
                        {17, 5, 13, 0.950958251953125},
                        {20, 6, 15, 0.9586105346679688}};
    for (const Row& row : rows) {
        Samples xs;
        for (std::size_t i = row.n; i >= 1; --i) xs.push_back(10.0 * static_cast<double>(i));  // x(i) = 10 i
        const auto ci = st::median_confidence_interval(xs);
        INFO("n = " << row.n);
        REQUIRE(ci.has_value());
        CHECK(ci->lower_rank == row.lower);
        CHECK(ci->upper_rank == row.upper);
        CHECK(ci->low == Approx(10.0 * static_cast<double>(row.lower)));
        CHECK(ci->high == Approx(10.0 * static_cast<double>(row.upper)));
        CHECK(ci->coverage == Approx(row.coverage));
    }
    for (std::size_t n = 0; n <= 5; ++n)
        CHECK_FALSE(st::median_confidence_interval(Samples(n, 1.0)).has_value());
    CHECK(st::min_samples_for_interval() == 6);
    // A 90% interval exists already at n = 5 ([min, max], 93.75%).
    CHECK(st::median_confidence_interval(Samples{1, 2, 3, 4, 5}, 0.90)->coverage == Approx(0.9375));
    CHECK(st::summarize(Samples{5, 1, 4, 2, 3, 6}).ci->low == Approx(1.0));
}

TEST_CASE("exact U test matches published critical values", "[stats][utest]") {
    // Critical values of U, two-tailed alpha 0.05 (e.g. the classic table reproduced at
    // york.ac.uk / numeracy-bank.net): n1=n2=4: 0; 5,5: 2; 6,11: 13; 8,13: 24; 10,10: 23;
    // 20,20: 127. U <= critical is significant, critical + 1 is not.
    struct Row {
        std::size_t n1, n2;
        double critical;
    };
    for (const Row row :
         {Row{4, 4, 0}, Row{5, 5, 2}, Row{6, 11, 13}, Row{8, 13, 24}, Row{10, 10, 23}, Row{20, 20, 127}}) {
        INFO(row.n1 << "," << row.n2);
        CHECK(st::mann_whitney_exact_p(row.critical, row.n1, row.n2) <= 0.05);
        CHECK(st::mann_whitney_exact_p(row.critical + 1, row.n1, row.n2) > 0.05);
    }
    // Exact values: 2 * scipy.stats._mannwhitneyu._mwu_state.cdf(u, n1, n2).
    CHECK(st::mann_whitney_exact_p(2, 5, 5) == Approx(0.031746031746031744));  // 8/252
    CHECK(st::mann_whitney_exact_p(3, 5, 5) == Approx(0.05555555555555555));
    CHECK(st::mann_whitney_exact_p(23, 10, 10) == Approx(0.04325705254497823));
    CHECK(st::mann_whitney_exact_p(127, 20, 20) == Approx(0.04909032518937244));
    CHECK(st::mann_whitney_exact_p(128, 20, 20) == Approx(0.05239952187284972));
    CHECK(st::mann_whitney_exact_p(23, 5, 5) == Approx(0.031746031746031744));  // 25 - 23 = 2
    CHECK(st::mann_whitney_exact_p(12.5, 5, 5) == Approx(1.0));
}

TEST_CASE("U test on small samples matches scipy exact", "[stats][utest]") {
    // mwu([1,2,3,4,7], [5,6,8,9,10], "exact") -> U=2.0, p=0.031746031746031744
    auto r = st::mann_whitney_u(Samples{1, 2, 3, 4, 7}, Samples{5, 6, 8, 9, 10});
    CHECK(r.u == Approx(2.0));
    CHECK(r.exact);
    CHECK_FALSE(r.too_few);
    CHECK(r.p_value == Approx(0.031746031746031744));
    // n1 != n2: mwu([10.5,11.2,9.8,12.1,10.9,11.7], [9.1,9.9,10.2,8.7,9.5,10.0,9.3,10.8,9.0], "exact")
    // -> U=49.0, p=0.007592407592407592
    r = st::mann_whitney_u(Samples{10.5, 11.2, 9.8, 12.1, 10.9, 11.7},
                           Samples{9.1, 9.9, 10.2, 8.7, 9.5, 10.0, 9.3, 10.8, 9.0});
    CHECK(r.u == Approx(49.0));
    CHECK(r.exact);
    CHECK(r.p_value == Approx(0.007592407592407592));
    // All greater, 4 vs 4: the minimum p. mwu([5,6,7,8], [1,2,3,4], "exact") -> U=16, p=0.02857142857142857
    r = st::mann_whitney_u(Samples{5, 6, 7, 8}, Samples{1, 2, 3, 4});
    CHECK(r.u == Approx(16.0));
    CHECK(r.p_value == Approx(0.02857142857142857));
    CHECK(r.min_possible_p == Approx(2.0 / 70.0));
    CHECK_FALSE(r.too_few);
}

TEST_CASE("U test with ties: exact permutation p up to 50 values, normal like scipy beyond",
          "[stats][utest]") {
    // Reference values by brute force: every choice of n_a of the pooled mid-ranks, counted
    // (python: itertools.combinations over the ranks; p = share with |sum - E| >= observed).
    const auto r = st::mann_whitney_u(Samples{1, 2, 2, 3, 4}, Samples{2, 3, 3, 5, 6, 7});
    CHECK(r.u == Approx(6.0));
    CHECK(r.exact);
    CHECK(r.p_value == Approx(57.0 / 462.0));        // 57 of the C(11, 5) = 462 choices
    CHECK(r.min_possible_p == Approx(6.0 / 462.0));  // the tied values allow no fewer than 6
    // Forced normal: scipy's mwu(..., method="asymptotic") -> p=0.11390314458853068.
    const auto normal =
        st::mann_whitney_u(Samples{1, 2, 2, 3, 4}, Samples{2, 3, 3, 5, 6, 7}, 0.05, st::UTestMethod::normal);
    CHECK_FALSE(normal.exact);
    CHECK(normal.p_value == Approx(0.11390314458853068));
    // Identical samples: every value tied, U = n1 n2 / 2, p = 1.
    const Samples same{3.5, 3.5, 3.5, 3.5, 3.5};
    const auto s = st::mann_whitney_u(same, same);
    CHECK(s.u == Approx(12.5));
    CHECK(s.p_value == Approx(1.0));
    const Samples spread{1, 2, 3, 4, 5};
    CHECK(st::mann_whitney_u(spread, spread).p_value == Approx(1.0));
}

TEST_CASE("U test with ties never claims a p below what the sample sizes allow", "[stats][utest]") {
    // 4 + 4, every value of a above every value of b, tied in pairs: the normal approximation
    // says p = 0.0265, below 2/C(8,4) = 0.0286, the smallest p any 4 + 4 outcome can have.
    const Samples a{3, 3, 4, 4}, b{1, 1, 2, 2};
    const auto r = st::mann_whitney_u(a, b);
    CHECK(r.exact);
    CHECK(r.p_value == Approx(2.0 / 70.0));
    CHECK(r.p_value >= r.min_possible_p);
    // Even a forced normal approximation (0.026518721959430752 here) is floored at 2/C(8,4).
    CHECK(st::mann_whitney_u(a, b, 0.05, st::UTestMethod::normal).p_value == Approx(2.0 / 70.0));
    // 3 + 3 with a tie across the groups: the exact p is 0.3 (and can be no less); the normal
    // approximation would say 0.164 and the tie-free bound 0.1.
    const auto t = st::mann_whitney_u(Samples{5, 5, 6}, Samples{1, 2, 5});
    CHECK(t.p_value == Approx(0.3));
    CHECK(t.min_possible_p == Approx(0.3));
    CHECK(t.too_few);
    // 4 + 4 whose tie across the groups makes alpha 0.05 unreachable: too few, said plainly.
    const auto u = st::mann_whitney_u(Samples{10, 10, 11, 12}, Samples{1, 2, 3, 10});
    CHECK(u.p_value == Approx(0.08571428571428572));
    CHECK(u.min_possible_p == Approx(0.08571428571428572));
    CHECK(u.too_few);
    // Beyond 50 values the approximation is floored at 2 / C(N, n_a) as well.
    Samples big_a, big_b;
    for (int i = 0; i < 30; ++i) {
        big_a.push_back(100 + i / 2);  // pairs of ties
        big_b.push_back(1 + i / 2);
    }
    const auto v = st::mann_whitney_u(big_a, big_b);
    CHECK_FALSE(v.exact);
    CHECK(v.p_value >= v.min_possible_p);
    CHECK(v.p_value < 1e-9);
}

TEST_CASE("U test on large samples uses the normal approximation like scipy", "[stats][utest]") {
    // a = [100 + ((i*37) % 29) * 0.5 for i in range(30)], b = [101 + ((i*53) % 41) * 0.5 for i in
    // range(40)] (with ties); mwu(a, b, "asymptotic") -> U=364.5, p=0.005276988928715385
    Samples a, b;
    for (int i = 0; i < 30; ++i) a.push_back(100 + ((i * 37) % 29) * 0.5);
    for (int i = 0; i < 40; ++i) b.push_back(101 + ((i * 53) % 41) * 0.5);
    const auto r = st::mann_whitney_u(a, b);
    CHECK(r.u == Approx(364.5));
    CHECK_FALSE(r.exact);
    CHECK(r.p_value == Approx(0.005276988928715385));
    // No ties, 30 vs 30 > k_exact_limit: a = [i + 0.1], b = [i + 5.37], i < 30.
    // mwu(a, b, "asymptotic") -> p=0.027086318388295935; mwu(a, b, "exact") -> p=0.02633196030257938
    Samples c, d;
    for (int i = 0; i < 30; ++i) {
        c.push_back(i + 0.1);
        d.push_back(i + 5.37);
    }
    const auto automatic = st::mann_whitney_u(c, d);
    CHECK_FALSE(automatic.exact);
    CHECK(automatic.u == Approx(300.0));
    CHECK(automatic.p_value == Approx(0.027086318388295935));
    const auto forced = st::mann_whitney_u(c, d, 0.05, st::UTestMethod::exact);
    CHECK(forced.exact);
    CHECK(forced.p_value == Approx(0.02633196030257938));
}

TEST_CASE("exact and normal U tests agree for moderate samples", "[stats][utest]") {
    // a = odd 1..39, b = even 2..40 + 0.25; mwu exact p=0.799407187161697, asymptotic p=0.7971974192691748
    Samples a, b;
    for (int x = 1; x < 41; x += 2) a.push_back(x);
    for (int x = 2; x < 42; x += 2) b.push_back(x + 0.25);
    const auto exact = st::mann_whitney_u(a, b);
    const auto normal = st::mann_whitney_u(a, b, 0.05, st::UTestMethod::normal);
    CHECK(exact.exact);
    CHECK(exact.u == Approx(190.0));
    CHECK(exact.p_value == Approx(0.799407187161697));
    CHECK_FALSE(normal.exact);
    CHECK(normal.p_value == Approx(0.7971974192691748));
    CHECK(std::fabs(exact.p_value - normal.p_value) < 0.005);
}

TEST_CASE("U test says too few samples below 4 per side", "[stats][utest]") {
    // mwu([4,5,6], [1,2,3], "exact") -> U=9, p=0.1: the smallest possible p at 3+3 (2/C(6,3)).
    const auto r = st::mann_whitney_u(Samples{4, 5, 6}, Samples{1, 2, 3});
    CHECK(r.u == Approx(9.0));
    CHECK(r.p_value == Approx(0.1));
    CHECK(r.too_few);
    CHECK(r.min_possible_p == Approx(0.1));
    CHECK(r.needed_per_side == 4);
    // 3 vs 5 could reach p = 2/56 (mwu([6,7,8], [1,2,3,4,5], "exact") -> p=0.03571428571428571) but
    // n < 4 on one side is still "too few".
    const auto s = st::mann_whitney_u(Samples{6, 7, 8}, Samples{1, 2, 3, 4, 5});
    CHECK(s.p_value == Approx(0.03571428571428571));
    CHECK(s.too_few);
    // At alpha 0.01, 4+4 (min p 0.0286) is too few too; 5+5 (2/252) is enough.
    const auto t = st::mann_whitney_u(Samples{5, 6, 7, 8}, Samples{1, 2, 3, 4}, 0.01);
    CHECK(t.too_few);
    CHECK(t.needed_per_side == 5);
    const auto empty = st::mann_whitney_u(Samples{}, Samples{1, 2, 3, 4});
    CHECK(empty.too_few);
    CHECK(std::isnan(empty.p_value));
}

namespace {
// Five tok/s samples around `center` with a 1% spread (deterministic).
Samples around(double center) {
    return {center * 0.995, center * 1.0, center * 1.005, center * 0.998, center * 1.003};
}
}  // namespace

TEST_CASE("compare calls a significant, large change by direction", "[stats][compare]") {
    const st::CompareOptions options{0.05, 0.03, st::Direction::higher_is_better};
    // Every new sample above every base sample: exact p = 2/C(10,5) = 2/252; delta +10%.
    auto c = st::compare(around(100), around(110), options);
    REQUIRE(c.ok());
    CHECK(c->verdict == st::Verdict::improvement);
    CHECK(c->base.median == Approx(100.0));
    CHECK(c->candidate.median == Approx(110.0));
    CHECK(c->delta == Approx(0.10));
    CHECK(c->p_value == Approx(2.0 / 252.0));
    CHECK(st::verdict_name(c->verdict) == "improvement");

    c = st::compare(around(110), around(100), options);
    REQUIRE(c.ok());
    CHECK(c->verdict == st::Verdict::regression);
    CHECK(c->delta == Approx(-10.0 / 110.0));

    // Latency: lower is better, so going down is the improvement.
    c = st::compare(around(110), around(100), {0.05, 0.03, st::Direction::lower_is_better});
    REQUIRE(c.ok());
    CHECK(c->verdict == st::Verdict::improvement);
}

TEST_CASE("compare says ~ when not significant or below the threshold", "[stats][compare]") {
    // Same distribution: p = 1 (identical samples).
    auto c = st::compare(around(100), around(100), {0.05, 0.03});
    REQUIRE(c.ok());
    CHECK(c->verdict == st::Verdict::no_change);
    CHECK(c->reason.find("not significant") != std::string::npos);
    // Significant (all greater) but only +2%: below a 3% threshold.
    c = st::compare(around(100), around(102), {0.05, 0.03});
    REQUIRE(c.ok());
    CHECK(c->p_value == Approx(2.0 / 252.0));
    CHECK(c->verdict == st::Verdict::no_change);
    CHECK(c->reason.find("threshold 3%") != std::string::npos);
    // Large delta but interleaved samples: not significant.
    c = st::compare(Samples{90, 100, 110, 120, 130}, Samples{95, 105, 115, 125, 200}, {0.05, 0.03});
    REQUIRE(c.ok());
    CHECK(c->verdict == st::Verdict::no_change);
}

TEST_CASE("compare reports too few samples plainly", "[stats][compare]") {
    auto c = st::compare(Samples{100, 101, 102}, Samples{120, 121, 122});
    REQUIRE(c.ok());
    CHECK(c->verdict == st::Verdict::insufficient_samples);
    CHECK(c->reason.find("too few samples (n=3+3)") != std::string::npos);
    CHECK(c->reason.find("smallest possible p is 0.1") != std::string::npos);
    CHECK(c->reason.find("need >= 4") != std::string::npos);
    c = st::compare(Samples{}, around(100));
    REQUIRE(c.ok());
    CHECK(c->verdict == st::Verdict::insufficient_samples);
    CHECK(c->reason == "no samples on the base side");
}

TEST_CASE("compare rejects bad options and non-finite samples", "[stats][compare]") {
    CHECK_FALSE(st::compare(around(1), around(2), {0.0, 0.03}).ok());
    CHECK_FALSE(st::compare(around(1), around(2), {1.0, 0.03}).ok());
    CHECK_FALSE(st::compare(around(1), around(2), {0.05, -0.1}).ok());
    const auto c = st::compare(Samples{1, 2, std::numeric_limits<double>::infinity(), 4}, around(2));
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().kind == ncclsweep::ErrorKind::bad_input);
    CHECK(c.error().message.find("base sample #3") != std::string::npos);
}

TEST_CASE("levels are printed as written, not as their binary error", "[stats]") {
    CHECK(st::format_level(1 - 0.95) == "0.05");
    CHECK(st::format_level(st::level_from_confidence(0.95)) == "0.05");
    CHECK(st::level_from_confidence(0.95) == 0.05);
    CHECK(st::level_from_confidence(0.99) == 0.01);
    CHECK(st::format_level(0.001) == "0.001");
    CHECK(st::format_level(0.03 * 100) == "3");
    // A computed alpha in a comparison's reason reads as written.
    auto c = st::compare(Samples{1, 2, 3, 4, 5}, Samples{6, 7, 8, 9, 10}, {1 - 0.95, 0.03});
    REQUIRE(c.ok());
    CHECK(c->reason.find("<= alpha 0.05)") != std::string::npos);
    CHECK(c->reason.find("0.0500000") == std::string::npos);
}

TEST_CASE("Holm's adjustment: step-down, monotone, capped at 1", "[stats][holm]") {
    // R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") -> 0.03 0.06 0.06 0.02
    const auto adjusted = st::holm_adjust(Samples{0.01, 0.04, 0.03, 0.005});
    REQUIRE(adjusted.size() == 4);
    CHECK(adjusted[0] == Approx(0.03));
    CHECK(adjusted[1] == Approx(0.06));
    CHECK(adjusted[2] == Approx(0.06));
    CHECK(adjusted[3] == Approx(0.02));
    // NaN is left out of the count and stays NaN; large products are capped at 1.
    const auto with_nan = st::holm_adjust(Samples{0.5, std::nan(""), 0.2});
    CHECK(with_nan[0] == Approx(0.5));
    CHECK(std::isnan(with_nan[1]));
    CHECK(with_nan[2] == Approx(0.4));
    CHECK(st::holm_adjust(Samples{0.9, 0.8})[0] == Approx(1.0));
    CHECK(st::holm_adjust(Samples{}).empty());
}

TEST_CASE("normal quantile and what a U test can detect", "[stats][power]") {
    CHECK(st::normal_quantile(0.975) == Approx(1.959963984540054).epsilon(1e-12));
    CHECK(st::normal_quantile(0.9) == Approx(1.2815515655446004).epsilon(1e-12));
    CHECK(st::normal_quantile(0.001) == Approx(-3.090232306167813).epsilon(1e-12));
    CHECK(std::isnan(st::normal_quantile(0)));
    CHECK(std::isnan(st::normal_quantile(1)));
    // 3 + 3 can never reach 0.05: nothing is detectable.
    CHECK(std::isinf(st::detectable_shift(3, 3, 0.02, 0.05, 0.9)));
    // 10 + 10 at 2% noise, alpha 0.05, power 0.9: (1.96 + 1.2816) x 0.02 x sqrt(0.2) x sqrt(pi/3).
    CHECK(st::detectable_shift(10, 10, 0.02, 0.05, 0.9) ==
          Approx((1.959963984540054 + 1.2815515655446004) * 0.02 * std::sqrt(0.2) * std::sqrt(M_PI / 3)));
    // More samples see less; a smaller alpha (a Holm share) sees less.
    CHECK(st::detectable_shift(20, 20, 0.02, 0.05, 0.9) < st::detectable_shift(10, 10, 0.02, 0.05, 0.9));
    CHECK(st::detectable_shift(10, 10, 0.02, 0.005, 0.9) > st::detectable_shift(10, 10, 0.02, 0.05, 0.9));
    // The fewest repeats that catch a 5% shift at 3% noise with alpha 0.05 / 9.
    const std::size_t n = st::samples_to_detect(0.05, 0.03, 0.05 / 9, 0.9);
    CHECK(n > 5);
    CHECK(st::detectable_shift(n, n, 0.03, 0.05 / 9, 0.9) <= 0.05);
    CHECK(st::detectable_shift(n - 1, n - 1, 0.03, 0.05 / 9, 0.9) > 0.05);
    CHECK(st::samples_to_detect(0.001, 0.5, 0.05, 0.9, 50) == 0);
}

TEST_CASE("relative noise is robust to one straggler", "[stats][power]") {
    CHECK(st::relative_noise(Samples{100, 101, 99, 100, 130}) < 0.02);
    CHECK(std::isnan(st::relative_noise(Samples{100})));
    CHECK(st::relative_noise(Samples{100, 100, 100}) == 0);
}
