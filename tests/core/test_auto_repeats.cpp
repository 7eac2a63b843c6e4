// `repeats: auto`: the picking function (core/stats power model), the decision from a previous
// sweep's samples, the spec's forms and its located errors, --set repeats=auto, and the plan line.
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/plan/auto_repeats.hpp"
#include "core/plan/plan.hpp"
#include "core/plan/planner.hpp"
#include "core/spec/spec_parser.hpp"
#include "core/stats/stats.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;

namespace {

const char* k_minimal = "sweep: s\nworkload: {engine: tpverify, args: {backend: sim}}\n";

/// The error of parsing + validating `text` ("" when accepted).
std::string error_of(const std::string& text) {
    auto spec = parse_spec(text, "spec.yaml");
    if (!spec) return spec.error().message;
    auto ok = validate_spec(*spec);
    return ok ? std::string() : ok.error().message;
}

std::vector<Experiment> experiments(int count) {
    std::vector<Experiment> out;
    for (int i = 1; i <= count; ++i) {
        Experiment e;
        e.id = i;
        e.key = "k" + std::to_string(i);
        out.push_back(e);
    }
    return out;
}

/// Five samples around 100 whose small-sample corrected relative noise (1.4826 x MAD / median x
/// 1.206, Croux & Rousseeuw's factor at n = 5) is `noise`.
std::vector<double> noisy(double noise) {
    const double mad = noise * 100 / 1.4826 / 1.206;
    return {100 - 2 * mad, 100 - mad, 100, 100 + mad, 100 + 2 * mad};
}

}  // namespace

TEST_CASE("repeats_for_gate: the fewest repeats that catch 5% in 90% of nights, with Holm",
          "[auto_repeats]") {
    // 3% noise per run, 9 comparisons at alpha 0.01: (z(1 - 0.01/18) + z(0.9)) x 0.03 x sqrt(2/n) x
    // sqrt(pi/3) <= 0.05 first holds at n = 16 (docs/statistics.md "repeats: auto").
    auto pick = stats::repeats_for_gate(0.03, 9, 0.01, 50);
    CHECK(pick.needed == 16);
    CHECK(pick.repeats == 16);
    CHECK_FALSE(pick.capped);
    CHECK(stats::detectable_shift(16, 16, 0.03, 0.01 / 9, 0.9) <= 0.05);
    CHECK(stats::detectable_shift(15, 15, 0.03, 0.01 / 9, 0.9) > 0.05);
    // A larger alpha or fewer comparisons need fewer; more noise needs more.
    CHECK(stats::repeats_for_gate(0.03, 9, 0.05, 50).repeats == 13);
    CHECK(stats::repeats_for_gate(0.03, 1, 0.01, 50).repeats < 16);
    CHECK(stats::repeats_for_gate(0.05, 9, 0.01, 50).repeats == 44);
    // Low noise: Holm's first step decides (2 / C(2n, n) <= 0.01 / 9 first at n = 7).
    CHECK(stats::repeats_for_gate(0.001, 9, 0.01, 50).repeats == 7);
    // Beyond the cap: the cap, said.
    auto capped = stats::repeats_for_gate(0.05, 9, 0.01, 30);
    CHECK(capped.repeats == 30);
    CHECK(capped.needed == 44);
    CHECK(capped.capped);
    auto unknown = stats::repeats_for_gate(std::numeric_limits<double>::quiet_NaN(), 9, 0.01, 30);
    CHECK(unknown.repeats == 30);
    CHECK(unknown.capped);
}

TEST_CASE("MAD small-sample factor: Croux & Rousseeuw's b_n", "[auto_repeats]") {
    CHECK(std::isnan(stats::mad_small_sample_factor(1)));
    CHECK(stats::mad_small_sample_factor(2) == 1.196);
    CHECK(stats::mad_small_sample_factor(3) == 1.495);
    CHECK(stats::mad_small_sample_factor(5) == 1.206);
    CHECK(stats::mad_small_sample_factor(9) == 1.107);
    CHECK(stats::mad_small_sample_factor(10) == Approx(10 / 9.2));
    CHECK(stats::mad_small_sample_factor(50) == Approx(50 / 49.2));
    // 1.4826 x MAD / median = 3% at n = 5 reads as 3.6%.
    const double mad = 3 / 1.4826;
    const std::vector<double> five = {100 - 2 * mad, 100 - mad, 100, 100 + mad, 100 + 2 * mad};
    CHECK(stats::relative_noise(five) == Approx(0.03));
    CHECK(stats::relative_noise_corrected(five) == Approx(0.03 * 1.206));
}

