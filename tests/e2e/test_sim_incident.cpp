// The sim end to end: the incident reproduced by `ncclsweep run experiments/incident-pcie.yaml`,
// a calibration from nccl-tests logs (`ncclsweep calibrate`) deciding a sweep's ranking, and the
// sim's marked NCCL lines still read by the watcher's rules.
#include <algorithm>
#include <sstream>

#include "core/nccl/effective_nccl.hpp"
#include "core/watch/rule_catalog.hpp"
#include "tests/e2e/e2e_support.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {
const results::StoredExperiment* with_param(const std::vector<results::StoredExperiment>& all,
                                            const std::string& name, const std::string& value) {
    for (const auto& e : all)
        for (const auto& [n, v] : e.experiment.params)
            if (n == name && v == value) return &e;
    return nullptr;
}

double median_of(const results::StoredExperiment& e, const std::string& metric) {
    std::vector<double> values;
    for (const auto& s : e.outcome.samples)
        if (s.metric == metric) values.push_back(s.value);
    REQUIRE(!values.empty());
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

/// An 8-rank log in nccl-tests 2.19's layout (as all_reduce_perf prints it), `env` in front of
/// the command, `us57` the time at 57344 B.
std::string all_reduce_log(const std::string& env, double us14, double us57) {
    std::string text =
        "$ " + env +
        " ./build/all_reduce_perf -b 8K -e 64K -f 2 -g 8\n"
        "# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803\n"
        "# Collective test starting: all_reduce_perf\n"
        "# nThread 1 nGpus 8 minBytes 8192 maxBytes 65536 step: 2(factor) warmup iters: 1 iters: 20 "
        "agg iters: 1 validation: 1 graph: 0 unalign: 0\n#\n# Using devices\n";
    for (int r = 0; r < 8; ++r)
        text += "#  Rank  " + std::to_string(r) + " Group  0 Pid   4242 on      box device  " +
                std::to_string(r) + " [0000:0" + std::to_string(r) +
                ":00] NVIDIA RTX PRO 6000 Blackwell Server Edition\n";
    text +=
        "#\n#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   "
        "algbw   busbw  #wrong\n";
    const auto row = [](int bytes, double us) {
        return "       " + std::to_string(bytes) + "          " + std::to_string(bytes / 2) +
               "      bfloat16     sum      -1   " + std::to_string(us) + "    1.00    1.75       0   " +
               std::to_string(us) + "    1.00    1.75       0\n";
    };
    text += row(8192, us14 * 0.8) + row(16384, us14 * 1.1) + row(32768, us57 * 0.7) + row(65536, us57 * 1.1);
    text += "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.5 \n#\n";
    return text;
}
}  // namespace

TEST_CASE(
    "sim incident: ncclsweep run experiments/incident-pcie.yaml records the published 30 ms verify, 90 tok/s "
    "baseline and 54.8 tok/s") {
    TempDir dir;
    const std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep({"run", source_path("experiments/incident-pcie.yaml").string(), "--db", db});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto experiments = latest_experiments(db);
    const auto* incident = with_param(experiments, "fusion", "off");  // the incident's default point
    REQUIRE(incident != nullptr);
    REQUIRE(incident->outcome.status == results::ExperimentStatus::ok);
    // The Done-when: verify p50 30 ms and 54.8 tok/s, each within 10 %.
    const double tok_s = median_of(*incident, "tok_s");
    const double p50 = median_of(*incident, "verify_us_p50");
    CHECK(p50 == Approx(30000).epsilon(0.10));
    CHECK(tok_s == Approx(54.8).epsilon(0.10));
    CHECK(tok_s == Approx(3.2e6 / (p50 + 28394)).epsilon(0.02));
    CHECK(median_of(*incident, "baseline_tok_s") == Approx(90).epsilon(0.10));
    // Both calibration points are what the published pass times leave after the sim's GPU model
    // (experiments/incident-pcie.calibration), so with the yaml's 1 % noise the medians sit within
    // 3 % of the published 30 ms and 90 tok/s; a change to the GPU model that is not followed by
    // re-deriving the calibration moves them and fails here.
    CHECK(p50 == Approx(30000).epsilon(0.03));
    CHECK(median_of(*incident, "baseline_tok_s") == Approx(90).epsilon(0.03));
    // NCCL's share is the residual: ~20.1 ms, not the published split's ~25 ms, which would leave
    // less GPU time than the pass's 10.63 GB per rank take at the card's peak bandwidth
    // (docs/engine.md, "The incident, reproduced").
    CHECK(median_of(*incident, "comm_pass_us") == Approx(20063).epsilon(0.03));
    // The repeats differ as a machine's would (seeded per experiment and repeat).
    std::vector<double> repeats;
    for (const auto& s : incident->outcome.samples)
        if (s.metric == "tok_s") repeats.push_back(s.value);
    REQUIRE(repeats.size() == 3);
    CHECK(repeats[0] != repeats[1]);
}

