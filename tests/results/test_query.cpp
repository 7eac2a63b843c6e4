// results/query: sweep tables, metric directions, sorting and the best experiment.
#include <cmath>

#include "results/query/query.hpp"

#include "core/text.hpp"
#include "results/store/store.hpp"
#include "tests/results/results_fixtures.hpp"
#include "tests/results/store_fixtures.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;
using results::ExperimentStatus;
using stats::Direction;

namespace {

std::vector<results::StoredExperiment> three_points() {
    return {
        stored_experiment(1, {{"NCCL_PROTO", "LL"}, {"fusion", "off"}, {"tp", "8"}}, ExperimentStatus::ok,
                          {800, 801, 802, 803, 804, 805}, {4000, 4001, 4002, 4003, 4004, 4005}),
        stored_experiment(2, {{"NCCL_PROTO", "LL"}, {"fusion", "on"}, {"tp", "8"}}, ExperimentStatus::ok,
                          {900, 901, 902, 903, 904}, {3000, 3001, 3002, 3003, 3004}),
        failed_experiment(3, {{"NCCL_PROTO", "Simple"}, {"fusion", "on"}, {"tp", "8"}}, "graph_capture"),
    };
}

}  // namespace

TEST_CASE("query: metric direction follows the metric's name") {
    CHECK(results::metric_direction("tok_s") == Direction::higher_is_better);
    CHECK(results::metric_direction("baseline_tok_s") == Direction::higher_is_better);
    CHECK(results::metric_direction("output_throughput") == Direction::higher_is_better);
    CHECK(results::metric_direction("verify_us_p50") == Direction::lower_is_better);
    CHECK(results::metric_direction("collective_us") == Direction::lower_is_better);
    CHECK(results::metric_direction("ttft_ms") == Direction::lower_is_better);
    CHECK(results::metric_direction("mean_latency") == Direction::lower_is_better);
    CHECK(results::metric_direction("init_s") == Direction::lower_is_better);
    CHECK(results::metric_direction("rsd") == Direction::lower_is_better);
    CHECK(results::metric_direction("goodput") == Direction::higher_is_better);
    CHECK(results::metric_direction("status") == Direction::higher_is_better);  // "_us" must be a word
}

TEST_CASE("query: a metric choice may name its direction, bad suffixes say what to write") {
    auto plain = results::parse_metric_choice("verify_us_p50");
    REQUIRE(plain);
    CHECK(plain->direction == Direction::lower_is_better);
    auto flipped = results::parse_metric_choice("verify_us_p50:higher");
    REQUIRE(flipped);
    CHECK(flipped->name == "verify_us_p50");
    CHECK(flipped->direction == Direction::higher_is_better);
    auto bad = results::parse_metric_choice("tok_s:sideways");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().kind == ErrorKind::bad_input);
    CHECK(bad.error().message.find("NAME:lower") != std::string::npos);
    CHECK_FALSE(results::parse_metric_choice(":lower"));
}

TEST_CASE("query: a row's diagnosis is the first non-blank line of the stored one (core/text first_line)") {
    const std::string stored = "\n  nccl while measuring: unhandled error\nline 2\n";
    CHECK(first_line(stored, 160) == "nccl while measuring: unhandled error");
}

TEST_CASE("query: varying parameters are those that differ or are missing somewhere") {
    auto experiments = three_points();
    experiments.push_back(
        stored_experiment(4, {{"NCCL_PROTO", "LL"}, {"fusion", "on"}, {"tp", "8"}, {"tokens", "16"}},
                          ExperimentStatus::ok, {1}));
    CHECK(results::varying_parameters(experiments) ==
          std::vector<std::string>{"NCCL_PROTO", "fusion", "tokens"});
    std::vector<results::StoredExperiment> single{experiments[0]};
    CHECK(results::varying_parameters(single) == std::vector<std::string>{"NCCL_PROTO", "fusion", "tp"});
}

TEST_CASE("query: the table summarizes each metric with median, 95% interval (n >= 6) and n") {
    auto experiments = three_points();
    auto table = results::build_sweep_table(sweep_info(4, "nightly"), experiments);
    REQUIRE(table.rows.size() == 3);
    CHECK(table.metrics == std::vector<std::string>{"tok_s", "verify_us_p50"});
    CHECK(table.columns == std::vector<std::string>{"tok_s", "verify_us_p50"});
    CHECK(table.varying == std::vector<std::string>{"NCCL_PROTO", "fusion"});
    const auto* six = table.rows[0].metric("tok_s");
    REQUIRE(six);
    CHECK(six->summary.n == 6);
    CHECK(six->summary.median == Approx(802.5));
    REQUIRE(six->summary.ci);
    CHECK(six->summary.ci->low == 800);  // n = 6: [x(1), x(6)] covers 96.9%
    CHECK(six->summary.ci->high == 805);
    const auto* five = table.rows[1].metric("tok_s");
    REQUIRE(five);
    CHECK(five->summary.median == 902);
    CHECK_FALSE(five->summary.ci);  // n = 5 cannot reach 95%
    CHECK(table.rows[2].metric("tok_s") == nullptr);
    CHECK(table.rows[2].failure_class == "graph_capture");
    CHECK(table.rows[2].diagnosis == "graph_capture: the process reported an error");
    CHECK(table.rows[1].changed == std::vector<Assignment>{{"NCCL_PROTO", "LL"}, {"fusion", "on"}});
}

