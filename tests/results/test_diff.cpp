// results/diff: matching, per-metric verdicts through stats::compare, status changes, one-side
// points and the geometric-mean row.
#include <cmath>

#include "results/query/diff.hpp"
#include "results/store/store.hpp"
#include "tests/results/results_fixtures.hpp"
#include "tests/results/store_fixtures.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;
using results::ExperimentStatus;
using stats::Verdict;

namespace {

results::SweepTable table_of(std::int64_t id, const std::vector<results::StoredExperiment>& experiments) {
    return results::build_sweep_table(with_counts(sweep_info(id, "nightly", "nightly"), experiments),
                                      experiments);
}

std::vector<Assignment> point(const std::string& proto, const std::string& fusion = "off") {
    return {{"NCCL_PROTO", proto}, {"fusion", fusion}};
}

const results::ExperimentDiff& only(const results::SweepDiff& diff) {
    REQUIRE(diff.experiments.size() == 1);
    return diff.experiments.front();
}

results::SweepDiff must_diff(const std::vector<results::StoredExperiment>& base,
                             const std::vector<results::StoredExperiment>& candidate,
                             const results::DiffOptions& options = {}) {
    auto diff = results::diff_tables(table_of(1, base), table_of(2, candidate), options);
    INFO((diff ? std::string() : diff.error().message));
    REQUIRE(diff);
    return *diff;
}

}  // namespace

TEST_CASE("diff: identical sweeps show no change, a geomean of 1 and no regression") {
    std::vector<results::StoredExperiment> sweep{
        stored_experiment(1, point("LL"), ExperimentStatus::ok, around(800)),
        stored_experiment(2, point("Simple"), ExperimentStatus::ok, around(700)),
    };
    auto diff = must_diff(sweep, sweep);
    CHECK(diff.experiments.size() == 2);
    CHECK(diff.counts.unchanged == 2);
    CHECK_FALSE(diff.has_regression());
    REQUIRE(diff.geomeans.size() == 1);
    CHECK(diff.geomeans[0].ratio == Approx(1.0));
    CHECK(diff.geomeans[0].experiments == 2);
    CHECK(diff.experiments[0].metrics[0].comparison->p_value == Approx(1.0));
}

TEST_CASE("diff: a significant drop beyond the threshold is a regression (exact p = 2/252 for 5 vs 5)") {
    auto diff = must_diff({stored_experiment(1, point("LL"), ExperimentStatus::ok, around(800))},
                          {stored_experiment(1, point("LL"), ExperimentStatus::ok, around(720))});
    const auto& e = only(diff);
    REQUIRE(e.metrics.size() == 1);
    const auto& c = *e.metrics[0].comparison;
    CHECK(c.delta == Approx(-0.10));
    CHECK(c.p_value == Approx(2.0 / 252));
    CHECK(e.metrics[0].verdict == Verdict::regression);
    CHECK(e.verdict() == Verdict::regression);
    CHECK(diff.has_regression());
    CHECK(diff.geomeans[0].ratio == Approx(0.9));
}

TEST_CASE("diff: a significant change smaller than the threshold is '~', above it counts") {
    std::vector<results::StoredExperiment> base{
        stored_experiment(1, point("LL"), ExperimentStatus::ok, around(800))};
    std::vector<results::StoredExperiment> faster{
        stored_experiment(1, point("LL"), ExperimentStatus::ok, around(816))};
    auto small = must_diff(base, faster);  // +2%, p = 0.0079, threshold 3%
    CHECK(only(small).metrics[0].verdict == Verdict::no_change);
    CHECK(only(small).metrics[0].comparison->p_value < 0.05);
    results::DiffOptions strict;
    strict.threshold = 0.01;
    auto counted = must_diff(base, faster, strict);
    CHECK(only(counted).metrics[0].verdict == Verdict::improvement);
    CHECK(counted.counts.improvements == 1);
    CHECK(results::verdict_word(Verdict::no_change) == "~");
}

TEST_CASE("diff: lower-is-better metrics regress when they grow") {
    results::DiffOptions options;
    options.metrics = {{"verify_us_p50", stats::Direction::lower_is_better}};
    auto diff = must_diff(
        {stored_experiment(1, point("LL"), ExperimentStatus::ok, around(800), around(4000))},
        {stored_experiment(1, point("LL"), ExperimentStatus::ok, around(800), around(4400))}, options);
    CHECK(only(diff).metrics[0].verdict == Verdict::regression);
    CHECK(only(diff).metrics[0].comparison->delta == Approx(0.10));
}

