// End-to-end: `ncclsweep export` on a real sweep of the simulated engine; every format is read
// back by the tool that consumes it (xml.etree, python3 importing sitecustomize, sh, json).
#include <nlohmann/json.hpp>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

/// One sweep: Ring and allreduce:tree work, bare Tree fails in the sim (AllGather has no Tree).
std::string run_sweep(const TempDir& dir) {
    auto spec = dir.write("s.yaml", sim_spec("e2e-export",
                                             "  NCCL_ALGO: [Ring, \"allreduce:tree\", Tree]\n"
                                             "  NCCL_PROTO: [LL]\n"
                                             "  tokens: [4, 16]\n",
                                             2));
    std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep({"run", spec.string(), "--db", db});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return db;
}

}  // namespace

TEST_CASE("export: json, csv, md and junit of a real sweep, junit parses with xml.etree") {
    TempDir dir;
    std::string db = run_sweep(dir);
    auto json = run_ncclsweep({"export", "latest", "--db", db});
    INFO(json.err);
    REQUIRE(json.exit_code == 0);
    auto j = nlohmann::json::parse(json.out);
    REQUIRE(j["experiments"].size() == 6);
    int failed = 0;
    for (const auto& e : j["experiments"]) failed += e["status"] != "ok";
    CHECK(failed == 2);

    auto junit_path = (dir.path() / "junit.xml").string();
    auto junit = run_ncclsweep({"export", "latest", "--db", db, "--format", "junit", "-o", junit_path});
    INFO(junit.err);
    REQUIRE(junit.exit_code == 0);
    CHECK(junit.out.empty());
    auto parsed = run_command(
        {"python3", "-c",
         "import sys, xml.etree.ElementTree as ET\n"
         "s = ET.parse(sys.argv[1]).getroot().find('testsuite')\n"
         "cases = s.findall('testcase')\n"
         "print(len(cases), len([c for c in cases if c.find('failure') is not None]),\n"
         "      sorted({c.find('failure').get('type') for c in cases if c.find('failure') is not None}))\n",
         junit_path});
    INFO(parsed.err);
    REQUIRE(parsed.exit_code == 0);
    CHECK(parsed.out.rfind("6 2 ", 0) == 0);

    auto csv = run_ncclsweep({"export", "latest", "--db", db, "--format", "csv"});
    REQUIRE(csv.exit_code == 0);
    CHECK(csv.out.rfind("sweep_id,sweep,exp_id,key,param:NCCL_ALGO,", 0) == 0);
    auto md = run_ncclsweep({"export", "1", "--db", db, "--format", "md"});
    REQUIRE(md.exit_code == 0);
    CHECK(md.out.find("| id | NCCL\\_ALGO | tokens |") != std::string::npos);

    // stdout that cannot take the output (a full disk behind a redirect) is an error, for export
    // and for the HTML report alike, not a silent success.
    const std::string tool = binary_path("cli/ncclsweep").string();
    for (const char* args : {"export latest --format csv", "report latest -o -"}) {
        auto full = run_command(
            {"sh", "-c", "exec \"$0\" " + std::string(args) + " --db \"$1\" > /dev/full", tool, db});
        INFO(args << ": " << full.err);
        CHECK(full.exit_code == 3);
        CHECK(full.err.find("cannot write the output to stdout") != std::string::npos);
    }
}

