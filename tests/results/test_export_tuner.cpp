// The tuner-profile export, proven by use: every profile is loaded by the built
// libnccl-tuner-ncclsweep.so and driven through NCCL's v5 ABI (tests/tuner/tuner_harness.hpp).
#include <cstdlib>

#include "results/export/exports.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/tuner/tuner_harness.hpp"

using namespace ncclsweep;
using namespace ncclsweep::results::exports;
using namespace ncclsweep::test;
using ncclsweep::results::StoredExperiment;

namespace {

// llama-70b at tp 8: hidden 8192, vocab 128256 (16032 per rank).
constexpr std::size_t k_ar4 = 4 * 8192 * 2;         // 65,536
constexpr std::size_t k_ar32 = 32 * 8192 * 2;       // 524,288
constexpr std::size_t k_ag4 = 4 * 16032 * 2 * 8;    // 1,026,048: the whole logits buffer
constexpr std::size_t k_ag32 = 32 * 16032 * 2 * 8;  // 8,208,384
constexpr std::size_t k_mb100 = 100u * 1024 * 1024;

struct Point {
    std::vector<Assignment> env;
    const char* tokens;
    double tok_s;
    results::ExperimentStatus status = results::ExperimentStatus::ok;
};

SweepData sweep_of(const std::vector<Point>& points, std::string name = "tuner sweep") {
    SweepData sweep;
    sweep.info.id = 5;
    sweep.info.record.name = std::move(name);
    int id = 0;
    for (const auto& p : points) {
        StoredExperiment e;
        e.experiment.id = ++id;
        e.experiment.key = "k" + std::to_string(id);
        e.experiment.env = p.env;
        e.experiment.params = p.env;
        e.experiment.params.emplace_back("tokens", p.tokens);
        e.experiment.workload = {{"model", "llama-70b"}, {"tp", "8"}, {"tokens", p.tokens}};
        e.experiment.argv = {"/usr/local/bin/tpverify", "--json"};
        e.outcome.status = p.status;
        e.outcome.samples = {{0, "tok_s", p.tok_s}, {1, "tok_s", p.tok_s}};
        sweep.experiments.push_back(std::move(e));
    }
    return sweep;
}

Result<std::string> export_profile(const SweepData& sweep, std::optional<int> experiment = std::nullopt) {
    ExportRequest request;
    request.format = results::exports::Format::tuner_profile;
    request.best = !experiment;
    request.experiment = experiment;
    return export_sweep(sweep, request);
}

/// Loads `profile` into the real plugin at nRanks 8, nNodes 1.
struct LoadedProfile {
    TempDir dir;
    TunerPlugin plugin;
    std::unique_ptr<TunerComm> comm;
    explicit LoadedProfile(const std::string& profile) {
        auto path = dir.write("profile.txt", profile).string();
        ::setenv("NCCLSWEEP_TUNER_PROFILE", path.c_str(), 1);
        tuner_log().clear();
        REQUIRE(plugin.tuner() != nullptr);
        comm = std::make_unique<TunerComm>(plugin.tuner(), 8, 1);
        REQUIRE(logged_with(" rejected: ").empty());
        REQUIRE(logged_with(" loaded: ").size() == 1);
    }
    /// NCCL's pick for a collective; untouched when it equals nvls_favoured_table()'s own pick.
    Selection select(nst_func_t func, std::size_t bytes) {
        return comm->select(func, bytes, nvls_favoured_table());
    }
    bool untouched(nst_func_t func, std::size_t bytes) {
        CostTable table = nvls_favoured_table();
        int channels = 0;
        return comm->call(func, bytes, table, channels) == nst_success && table == nvls_favoured_table() &&
               channels == 0;
    }
};

}  // namespace

