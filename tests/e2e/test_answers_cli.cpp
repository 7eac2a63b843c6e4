// End-to-end: answers a user can act on. One metric definition (a `warm_s` sweep: run,
// results best, export --best and the report all pick the lower value), one "best" rule on a
// simulated fusion sweep (fusion=on named, inert settings left out, SIMULATED said), engine
// parameters checked before anything runs, --set repeats, and the exit status of a sweep
// whose every experiment failed.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

// LL warms up in 3 s, Simple in 7 s; Simple is listed first so "first seen" is never "best".
const char* k_warm_spec = R"(sweep: e2e-warm
target: local
workload:
  command: 'case "$NCCL_PROTO" in LL) echo "warm 3";; *) echo "warm 7";; esac'
  metrics:
    warm_s: 'warm ([0-9.]+)'
axes:
  NCCL_PROTO: [Simple, LL]
)";

/// The experiment whose bar the report marks best: the <title> just before `class="bar best"`.
std::string best_bar_title(const std::string& html) {
    auto bar = html.find("class=\"bar best\"");
    if (bar == std::string::npos) return {};
    auto title = html.rfind("<title>experiment ", bar);
    if (title == std::string::npos) return {};
    return html.substr(title + 7, html.find("</title>", title) - title - 7);
}

}  // namespace

TEST_CASE(
    "answers: a lower-is-better metric picks the same point in run - results best - export and report") {
    TempDir dir;
    auto spec = dir.write("warm.yaml", k_warm_spec);
    const std::string db = (dir.path() / "w.db").string();
    auto run = run_ncclsweep({"run", spec.string(), "--db", db, "--metric", "warm_s"});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    // Stated against NCCL's defaults point (experiment 3: NCCL_PROTO unset, warm 7).
    CHECK(run.out.find("recommended (warm_s, lower is better): experiment 2 (NCCL_PROTO=LL): +57.1 % over "
                       "NCCL's defaults (experiment 3") != std::string::npos);
    // The summary lists the better point first.
    CHECK(run.out.find("NCCL_PROTO=LL") < run.out.find("NCCL_PROTO=Simple"));

    auto best = run_ncclsweep({"results", "best", "--db", db, "--metric", "warm_s", "--json"});
    INFO(best.err);
    REQUIRE(best.exit_code == 0);
    auto j = nlohmann::json::parse(best.out);
    CHECK(j["best"]["id"] == 2);
    CHECK(j["metric"]["direction"] == "lower_is_better");

    auto env =
        run_ncclsweep({"export", "latest", "--db", db, "--format", "env", "--best", "--metric", "warm_s"});
    INFO(env.err);
    REQUIRE(env.exit_code == 0);
    CHECK(env.out.find("NCCL_PROTO='LL'") != std::string::npos);
    CHECK(env.out.find("Simple") == std::string::npos);
    CHECK(env.out.find("# evidence: warm_s median 3") != std::string::npos);

    const std::string html_path = (dir.path() / "r.html").string();
    auto report = run_ncclsweep({"report", "latest", "--db", db, "--metric", "warm_s", "-o", html_path});
    INFO(report.err);
    REQUIRE(report.exit_code == 0);
    CHECK(best_bar_title(read_file(html_path)).find("experiment 2:") == 0);
}

TEST_CASE(
    "answers: on a simulated fusion sweep best and export --best deploy NCCL settings, show fusion=on as a "
    "what-if and say the data are simulated") {
    TempDir dir;
    auto spec =
        dir.write("f.yaml", sim_spec("e2e-fusion", "  fusion: ['off', 'on']\n  NCCL_NTHREADS: [64, 512]\n", 3,
                                     "  stall: 30\n  total: 60\n", true));
    const std::string db = (dir.path() / "f.db").string();
    auto run = run_ncclsweep({"run", spec.string(), "--db", db});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);

    auto best = run_ncclsweep({"results", "best", "--db", db});
    INFO(best.out);
    REQUIRE(best.exit_code == 0);
    // fusion=on is a server change, not an NCCL setting: a what-if beside the recommendation.
    const std::string params_line = best.out.substr(best.out.find("parameters"), 60);
    CHECK(params_line.find("fusion=off") != std::string::npos);
    CHECK(best.out.find("what-if: a server with a fused all-reduce") != std::string::npos);
    CHECK(best.out.find("fusion=on") != std::string::npos);
    CHECK(best.out.find("SIMULATED") != std::string::npos);
    // NCCL's defaults point with fusion on ties the best thread counts: nothing to change.
    CHECK(best.out.find("no setting beats NCCL's defaults: leave NCCL alone") != std::string::npos);

    auto env = run_ncclsweep({"export", "latest", "--db", db, "--format", "env", "--best"});
    INFO(env.out);
    REQUIRE(env.exit_code == 0);
    CHECK(env.out.find("workload parameters (set them on your server; they are not NCCL variables): ") !=
          std::string::npos);
    CHECK(env.out.find("# left out: what-if: a server with a fused all-reduce") != std::string::npos);
    CHECK(env.out.find("SIMULATED") != std::string::npos);
    // The thread count made no difference: the defaults point is exported, setting no NCCL variable.
    CHECK(env.out.find("(NCCL's defaults point)") != std::string::npos);
    CHECK(env.out.find("leave NCCL alone") != std::string::npos);
    CHECK(env.out.find("\nNCCL_") == std::string::npos);
    CHECK(env.out.find("# margin") != std::string::npos);

    const std::string html_path = (dir.path() / "f.html").string();
    auto report = run_ncclsweep({"report", "latest", "--db", db, "-o", html_path});
    REQUIRE(report.exit_code == 0);
    const std::string html = read_file(html_path);
    CHECK(html.find("SIMULATED") != std::string::npos);
    CHECK(best_bar_title(html).find("fusion=off") != std::string::npos);
    CHECK(html.find("what-if: a server with a fused all-reduce") != std::string::npos);

    auto json = run_ncclsweep({"results", "list", "--db", db, "--json"});
    REQUIRE(json.exit_code == 0);
    auto listed = nlohmann::json::parse(json.out);
    CHECK(listed["sweeps"][0]["backend"] == "sim");
    CHECK(listed["sweeps"][0]["simulated"] == true);
}

