#include <cmath>
#include <vector>

#include "engine/stats.hpp"
#include "tests/support/catch.hpp"

using namespace tpverify;

TEST_CASE("stats: percentiles interpolate between order statistics") {
    const std::vector<double> v = {5, 1, 4, 2, 3};  // sorted 1..5
    CHECK(percentile(v, 0.5) == Approx(3));
    CHECK(percentile(v, 0.1) == Approx(1.4));  // rank 0.4
    CHECK(percentile(v, 0.9) == Approx(4.6));  // rank 3.6
    CHECK(percentile(v, 0) == Approx(1));
    CHECK(percentile(v, 1) == Approx(5));
    CHECK(percentile({}, 0.5) == 0);
    CHECK(percentile({7}, 0.9) == 7);
}

TEST_CASE("stats: relative spread of the median by hand") {
    // n = 16: half = 0.98*4 = 3.92; ranks floor(8-3.92)=4 and ceil(8+3.92)=12 (1-based).
    std::vector<double> v;
    for (int i = 1; i <= 16; ++i) v.push_back(i * 10.0);
    // values[3] = 40, values[11] = 120, median = 85 -> (120-40)/2/85
    CHECK(median_relative_spread(v) == Approx(40.0 / 85.0));
    CHECK(std::isinf(median_relative_spread({1, 2})));
    CHECK(median_relative_spread({5, 5, 5, 5}) == 0);
}

TEST_CASE("stats: summarize") {
    const PassStats s = summarize({10, 20, 30, 40, 50});
    CHECK(s.samples == 5);
    CHECK(s.p50_us == Approx(30));
    CHECK(s.p10_us == Approx(14));
    CHECK(s.p90_us == Approx(46));
    CHECK(s.mean_us == Approx(30));
    CHECK(s.rsd > 0);
}

TEST_CASE("stats: stop rule with --iters and with --target-rsd") {
    Options o;
    o.iters = 3;
    StopRule fixed(o);
    CHECK_FALSE(fixed.done({1, 1}, 0));
    CHECK(fixed.done({1, 1, 1}, 0));

    o.target_rsd = 0.01;
    o.max_seconds = 5;
    StopRule target(o);
    std::vector<double> steady(9, 100.0);
    CHECK_FALSE(target.done(steady, 0));  // below the minimum sample count
    steady.push_back(100.0);
    CHECK(target.done(steady, 0));
    CHECK_FALSE(target.hit_time_cap());

    StopRule noisy(o);
    std::vector<double> wild;
    for (int i = 0; i < 20; ++i) wild.push_back(i % 2 ? 100.0 : 300.0);
    CHECK_FALSE(noisy.done(wild, 1.0));
    CHECK(noisy.done(wild, 5.0));
    CHECK(noisy.hit_time_cap());
}