TEST_CASE(
    "tuner-profile --best: each measured size gets its own winner and the plugin applies exactly those") {
    using S = results::ExperimentStatus;
    auto sweep = sweep_of({
        {{{"NCCL_ALGO", "allreduce:ring"}, {"NCCL_PROTO", "LL"}}, "4", 100},
        {{{"NCCL_ALGO", "allreduce:tree"}, {"NCCL_PROTO", "LL"}}, "4", 120},  // best at 4 tokens
        {{{"NCCL_ALGO", "allreduce:ring;allgather:ring"}, {"NCCL_PROTO", "LL"}}, "32", 90},  // best at 32
        {{{"NCCL_ALGO", "allreduce:tree"}, {"NCCL_PROTO", "LL"}}, "32", 80},
        {{{"NCCL_ALGO", "allreduce:tree"}, {"NCCL_PROTO", "Simple"}}, "32", 999, S::failed},
    });
    auto text = export_profile(sweep);
    REQUIRE(text);
    INFO(*text);
    CHECK(text->find("\nallreduce 65536 65536 8 1 tree ll 0\n") != std::string::npos);
    CHECK(text->find("\nallreduce 524288 524288 8 1 ring ll 0\n") != std::string::npos);
    CHECK(text->find("\nallgather 8208384 8208384 8 1 ring ll 0\n") != std::string::npos);
    CHECK(text->find(
              "# allgather 1026048 bytes: the point forces only the protocol (ll), a profile names both; "
              "left to NCCL") != std::string::npos);
    CHECK(text->find(
              "# experiment 2 (key k2): NCCL_ALGO=allreduce:tree NCCL_PROTO=LL tokens=4; tok_s median 120") !=
          std::string::npos);

    LoadedProfile loaded(*text);
    CHECK(logged_with("loaded: 3 rules, 3 for nRanks 8 nNodes 1").size() == 1);
    auto ar4 = loaded.select(nst_func_all_reduce, k_ar4);
    CHECK((ar4.algo == nst_algo_tree && ar4.proto == nst_proto_ll && ar4.channels == 0));
    auto ar32 = loaded.select(nst_func_all_reduce, k_ar32);
    CHECK((ar32.algo == nst_algo_ring && ar32.proto == nst_proto_ll && ar32.channels == 0));
    auto ag32 = loaded.select(nst_func_all_gather, k_ag32);
    CHECK((ag32.algo == nst_algo_ring && ag32.proto == nst_proto_ll && ag32.channels == 0));
    CHECK(loaded.untouched(nst_func_all_gather, k_ag4));
    CHECK(loaded.untouched(nst_func_all_reduce, k_mb100));
    CHECK(loaded.untouched(nst_func_all_reduce, k_ar4 + 2));
    CHECK(loaded.untouched(nst_func_reduce_scatter, k_ar4));
}

TEST_CASE("tuner-profile --experiment: that point's own sizes only") {
    auto sweep = sweep_of({
        {{{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}}, "4", 100},
        {{{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "LL"}}, "32", 120},
    });
    auto text = export_profile(sweep, 1);
    REQUIRE(text);
    INFO(*text);
    CHECK(text->find("experiment 1 as chosen with --experiment") != std::string::npos);
    LoadedProfile loaded(*text);
    CHECK(logged_with("loaded: 2 rules").size() == 1);  // a bare Ring covers both collectives
    auto ar = loaded.select(nst_func_all_reduce, k_ar4);
    CHECK((ar.algo == nst_algo_ring && ar.proto == nst_proto_simple));
    auto ag = loaded.select(nst_func_all_gather, k_ag4);
    CHECK((ag.algo == nst_algo_ring && ag.proto == nst_proto_simple));
    CHECK(loaded.untouched(nst_func_all_reduce, k_ar32));
}

TEST_CASE("tuner-profile channels: a count only when the sweep varied channels and the winner pins one") {
    auto varied = sweep_of({
        {{{"NCCL_ALGO", "allreduce:ring"},
          {"NCCL_PROTO", "LL"},
          {"NCCL_MIN_CTAS", "2"},
          {"NCCL_MAX_CTAS", "2"}},
         "4",
         100},
        {{{"NCCL_ALGO", "allreduce:ring"},
          {"NCCL_PROTO", "LL"},
          {"NCCL_MIN_CTAS", "4"},
          {"NCCL_MAX_CTAS", "4"}},
         "4",
         130},
    });
    auto text = export_profile(varied);
    REQUIRE(text);
    INFO(*text);
    CHECK(text->find("\nallreduce 65536 65536 8 1 ring ll 4\n") != std::string::npos);
    LoadedProfile loaded(*text);
    CHECK(loaded.select(nst_func_all_reduce, k_ar4).channels == 4);

    // Pinned everywhere but never varied: the sweep did not measure another count, so 0.
    auto fixed = sweep_of({
        {{{"NCCL_ALGO", "allreduce:ring"},
          {"NCCL_PROTO", "LL"},
          {"NCCL_MIN_CTAS", "4"},
          {"NCCL_MAX_CTAS", "4"}},
         "4",
         100},
        {{{"NCCL_ALGO", "allreduce:tree"},
          {"NCCL_PROTO", "LL"},
          {"NCCL_MIN_CTAS", "4"},
          {"NCCL_MAX_CTAS", "4"}},
         "4",
         90},
    });
    auto fixed_text = export_profile(fixed);
    REQUIRE(fixed_text);
    CHECK(fixed_text->find("\nallreduce 65536 65536 8 1 ring ll 0\n") != std::string::npos);
    CHECK(fixed_text->find("channels: 0 = NCCL's own (the sweep did not vary them)") != std::string::npos);

    // Varied, but the winner only bounds them: no count, and the file says why.
    auto bounded = sweep_of({
        {{{"NCCL_ALGO", "allreduce:ring"}, {"NCCL_PROTO", "LL"}, {"NCCL_MAX_CTAS", "8"}}, "4", 200},
        {{{"NCCL_ALGO", "allreduce:ring"}, {"NCCL_PROTO", "LL"}}, "4", 100},
    });
    auto bounded_text = export_profile(bounded);
    REQUIRE(bounded_text);
    CHECK(bounded_text->find("\nallreduce 65536 65536 8 1 ring ll 0\n") != std::string::npos);
    CHECK(bounded_text->find("pins no exact count") != std::string::npos);
}

