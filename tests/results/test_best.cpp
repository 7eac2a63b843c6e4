// The one "best" rule (results::best_experiment): direction from the sweep's metric
// definitions, tie groups by diff's test and threshold, then the fewest settings changed from
// NCCL's defaults (its own effective choice and inert settings are no change), the fewest set,
// plan order; the recommendation stated against NCCL's defaults point.
#include <span>
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

TEST_CASE("best: a tie goes to NCCL's defaults point, and the recommendation says leave NCCL alone") {
    auto sweep = sweep_of({
        point(1, {{"NCCL_ALGO", "ring"}, {"fusion", "on"}}, {101, 102, 100, 101, 102, 101}),
        point(2, {{"fusion", "on"}}, {100, 101, 100, 100, 101, 100}),
        point(3, {{"NCCL_ALGO", "ring"}, {"fusion", "off"}}, {80, 81, 79, 80, 81, 80}),
    });
    BestExperiment best = best_of(sweep, "tok_s");
    CHECK(best.top_id == 1);
    CHECK(best.tie());
    REQUIRE(best.tie_group.size() == 2);
    CHECK(best.best.exp_id == 2);  // NCCL's defaults: nothing set, nothing changed
    CHECK(best.best.defaults);
    CHECK(best.settings.set() == 0);
    CHECK(recommendation_text(best) ==
          "experiment 2 (defaults fusion=on): no setting beats NCCL's defaults: leave NCCL alone");
    CHECK(tie_text(best).find("fewest settings changed from NCCL's defaults, then fewest set, then plan "
                              "order -> experiment 2 (0 changed, 0 set); best median: experiment 1") !=
          std::string::npos);
    REQUIRE(best.runner_up);
    CHECK(best.runner_up->exp_id == 3);
    REQUIRE(best.margin);
    CHECK(best.margin->verdict == stats::Verdict::improvement);
    CHECK_FALSE(best.decided_by_threshold);
}

TEST_CASE("best: a value equal to NCCL's own effective choice is no change, noise never picks") {
    // NCCL's defaults (3) ran Ring/LL for the all-reduce and is clearly behind here; 1 and 2 tie.
    // 1 forces Tree (a change), 2 forces Ring and LL, which NCCL chose itself: 2 changes nothing.
    // Whichever of them has the better median, the recommendation is 2.
    for (const bool tree_leads : {true, false}) {
        std::vector<double> a{150, 151, 149, 150, 151, 150}, b{149, 150, 148, 149, 150, 149};
        auto one = point(1, {{"NCCL_ALGO", "allreduce:tree"}, {"NCCL_PROTO", "LL"}, {"fusion", "on"}},
                         tree_leads ? a : b);
        one.outcome.effective_nccl = "AllGather 163840B: RING/LL ch0..1; AllReduce 57344B: TREE/LL ch0..1";
        auto two = point(2, {{"NCCL_ALGO", "allreduce:ring"}, {"NCCL_PROTO", "LL"}, {"fusion", "on"}},
                         tree_leads ? b : a);
        two.outcome.effective_nccl =
            "AllGather 163840B: RING/LL ch0..1; AllReduce 57344B: RING/LL ch0..0; env: "
            "NCCL_ALGO=allreduce:ring NCCL_PROTO=LL";
        auto defaults = point(3, {{"fusion", "on"}}, {130, 131, 129, 130, 131, 130});
        defaults.outcome.effective_nccl =
            "AllGather 163840B: RING/LL ch0..1; AllReduce 57344B: RING/LL ch0..0";
        BestExperiment best = best_of(sweep_of({one, two, defaults}), "tok_s");
        CHECK(best.top_id == (tree_leads ? 1 : 2));
        REQUIRE(best.tie_group.size() == 2);
        CHECK(best.best.exp_id == 2);
        CHECK(best.settings.changed() == 0);
        CHECK(best.settings.names(SettingRole::nccl_choice) ==
              std::vector<std::string>{"NCCL_ALGO", "NCCL_PROTO"});
        CHECK(best.tie_changed == (tree_leads ? std::vector<int>{1, 0} : std::vector<int>{0, 1}));
        // Stated against NCCL's defaults of the same workload (fusion=on): +X % with the U test's p.
        REQUIRE(best.defaults);
        CHECK(best.defaults->exp_id == 3);
        REQUIRE(best.versus_defaults);
        CHECK(best.versus_defaults->verdict == stats::Verdict::improvement);
        const std::string text = recommendation_text(best);
        CHECK(text.find("experiment 2 (NCCL_ALGO=allreduce:ring NCCL_PROTO=LL fusion=on): +") == 0);
        CHECK(text.find(" % over NCCL's defaults (experiment 3, p = 0.0022)") != std::string::npos);
    }
}

