// The sim's measured kernel table (engine/sim/kernel_table.hpp) and the sim against the H200 run
// it was measured beside.
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/model/model.hpp"
#include "engine/sim/kernel_table.hpp"
#include "engine/sim/pass_layout.hpp"
#include "engine/sim/sim_model.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace tpverify::sim;
using ncclsweep::test::binary_path;
using ncclsweep::test::read_file;
using ncclsweep::test::run_command;
using ncclsweep::test::source_path;
using tpverify::Options;
using tpverify::PassPlan;

namespace {
double number_after(const std::string& line, const std::string& key) {
    const std::string k = "\"" + key + "\":";
    const auto at = line.find(k);
    REQUIRE(at != std::string::npos);
    return std::stod(line.substr(at + k.size()));
}
std::string result_of(const std::string& text) {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        if (l.rfind("{\"event\":\"result\"", 0) == 0) return l;
    return "";
}
std::string fixture_result(const std::string& file) {
    return result_of(read_file(source_path("tests/fixtures/tpverify-kernels/" + file)));
}
}  // namespace

TEST_CASE("kernel table: builtin:h200 is tests/fixtures/tpverify-kernels/h200.txt word for word") {
    CHECK(builtin_kernel_table("h200") == read_file(source_path("tests/fixtures/tpverify-kernels/h200.txt")));
    const KernelTable& t = h200_kernel_table();
    CHECK(t.gpu == "NVIDIA H200");
    CHECK(t.copy_gbps == 4242);
    CHECK(t.gemms.size() > 40);
    CHECK(t.attention.size() >= 4);
    CHECK(t.norms.size() >= 2);
    CHECK(builtin_kernel_table("l40s").empty());
}

TEST_CASE("kernel table: lines parse, errors name the line") {
    KernelTable t;
    std::string error;
    REQUIRE(
        parse_kernel_table("tpverify-kernels 1\n# note\ngpu NVIDIA H200\ncopy_gbps 4000\n"
                           "gemm int4 1 4096 7168 8 38.5\ngemm int4 1 4096 7168 8 99\nop topk 4 384 5.8\n"
                           "attention 4 64 1 576 576 512 4096 19.3\nnorm 57344 3.4\n",
                           "t.txt", t, error));
    REQUIRE(t.gemms.size() == 1);  // a repeated line keeps the first time
    CHECK(t.gemms[0].us == 38.5);
    CHECK(t.gemms[0].bytes() == 8 * (4096.0 * 7168 / 2 + 4096.0 * 7168 / 32 * 2));
    CHECK(t.ops[0].name == "topk");
    CHECK(t.attention[0].context == 4096);
    CHECK(t.note == "note");
    CHECK_FALSE(parse_kernel_table("gpu x\n", "a.txt", t, error));
    CHECK(error == "a.txt:1: expected the header 'tpverify-kernels 1' first");
    CHECK_FALSE(
        parse_kernel_table("tpverify-kernels 1\ncopy_gbps 1\ngemm fp8 1 2 3 4 5\n", "b.txt", t, error));
    CHECK(error == "b.txt:3: expected 'gemm int4|bf16 ROWS N K COUNT US'");
    CHECK_FALSE(parse_kernel_table("tpverify-kernels 1\ngpu x\n", "c.txt", t, error));
    CHECK(error == "c.txt: no copy_gbps line");
}

