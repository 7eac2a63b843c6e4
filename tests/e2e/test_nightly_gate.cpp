// End-to-end: the CI nightly gate (docs/ci.md) through the real binaries on the simulated engine.
// Two sweeps with the same settings and different noise seeds must pass the gate; a sweep made
// slower on purpose (another simulated topology) or one that crashes must fail it and be named.
#include <nlohmann/json.hpp>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

/// 4 experiments x 5 repeats (the U test needs >= 4 per side to reach alpha 0.05), 20 measured
/// passes each, 2% simulated noise.
std::string gate_spec(TempDir& dir) {
    return dir
        .write("nightly.yaml", sim_spec("nightly-gate",
                                        "  NCCL_PROTO: [LL, Simple]\n"
                                        "  fusion: [\"off\", \"on\"]\n",
                                        5))
        .string();
}

CommandResult nightly_run(const std::string& spec, const std::string& db,
                          const std::vector<std::string>& sets) {
    std::vector<std::string> args{"run",     spec,    "--db",     db,      "--tag",
                                  "nightly", "--set", "iters=20", "--set", "noise=0.02"};
    for (const auto& s : sets) {
        args.push_back("--set");
        args.push_back(s);
    }
    return test::run_ncclsweep(args);
}

CommandResult gate(const std::string& db, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"diff", "latest:nightly~1",    "latest:nightly", "--db",
                                  db,     "--fail-on-regression"};
    args.insert(args.end(), extra.begin(), extra.end());
    return test::run_ncclsweep(args);
}

}  // namespace

TEST_CASE("nightly gate: same settings with another seed pass, a slower topology fails and is named") {
    TempDir dir;
    const std::string spec = gate_spec(dir);
    const std::string db = (dir.path() / "nightly.db").string();

    auto first = nightly_run(spec, db, {"seed=11"});
    INFO(first.err);
    REQUIRE(first.exit_code == 0);
    // First night: there is no previous sweep, and the error says so.
    auto lonely = gate(db);
    CHECK(lonely.exit_code == 2);
    CHECK(lonely.err.find("'latest:nightly~1' needs 2 sweeps tagged 'nightly'") != std::string::npos);

    auto second = nightly_run(spec, db, {"seed=12"});
    INFO(second.err);
    REQUIRE(second.exit_code == 0);
    auto quiet = gate(db);
    INFO(quiet.out << quiet.err);
    CHECK(quiet.exit_code == 0);  // must not cry wolf
    CHECK(quiet.out.find("summary: 0 regressed") != std::string::npos);
    CHECK(quiet.out.find("regressed: experiment") == std::string::npos);
    CHECK(quiet.out.find("settings that differ: seed: 11 -> 12\n") != std::string::npos);
    // False alarms controlled over the whole diff, and what it could see (docs/statistics.md).
    CHECK(quiet.out.find("significant after Holm's correction over the diff's 4 comparisons") !=
          std::string::npos);
    CHECK(quiet.out.find("can see") != std::string::npos);
    CHECK(quiet.out.find("to catch a 5% slowdown of one experiment in 90% of nights") != std::string::npos);
    const auto recorded = latest_experiments(db);
    REQUIRE(recorded.size() == 4);  // an unreadable database must not pass as "no experiment had too few"
    for (const auto& e : recorded) CHECK(e.outcome.samples.size() >= 5);

    auto slower = nightly_run(spec, db, {"seed=13", "topology=pcie-gen4"});
    INFO(slower.err);
    REQUIRE(slower.exit_code == 0);
    auto caught = gate(db);
    INFO(caught.out << caught.err);
    CHECK(caught.exit_code == 1);
    CHECK(caught.err.find("--fail-on-regression") != std::string::npos);
    // The diff says what changed between the two nights, not only what got slower.
    CHECK(caught.out.find("settings that differ: topology: pcie-gen5 -> pcie-gen4; seed: 12 -> 13") !=
          std::string::npos);
    // Every regressed experiment is named in the table output, with its parameters.
    auto json =
        test::run_ncclsweep({"diff", "latest:nightly~1", "latest:nightly", "--db", db, "--format", "json"});
    REQUIRE(json.exit_code == 0);  // without --fail-on-regression a regression is not an error
    auto doc = nlohmann::json::parse(json.out);
    CHECK(doc["regression"] == true);
    int named = 0;
    for (const auto& e : doc["experiments"]) {
        if (e["verdict"] != "regression") continue;
        ++named;
        CHECK(e["metrics"]["tok_s"]["delta"].get<double>() < -0.03);
        std::string label = "regressed: experiment " + std::to_string(e["new_id"].get<int>()) +
                            " (NCCL_PROTO=" + e["changed"]["NCCL_PROTO"].get<std::string>() +
                            " fusion=" + e["changed"]["fusion"].get<std::string>() + "): tok_s -";
        CHECK(caught.out.find(label) != std::string::npos);
    }
    CHECK(named >= 3);
    // The markdown form (for a pull-request comment) carries the same verdict.
    auto markdown = gate(db, {"--format", "markdown"});
    CHECK(markdown.exit_code == 1);
    CHECK(markdown.out.find("### tok_s [tok/s] (higher is better)") != std::string::npos);
}

TEST_CASE("nightly gate: an experiment that starts crashing is a regression with its failure class") {
    TempDir dir;
    const std::string spec = gate_spec(dir);
    const std::string db = (dir.path() / "nightly.db").string();
    REQUIRE(nightly_run(spec, db, {"seed=21"}).exit_code == 0);
    auto broken = nightly_run(spec, db, {"seed=22", "inject=nccl-error"});
    INFO(broken.err);
    // Failed experiments are results (the gate below reads them); none succeeded, so run exits 1.
    REQUIRE(broken.exit_code == 1);
    auto caught = gate(db);
    INFO(caught.out << caught.err);
    CHECK(caught.exit_code == 1);
    CHECK(caught.out.find("ok -> failed (nccl)") != std::string::npos);
    CHECK(caught.out.find("summary: 4 regressed") != std::string::npos);
}