TEST_CASE("diff: too few samples are said plainly, not guessed") {
    auto diff = must_diff({stored_experiment(1, point("LL"), ExperimentStatus::ok, {800, 801, 802})},
                          {stored_experiment(1, point("LL"), ExperimentStatus::ok, {600, 601, 602})});
    const auto& m = only(diff).metrics[0];
    CHECK(m.verdict == Verdict::insufficient_samples);
    CHECK(m.comparison->reason.find("too few samples") != std::string::npos);
    CHECK(diff.counts.insufficient == 1);
    CHECK_FALSE(diff.has_regression());
    CHECK(results::verdict_word(Verdict::insufficient_samples) == "too few samples");
}

TEST_CASE("diff: status changes count: ok -> failed regresses, failed -> ok improves") {
    std::vector<results::StoredExperiment> base{
        stored_experiment(1, point("LL"), ExperimentStatus::ok, around(800)),
        failed_experiment(2, point("Simple"), "graph_capture"),
        failed_experiment(3, point("LL128"), "nccl"),
        stored_experiment(4, point("LL", "on"), ExperimentStatus::ok, around(800)),
        stored_experiment(5, point("Simple", "on"), ExperimentStatus::ok, around(800)),
    };
    std::vector<results::StoredExperiment> candidate{
        failed_experiment(1, point("LL"), "oom"),
        stored_experiment(2, point("Simple"), ExperimentStatus::ok, around(700)),
        failed_experiment(3, point("LL128"), "nccl"),
        stored_experiment(4, point("LL", "on"), ExperimentStatus::infra_error, {}),
        failed_experiment(5, point("Simple", "on"), "hang", ExperimentStatus::timed_out),
    };
    auto diff = must_diff(base, candidate);
    REQUIRE(diff.experiments.size() == 5);
    const auto& broke = diff.experiments[0];
    CHECK(broke.status_verdict == Verdict::regression);
    CHECK(broke.status_note == "ok -> failed (oom)");
    CHECK(broke.new_failure_class == "oom");
    CHECK(broke.new_diagnosis == "oom: the process reported an error");
    CHECK(broke.metrics.empty());
    CHECK(diff.experiments[1].status_verdict == Verdict::improvement);
    CHECK(diff.experiments[2].verdict() == Verdict::no_change);
    CHECK(diff.experiments[2].status_note == "still failed (nccl)");
    CHECK(diff.experiments[3].verdict() == Verdict::insufficient_samples);
    CHECK(diff.experiments[3].status_note.find("not measured") != std::string::npos);
    CHECK(diff.experiments[4].verdict() == Verdict::regression);
    CHECK(diff.experiments[4].status_note == "ok -> timed_out (hang)");
    CHECK(diff.counts.regressions == 2);
    CHECK(diff.counts.improvements == 1);
    CHECK(diff.geomeans[0].experiments == 0);
    CHECK(std::isnan(diff.geomeans[0].ratio));
}

TEST_CASE("diff: points on one side only are listed, not compared, ids may differ between sweeps") {
    std::vector<results::StoredExperiment> base{
        stored_experiment(1, point("LL"), ExperimentStatus::ok, around(800)),
        stored_experiment(2, point("Simple"), ExperimentStatus::ok, around(700)),
    };
    std::vector<results::StoredExperiment> candidate{
        stored_experiment(1, point("LL128"), ExperimentStatus::ok, around(900)),
        stored_experiment(2, point("LL"), ExperimentStatus::ok, around(800)),
    };
    auto diff = must_diff(base, candidate);
    const auto& e = only(diff);
    CHECK(e.base_id == 1);
    CHECK(e.new_id == 2);
    REQUIRE(diff.only_in_base.size() == 1);
    CHECK(diff.only_in_base[0].canonical == "NCCL_PROTO=Simple;fusion=off");
    REQUIRE(diff.only_in_new.size() == 1);
    CHECK(diff.only_in_new[0].exp_id == 1);
}

TEST_CASE("diff: the geometric mean summarizes new/base medians over experiments ok on both sides") {
    auto diff = must_diff({stored_experiment(1, point("LL"), ExperimentStatus::ok, around(100)),
                           stored_experiment(2, point("Simple"), ExperimentStatus::ok, around(100))},
                          {stored_experiment(1, point("LL"), ExperimentStatus::ok, around(90)),
                           stored_experiment(2, point("Simple"), ExperimentStatus::ok, around(110))});
    CHECK(diff.geomeans[0].ratio == Approx(std::sqrt(0.9 * 1.1)));
    CHECK(diff.counts.regressions == 1);
    CHECK(diff.counts.improvements == 1);
}