TEST_CASE("query: sorting puts the best first in the metric's direction, experiments without it last") {
    auto experiments = three_points();
    auto table = results::build_sweep_table(sweep_info(4, "nightly"), experiments);
    REQUIRE(results::sort_rows(table, {"tok_s", Direction::higher_is_better}));
    CHECK(table.rows[0].exp_id == 2);
    CHECK(table.rows[1].exp_id == 1);
    CHECK(table.rows[2].exp_id == 3);
    REQUIRE(results::sort_rows(table, {"tok_s", Direction::lower_is_better}));
    CHECK(table.rows[0].exp_id == 1);
    CHECK(table.rows[2].exp_id == 3);
    REQUIRE(results::sort_rows(table, {"verify_us_p50", Direction::lower_is_better}));
    CHECK(table.columns.front() == "verify_us_p50");
    auto missing = results::sort_rows(table, {"ttft_ms", Direction::lower_is_better});
    REQUIRE_FALSE(missing);
    CHECK(missing.error().message.find("recorded: tok_s, verify_us_p50") != std::string::npos);
}

TEST_CASE("query: best is the ok experiment with the best median, with its margin over the runner-up") {
    auto experiments = three_points();
    // A failed experiment with higher samples must not win.
    auto crashed = stored_experiment(5, {{"NCCL_PROTO", "LL128"}, {"fusion", "on"}, {"tp", "8"}},
                                     ExperimentStatus::failed, {5000, 5000, 5000});
    experiments.push_back(crashed);
    auto table = results::build_sweep_table(sweep_info(4, "nightly"), experiments);
    auto best = results::best_experiment(table, {"tok_s", Direction::higher_is_better});
    REQUIRE(best);
    CHECK(best->best.exp_id == 2);
    CHECK(best->candidates == 2);
    REQUIRE(best->runner_up);
    CHECK(best->runner_up->exp_id == 1);
    REQUIRE(best->margin);
    CHECK(best->margin->verdict == stats::Verdict::improvement);  // 5 vs 6 fully separated
    CHECK(best->margin->delta == Approx(902.0 / 802.5 - 1));

    auto fastest = results::best_experiment(table, {"verify_us_p50", Direction::lower_is_better});
    REQUIRE(fastest);
    CHECK(fastest->best.exp_id == 2);
    auto slowest = results::best_experiment(table, {"verify_us_p50", Direction::higher_is_better});
    REQUIRE(slowest);
    CHECK(slowest->best.exp_id == 1);
}

TEST_CASE(
    "query: equal points are one tie group - the lower id recommended - and nothing qualifying is "
    "explained") {
    std::vector<results::StoredExperiment> tie{
        stored_experiment(1, {{"a", "1"}}, ExperimentStatus::ok, {10, 10, 10}),
        stored_experiment(2, {{"a", "2"}}, ExperimentStatus::ok, {10, 10, 10}),
    };
    auto table = results::build_sweep_table(sweep_info(1, "t"), tie);
    auto best = results::best_experiment(table, {"tok_s", Direction::higher_is_better});
    REQUIRE(best);
    CHECK(best->best.exp_id == 1);
    CHECK(best->tie());
    CHECK(best->tie_group.size() == 2);
    CHECK_FALSE(best->runner_up);  // no point outside the tie group
    CHECK_FALSE(best->margin);

    std::vector<results::StoredExperiment> all_failed{failed_experiment(1, {{"a", "1"}}, "nccl")};
    all_failed[0].outcome.samples.push_back({0, "tok_s", 1});
    auto failed_table =
        results::build_sweep_table(with_counts(sweep_info(7, "broken"), all_failed), all_failed);
    auto none = results::best_experiment(failed_table, {"tok_s", Direction::higher_is_better});
    REQUIRE_FALSE(none);
    CHECK(none.error().message.find("no ok experiment with metric 'tok_s'") != std::string::npos);
    CHECK(none.error().message.find("ncclsweep results show 7") != std::string::npos);
}

TEST_CASE("query: load_sweep_table resolves references against a real store") {
    TempDir dir;
    const std::string db = (dir.path() / "r.db").string();
    auto store = results::Store::open(db);
    REQUIRE(store);
    for (const char* tag : {"nightly", "nightly", "other"}) {
        auto id = store->create_sweep(make_sweep("s", tag), make_experiments(2));
        REQUIRE(id);
        for (int e = 1; e <= 2; ++e) REQUIRE(store->record_experiment(*id, e, make_outcome(e, 3)));
        REQUIRE(store->finish_sweep(*id, results::SweepState::done));
    }
    auto table = results::load_sweep_table(*store, "latest:nightly");
    REQUIRE(table);
    CHECK(table->sweep.id == 2);
    CHECK(table->sweep.counts.ok == 2);
    REQUIRE(table->rows.size() == 2);
    CHECK(table->metrics == std::vector<std::string>{"metric0", "metric1"});
    CHECK(table->rows[1].metric("metric0")->summary.median == 2010);  // 2000, 2010, 2020
    auto previous = results::load_sweep_table(*store, "latest:nightly~1");
    REQUIRE(previous);
    CHECK(previous->sweep.id == 1);
    auto missing = results::load_sweep_table(*store, "latest:weekly");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().message.find("no sweep tagged 'weekly'") != std::string::npos);
}