TEST_CASE("tuner-profile leaves to NCCL what a rule cannot say and keeps hostile names in comments") {
    auto sweep = sweep_of(
        {
            {{{"NCCL_ALGO", "ring,tree"}, {"NCCL_PROTO", "LL"}, {"NCCL_P2P_LEVEL", "SYS"}}, "4", 200},
            {{{"NCCL_PROTO", "LL"}}, "32", 100},
            {{}, "32", 150},
        },
        "evil\nallreduce 0 999999999 8 1 tree ll 0\r\nallgather 0 999999999 8 1 tree ll 0");
    auto text = export_profile(sweep);
    REQUIRE(text);
    INFO(*text);
    CHECK(text->find("allows several algorithms") != std::string::npos);
    CHECK(text->find("the point sets neither algorithm nor protocol, NCCL's own choice won") !=
          std::string::npos);
    CHECK(text->find(
              "not part of a profile (deploy them with --format env if they matter): NCCL_P2P_LEVEL=SYS") !=
          std::string::npos);
    CHECK(text->find("no rules: every collective is NCCL's own choice") != std::string::npos);
    LoadedProfile loaded(*text);
    CHECK(logged_with("loaded: 0 rules").size() == 1);
    CHECK(loaded.untouched(nst_func_all_reduce, k_ar4));
    CHECK(loaded.untouched(nst_func_all_reduce, 5));
}

TEST_CASE("tuner-profile errors say what is missing") {
    auto sweep = sweep_of({{{{"NCCL_ALGO", "allreduce:ring"}, {"NCCL_PROTO", "LL"}}, "4", 100}});
    ExportRequest request;
    request.format = results::exports::Format::tuner_profile;
    request.best = true;
    request.metric = "gbps";
    auto no_metric = export_sweep(sweep, request);
    REQUIRE_FALSE(no_metric);
    CHECK(no_metric.error().message.find("metrics present: tok_s") != std::string::npos);

    auto unknown = sweep;
    unknown.experiments[0].experiment.workload = {{"model", "mystery"}};
    unknown.experiments[0].experiment.argv = {"python3", "serve.py"};
    auto sizes = export_profile(unknown);
    REQUIRE_FALSE(sizes);
    CHECK(sizes.error().message.find("model 'mystery' is not a tpverify preset") != std::string::npos);

    auto bad = sweep;
    bad.experiments[0].experiment.env = {{"NCCL_ALGO", "allreduce:tree,allgather:ring"}};
    bad.experiments[0].experiment.params = {{"NCCL_ALGO", "allreduce:tree,allgather:ring"}};
    auto parse = export_profile(bad, 1);
    REQUIRE_FALSE(parse);
    CHECK(parse.error().message.find("separate entries with ';'") != std::string::npos);
    CHECK(results::exports::parse_format("tuner-profile").value() == results::exports::Format::tuner_profile);
    CHECK(is_point_format(results::exports::Format::tuner_profile));
}

TEST_CASE("nccl-tuner export carries the example plugin's one-channel warning") {
    auto sweep = sweep_of({{{{"NCCL_ALGO", "allreduce:ring"}, {"NCCL_PROTO", "LL"}}, "4", 100}});
    ExportRequest request;
    request.format = results::exports::Format::nccl_tuner;
    request.best = true;
    auto text = export_sweep(sweep, request);
    REQUIRE(text);
    CHECK(
        text->find(
            "\n# WARNING: NCCL's example tuner plugin caps every collective, matched or not, at one channel "
            "(plugins/tuner/example/plugin.c, pluginGetCollInfo sets *nChannels = 1 first)") !=
        std::string::npos);
}