TEST_CASE("decide_auto_repeats: the previous sweep's noisiest experiment, else the default",
          "[auto_repeats]") {
    AutoRepeatsSpec spec;
    spec.alpha = 0.01;
    const auto plan = experiments(9);

    auto none = decide_auto_repeats(spec, plan, std::nullopt, "tok_s", "the tag 'nightly'");
    CHECK(none.repeats == 12);
    CHECK(none.from_sweep == 0);
    CHECK(none.line ==
          "repeats: auto -> 12 (the default: no earlier sweep with the tag 'nightly' has tok_s samples of "
          "this plan's experiments to measure the noise on; the next run will)");

    NoiseHistory history;
    history.sweep_id = 41;
    history.samples["k1"] = noisy(0.01);
    history.samples["k2"] = noisy(0.02);
    history.samples["k3"] = noisy(0.03);
    history.samples["k4"] = {100};                     // one sample: no noise to read
    history.samples["not-in-this-plan"] = noisy(0.5);  // another point: not counted
    auto learned = decide_auto_repeats(spec, plan, history, "tok_s", "the tag 'nightly'");
    CHECK(learned.noise == Approx(0.03));
    CHECK(learned.experiments == 3);
    CHECK(learned.from_sweep == 41);
    CHECK(learned.repeats == 16);
    CHECK_FALSE(learned.capped);
    CHECK(learned.line ==
          "repeats: auto -> 16 (noise 3% per run in tok_s (the largest over 3 experiments, small-sample "
          "corrected) from sweep 41; to catch a 5% slowdown of one experiment in 90% of nights with Holm "
          "over 9 comparisons at alpha 0.01)");

    // A history of other points only is no history.
    NoiseHistory other;
    other.sweep_id = 7;
    other.samples["elsewhere"] = noisy(0.03);
    CHECK(decide_auto_repeats(spec, plan, other, "tok_s", "x").repeats == 12);

    // More than the cap: the cap, and the line says what the gate then sees.
    spec.max = 20;
    history.samples["k1"] = noisy(0.05);
    auto capped = decide_auto_repeats(spec, plan, history, "tok_s", "the tag 'nightly'");
    CHECK(capped.repeats == 20);
    CHECK(capped.capped);
    CHECK(capped.line.find("repeats: auto -> 20, its max (noise 5% per run") == 0);
    CHECK(
        capped.line.find("would need 44): the gate then catches only a slowdown of 7.3% in 90% of nights") !=
        std::string::npos);
}

TEST_CASE(
    "decide_auto_repeats: one noisy experiment among quiet ones decides, uncorrected MAD does "
    "not",
    "[auto_repeats]") {
    // The gate must catch a slowdown of whichever experiment slows, so the noisiest one sets the
    // repeats: eight quiet experiments (1%) do not outvote one at 3% (the median would pick 7,
    // which caught a 5% slowdown in 62% of nights in docs/ci.md's measurement).
    AutoRepeatsSpec spec;
    spec.alpha = 0.01;
    const auto plan = experiments(9);
    NoiseHistory history;
    history.sweep_id = 3;
    for (int i = 1; i <= 8; ++i) history.samples["k" + std::to_string(i)] = noisy(0.01);
    history.samples["k9"] = noisy(0.03);
    auto picked = decide_auto_repeats(spec, plan, history, "tok_s", "x");
    CHECK(picked.noise == Approx(0.03));
    CHECK(picked.repeats == 16);
    CHECK(stats::repeats_for_gate(0.01, 9, 0.01, 50).repeats == 7);  // what the median (1%) asks

    // Five samples whose raw 1.4826 x MAD / median is 3% are read as 3.6% (x 1.206), which
    // needs more repeats than 3% does.
    const double mad = 3 / 1.4826;
    history.samples["k9"] = {100 - 2 * mad, 100 - mad, 100, 100 + mad, 100 + 2 * mad};
    auto corrected = decide_auto_repeats(spec, plan, history, "tok_s", "x");
    CHECK(corrected.noise == Approx(0.03 * 1.206));
    CHECK(corrected.repeats == stats::repeats_for_gate(0.03 * 1.206, 9, 0.01, 50).repeats);
    CHECK(corrected.repeats > 16);
}

