// The one "best" rule (results::best_experiment): direction from the sweep's metric
// definitions, tie groups by diff's test and threshold, the simplest point of the group with
// settings NCCL ignores not counted.
#include <string>
#include <vector>

#include "results/export/exports.hpp"
#include "results/query/query.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace ncclsweep::results;

namespace {

// tpverify at 4 tokens of Kimi-K2.5: 57344-byte all-reduces, where NCCL ignores NCCL_NTHREADS.
const char* k_spec = R"(sweep: best
workload:
  engine: tpverify
  args: {tokens: 4, topology: pcie-gen5}
axes:
  NCCL_PROTO: [LL, Simple]
)";

StoredExperiment point(int id, std::vector<Assignment> params, std::vector<double> values,
                       const std::string& metric = "tok_s") {
    StoredExperiment s;
    s.experiment.id = id;
    s.experiment.key = "k" + std::to_string(id);
    s.experiment.params = params;
    for (const auto& [name, value] : params) {
        if (std::isupper(static_cast<unsigned char>(name[0])))
            s.experiment.env.emplace_back(name, value);
        else
            s.experiment.workload.emplace_back(name, value);
    }
    s.experiment.workload.emplace_back("tokens", "4");
    s.outcome.status = ExperimentStatus::ok;
    for (std::size_t r = 0; r < values.size(); ++r)
        s.outcome.samples.push_back({static_cast<int>(r), metric, values[r]});
    return s;
}

LoadedSweep sweep_of(std::vector<StoredExperiment> experiments, std::vector<MetricDefinition> metrics = {}) {
    LoadedSweep sweep;
    sweep.info.id = 7;
    sweep.info.record.name = "best";
    sweep.info.record.spec_text = k_spec;
    sweep.info.record.spec_path = "best.yaml";
    sweep.info.record.metrics = std::move(metrics);
    sweep.info.counts.ok = static_cast<int>(experiments.size());
    sweep.experiments = std::move(experiments);
    return sweep;
}

BestExperiment best_of(const LoadedSweep& sweep, const std::string& metric) {
    auto best = exports::best_point(sweep, metric);
    INFO((best ? std::string() : best.error().message));
    REQUIRE(best);
    return *best;
}

}  // namespace

TEST_CASE("best: which way is better comes from the sweep's definition - else the default rule") {
    auto warm = [](std::vector<MetricDefinition> metrics) {
        return sweep_of({point(1, {{"NCCL_PROTO", "LL"}}, {3, 3, 3}, "warm_s"),
                         point(2, {{"NCCL_PROTO", "Simple"}}, {7, 7, 7}, "warm_s")},
                        std::move(metrics));
    };
    CHECK(best_of(warm({}), "warm_s").best.exp_id == 1);  // *_s: lower is better by default
    CHECK(best_of(warm({{"warm_s", "s", stats::Direction::higher_is_better}}), "warm_s").best.exp_id == 2);
    CHECK(best_of(warm({}), "warm_s:higher").best.exp_id == 2);
    CHECK(exports::metric_direction(warm({}), "warm_s") == stats::Direction::lower_is_better);
}

TEST_CASE("best: points diff cannot tell from the top form a tie and the simplest is recommended") {
    auto sweep = sweep_of({
        point(1, {{"NCCL_ALGO", "ring"}, {"fusion", "on"}}, {101, 102, 100, 101, 102, 101}),
        point(2, {{"fusion", "on"}}, {100, 101, 100, 100, 101, 100}),
        point(3, {{"NCCL_ALGO", "ring"}, {"fusion", "off"}}, {80, 81, 79, 80, 81, 80}),
    });
    BestExperiment best = best_of(sweep, "tok_s");
    CHECK(best.top_id == 1);
    CHECK(best.tie());
    REQUIRE(best.tie_group.size() == 2);
    CHECK(best.best.exp_id == 2);  // one setting that counts against two
    REQUIRE(best.runner_up);
    CHECK(best.runner_up->exp_id == 3);
    REQUIRE(best.margin);
    CHECK(best.margin->verdict == stats::Verdict::improvement);
    CHECK_FALSE(best.decided_by_threshold);
}

TEST_CASE("best: settings NCCL ignores at the sweep's message size do not count as settings") {
    auto sweep = sweep_of({
        point(1, {{"NCCL_PROTO", "LL"}, {"fusion", "on"}}, {364, 365, 363, 364, 365, 364}),
        point(2, {{"NCCL_NTHREADS", "64"}, {"fusion", "on"}}, {363, 364, 363, 363, 364, 364}),
    });
    BestExperiment best = best_of(sweep, "tok_s");
    CHECK(best.top_id == 1);
    CHECK(best.best.exp_id == 2);
    CHECK(best.best.inert == std::vector<std::string>{"NCCL_NTHREADS"});
    CHECK(best.best.settings_that_count() == 1);
}

TEST_CASE("best: with too few samples for the test the threshold alone separates points") {
    auto sweep = sweep_of({
        point(1, {{"fusion", "off"}}, {290, 291, 289}),
        point(2, {{"fusion", "on"}}, {364, 365, 363}),
        point(3, {{"fusion", "on"}, {"NCCL_PROTO", "LL"}}, {362, 363, 364}),
    });
    BestExperiment best = best_of(sweep, "tok_s");
    CHECK(best.decided_by_threshold);
    REQUIRE(best.tie_group.size() == 2);  // 2 and 3 are within 3%; 1 is 20% behind
    CHECK(best.best.exp_id == 2);
    CHECK(best.best.params == std::vector<Assignment>{{"fusion", "on"}});
    REQUIRE(best.runner_up);
    CHECK(best.runner_up->exp_id == 1);
    REQUIRE(best.margin);
    CHECK(best.margin->verdict == stats::Verdict::insufficient_samples);
}

TEST_CASE("best: a point that stands alone is no tie") {
    auto sweep = sweep_of({point(1, {{"fusion", "off"}}, {290, 291, 289, 290, 291, 290}),
                           point(2, {{"fusion", "on"}}, {364, 365, 363, 364, 365, 364})});
    BestExperiment best = best_of(sweep, "tok_s");
    CHECK_FALSE(best.tie());
    CHECK(best.best.exp_id == 2);
    CHECK(best.top_id == 2);
}