TEST_CASE("best: inert means the same effective choice and no significant difference, nothing less") {
    // NCCL_NTHREADS: the planner expects NCCL to ignore it at 57 KB, but the points differing only
    // in it ran different channel counts and 7% apart: not inert. NCCL_BUFFSIZE: same choice, same
    // numbers: inert.
    auto p = [](int id, const char* threads, const char* buffsize, std::vector<double> values,
                const char* channels) {
        auto e =
            point(id, {{"NCCL_PROTO", "Simple"}, {"NCCL_NTHREADS", threads}, {"NCCL_BUFFSIZE", buffsize}},
                  std::move(values));
        e.outcome.effective_nccl = std::string("AllReduce 57344B: RING/SIMPLE ") + channels;
        return e;
    };
    auto sweep = sweep_of({p(1, "64", "131072", {107, 108, 107, 108, 107, 108}, "ch0..1"),
                           p(2, "64", "16777216", {107, 108, 108, 107, 107, 108}, "ch0..1"),
                           p(3, "512", "131072", {100, 101, 100, 100, 101, 100}, "ch0..0"),
                           p(4, "512", "16777216", {100, 100, 101, 100, 101, 100}, "ch0..0")});
    const SweepTable table =
        build_sweep_table(sweep.info, std::span<const StoredExperiment>(sweep.experiments));
    const PointSettings settings = judge_settings(table, table.rows[0], *parse_metric_choice("tok_s"));
    REQUIRE(settings.settings.size() == 3);
    CHECK(settings.settings[1].name == "NCCL_NTHREADS");
    CHECK(settings.settings[1].role == SettingRole::change);
    CHECK(settings.settings[2].name == "NCCL_BUFFSIZE");
    CHECK(settings.settings[2].role == SettingRole::inert);
    CHECK(settings.settings[2].why.find("experiment 2") != std::string::npos);
    CHECK(settings.names(SettingRole::inert) == std::vector<std::string>{"NCCL_BUFFSIZE"});
    // Without a recorded effective choice nothing can be shown inert.
    auto blind = sweep;
    for (auto& e : blind.experiments) e.outcome.effective_nccl.clear();
    const SweepTable blind_table =
        build_sweep_table(blind.info, std::span<const StoredExperiment>(blind.experiments));
    CHECK(judge_settings(blind_table, blind_table.rows[0], *parse_metric_choice("tok_s"))
              .names(SettingRole::inert)
              .empty());
}

TEST_CASE("best: NCCL_ALGO/NCCL_PROTO deploy scoped to the collectives they changed") {
    auto simple = point(1, {{"NCCL_PROTO", "Simple"}, {"fusion", "on"}}, {120, 121, 120, 121, 120, 121});
    simple.outcome.effective_nccl =
        "AllGather 163840B: RING/SIMPLE ch0..1; AllReduce 57344B: RING/SIMPLE ch0..0";
    auto defaults = point(2, {{"fusion", "on"}}, {100, 101, 100, 101, 100, 101});
    defaults.outcome.effective_nccl =
        "AllGather 163840B: RING/SIMPLE ch0..1; AllReduce 57344B: RING/LL ch0..0";
    BestExperiment best = best_of(sweep_of({simple, defaults}), "tok_s");
    CHECK(best.best.exp_id == 1);
    REQUIRE(best.settings.settings.size() == 1);
    CHECK(best.settings.settings[0].role == SettingRole::change);
    CHECK(best.settings.settings[0].deploy_value == "allreduce:Simple");
    CHECK(best.settings.settings[0].collectives == std::vector<std::string>{"allreduce"});
    REQUIRE(best.settings.notes.size() == 1);
    CHECK(best.settings.notes[0].find("NCCL_PROTO=Simple is deployed as NCCL_PROTO=allreduce:Simple") == 0);
}

TEST_CASE("best: without a defaults point the recommendation says what it was not compared with") {
    auto sweep = sweep_of({point(1, {{"NCCL_PROTO", "LL"}}, {364, 365, 363, 364, 365, 364}),
                           point(2, {{"NCCL_PROTO", "Simple"}}, {300, 301, 300, 301, 300, 301})});
    BestExperiment best = best_of(sweep, "tok_s");
    CHECK(recommendation_text(best) ==
          "experiment 1 (NCCL_PROTO=LL): not compared with NCCL's defaults: the sweep has no defaults point "
          "(baseline: none, or no NCCL axes)");
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
    CHECK(best.best.defaults);
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