TEST_CASE("sim incident: a calibration from nccl-tests logs decides the ranking of a sweep") {
    TempDir dir;
    std::filesystem::create_directories(dir.path() / "logs");
    // NCCL_PROTO=LL is faster at 57 KB than Simple on this (pretend) machine.
    dir.write("logs/ar_ll.log", all_reduce_log("NCCL_PROTO=LL", 30, 90));
    dir.write("logs/ar_simple.log", all_reduce_log("NCCL_PROTO=Simple", 60, 240));
    dir.write("logs/notes.txt", "what I ran\n");
    const std::string cal = (dir.path() / "cal.txt").string();
    auto made = run_ncclsweep({"calibrate", (dir.path() / "logs").string(), "-o", cal});
    INFO(made.err);
    REQUIRE(made.exit_code == 0);
    CHECK(made.err.find("skipped notes.txt") != std::string::npos);
    const std::string text = read_file(cal);
    CHECK(text.find("setting NCCL_PROTO=LL\ntable all_reduce 8") != std::string::npos);

    std::string spec = sim_spec("e2e-calibrated", "  NCCL_PROTO: [LL, Simple]\n");
    spec.replace(spec.find("    tp: 8\n"), 10, "    tp: 8\n    calibration: " + cal + "\n");
    auto path = dir.write("s.yaml", spec);
    const std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep({"run", path.string(), "--db", db});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto experiments = latest_experiments(db);
    const auto* ll = with_param(experiments, "NCCL_PROTO", "LL");
    const auto* simple = with_param(experiments, "NCCL_PROTO", "Simple");
    REQUIRE(ll != nullptr);
    REQUIRE(simple != nullptr);
    CHECK(median_of(*ll, "tok_s") > 1.3 * median_of(*simple, "tok_s"));
    // No such directory: exit 2 with the reason.
    auto missing = run_ncclsweep({"calibrate", (dir.path() / "nope").string()});
    CHECK(missing.exit_code == 2);
    CHECK(missing.err.find("not a directory") != std::string::npos);
}

TEST_CASE("sim incident: the watcher's rules still read the sim's marked NCCL lines") {
    auto r = run_command({binary_path("engine/tpverify").string(), "--backend", "sim", "--json", "--tp", "8"},
                         {}, {"NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=TUNING,ENV", "NCCL_ALGO=allreduce:tree"});
    REQUIRE(r.exit_code == 0);
    auto catalog = RuleCatalog::with_user_rules({});
    REQUIRE(catalog.ok());
    std::istringstream in(r.out);
    int tuning = 0, env = 0;
    for (std::string line; std::getline(in, line);) {
        if (line.find(" NCCL ") == std::string::npos || line.rfind("{", 0) == 0) continue;
        CHECK(line.rfind("[tpverify-sim] ", 0) == 0);
        std::vector<int> hits;
        (*catalog)->match(line, hits);
        for (int hit : hits) {
            const std::string& name = (*catalog)->rule(hit).name;
            tuning += name == "nccl_tuning";
            env += name == "nccl_env";
        }
        if (auto choice = nccl::parse_tuning_line(line)) CHECK(choice->collective.size() > 0);
    }
    CHECK(tuning >= 2);  // AllReduce and AllGather
    CHECK(env >= 1);
    CHECK(nccl::parse_tuning_line(
              "[tpverify-sim] box:1:1 [0] NCCL INFO AllReduce: 57344 Bytes -> Algo TREE proto LL "
              "channel{Lo..Hi}={0..0}")
              ->algo == "TREE");
}
