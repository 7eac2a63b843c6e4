// End-to-end: a simulated TP-8 sweep, `ncclsweep export --format tuner-profile --best`, and the
// built libnccl-tuner-ncclsweep.so loading that file and answering NCCL's v5 getCollInfo calls
// the way src/enqueue.cc makes them (issue 17's "done when").
#include <nlohmann/json.hpp>

#include "core/nccl/effective_nccl.hpp"
#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"
#include "tests/tuner/tuner_harness.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

/// The NCCL_ALGO / NCCL_PROTO value of the sweep as a cost-table index.
int algo_index(const std::string& value) {
    return value == "allreduce:tree" ? nst_algo_tree : nst_algo_ring;
}
int proto_index(const std::string& value) {
    return value == "LL" ? nst_proto_ll : nst_proto_simple;
}

}  // namespace

TEST_CASE(
    "tuner-profile: sim sweep at TP 8 to a profile the plugin applies to the measured all-reduce only") {
    TempDir dir;
    auto spec = dir.write("s.yaml", sim_spec("e2e-tuner",
                                             "  NCCL_ALGO: [\"allreduce:ring\", \"allreduce:tree\"]\n"
                                             "  NCCL_PROTO: [LL, Simple]\n",
                                             2, "  stall: 30\n  total: 60\n", true));
    const std::string db = (dir.path() / "r.db").string();
    auto run = run_ncclsweep({"run", spec.string(), "--db", db});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);

    // A point that changes NCCL's all-reduce choice (Tree/LL; NCCL's defaults point measures
    // Ring/LL, so the best point here is "leave NCCL alone" and has no rule to export).
    auto json = nlohmann::json::parse(run_ncclsweep({"export", "latest", "--db", db}).out);
    REQUIRE(json["experiments"].size() == 5);  // and NCCL's defaults point, which sets neither
    const std::string best_algo = "allreduce:tree", best_proto = "LL";
    int chosen_id = 0;
    for (const auto& e : json["experiments"]) {
        REQUIRE(e["status"] == "ok");
        if (e["params"].value("NCCL_ALGO", "") == best_algo &&
            e["params"].value("NCCL_PROTO", "") == best_proto)
            chosen_id = e["id"];
    }
    REQUIRE(chosen_id != 0);

    const auto profile = (dir.path() / "profile.txt").string();
    auto exported = run_ncclsweep({"export", "latest", "--db", db, "--format", "tuner-profile",
                                   "--experiment", std::to_string(chosen_id), "-o", profile});
    INFO(exported.err);
    REQUIRE(exported.exit_code == 0);
    const std::string text = read_file(profile);
    INFO(text);
    // kimi-k2.5 (the sim's default) at 4 tokens: 4 x 7168 x 2 = 57,344 B; NCCL_PROTO=LL is what
    // NCCL picks for the all-gather at its defaults: not a rule.
    CHECK(text.find("\nallreduce 57344 57344 8 1 " +
                    std::string(best_algo == "allreduce:tree" ? "tree" : "ring") + " " +
                    (best_proto == "LL" ? "ll" : "simple") + " 0\n") != std::string::npos);
    CHECK(text.find("\nallgather ") == std::string::npos);

    ::setenv("NCCLSWEEP_TUNER_PROFILE", profile.c_str(), 1);
    tuner_log().clear();
    TunerPlugin plugin;
    INFO(plugin.error());
    REQUIRE(plugin.tuner() != nullptr);
    {
        TunerComm comm(plugin.tuner(), 8, 1);
        REQUIRE(comm.init_result() == nst_success);
        auto chosen = comm.select(nst_func_all_reduce, 57344, nvls_favoured_table());
        CHECK(chosen.algo == algo_index(best_algo));
        CHECK(chosen.proto == proto_index(best_proto));
        CHECK(chosen.channels == 0);
        for (auto [func, bytes] : {std::pair{nst_func_all_gather, std::size_t{1310720}},
                                   std::pair{nst_func_all_reduce, std::size_t{100} * 1024 * 1024}}) {
            CostTable table = nvls_favoured_table();
            int channels = 0;
            REQUIRE(comm.call(func, bytes, table, channels) == nst_success);
            CHECK(table == nvls_favoured_table());
            CHECK(channels == 0);
        }
    }

    ::unsetenv("NCCLSWEEP_TUNER_PROFILE");

    // What the plugin logged, as NCCL prints it, is what ncclsweep's effective-NCCL parser reads.
    nccl::EffectiveNccl effective;
    for (const auto& line : tuner_log())
        effective.add_line(std::string(line.level == nst_log_warn ? "gpu:1:1 [0] plugin.c:1 NCCL WARN "
                                                                  : "gpu:1:1 [0] NCCL INFO ") +
                           line.text);
    const std::string upper_algo = algo_index(best_algo) == nst_algo_tree ? "TREE" : "RING";
    const std::string upper_proto = proto_index(best_proto) == nst_proto_ll ? "LL" : "SIMPLE";
    CHECK(effective.summary() ==
          "tuner: profile loaded: 1 rules, 1 for nRanks 8 nNodes 1, AllReduce 57344B -> " + upper_algo + "/" +
              upper_proto + " ch0");
}