TEST_CASE("diff: several metrics, any regressed metric makes the experiment a regression") {
    results::DiffOptions options;
    options.metrics = {{"tok_s", stats::Direction::higher_is_better},
                       {"verify_us_p50", stats::Direction::lower_is_better}};
    auto diff = must_diff(
        {stored_experiment(1, point("LL"), ExperimentStatus::ok, around(800), around(4000))},
        {stored_experiment(1, point("LL"), ExperimentStatus::ok, around(900), around(4800))}, options);
    const auto& e = only(diff);
    REQUIRE(e.metrics.size() == 2);
    CHECK(e.metrics[0].verdict == Verdict::improvement);
    CHECK(e.metrics[1].verdict == Verdict::regression);
    CHECK(e.verdict() == Verdict::regression);
    CHECK(diff.geomeans.size() == 2);
}

TEST_CASE("diff: bad options and unknown metrics are refused with what to write") {
    std::vector<results::StoredExperiment> sweep{
        stored_experiment(1, point("LL"), ExperimentStatus::ok, around(800))};
    results::DiffOptions options;
    options.metrics = {{"ttft_ms", stats::Direction::lower_is_better}};
    auto unknown = results::diff_tables(table_of(1, sweep), table_of(2, sweep), options);
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().kind == ErrorKind::bad_input);
    CHECK(unknown.error().message ==
          "metric 'ttft_ms' is recorded in neither sweep 1 nor sweep 2; recorded: tok_s");
    options = {};
    options.alpha = 1.5;
    CHECK_FALSE(results::diff_tables(table_of(1, sweep), table_of(2, sweep), options));
    options = {};
    options.threshold = -0.1;
    auto negative = results::diff_tables(table_of(1, sweep), table_of(2, sweep), options);
    REQUIRE_FALSE(negative);
    CHECK(negative.error().message.find("0.03") != std::string::npos);
    // Sweeps where everything failed record no metric: the status diff still works.
    std::vector<results::StoredExperiment> broken{failed_experiment(1, point("LL"), "nccl")};
    CHECK(results::diff_tables(table_of(1, broken), table_of(2, broken), {}));
}

TEST_CASE("diff: a key repeated within a sweep pairs up in id order") {
    std::vector<results::StoredExperiment> twice{
        stored_experiment(1, point("LL"), ExperimentStatus::ok, around(800)),
        stored_experiment(2, point("LL"), ExperimentStatus::ok, around(600)),
    };
    auto diff = must_diff(twice, twice);
    REQUIRE(diff.experiments.size() == 2);
    CHECK(diff.experiments[0].base_id == 1);
    CHECK(diff.experiments[1].base_id == 2);
    CHECK(diff.counts.unchanged == 2);
}

TEST_CASE("diff: diff_sweeps reads both references from the store and names a bad one") {
    TempDir dir;
    auto store = results::Store::open((dir.path() / "r.db").string());
    REQUIRE(store);
    for (int sweep = 0; sweep < 2; ++sweep) {
        auto id = store->create_sweep(make_sweep("s", "nightly"), make_experiments(3));
        REQUIRE(id);
        for (int e = 1; e <= 3; ++e) {
            auto outcome = make_outcome(e, 5, 1);
            if (sweep == 1 && e == 2)
                for (auto& s : outcome.samples) s.value *= 0.8;  // experiment 2 got 20% slower
            REQUIRE(store->record_experiment(*id, e, outcome));
        }
    }
    results::DiffOptions options;
    options.metrics = {{"metric0", stats::Direction::higher_is_better}};
    auto diff = results::diff_sweeps(*store, "latest:nightly~1", "latest:nightly", options);
    REQUIRE(diff);
    CHECK(diff->base.id == 1);
    CHECK(diff->candidate.id == 2);
    CHECK(diff->counts.regressions == 1);
    CHECK(diff->experiments[1].verdict() == Verdict::regression);
    auto bad = results::diff_sweeps(*store, "latest:nightly~2", "latest", options);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message.rfind("BASE 'latest:nightly~2': ", 0) == 0);
}

