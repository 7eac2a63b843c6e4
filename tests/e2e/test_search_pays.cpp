// Issue 27's "done when" through the real binaries (ncclsweep + simulated tpverify): the
// quickstart recommends the same point whatever the noise seed, and the seed study's search
// (`search: {race: {max_repeats: 6}}`, a machine's noise `--set noise=0.01`) spends at most 60%
// of the exhaustive sweep's runs and recommends a point the exhaustive sweep puts within 3% of
// its best, with counts that add up in `run` and `results list`.
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "tests/e2e/e2e_support.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

nlohmann::json json_of(const std::vector<std::string>& args) {
    auto r = run_ncclsweep(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out);
}

/// Median tok_s by canonical key, and the best median, of a recorded sweep.
std::map<std::string, double> medians(const std::string& db, const std::string& sweep) {
    std::map<std::string, double> out;
    const auto shown = json_of({"results", "show", sweep, "--db", db, "--json"});
    for (const auto& e : shown["experiments"]) {
        if (e["status"] != "ok" || !e["metrics"].contains("tok_s")) continue;
        out[e["canonical"].get<std::string>()] = e["metrics"]["tok_s"]["median"].get<double>();
    }
    return out;
}

}  // namespace

TEST_CASE("quickstart: the same recommendation for seeds 1 2 and 3") {
    TempDir dir;
    const std::string db = (dir.path() / "q.db").string();
    const std::string spec = source_path("experiments/quickstart.yaml").string();
    std::vector<std::string> recommended;
    for (const char* seed : {"1", "2", "3"}) {
        auto r = run_ncclsweep({"run", spec, "--db", db, "--set", std::string("seed=") + seed, "-q"});
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
        const auto at = r.out.find("recommended (tok_s, higher is better): ");
        REQUIRE(at != std::string::npos);
        recommended.push_back(r.out.substr(at, r.out.find('\n', at) - at));
        CHECK(r.out.find("  tie: ") != std::string::npos);  // the tie and its rule are shown
    }
    CHECK(
        recommended[0] ==
        "recommended (tok_s, higher is better): experiment 9 (defaults fusion=off): no setting beats NCCL's "
        "defaults: leave NCCL alone; NOT calibrated: collective times modelled: NCCL's estimate, nothing "
        "measured");  // fusion=on is a what-if since the sim prices the fused kernel: never recommended
    CHECK(recommended[1] == recommended[0]);
    CHECK(recommended[2] == recommended[0]);
}

TEST_CASE("seed study: the search spends at most 60% of the exhaustive runs and its answer is within 3%") {
    TempDir dir;
    const std::string db = (dir.path() / "s.db").string();
    const std::string study = source_path("experiments/seed-pcie-verify.yaml").string();
    // The study as shipped, and the same with the issue's search settings.
    std::ifstream in(study);
    std::stringstream text;
    text << in.rdbuf();
    std::string searched = text.str();
    searched.replace(searched.find("repeats: 3\n"), 11, "repeats: 3\nsearch: {race: {max_repeats: 6}}\n");
    const auto search_spec = dir.write("seed-search.yaml", searched);

    auto exhaustive =
        run_ncclsweep({"run", study, "--db", db, "--set", "noise=0.01", "--set", "seed=4", "-q"});
    INFO(exhaustive.err);
    REQUIRE(exhaustive.exit_code == 0);
    auto search = run_ncclsweep(
        {"run", search_spec.string(), "--db", db, "--set", "noise=0.01", "--set", "seed=4", "-q"});
    INFO(search.err);
    INFO(search.out);
    REQUIRE(search.exit_code == 0);

    // The runs: the exhaustive sweep plans 99 points x 3 repeats.
    const auto plan = json_of({"plan", study, "--format", "json"});
    const int exhaustive_runs = plan["count"].get<int>() * 3;
    CHECK(exhaustive_runs == 297);
    std::smatch m;
    REQUIRE(
        std::regex_search(search.out, m,
                          std::regex(R"(sweep 2: (\d+) ran \((\d+) ok, (\d+) failed, (\d+) dropped\), (\d+) )"
                                     R"(pruned; (\d+) workload runs)")));
    const int ran = std::stoi(m[1]), ok = std::stoi(m[2]), failed = std::stoi(m[3]),
              dropped = std::stoi(m[4]), pruned = std::stoi(m[5]), runs = std::stoi(m[6]);
    CHECK(runs <= exhaustive_runs * 6 / 10);
    // Counts that add up, and agree with `results list`.
    CHECK(ran == ok + failed + dropped);
    const auto list = json_of({"results", "list", "--db", db, "--json"});
    const auto& counts = list["sweeps"][0]["counts"];  // newest first
    CHECK(counts["ok"] == ok);
    CHECK(counts["failed"].get<int>() + counts["timed_out"].get<int>() == failed);
    CHECK(counts["dropped"] == dropped);
    CHECK(counts["pruned"] == pruned);
    CHECK(counts["total"] == ran + pruned);

    // The answer: the point the search recommends, as the exhaustive sweep measured it.
    const auto best = json_of({"results", "best", "2", "--db", db, "--json"});
    const std::string chosen = best["best"]["canonical"];
    const auto full = medians(db, "1");
    double top = 0;
    for (const auto& [key, value] : full) top = std::max(top, value);
    REQUIRE(full.count(chosen));
    CHECK(full.at(chosen) >= 0.97 * top);
    CHECK(best["recommendation"].get<std::string>().find("NCCL's defaults") != std::string::npos);
}