TEST_CASE(
    "tuner-profile of a per-collective sweep and the example plugin warning on stderr and in the file") {
    TempDir dir;
    // A per-collective sweep value in NCCL's own syntax: the profile carries each collective's winner.
    auto spec = dir.write(
        "s.yaml",
        sim_spec("e2e-tuner-warn", "  NCCL_ALGO: [\"allreduce:tree;allgather:ring\"]\n  NCCL_PROTO: [LL]\n"));
    const std::string db = (dir.path() / "r.db").string();
    REQUIRE(run_ncclsweep({"run", spec.string(), "--db", db}).exit_code == 0);
    auto example = run_ncclsweep({"export", "latest", "--db", db, "--format", "nccl-tuner", "--best"});
    INFO(example.err);
    REQUIRE(example.exit_code == 0);
    CHECK(example.err.find(
              "NCCL's example tuner plugin caps every collective, matched or not, at one channel") !=
          std::string::npos);
    CHECK(example.out.find("# WARNING: NCCL's example tuner plugin caps every collective") !=
          std::string::npos);
    auto ours =
        run_ncclsweep({"export", "latest", "--db", db, "--format", "tuner-profile", "--experiment", "1"});
    REQUIRE(ours.exit_code == 0);
    CHECK(ours.err.find("WARNING") == std::string::npos);
    CHECK(ours.out.find("\nncclsweep-tuner-profile 1\n") != std::string::npos);
    // Each rule follows a comment saying where it comes from.
    const auto tree_rule = ours.out.find("\nallreduce 57344 57344 8 1 tree ll 0\n");
    CHECK(tree_rule != std::string::npos);
    CHECK(ours.out.find("\nallgather 1310720 1310720 8 1 ring ll 0\n", tree_rule) != std::string::npos);
    auto unknown = run_ncclsweep({"export", "latest", "--db", db, "--format", "tuner-profil"});
    CHECK(unknown.exit_code == 2);
    CHECK(unknown.err.find("tuner-profile") != std::string::npos);
}

TEST_CASE("the sitecustomize lines docs/export.md gives for SGLang and vLLM set the plugin variables") {
    const std::string docs = read_file(source_path("docs/export.md"));
    const auto marker = docs.find("<!-- tuner-sitecustomize:");
    REQUIRE(marker != std::string::npos);
    const auto begin = docs.find("```python\n", marker);
    const auto end = docs.find("```\n", begin + 10);
    REQUIRE((begin != std::string::npos && end != std::string::npos));
    TempDir dir;
    ::unsetenv("NCCLSWEEP_TUNER_PROFILE");  // an earlier case in this process may have set it
    ::unsetenv("NCCL_TUNER_PLUGIN");
    dir.write("site/sitecustomize.py", docs.substr(begin + 10, end - begin - 10));
    const std::string site = "PYTHONPATH=" + (dir.path() / "site").string();
    const std::string show =
        "import os; print(os.environ['NCCL_TUNER_PLUGIN'], os.environ['NCCLSWEEP_TUNER_PROFILE'])";
    auto py = run_command({"python3", "-c", show}, {}, {site});
    INFO(py.err);
    REQUIRE(py.exit_code == 0);
    CHECK(py.out == "/opt/ncclsweep/lib/libnccl-tuner-ncclsweep.so /etc/ncclsweep/tuner-profile.txt\n");
    // setdefault: a value set explicitly for one server still wins.
    auto explicit_value =
        run_command({"python3", "-c", show}, {}, {site, "NCCLSWEEP_TUNER_PROFILE=/tmp/other.txt"});
    CHECK(explicit_value.out == "/opt/ncclsweep/lib/libnccl-tuner-ncclsweep.so /tmp/other.txt\n");
}
