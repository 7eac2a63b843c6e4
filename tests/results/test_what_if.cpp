// What the collective times of a point rest on (calibrated | relative | modelled) and what-if
// points (the fused all-reduce): stored, loaded, shown by every output, and never recommended.
#include <nlohmann/json.hpp>

#include "results/export/exports.hpp"
#include "results/print/printers.hpp"
#include "results/query/query.hpp"
#include "results/query/what_if.hpp"
#include "results/store/store.hpp"
#include "tests/results/results_fixtures.hpp"
#include "tests/results/store_fixtures.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;
using results::ExperimentStatus;

namespace {

/// The incident's shape: NCCL's defaults (calibrated), NCCL_NTHREADS=64 (relative), and the
/// fused kernel (a what-if, faster than both).
std::vector<results::StoredExperiment> incident_points() {
    auto defaults =
        stored_experiment(1, {{"fusion", "off"}}, ExperimentStatus::ok, {54.7, 54.8, 54.6, 54.9, 54.7, 54.8});
    defaults.outcome.collective_times = "calibrated";
    auto nthreads = stored_experiment(2, {{"fusion", "off"}, {"NCCL_NTHREADS", "64"}}, ExperimentStatus::ok,
                                      {54.0, 54.1, 54.0, 54.2, 54.1, 54.0});
    nthreads.outcome.collective_times = "relative";
    auto fused =
        stored_experiment(3, {{"fusion", "on"}}, ExperimentStatus::ok, {79.0, 79.1, 79.2, 79.0, 79.1, 79.2});
    fused.outcome.collective_times = "relative";
    for (int r = 0; r < 6; ++r) fused.outcome.samples.push_back({r, "fused_us", 23.7});
    return {defaults, nthreads, fused};
}

results::BestExperiment best_of(const std::vector<results::StoredExperiment>& points) {
    const auto table = results::build_sweep_table(sweep_info(1, "incident"), points);
    auto best = results::best_experiment(table, *results::parse_metric_choice("tok_s"));
    REQUIRE(best);
    return *best;
}

}  // namespace

TEST_CASE("what-if: the fused point is never the recommendation, and its gain is said beside it") {
    const auto points = incident_points();
    CHECK_FALSE(results::is_what_if(points[0]));
    CHECK(results::is_what_if(points[2]));
    const results::BestExperiment best = best_of(points);
    CHECK(best.best.exp_id == 1);
    CHECK(best.candidates == 2);
    REQUIRE(best.what_if);
    CHECK(best.what_if->exp_id == 3);
    const auto line = results::what_if_line(best);
    REQUIRE(line);
    CHECK(line->find(
              "what-if: a server with a fused all-reduce would gain +44.5 % tok_s over the recommendation, "
              "experiment 1 (experiment 3: fusion=on, its fused all-reduce at 23.7 us per call, collective "
              "times relative); no NCCL setting deploys it") == 0);
    // Only what-if points measured: nothing to recommend, and the error says why.
    const auto table = results::build_sweep_table(sweep_info(1, "fused only"), std::vector{points[2]});
    auto none = results::best_experiment(table, *results::parse_metric_choice("tok_s"));
    REQUIRE_FALSE(none);
    CHECK(none.error().message.find("what-if points such as the fused all-reduce are never recommended") !=
          std::string::npos);
}

TEST_CASE("what-if: a recommendation resting on a non-calibrated point says so") {
    auto points = incident_points();
    CHECK(results::recommendation_caveat(best_of(points).best).empty());
    points[0].outcome.samples.clear();  // the defaults did not measure: NCCL_NTHREADS=64 is the best left
    const results::BestExperiment best = best_of(points);
    CHECK(best.best.exp_id == 2);
    CHECK(results::recommendation_caveat(best.best) ==
          "; NOT calibrated: collective times relative: NCCL's choice for this point was not measured; the "
          "model "
          "scaled a measured choice");
    CHECK(results::collective_times_note("modelled") ==
          "collective times modelled: NCCL's estimate, nothing measured");
    CHECK(results::collective_times_note("calibrated").empty());
}