// The CUDA runs below called NCCL's one-rank collectives (before --server sglang skipped them at
// one rank, as SGLang does): the sim prices the same pass under --server none.
TEST_CASE("kernel table: the sim's H200 pass is within 10 % of the CUDA run measured beside the table") {
    // tests/fixtures/tpverify-kernels/run7-t4-int4.jsonl: the CUDA backend on one H200, TP 1,
    // Kimi-K2.5 with INT4 experts, 4 tokens, tpverify's defaults (folded INT4 kernel, skinny kernel,
    // grouped launches and fused small kernels, cuBLAS attention, split top-k), 2026-12-04, the
    // same build as the table; its 1-token pass too (baseline_us). Sim then: 20,256 against 19,702
    // us, 11,722 against 11,186 us.
    const std::string cuda =
        result_of(read_file(source_path("tests/fixtures/tpverify-kernels/run7-t4-int4.jsonl")));
    REQUIRE(!cuda.empty());
    const auto sim =
        run_command({binary_path("engine/tpverify").string(), "--backend", "sim", "--json", "--tp", "1",
                     "--server", "none", "--topology", "nvlink", "--tokens", "4", "--iters", "3"});
    REQUIRE(sim.exit_code == 0);
    const std::string r = result_of(sim.out);
    const double verify = number_after(r, "verify_us_p50"), measured = number_after(cuda, "verify_us_p50");
    INFO("sim " << verify << " us, CUDA " << measured << " us");
    CHECK(verify > 0.9 * measured);
    CHECK(verify < 1.1 * measured);
    const double one = number_after(r, "baseline_us"), one_measured = number_after(cuda, "baseline_us");
    INFO("1 token: sim " << one << " us, CUDA " << one_measured << " us");
    CHECK(one > 0.9 * one_measured);
    CHECK(one < 1.1 * one_measured);
}

TEST_CASE("kernel table: the sim's H200 pass with bf16 experts is within 10 % of the CUDA run") {
    // tests/fixtures/tpverify-kernels/run7-t4-bf16.jsonl: the same build and call as run7-t4-int4,
    // --expert-format bf16 (sim then: 47,545 against 47,043 us; 19,053 against 18,569 us).
    const std::string cuda =
        result_of(read_file(source_path("tests/fixtures/tpverify-kernels/run7-t4-bf16.jsonl")));
    REQUIRE(!cuda.empty());
    const auto sim = run_command({binary_path("engine/tpverify").string(), "--backend", "sim", "--json",
                                  "--tp", "1", "--server", "none", "--topology", "nvlink", "--tokens", "4",
                                  "--iters", "3", "--expert-format", "bf16"});
    REQUIRE(sim.exit_code == 0);
    const std::string r = result_of(sim.out);
    for (const char* key : {"verify_us_p50", "baseline_us"}) {
        const double s = number_after(r, key), c = number_after(cuda, key);
        INFO(key << ": sim " << s << " us, CUDA " << c << " us");
        CHECK(s > 0.9 * c);
        CHECK(s < 1.1 * c);
    }
}

TEST_CASE("kernel table: the sim's H200 pass is within 10 % of a later call's runs of the default kernels") {
    // A later call, on another H200 than the table's (docs/benchmarks-gpu.md, 2026-12-04, second
    // session): run8-t4-int4.jsonl is the 4-token pass on the folded INT4 kernel throughout (its
    // TPVERIFY_INT4=u4f run: the default's kernels at 4 tokens), run8-t1-int4.jsonl the 1-token
    // pass on the default (8 one-row experts a launch: the plain kernel). The table's 8-expert
    // launches ran folded. Sim then: 20,256 against 19,825 us, 11,722 against 11,182 us.
    for (const auto& [file, tokens] : {std::pair<const char*, const char*>{"run8-t4-int4.jsonl", "4"},
                                       std::pair<const char*, const char*>{"run8-t1-int4.jsonl", "1"}}) {
        const std::string cuda =
            result_of(read_file(source_path(std::string("tests/fixtures/tpverify-kernels/") + file)));
        REQUIRE(!cuda.empty());
        const auto sim =
            run_command({binary_path("engine/tpverify").string(), "--backend", "sim", "--json", "--tp", "1",
                         "--server", "none", "--topology", "nvlink", "--tokens", tokens, "--iters", "3"});
        REQUIRE(sim.exit_code == 0);
        const double s = number_after(result_of(sim.out), "verify_us_p50");
        const double c = number_after(cuda, "verify_us_p50");
        INFO(file << ": sim " << s << " us, CUDA " << c << " us");
        CHECK(s > 0.9 * c);
        CHECK(s < 1.1 * c);
    }
}

