// End-to-end: the CI nightly gate (docs/ci.md) through the real binaries on the simulated engine.
// Two sweeps with the same settings and different noise seeds must pass the gate; a sweep made
// slower on purpose (another simulated topology) or one that crashes must fail it and be named.
#include <nlohmann/json.hpp>

#include <algorithm>

#include "core/stats/stats.hpp"
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

TEST_CASE("nightly gate: repeats: auto runs the default first, then what the last night's noise needs") {
    TempDir dir;
    std::string text = sim_spec("nightly-auto",
                                "  NCCL_PROTO: [LL, Simple]\n"
                                "  fusion: [\"off\", \"on\"]\n",
                                5);
    text.replace(text.find("repeats: 5"), 10, "repeats: {auto: {alpha: 0.05, default: 5, max: 40}}");
    const std::string spec = dir.write("nightly.yaml", text).string();
    const std::string db = (dir.path() / "nightly.db").string();

    // plan cannot know the noise: it says how run decides.
    auto plan = test::run_ncclsweep({"plan", spec});
    INFO(plan.out << plan.err);
    REQUIRE(plan.exit_code == 0);
    CHECK(plan.out.find("sweep nightly-auto: 4 experiments x auto repeats;") != std::string::npos);
    CHECK(plan.out.find("repeats: auto, decided by `run` from the noise of the previous sweep") !=
          std::string::npos);

    // The first night has nothing to learn from: the default, said.
    auto first = nightly_run(spec, db, {"seed=31"});
    INFO(first.err);
    REQUIRE(first.exit_code == 0);
    CHECK(first.err.find("repeats: auto -> 5 (the default: no earlier sweep with the tag 'nightly' has "
                         "tok_s samples") != std::string::npos);
    const auto night1 = latest_experiments(db);
    REQUIRE(night1.size() == 4);
    std::vector<double> noises;
    for (const auto& e : night1) {
        std::vector<double> tok_s;
        for (const auto& sample : e.outcome.samples)
            if (sample.metric == "tok_s") tok_s.push_back(sample.value);
        CHECK(tok_s.size() == 5);  // samples holds every metric of every repeat
        noises.push_back(stats::relative_noise_corrected(tok_s));
    }
    // The second night runs what the model needs at the largest (small-sample corrected) noise of
    // an experiment on the first night, and says so.
    const auto expected =
        stats::repeats_for_gate(*std::max_element(noises.begin(), noises.end()), 4, 0.05, 40);
    REQUIRE_FALSE(expected.capped);
    auto second = nightly_run(spec, db, {"seed=32"});
    INFO(second.err);
    REQUIRE(second.exit_code == 0);
    CHECK(second.err.find("repeats: auto -> " + std::to_string(expected.repeats) + " (noise ") !=
          std::string::npos);
    CHECK(second.err.find(
              "per run in tok_s (the largest over 4 experiments, small-sample corrected) from sweep 1; to "
              "catch a 5% slowdown of "
              "one experiment in 90% of nights with Holm over 4 comparisons at alpha 0.05)") !=
          std::string::npos);
    for (const auto& e : latest_experiments(db))
        CHECK(std::count_if(e.outcome.samples.begin(), e.outcome.samples.end(),
                            [](const auto& sample) { return sample.metric == "tok_s"; }) == expected.repeats);
    // Stored with the sweep: its repeats and the line as a sweep event.
    auto listed = test::run_ncclsweep({"results", "list", "--db", db, "--json"});
    REQUIRE(listed.exit_code == 0);
    auto sweeps = nlohmann::json::parse(listed.out)["sweeps"];
    REQUIRE(sweeps.size() == 2);
    CHECK(sweeps[0]["repeats"] == expected.repeats);
    results::StoreOptions read_only;
    read_only.access = results::Access::read_only;
    auto store = results::Store::open(db, read_only);
    REQUIRE(store.ok());
    auto events = store->load_sweep_events(2);
    REQUIRE(events.ok());
    int noted = 0;
    for (const auto& event : *events)
        if (event.code == "repeats_auto") {
            ++noted;
            CHECK(event.message.find("repeats: auto -> " + std::to_string(expected.repeats) + " (noise ") ==
                  0);
        }
    CHECK(noted == 1);
    // The gate reads the two nights as any other.
    CHECK(gate(db).exit_code == 0);
}

TEST_CASE("nightly gate: an invalid repeats value is a located spec error") {
    TempDir dir;
    std::string text = sim_spec("nightly-bad", "  fusion: [\"off\", \"on\"]\n", 5);
    text.replace(text.find("repeats: 5"), 10, "repeats: sometimes");
    const std::string spec = dir.write("nightly.yaml", text).string();
    const std::string db = (dir.path() / "x.db").string();
    for (const auto& args :
         {std::vector<std::string>{"plan", spec}, std::vector<std::string>{"run", spec, "--db", db}}) {
        auto result = test::run_ncclsweep(args);
        INFO(args[0] << ": " << result.err);
        CHECK(result.exit_code == 2);
        CHECK(
            result.err.find("nightly.yaml:14:10: repeats must be a whole number from 1 to 1000 or `auto`") !=
            std::string::npos);
    }
}