TEST_CASE("what-if: the label goes through the store and comes back on each experiment") {
    TempDir dir;
    results::Store store = open_store(dir.path() / "s.db", {}, results::Durability::normal);
    const std::int64_t sweep = *store.create_sweep(make_sweep("labels"));
    REQUIRE(store.add_experiments(sweep, make_experiments(2)).ok());
    results::ExperimentOutcome o = make_outcome(1, 2);
    o.collective_times = "relative";
    o.events.push_back({results::EventLevel::warning, "nccl_ignored", "ignored", ""});
    REQUIRE(store.record_experiment(sweep, 1, o).ok());
    REQUIRE(store.record_experiment(sweep, 2, make_outcome(2, 2)).ok());
    auto loaded = store.load_experiments(sweep);
    REQUIRE(loaded);
    CHECK((*loaded)[0].outcome.collective_times == "relative");
    REQUIRE((*loaded)[0].outcome.events.size() == 1);  // kept as an event, shown as a field
    CHECK((*loaded)[0].outcome.events[0].code == "nccl_ignored");
    CHECK((*loaded)[1].outcome.collective_times.empty());
}

TEST_CASE("what-if: results show, best, the exports and the report show every point's label") {
    const auto points = incident_points();
    const auto table = results::build_sweep_table(sweep_info(1, "incident"), points);
    std::string text, json_text;
    {
        results::Output sink(text);
        auto printer = results::make_printer(results::Format::table, sink);
        printer->print_table(table);
        printer->print_best(best_of(points));
    }
    CHECK(text.find("ok, calibrated") != std::string::npos);
    CHECK(text.find("ok, relative, what-if") != std::string::npos);
    CHECK(text.find("status: calibrated = collective times measured for NCCL's choice") != std::string::npos);
    INFO(text);
    CHECK(text.find("what-if: a server with a fused all-reduce would gain +44.5 % tok_s") !=
          std::string::npos);
    {
        results::Output sink(json_text);
        results::make_printer(results::Format::json, sink)->print_table(table);
    }
    const auto shown = nlohmann::json::parse(json_text);
    CHECK(shown["experiments"][0]["collective_times"] == "calibrated");
    CHECK(shown["experiments"][2]["collective_times"] == "relative");
    CHECK(shown["experiments"][2]["what_if"] == true);

    results::LoadedSweep sweep{sweep_info(1, "incident"), points};
    const auto exported = nlohmann::json::parse(results::exports::to_json(sweep));
    CHECK(exported["experiments"][1]["collective_times"] == "relative");
    CHECK(results::exports::to_csv(sweep).find(",relative,yes,tok_s,") != std::string::npos);
    CHECK(results::exports::to_markdown(sweep, "tok_s").find("| relative what-if |") != std::string::npos);
    CHECK(results::exports::to_junit(sweep).find("name=\"collective_times\" value=\"calibrated\"") !=
          std::string::npos);
    // export --best deploys NCCL settings: the defaults here, and it names the what-if it left out.
    results::exports::ExportRequest request;
    request.format = results::exports::Format::env;
    request.best = true;
    auto env = results::exports::export_sweep(sweep, request);
    REQUIRE(env);
    CHECK(env->find("# experiment 1") == std::string::npos);  // (the header names it as below)
    CHECK(env->find("ncclsweep: experiment 1 of sweep 1") != std::string::npos);
    CHECK(env->find("# collective times: calibrated (measured for NCCL's choice)") != std::string::npos);
    CHECK(env->find("# left out: what-if: a server with a fused all-reduce would gain") != std::string::npos);
    // The tuner profile names it per point too (its sizes come from the workload parameters).
    results::LoadedSweep with_workload = sweep;
    for (auto& e : with_workload.experiments)
        e.experiment.workload = {{"tp", "8"}, {"tokens", "4"}, {"model", "kimi-k2.5"}};
    request.format = results::exports::Format::tuner_profile;
    auto profile = results::exports::export_sweep(with_workload, request);
    REQUIRE(profile);
    CHECK(profile->find("; collective times calibrated") != std::string::npos);
    request.format = results::exports::Format::env;
    // Exporting the what-if point itself says what the file cannot carry.
    request.best = false;
    request.experiment = 3;
    auto what_if = results::exports::export_sweep(sweep, request);
    REQUIRE(what_if);
    CHECK(what_if->find("# left out: this point ran the fused all-reduce, which no NCCL setting deploys") !=
          std::string::npos);
}