TEST_CASE(
    "kernel table: the sim's H200 pass is within 10 % of the CUDA runs with the MoE block on two streams") {
    // tests/fixtures/tpverify-kernels/run9-t4-int4.jsonl and run9-t1-int4.jsonl: the CUDA backend's
    // default since the MoE block runs its shared expert on a second stream (TPVERIFY_MOE_STREAMS
    // unset), one H200, TP 1, Kimi-K2.5 with INT4 experts, 4 and 1 tokens (docs/engine.md, "Time of
    // a pass"; scripts/device-engine-variants.sh, run9-variants-3.log). Sim then: 19,664 against
    // 18,776 us; 11,202 against 10,368 us (without the two streams' overlap 20,256 and 11,722: 13 %
    // over at 1 token).
    for (const auto& [file, tokens] : {std::pair<const char*, const char*>{"run9-t4-int4.jsonl", "4"},
                                       std::pair<const char*, const char*>{"run9-t1-int4.jsonl", "1"}}) {
        const std::string cuda = fixture_result(file);
        REQUIRE(!cuda.empty());
        const auto sim =
            run_command({binary_path("engine/tpverify").string(), "--backend", "sim", "--json", "--tp", "1",
                         "--server", "none", "--topology", "nvlink", "--tokens", tokens, "--iters", "3"});
        REQUIRE(sim.exit_code == 0);
        const std::string r = result_of(sim.out);
        for (const char* key : {"verify_us_p50", "baseline_us"}) {
            const double s = number_after(r, key), c = number_after(cuda, key);
            INFO(file << " " << key << ": sim " << s << " us, CUDA " << c << " us");
            CHECK(s > 0.9 * c);
            CHECK(s < 1.1 * c);
        }
    }
}

TEST_CASE("kernel table: the sim's saving from the MoE block's two streams is the measured one within 30 %") {
    // The same call's runs with TPVERIFY_MOE_STREAMS=1 (run9-t4-one-stream.jsonl,
    // run9-t1-one-stream.jsonl): one stream, with the router + shared gate_up group. Priced as the
    // sim priced that layout before, the steps one after another less the group's launch
    // (saved_per_launch_us), against the two streams' steps less moe_streams_saving_us, the two
    // differ per MoE layer by the saving less that launch. Measured: (19,499 - 18,776) / 60 = 12.05
    // us at 4 tokens, (10,893 - 10,368) / 60 = 8.75 us at 1 token; modelled 9.9 and 8.7 us.
    TopologyModel topo = topology_model(tpverify::Topology::nvlink);
    attach_kernel_table(topo.gpu);
    REQUIRE(topo.gpu.table_native);
    const double launch = topo.gpu.launch_graph_us;
    Options options;
    tpverify::ModelShape model;
    std::string error;
    REQUIRE(resolve_model(options, model, error));
    for (const auto& [tokens, one, two] :
         {std::tuple<int, const char*, const char*>{4, "run9-t4-one-stream.jsonl", "run9-t4-int4.jsonl"},
          std::tuple<int, const char*, const char*>{1, "run9-t1-one-stream.jsonl", "run9-t1-int4.jsonl"}}) {
        const PassPlan plan = build_pass(model, 1, tokens, pass_shape(options, model));
        REQUIRE(plan.int4_experts);
        int blocks = 0;
        double saving = 0;
        for (std::size_t i = 0; i < plan.steps.size(); ++i) {
            const std::size_t steps = moe_block_steps(plan, i);
            if (steps == 0) continue;
            ++blocks;
            saving += moe_streams_saving_us(plan, i, topo.gpu, launch);
            i += steps - 1;
        }
        // Every MoE layer's block is found (60 of Kimi-K2.5's 61 layers).
        CHECK(blocks == static_cast<int>(plan.routed_experts_touched.size()));
        REQUIRE(blocks == 60);
        const std::string one_run = fixture_result(one), two_run = fixture_result(two);
        REQUIRE(!one_run.empty());
        REQUIRE(!two_run.empty());
        const double measured =
            (number_after(one_run, "verify_us_p50") - number_after(two_run, "verify_us_p50")) / blocks;
        const double modelled = saving / blocks - saved_per_launch_us(topo.gpu, launch);
        INFO(tokens << " tokens: per MoE layer modelled " << modelled << " us, measured " << measured
                    << " us");
        CHECK(modelled > 0.7 * measured);
        CHECK(modelled < 1.3 * measured);
    }
}