TEST_CASE(
    "diff: Holm's correction over every comparison keeps one unlucky experiment from failing the gate") {
    // A -10% drop, fully separated 5 vs 5 (p = 2/252 = 0.0079): a regression alone...
    auto dropped = [](int n) {
        return stored_experiment(1, point("LL"), ExperimentStatus::ok, around(900, n));
    };
    auto base_of = [](int n) {
        return stored_experiment(1, point("LL"), ExperimentStatus::ok, around(1000, n));
    };
    auto alone = must_diff({base_of(5)}, {dropped(5)});
    CHECK(only(alone).verdict() == Verdict::regression);
    CHECK(alone.power.comparisons == 1);
    CHECK(only(alone).metrics[0].p_adjusted == Approx(2.0 / 252));

    // ...but among 10 comparisons Holm asks p <= 0.005 of the smallest: 5 + 5 samples cannot.
    std::vector<results::StoredExperiment> base{base_of(5)}, candidate{dropped(5)};
    for (int i = 2; i <= 10; ++i) {
        base.push_back(
            stored_experiment(i, point("P" + std::to_string(i)), ExperimentStatus::ok, around(500)));
        candidate.push_back(
            stored_experiment(i, point("P" + std::to_string(i)), ExperimentStatus::ok, around(500)));
    }
    auto family = must_diff(base, candidate);
    CHECK(family.power.comparisons == 10);
    CHECK_FALSE(family.has_regression());
    const auto& first = family.experiments.front().metrics[0];
    CHECK(first.verdict == Verdict::no_change);
    CHECK(first.p_adjusted == Approx(10 * 2.0 / 252));
    CHECK(first.comparison->reason.find("Holm's correction over 10 comparisons") != std::string::npos);
    CHECK(std::isinf(first.detectable));  // says it: no p at 5 + 5 passes Holm over 10

    // With 8 samples a side (smallest p 2/12870) the same drop is caught, and the diff says how
    // small a change it could have seen.
    base.front() = base_of(8);
    candidate.front() = dropped(8);
    auto enough = must_diff(base, candidate);
    CHECK(enough.has_regression());
    const auto& caught = enough.experiments.front().metrics[0];
    CHECK(caught.verdict == Verdict::regression);
    CHECK(std::isfinite(caught.detectable));
    CHECK(caught.detectable >= 0.03);  // never below the threshold
    CHECK(caught.detectable < 0.10);   // the -10% drop was within what it could see
    CHECK(enough.power.repeats_for_5_percent >= 2);
}

TEST_CASE("diff: the repeats hint sizes for the noisiest experiment, as repeats: auto does") {
    // Nine quiet experiments (+-0.2%) and one with about 3% noise: the median noise would ask for
    // the fewest repeats any p allows; the hint must ask what the noisy one needs, with the
    // small-sample correction, i.e. exactly what `repeats: auto` (stats::repeats_for_gate) picks.
    const std::vector<double> noisy_base{1000, 1030, 970, 1045, 960, 1010, 990, 1025};
    const std::vector<double> noisy_new{1005, 965, 1040, 980, 1020, 955, 1035, 995};
    std::vector<results::StoredExperiment> base{
        stored_experiment(1, point("NOISY"), ExperimentStatus::ok, noisy_base)};
    std::vector<results::StoredExperiment> candidate{
        stored_experiment(1, point("NOISY"), ExperimentStatus::ok, noisy_new)};
    for (int i = 2; i <= 10; ++i) {
        base.push_back(
            stored_experiment(i, point("P" + std::to_string(i)), ExperimentStatus::ok, around(500, 8)));
        candidate.push_back(
            stored_experiment(i, point("P" + std::to_string(i)), ExperimentStatus::ok, around(500, 8)));
    }
    auto diff = must_diff(base, candidate);
    const double noisiest =
        std::max(stats::relative_noise_corrected(noisy_base), stats::relative_noise_corrected(noisy_new));
    CHECK(noisiest > 0.02);
    CHECK(diff.power.noise == Approx(noisiest));
    const auto gate =
        stats::repeats_for_gate(noisiest, static_cast<std::size_t>(diff.power.comparisons), 0.05, 1000);
    CHECK(diff.power.repeats_for_5_percent == static_cast<std::size_t>(gate.needed));
    // The median of the ten would have asked for far fewer.
    CHECK(diff.power.repeats_for_5_percent > stats::samples_to_detect(stats::k_gate_shift, 0.002,
                                                                      0.05 / diff.power.comparisons,
                                                                      stats::k_gate_power));
}