TEST_CASE("answers: plan checks engine parameters against tpverify's own schema") {
    TempDir dir;
    auto typo =
        dir.write("t.yaml",
                  "sweep: t\ntarget: local\nworkload:\n  engine: tpverify\n  args:\n    topolgy: nvlink\n"
                  "axes:\n  NCCL_PROTO: [LL]\n");
    auto r = run_ncclsweep({"plan", typo.string()});
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("t.yaml:6") != std::string::npos);
    CHECK(r.err.find("'topolgy'; did you mean 'topology'?") != std::string::npos);
    CHECK(r.out.empty());

    auto maybe = dir.write(
        "m.yaml",
        "sweep: m\ntarget: local\nworkload:\n  engine: tpverify\naxes:\n  fusion: ['off', maybe]\n");
    auto m = run_ncclsweep({"plan", maybe.string()});
    INFO(m.err);
    CHECK(m.exit_code == 2);
    CHECK(m.err.find("fusion: 'maybe' is not one of") != std::string::npos);

    auto good = dir.write(
        "g.yaml", "sweep: g\ntarget: local\nworkload:\n  engine: tpverify\naxes:\n  fusion: ['off', 'on']\n");
    CHECK(run_ncclsweep({"plan", good.string()}).exit_code == 0);
    auto axis = run_ncclsweep({"plan", good.string(), "--axis", "fusoin=on,off"});
    CHECK(axis.exit_code == 2);
    CHECK(axis.err.find("did you mean 'fusion'?") != std::string::npos);
}

TEST_CASE("answers: plan and run refuse a tp the model does not split over before anything runs") {
    TempDir dir;
    // kimi-k2.5 (the default model): 64 attention heads do not split over 3 ranks.
    auto fixed = dir.write("tp3.yaml",
                           "sweep: tp3\ntarget: local\nworkload:\n  engine: tpverify\n  args:\n"
                           "    backend: sim\n    tp: 3\naxes:\n  NCCL_PROTO: [LL]\n");
    auto r = run_ncclsweep({"plan", fixed.string()});
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("tp3.yaml:7:") != std::string::npos);
    CHECK(r.err.find(": tp: 3: tpverify cannot run experiment 1 (") != std::string::npos);
    CHECK(r.err.find("the attention heads (64) does not split evenly over 3 ranks") != std::string::npos);
    CHECK(r.out.empty());
    // The same through --axis: the flag is named, and the other value is fine.
    auto good = dir.write("tp.yaml",
                          "sweep: tp\ntarget: local\nworkload:\n  engine: tpverify\n  args:\n"
                          "    backend: sim\naxes:\n  tp: [1, 8]\n");
    CHECK(run_ncclsweep({"plan", good.string()}).exit_code == 0);
    auto axis = run_ncclsweep({"plan", good.string(), "--axis", "tp=8,3"});
    INFO(axis.err);
    CHECK(axis.exit_code == 2);
    CHECK(axis.err.find("--axis: tp: 3: tpverify cannot run experiment 2") != std::string::npos);
    // run refuses it too, and leaves no sweep behind.
    const std::string db = (dir.path() / "tp.db").string();
    auto run = run_ncclsweep({"run", fixed.string(), "--db", db});
    INFO(run.err);
    CHECK(run.exit_code == 2);
    CHECK(run.err.find("tpverify cannot run experiment 1") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(db));
}

TEST_CASE("answers: --set repeats=2 sets the sweep's repeats - not an engine flag") {
    TempDir dir;
    auto spec = dir.write("r.yaml", sim_spec("e2e-repeats", "  NCCL_PROTO: [LL]\n", 3));
    const std::string db = (dir.path() / "r.db").string();
    auto run = run_ncclsweep({"run", spec.string(), "--db", db, "--set", "repeats=2"});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    auto all = latest_experiments(db);
    REQUIRE(all.size() == 1);
    int tok_s = 0;
    for (const auto& s : all[0].outcome.samples) tok_s += s.metric == "tok_s";
    CHECK(tok_s == 2);
    for (const auto& arg : all[0].experiment.argv) CHECK(arg != "--repeats");
}

TEST_CASE("answers: a sweep whose every experiment failed exits 1 and says so") {
    TempDir dir;
    auto spec =
        dir.write("x.yaml",
                  "sweep: e2e-all-fail\ntarget: local\nworkload:\n  command: 'echo broken >&2; exit 3'\n"
                  "axes:\n  NCCL_PROTO: [LL, Simple]\n");
    const std::string db = (dir.path() / "x.db").string();
    auto run = run_ncclsweep({"run", spec.string(), "--db", db});
    INFO(run.err);
    CHECK(run.exit_code == 1);
    CHECK(run.err.find("no experiment succeeded") != std::string::npos);
    CHECK(latest_experiments(db).size() == 3);  // LL, Simple and NCCL's defaults point
}