TEST_CASE("spec: repeats: auto and its options, invalid values as located errors", "[auto_repeats]") {
    const std::string m = k_minimal;
    auto plain = parse_spec(m + "repeats: auto\n", "spec.yaml");
    REQUIRE(plain.ok());
    REQUIRE(plain->auto_repeats.has_value());
    CHECK(plain->auto_repeats->alpha == 0.05);
    CHECK(plain->auto_repeats->max == 50);
    CHECK(plain->repeats == 12);  // the default until run decides
    auto tuned = parse_spec(m + "repeats: {auto: {alpha: 0.01, max: 40, default: 10}}\n", "spec.yaml");
    REQUIRE(tuned.ok());
    CHECK(tuned->auto_repeats->alpha == 0.01);
    CHECK(tuned->auto_repeats->max == 40);
    CHECK(tuned->repeats == 10);
    CHECK_FALSE(parse_spec(m + "repeats: 5\n", "spec.yaml")->auto_repeats.has_value());

    CHECK(
        error_of(m + "repeats: automatic\n") ==
        "spec.yaml:3:10: repeats must be a whole number from 1 to 1000 or `auto` (the repeats a nightly gate "
        "needs, from the previous sweep's noise), not 'automatic'");
    CHECK(error_of(m + "repeats: {auto: {alpa: 0.01}}\n") ==
          "spec.yaml:3:18: unknown key 'alpa' in repeats.auto; did you mean 'alpha'?");
    CHECK(error_of(m + "repeats: {auto: {alpha: 5%}}\n") ==
          "spec.yaml:3:25: repeats.auto.alpha must be a number in (0, 0.5) such as 0.01, the `--alpha` the "
          "gate's diff runs with, not '5%'");
    CHECK(error_of(m + "repeats: {auto: {max: 1}}\n") ==
          "spec.yaml:3:23: repeats.auto.max must be a whole number from 2 to 1000, not '1'");
    CHECK(error_of(m + "repeats: {auto: {max: 8}}\n") ==
          "spec.yaml:3:10: repeats.auto: default (12) is above max (8); the repeats without history cannot "
          "exceed the cap");
    CHECK(error_of(m + "repeats: {automatic: {}}\n") ==
          "spec.yaml:3:11: unknown key 'automatic' in repeats; the keys allowed here are: auto");
    CHECK(error_of(m + "repeats: auto\nsearch: {race: {max_repeats: 8}}\n") ==
          "spec.yaml:3:10: repeats: auto cannot be combined with search.race (the race decides each point's "
          "repeats, up to race.max_repeats); give repeats a number, or drop the race");
}

TEST_CASE("overrides: --set repeats=auto turns auto on, --set repeats=N off", "[auto_repeats]") {
    auto spec = parse_spec(std::string(k_minimal) + "repeats: 3\n", "spec.yaml");
    REQUIRE(spec.ok());
    auto automatic = parse_override(OverrideKind::set, "repeats=auto");
    REQUIRE(automatic.ok());
    REQUIRE(apply_overrides(*spec, {*automatic}).ok());
    REQUIRE(spec->auto_repeats.has_value());
    CHECK(spec->repeats == 12);
    auto fixed = parse_override(OverrideKind::set, "repeats=5");
    REQUIRE(apply_overrides(*spec, {*fixed}).ok());
    CHECK_FALSE(spec->auto_repeats.has_value());
    CHECK(spec->repeats == 5);
}

TEST_CASE("plan says repeats: auto is decided at run time, and what it would pick", "[auto_repeats]") {
    AutoRepeatsSpec spec;
    spec.alpha = 0.01;
    CHECK(
        auto_repeats_plan_line(spec, 9) ==
        "repeats: auto, decided by `run` from the noise of the previous sweep of this spec (same --tag, else "
        "same sweep name) to catch a 5% slowdown of one experiment in 90% of nights with Holm over 9 "
        "comparisons at alpha 0.01; 12 without one, at most 50. At a noise per run of 1% -> 7, 2% -> 7, 3% "
        "-> "
        "16, 5% -> 44");
}