TEST_CASE("export: the best point as sitecustomize, env and tuner lines works where it is deployed") {
    TempDir dir;
    std::string db = run_sweep(dir);
    auto json = nlohmann::json::parse(run_ncclsweep({"export", "latest", "--db", db}).out);
    std::string best_algo;
    double best = -1;
    for (const auto& e : json["experiments"])
        if (e["status"] == "ok" && e["metrics"]["tok_s"]["median"].get<double>() > best) {
            best = e["metrics"]["tok_s"]["median"];
            best_algo = e["params"]["NCCL_ALGO"];
        }
    REQUIRE_FALSE(best_algo.empty());

    auto site = (dir.path() / "site").string();
    std::filesystem::create_directories(site);
    auto sc = run_ncclsweep({"export", "latest", "--db", db, "--format", "sitecustomize", "--best", "-o",
                             site + "/sitecustomize.py"});
    INFO(sc.err);
    REQUIRE(sc.exit_code == 0);
    auto py = run_command(
        {"python3", "-c", "import os; print(os.environ.get('NCCL_ALGO'), os.environ.get('NCCL_PROTO'))"}, {},
        {"PYTHONPATH=" + site});
    INFO(py.err);
    REQUIRE(py.exit_code == 0);
    // Deployed scoped to the collectives the point ran (no defaults point here: each measured
    // collective counts as changed), and the same as the env export of the same point.
    auto best_env = run_ncclsweep({"export", "latest", "--db", db, "--format", "env", "--best", "-o",
                                   (dir.path() / "best.env").string()});
    REQUIRE(best_env.exit_code == 0);
    auto best_sh = run_command({"sh", "-c", "set -a; . \"$1\"; echo \"$NCCL_ALGO $NCCL_PROTO\"", "sh",
                                (dir.path() / "best.env").string()});
    CHECK(py.out == best_sh.out);
    CHECK(py.out.find("allreduce:") != std::string::npos);
    CHECK(py.out.find("allgather:LL;allreduce:LL\n") != std::string::npos);

    auto env = run_ncclsweep({"export", "latest", "--db", db, "--format", "env", "--experiment", "1", "-o",
                              (dir.path() / "x.env").string()});
    REQUIRE(env.exit_code == 0);
    auto sh = run_command({"sh", "-c", "set -a; . \"$1\"; echo \"$NCCL_ALGO/$NCCL_PROTO\"", "sh",
                           (dir.path() / "x.env").string()});
    CHECK(sh.out == "allgather:ring;allreduce:ring/allgather:LL;allreduce:LL\n");  // Ring, scoped

    auto tuner = run_ncclsweep({"export", "latest", "--db", db, "--format", "nccl-tuner", "--best"});
    INFO(tuner.err);
    REQUIRE(tuner.exit_code == 0);
    // kimi-k2.5 (the sim's default model): hidden 7168; tokens 4..16; tp 8.
    std::string algo = best_algo == "Ring" ? "ring" : "tree";
    CHECK(tuner.out.find("\nallreduce," + std::to_string(4 * 7168 * 2) + "," + std::to_string(16 * 7168 * 2) +
                         "," + algo + ",ll,-1,1,8,-1,-1\n") != std::string::npos);
    for (std::size_t pos = 0; pos < tuner.out.size();) {
        std::size_t end = tuner.out.find('\n', pos);
        std::string line = tuner.out.substr(pos, end - pos);
        CHECK(line.size() < 255);
        CHECK((line[0] == '#' || line.rfind("allreduce,", 0) == 0 || line.rfind("allgather,", 0) == 0));
        pos = end + 1;
    }
}

TEST_CASE("export: bad flags exit 2, a missing database exits 3, with messages that say what to do") {
    TempDir dir;
    std::string db = run_sweep(dir);
    auto format = run_ncclsweep({"export", "latest", "--db", db, "--format", "xml"});
    CHECK(format.exit_code == 2);
    CHECK(format.err.find("unknown format; use json, csv, md, junit") != std::string::npos);
    auto best_csv = run_ncclsweep({"export", "latest", "--db", db, "--format", "csv", "--best"});
    CHECK(best_csv.exit_code == 2);
    auto no_point = run_ncclsweep({"export", "latest", "--db", db, "--format", "env"});
    CHECK(no_point.exit_code == 2);
    CHECK(no_point.err.find("--best") != std::string::npos);
    auto no_metric =
        run_ncclsweep({"export", "latest", "--db", db, "--format", "env", "--best", "--metric", "gbps"});
    CHECK(no_metric.exit_code == 2);
    CHECK(no_metric.err.find("metrics present: ") != std::string::npos);
    CHECK(no_metric.err.find(" tok_s,") != std::string::npos);
    auto ref = run_ncclsweep({"export", "latest:nope", "--db", db});
    CHECK(ref.exit_code == 2);
    auto missing = run_ncclsweep({"export", "latest", "--db", (dir.path() / "none.db").string()});
    CHECK(missing.exit_code == 3);
    auto unwritable =
        run_ncclsweep({"export", "latest", "--db", db, "-o", (dir.path() / "no/such/dir/x.json").string()});
    CHECK(unwritable.exit_code == 3);
    CHECK(unwritable.err.find("no/such/dir/x.json") != std::string::npos);
}
