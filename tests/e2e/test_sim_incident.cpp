// The sim end to end: the incident reproduced by `ncclsweep run experiments/incident-pcie.yaml`,
// a calibration from nccl-tests logs (`ncclsweep calibrate`) deciding a sweep's ranking, and the
// sim's marked NCCL lines still read by the watcher's rules.
#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/nccl/effective_nccl.hpp"
#include "core/watch/rule_catalog.hpp"
#include "results/query/what_if.hpp"
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

namespace {
const results::StoredExperiment* with_params(const std::vector<results::StoredExperiment>& all,
                                             const std::vector<std::pair<std::string, std::string>>& params) {
    for (const auto& e : all)
        if (e.experiment.params == params) return &e;
    return nullptr;
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
    REQUIRE(experiments.size() == 6);
    const auto* incident = with_params(experiments, {{"fusion", "off"}});  // NCCL's defaults
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
    CHECK(incident->outcome.collective_times == "calibrated");
    // The repeats differ as a machine's would (seeded per experiment and repeat).
    std::vector<double> repeats;
    for (const auto& s : incident->outcome.samples)
        if (s.metric == "tok_s") repeats.push_back(s.value);
    REQUIRE(repeats.size() == 3);
    CHECK(repeats[0] != repeats[1]);
}

TEST_CASE("sim incident: the six-point sweep ranks like NCCL, every point says what its times rest on") {
    TempDir dir;
    const std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep({"run", source_path("experiments/incident-pcie.yaml").string(), "--db", db});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto experiments = latest_experiments(db);
    const auto* defaults = with_params(experiments, {{"fusion", "off"}});
    const auto* ll = with_params(experiments, {{"fusion", "off"}, {"NCCL_PROTO", "LL"}});
    const auto* nt64 = with_params(experiments, {{"fusion", "off"}, {"NCCL_NTHREADS", "64"}});
    const auto* tree = with_params(experiments, {{"fusion", "off"}, {"NCCL_ALGO", "allreduce:tree"}});
    const auto* simple = with_params(experiments, {{"fusion", "off"}, {"NCCL_PROTO", "Simple"}});
    const auto* fused = with_params(experiments, {{"fusion", "on"}});
    for (const auto* e : {defaults, ll, nt64, tree, simple, fused}) REQUIRE(e != nullptr);
    const double base = median_of(*defaults, "tok_s");
    // NCCL_PROTO=LL is NCCL's own choice here: the same measurement, labelled calibrated.
    CHECK(ll->outcome.collective_times == "calibrated");
    CHECK(median_of(*ll, "tok_s") == Approx(base).epsilon(0.03));
    CHECK(median_of(*ll, "comm_pass_us") == median_of(*defaults, "comm_pass_us"));
    // Choices nothing measured are priced relative to the measured default: NCCL_NTHREADS=64 (2
    // channels of 96 threads) is NCCL's estimate for the default, so it costs the same; Simple and
    // allreduce:tree are slower, as NCCL's own model ranks them.
    for (const auto* e : {nt64, tree, simple}) CHECK(e->outcome.collective_times == "relative");
    CHECK(median_of(*nt64, "comm_pass_us") == Approx(median_of(*defaults, "comm_pass_us")));
    CHECK(median_of(*nt64, "tok_s") <= base * 1.03);  // no better: the same pass, noise apart
    CHECK(median_of(*simple, "tok_s") < 0.9 * base);
    CHECK(median_of(*tree, "tok_s") < 0.9 * base);
    // The fused kernel: a what-if priced from the published one-shot measurements (16.5 us at 32
    // KiB, 25.9 at 64 KiB on 8 x RTX PRO 6000), never the recommendation.
    CHECK(fused->outcome.collective_times == "relative");
    const double fused_us = median_of(*fused, "fused_us");
    CHECK(fused_us > 16.5);
    CHECK(fused_us < 25.9);
    const std::string recommended = r.out.substr(r.out.find("\nrecommended ("));
    const std::string line = recommended.substr(1, recommended.find('\n', 1) - 1);
    CHECK(line.find("fusion=on") == std::string::npos);  // fusion=on only in the what-if block
    CHECK(r.out.find("\nwhat-if: a server with a fused all-reduce would gain +") != std::string::npos);
    // A recommendation resting on a point that is not calibrated says so in the same line.
    const bool calibrated = line.find("(defaults fusion=off)") != std::string::npos ||
                            line.find("(fusion=off NCCL_PROTO=LL)") != std::string::npos;
    CHECK((line.find("NOT calibrated: collective times relative") != std::string::npos) == !calibrated);
    // results show --json: every experiment carries its label.
    auto show = run_ncclsweep({"results", "show", "--db", db, "--json"});
    REQUIRE(show.exit_code == 0);
    const auto shown = nlohmann::json::parse(show.out);
    for (const auto& e : shown["experiments"]) {
        CHECK(e["collective_times"].is_string());
        CHECK(e["what_if"] == (e["params"]["fusion"] == "on"));
    }
    auto best = run_ncclsweep({"results", "best", "--db", db, "--json"});
    REQUIRE(best.exit_code == 0);
    const auto best_json = nlohmann::json::parse(best.out);
    CHECK(best_json["best"]["params"]["fusion"] == "off");
    CHECK(best_json["what_if"]["params"]["fusion"] == "on");
    // export --best deploys NCCL settings and says what it left out.
    auto env = run_ncclsweep({"export", "latest", "--db", db, "--format", "env", "--best"});
    REQUIRE(env.exit_code == 0);
    CHECK(env.out.find("# left out: what-if: a server with a fused all-reduce") != std::string::npos);
    CHECK(env.out.find("# collective times: ") != std::string::npos);
}

TEST_CASE(
    "sim incident: a two-socket topo -m prices an 8-rank all-reduce clearly above a one-switch matrix") {
    TempDir dir;
    // Through a sweep: the spec's topology_file argument reaches tpverify as --topology-file.
    const std::string two_socket =
        source_path("tests/fixtures/topo/pcie-2socket-4090-gpuallocator-17.txt").string();
    const std::string one_switch =
        source_path("tests/fixtures/topo/one-switch-8gpu-handwritten.txt").string();
    auto spec =
        dir.write("t.yaml", sim_spec("e2e-topology", "  topology_file: [" + one_switch + ", " + two_socket +
                                                         "]\n  fusion: ['off', 'on']\n"));
    const std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep({"run", spec.string(), "--db", db});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto experiments = latest_experiments(db);
    const auto* fast = with_params(experiments, {{"topology_file", one_switch}, {"fusion", "off"}});
    const auto* slow = with_params(experiments, {{"topology_file", two_socket}, {"fusion", "off"}});
    REQUIRE(fast != nullptr);
    REQUIRE(slow != nullptr);
    CHECK(median_of(*slow, "collective_us") > 1.3 * median_of(*fast, "collective_us"));
    CHECK(fast->outcome.effective_nccl.find("RING/LL") != std::string::npos);
    // Fusion only where every pair has peer access: on the switch it runs, across sockets it falls back.
    CHECK(results::is_what_if(*with_params(experiments, {{"topology_file", one_switch}, {"fusion", "on"}})));
    CHECK_FALSE(
        results::is_what_if(*with_params(experiments, {{"topology_file", two_socket}, {"fusion", "on"}})));

    // A malformed file: `plan` refuses it before anything runs, naming the file and line.
    auto bad = dir.write("bad-topo.txt", "\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU1\tQPI\t X \n");
    auto bad_spec =
        dir.write("b.yaml", sim_spec("e2e-bad-topology", "  topology_file: [" + bad.string() + "]\n"));
    auto plan = run_ncclsweep({"plan", bad_spec.string()});
    CHECK(plan.exit_code == 2);
    CHECK(plan.err.find(bad.string() + ":3: 'QPI' (GPU1 to GPU0) is not a connection") != std::string::npos);
    auto direct = run_command({binary_path("engine/tpverify").string(), "--backend", "sim", "--tp", "2",
                               "--topology-file", bad.string()});
    CHECK(direct.exit_code == 2);
    CHECK(direct.err.find("tpverify: --topology-file: " + bad.string() + ":3:") != std::string::npos);
}

TEST_CASE("sim incident: ncclsweep calibrate records the topology its logs were measured on") {
    TempDir dir;
    std::filesystem::create_directories(dir.path() / "logs");
    dir.write("logs/ar_default.log", all_reduce_log("NCCL_DEBUG=INFO", 30, 90));
    const std::string topo = source_path("tests/fixtures/topo/one-switch-8gpu-handwritten.txt").string();
    std::filesystem::copy_file(topo, dir.path() / "logs" / "topo.txt");
    const std::string cal = (dir.path() / "cal.txt").string();
    auto made =
        run_ncclsweep({"calibrate", (dir.path() / "logs").string(), "-o", cal, "--topology-file", topo});
    INFO(made.err);
    REQUIRE(made.exit_code == 0);
    CHECK(made.err.find("topo.txt: no '# Collective test starting:' line") != std::string::npos);
    CHECK(made.err.find("looks like `nvidia-smi topo -m` output: give it with --topology-file") !=
          std::string::npos);
    const std::string text = read_file(cal);
    CHECK(text.find("\ntopology one-switch-8gpu-handwritten.txt") != std::string::npos);
    CHECK(text.find("\n| GPU7    PIX     PIX") != std::string::npos);
    // The calibration prices runs on that machine, and only there.
    const auto tpverify = [&](const std::string& topology_file) {
        auto r =
            run_command({binary_path("engine/tpverify").string(), "--backend", "sim", "--json", "--tp", "8",
                         "--draft-steps", "0", "--calibration", cal, "--topology-file", topology_file});
        REQUIRE(r.exit_code == 0);
        return r.out.substr(r.out.find("{\"event\":\"result\""));
    };
    CHECK(tpverify(topo).find("\"collective_times\":\"modelled\"") !=
          std::string::npos);  // AllGather unmeasured
    CHECK(tpverify(topo).find("\"calibrated_collectives\":123") != std::string::npos);
    const std::string elsewhere =
        tpverify(source_path("tests/fixtures/topo/pcie-2socket-4090-gpuallocator-17.txt").string());
    CHECK(elsewhere.find("\"calibrated_collectives\":0") != std::string::npos);
    CHECK(elsewhere.find("the calibration was measured on one-switch-8gpu-handwritten.txt") !=
          std::string::npos);
    // A malformed topology file: exit 2 with the engine's FILE:LINE reason; nothing written.
    auto bad = dir.write("bad.txt", "\tGPU0\tGPU1\nGPU0\t X \tPIX\n");
    auto refused =
        run_ncclsweep({"calibrate", (dir.path() / "logs").string(), "--topology-file", bad.string()});
    CHECK(refused.exit_code == 2);
    CHECK(refused.err.find(bad.string() + ":2: no row for GPU1") != std::string::npos);
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
