// End-to-end: the real tpverify binary with the sim backend.
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/text.hpp"

using ncclsweep::test::binary_path;
using ncclsweep::test::CommandResult;
using ncclsweep::test::contains;
using ncclsweep::test::run_command;

namespace {
CommandResult sim_binary_run(std::vector<std::string> args, const std::vector<std::string>& env = {}) {
    args.insert(args.begin(), binary_path("engine/tpverify").string());
    args.insert(args.begin() + 1, "--backend=sim");
    return run_command(args, {}, env);
}
std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}
/// The value text after "key": in a JSON line ("" when absent).
std::string field(const std::string& line, const std::string& key) {
    const std::string k = "\"" + key + "\":";
    auto at = line.find(k);
    if (at == std::string::npos) return "";
    auto start = at + k.size();
    auto end = line.find_first_of(",}", start);
    return line.substr(start, end - start);
}
std::string result_line(const CommandResult& r) {
    for (const std::string& l : lines(r.out))
        if (l.rfind("{\"event\":\"result\"", 0) == 0) return l;
    return "";
}
}  // namespace

TEST_CASE("tpverify sim: events in order with the contract fields") {
    CommandResult r = sim_binary_run({"--json", "--tp", "8", "--seed", "3"});
    REQUIRE(r.exit_code == 0);
    const auto out = lines(r.out);
    REQUIRE(out.size() == 5);
    CHECK(field(out[0], "event") == "\"start\"");
    CHECK(field(out[0], "backend") == "\"sim\"");
    CHECK(field(out[0], "model") == "\"kimi-k2.5\"");
    CHECK(field(out[0], "collectives") == "124");
    CHECK(field(out[0], "all_reduce_bytes") == "57344");
    CHECK(field(out[0], "all_gather_bytes") == "163840");
    CHECK(field(out[0], "graph") == "true");
    CHECK(field(out[0], "fusion") == "false");
    CHECK(contains(field(out[0], "nccl_version"), "2.28"));
    CHECK(out[1] == R"({"event":"capture","phase":"begin"})");
    CHECK(field(out[2], "phase") == "\"end\"");
    CHECK(!field(out[2], "seconds").empty());
    CHECK(out[3] == R"({"event":"ready"})");
    for (const char* key : {"tok_s", "verify_us_p50", "verify_us_p10", "verify_us_p90", "baseline_tok_s",
                            "init_s", "capture_s", "collective_us", "samples", "check_wrong"})
        CHECK(!field(out[4], key).empty());
    CHECK(field(out[4], "samples") == "50");
    CHECK(std::stod(field(out[4], "verify_us_p10")) <= std::stod(field(out[4], "verify_us_p90")));
}

TEST_CASE("tpverify sim: seeded noise is reproducible, different seeds differ") {
    const std::string a = result_line(sim_binary_run({"--json", "--seed", "11", "--noise", "0.05"}));
    const std::string b = result_line(sim_binary_run({"--json", "--seed", "11", "--noise", "0.05"}));
    const std::string c = result_line(sim_binary_run({"--json", "--seed", "12", "--noise", "0.05"}));
    REQUIRE(!a.empty());
    CHECK(field(a, "verify_us_p50") == field(b, "verify_us_p50"));
    CHECK(field(a, "verify_us_p50") != field(c, "verify_us_p50"));
}

TEST_CASE("tpverify sim: --target-rsd stops on its own") {
    const std::string r = result_line(sim_binary_run(
        {"--json", "--seed", "5", "--noise", "0.02", "--target-rsd", "0.002", "--max-seconds", "200"}));
    REQUIRE(!r.empty());
    CHECK(std::stoi(field(r, "samples")) >= 10);
    CHECK(field(r, "stopped_by") == "\"target-rsd\"");
}

TEST_CASE(
    "tpverify sim: NCCL_ALGO changes the timing, channel knobs change NCCL's choice, not its estimate") {
    const auto p50 = [](const CommandResult& r) { return field(result_line(r), "verify_us_p50"); };
    const std::vector<std::string> small = {"--json", "--tp", "8", "--tokens", "1"};
    const std::string base = p50(sim_binary_run(small));
    REQUIRE(!base.empty());
    CHECK(p50(sim_binary_run(small, {"NCCL_ALGO=allreduce:tree"})) != base);
    // NCCL's cut (enqueue.cc) brings the 40 KB logits all-gather to one channel of 512 threads by
    // default; with 16 channels of 256 threads it stops at two: another effective choice ...
    const CommandResult knobs = sim_binary_run(small, {"NCCL_MIN_CTAS=16", "NCCL_NTHREADS=256"});
    CHECK(field(result_line(knobs), "all_gather_channels") == "2");
    CHECK(field(result_line(sim_binary_run(small)), "all_gather_channels") == "1");
    // ... but the same price: NCCL's own estimate (tuning.cc) does not depend on the channels the
    // cut keeps, and no measurement says by how much they matter (docs/engine.md, "Assumptions").
    CHECK(p50(knobs) == base);
    const std::vector<std::string> large = {"--json", "--tp", "8", "--tokens", "300"};
    CHECK(p50(sim_binary_run(large, {"NCCL_MAX_CTAS=1"})) == p50(sim_binary_run(large)));
}

TEST_CASE("tpverify sim: NCCL debug lines show the effective configuration") {
    CommandResult r =
        sim_binary_run({"--json", "--tp", "8"},
                       {"NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=TUNING,ENV", "NCCL_ALGO=allreduce:tree"});
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "NCCL INFO NCCL_ALGO set by environment to allreduce:tree"));
    CHECK(contains(r.out, "NCCL INFO AllReduce: 57344 Bytes -> Algo TREE proto"));
    CHECK(contains(r.out, "NCCL INFO AllGather: 163840 Bytes -> Algo RING proto"));
}

TEST_CASE("tpverify sim: bare NCCL_ALGO=Tree fails the first AllGather like NCCL") {
    CommandResult warm = sim_binary_run({"--json", "--tp", "8"}, {"NCCL_ALGO=Tree", "NCCL_DEBUG=WARN"});
    CHECK(warm.exit_code == 1);
    CHECK(contains(warm.out,
                   "NCCL WARN Error : no algorithm/protocol available for function AllGather with datatype "
                   "ncclBfloat16. NCCL_ALGO was set to Tree."));
    CHECK(contains(warm.err, "tpverify: warmup: ncclAllGather failed: invalid usage"));
    CHECK(result_line(warm).empty());

    CommandResult capture = sim_binary_run(
        {"--json", "--tp", "8", "--no-warmup-before-capture", "--server", "none"}, {"NCCL_ALGO=Tree"});
    CHECK(capture.exit_code == 1);
    CHECK(contains(capture.err, "tpverify: capture: ncclAllGather failed: invalid usage"));
    CHECK(contains(capture.err, "operation failed due to a previous error during capture"));
    CHECK(contains(capture.out, R"({"event":"capture","phase":"begin"})"));

    CHECK(sim_binary_run({"--json", "--tp", "8"}, {"NCCL_ALGO=allreduce:tree"}).exit_code == 0);
    CommandResult bad = sim_binary_run({"--tp", "8"}, {"NCCL_ALGO=ring,bogus"});
    CHECK(bad.exit_code == 1);
    CHECK(contains(bad.err, "tpverify: init: ncclCommInitRank failed: invalid usage"));
}

TEST_CASE("tpverify sim: lazy connect inside a global-mode capture fails") {
    CommandResult r = sim_binary_run({"--tp", "8", "--no-warmup-before-capture", "--capture-mode", "global"});
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, "unhandled cuda error"));
    // SGLang (the default server) captures in global mode: without its warm-up it fails the same way.
    CHECK(sim_binary_run({"--tp", "8", "--no-warmup-before-capture"}).exit_code == 1);
    CHECK(sim_binary_run({"--tp", "8", "--no-warmup-before-capture", "--server", "none"}).exit_code ==
          0);  // bare NCCL captures thread-local: fine
    CHECK(sim_binary_run({"--tp", "8", "--no-warmup-before-capture", "--capture-mode", "global"},
                         {"NCCL_RUNTIME_CONNECT=0"})
              .exit_code == 0);
}

TEST_CASE("tpverify sim: --check catches LL128 corruption over PCIe, passes fused and unfused") {
    CommandResult corrupt = sim_binary_run({"--json", "--tp", "8", "--check"}, {"NCCL_PROTO=LL128"});
    CHECK(corrupt.exit_code == 1);
    CHECK(contains(corrupt.err, "elements differ from the host reference"));
    CHECK(result_line(corrupt).empty());
    CHECK(field(result_line(sim_binary_run({"--json", "--tp", "8", "--check"})), "check_wrong") == "0");
    CHECK(field(result_line(sim_binary_run({"--json", "--tp", "8", "--check", "--fusion", "on"})),
                "check_wrong") == "0");
    CHECK(sim_binary_run({"--json", "--tp", "8", "--check", "--topology", "nvlink"}, {"NCCL_PROTO=LL128"})
              .exit_code == 0);
}

TEST_CASE("tpverify sim: graphs and fusion make the pass faster") {
    const auto p50 = [](const CommandResult& r) { return std::stod(field(result_line(r), "verify_us_p50")); };
    const double eager = p50(sim_binary_run({"--json", "--tp", "8", "--graph", "off"}));
    const double graph = p50(sim_binary_run({"--json", "--tp", "8"}));
    const double fused = p50(sim_binary_run({"--json", "--tp", "8", "--fusion", "on"}));
    CHECK(graph < eager);
    CHECK(fused < graph);
}

TEST_CASE("tpverify sim: bad usage exits 2 with a message") {
    CommandResult r = sim_binary_run({"--tp", "3"});
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "attention heads"));
    CommandResult u = sim_binary_run({"--graph=sometimes"});
    CHECK(u.exit_code == 2);
    CHECK(contains(u.err, "--graph"));
    CommandResult h = sim_binary_run({"--help"});
    CHECK(h.exit_code == 0);
    CHECK(contains(h.out, "verify pass"));
}

TEST_CASE("tpverify sim: readable summary without --json") {
    CommandResult r = sim_binary_run({"--tp", "8"});
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "tok/s"));
    CHECK(contains(r.out, "verify pass"));
    CHECK_FALSE(contains(r.out, "{\"event\""));
}

TEST_CASE("tpverify sim: injected capture-fail, nccl-error, cuda-oom, exit") {
    CommandResult cap = sim_binary_run({"--json", "--inject", "capture-fail"});
    CHECK(cap.exit_code == 1);
    CHECK(contains(cap.err, "operation not permitted when stream is capturing"));
    CHECK(contains(cap.err, "tpverify: capture:"));
    CHECK(contains(cap.out, R"({"event":"capture","phase":"begin"})"));
    CHECK_FALSE(contains(cap.out, "\"ready\""));

    CommandResult nccl = sim_binary_run({"--json", "--inject", "nccl-error"}, {"NCCL_DEBUG=WARN"});
    CHECK(nccl.exit_code == 1);
    CHECK(contains(nccl.out, "NCCL WARN"));
    CHECK(contains(nccl.err, "tpverify: replay: ncclAllReduce failed: unhandled cuda error"));
    CHECK(contains(nccl.out, R"({"event":"ready"})"));

    CommandResult oom = sim_binary_run({"--json", "--inject", "cuda-oom@init"});
    CHECK(oom.exit_code == 1);
    CHECK(contains(oom.err, "tpverify: init: cudaMalloc failed: out of memory"));
    CHECK(contains(oom.err, "CUDA out of memory"));
    CHECK_FALSE(contains(oom.out, "\"event\":\"capture\""));

    CommandResult ex = sim_binary_run({"--json", "--inject", "exit@warmup"});
    CHECK(ex.exit_code == 1);
    CHECK(ex.err.empty());
    CHECK(lines(ex.out).size() == 1);  // only the start event
}

TEST_CASE("tpverify sim: injected segv really crashes") {
    CommandResult r = sim_binary_run({"--json", "--inject", "segv"});
    CHECK(r.exit_code == 128 + 11);
    CHECK(contains(r.out, R"({"event":"ready"})"));
}

TEST_CASE("tpverify sim: injected hang really hangs until killed or the watchdog fires") {
    const std::string bin = binary_path("engine/tpverify").string();
    CommandResult killed =
        run_command({"timeout", "2", bin, "--backend", "sim", "--json", "--inject", "hang"});
    CHECK(killed.exit_code == 124);
    CHECK(contains(killed.out, R"({"event":"ready"})"));
    CHECK_FALSE(contains(killed.out, "result"));

    CommandResult watchdog = sim_binary_run({"--json", "--inject", "hang@warmup", "--timeout", "0.3"});
    CHECK(watchdog.exit_code == 1);
    CHECK(contains(watchdog.err, "timed out after 0.3 s"));

    CommandResult stall = sim_binary_run({"--json", "--inject", "hang:0.2"});
    CHECK(stall.exit_code == 0);
    CHECK(!result_line(stall).empty());
}

TEST_CASE("tpverify sim: NCCLSWEEP_REPEAT gives each repeat its own fixed noise") {
    auto run = [](const std::string& repeat) {
        CommandResult r = sim_binary_run({"--json", "--tp", "8", "--seed", "5", "--iters", "20"},
                                         {"NCCLSWEEP_REPEAT=" + repeat});
        REQUIRE(r.exit_code == 0);
        return field(result_line(r), "verify_us_p50");
    };
    const std::string first = run("0");
    const std::string second = run("1");
    CHECK_FALSE(first.empty());
    CHECK(first != second);     // repeats differ, as real runs do
    CHECK(run("1") == second);  // and a rerun reproduces each of them
    CommandResult plain = sim_binary_run({"--json", "--tp", "8", "--seed", "5", "--iters", "20"});
    CHECK(field(result_line(plain), "verify_us_p50") == first);  // no NCCLSWEEP_REPEAT: as repeat 0
}

TEST_CASE("tpverify sim: the pass a server runs: routed experts, attention, draft and parts") {
    const CommandResult four =
        sim_binary_run({"--json", "--tp", "8", "--tokens", "4", "--iters", "3", "--expert-format", "bf16"});
    const CommandResult one =
        sim_binary_run({"--json", "--tp", "8", "--tokens", "1", "--iters", "3", "--expert-format", "bf16"});
    REQUIRE(four.exit_code == 0);
    const std::string start = lines(four.out).front();
    CHECK(field(start, "process_model") == "\"process-per-rank\"");
    CHECK(std::stod(field(start, "routed_experts_touched_mean")) > 30);
    CHECK(std::stod(field(lines(one.out).front(), "routed_experts_touched_mean")) == 8);
    CHECK(field(start, "context") == "4096");
    CHECK(field(start, "expert_format") == "\"bf16\"");
    const std::string r = result_line(four);
    REQUIRE(!r.empty());
    CHECK(std::stod(field(r, "attention")) > 0);  // inside parts_us
    CHECK(std::stod(field(r, "draft")) > 0);
    CHECK(std::stod(field(r, "gemm")) > 0);
    CHECK(std::stod(field(r, "verify_us_p50")) >= 1.3 * std::stod(field(r, "baseline_us")));
    // INT4 experts: fewer bytes, a faster modeled pass, and the format in the start event.
    const CommandResult q =
        sim_binary_run({"--json", "--tp", "8", "--expert-format", "int4", "--iters", "3"});
    CHECK(field(lines(q.out).front(), "expert_format") == "\"int4-g32\"");
    CHECK(std::stod(field(lines(q.out).front(), "weight_bytes")) < std::stod(field(start, "weight_bytes")));
    CHECK(std::stod(field(result_line(q), "gemm")) < std::stod(field(r, "gemm")));
    // A layer's experts of equal m are one batched launch per side (as the CUDA backend runs
    // them), not a kernel each: the GEMMs of the INT4 pass, 10.3 GB per rank, cost close to
    // their bytes at the modeled bandwidth (RTX PRO 6000 model: 1792 GB/s x 0.8). Priced per
    // expert (3,744 kernels of a 2 us floor and a 1 us graph gap) they cost 2.07x that.
    const std::string q_start = lines(q.out).front();
    const double read_us = std::stod(field(q_start, "weight_bytes")) / (1792e3 * 0.8);
    CHECK(std::stod(field(result_line(q), "gemm")) > read_us);
    CHECK(std::stod(field(result_line(q), "gemm")) < 1.2 * read_us);
    // --draft-steps 0: the draft is the constant --draft-us again.
    const std::string fixed =
        result_line(sim_binary_run({"--json", "--draft-steps", "0", "--draft-us", "1234", "--iters", "3"}));
    CHECK(field(fixed, "draft") == "1234");
}

TEST_CASE("tpverify sim: --inject stale is caught by --check, and unseen without it") {
    const CommandResult caught = sim_binary_run({"--json", "--tp", "8", "--check", "--inject", "stale"});
    CHECK(caught.exit_code == 1);
    CHECK(contains(caught.err, "the collective returned the previous call's data"));
    CHECK(result_line(caught).empty());
    // Without --check a stale collective changes no timing: nothing to see.
    CHECK(sim_binary_run({"--json", "--tp", "8", "--inject", "stale"}).exit_code == 0);
}

TEST_CASE("tpverify sim: SGLang's preset and the draft's collectives are in the start event") {
    const CommandResult r = sim_binary_run({"--json", "--tp", "8"}, {"NCCL_PROTO=LL"});
    REQUIRE(r.exit_code == 0);
    const std::string start = lines(r.out).front();
    CHECK(field(start, "server") == "\"sglang\"");
    CHECK(field(start, "capture_mode") == "\"global\"");
    CHECK(contains(start, R"("nccl_env":{"NCCL_CUMEM_ENABLE":"0","NCCL_NVLS_ENABLE":"0",)"));
    CHECK(contains(start, R"("NCCL_PROTO":"LL"})"));
    CHECK(contains(start, R"("nccl_env_from_caller":["NCCL_PROTO"])"));
    CHECK(field(start, "draft_all_reduces") == "9");
    CHECK(field(start, "draft_all_gathers") == "3");
    // A GPU nothing was measured on says what prices it instead.
    CHECK(contains(start, R"("gpu_price_assumption":"nothing measured on NVIDIA RTX PRO 6000)"));
    const CommandResult h200 = sim_binary_run({"--json", "--tp", "1", "--topology", "nvlink"});
    CHECK(contains(lines(h200.out).front(),
                   R"x("gpu_prices":"kernel times measured on NVIDIA H200 (builtin:h200)")x"));
    CHECK(!contains(lines(h200.out).front(), "gpu_price_assumption"));
}

TEST_CASE("tpverify sim: at one rank SGLang's preset calls no collective, bare NCCL and --inject stale do") {
    // SGLang's GroupCoordinator returns a one-rank group's all-reduce input as it is: the
    // sglang preset at TP 1 prices no collective, only the norms after them.
    const std::vector<std::string> one = {"--json", "--tp", "1", "--topology", "nvlink", "--iters", "3"};
    const CommandResult sglang = sim_binary_run(one);
    std::vector<std::string> bare_args = one;
    bare_args.insert(bare_args.end(), {"--server", "none"});
    const CommandResult bare = sim_binary_run(bare_args);
    REQUIRE(sglang.exit_code == 0);
    REQUIRE(bare.exit_code == 0);
    CHECK(field(lines(sglang.out).front(), "collectives_skipped") == "true");
    CHECK(field(lines(bare.out).front(), "collectives_skipped") == "false");
    const std::string s = result_line(sglang), b = result_line(bare);
    CHECK(std::stod(field(s, "comm_pass_us")) == 0.0);
    CHECK(std::stod(field(b, "comm_pass_us")) > 100.0);  // 124 one-rank copies
    // The pass is shorter by what the collectives took, the norms after them still priced.
    const double saved = std::stod(field(b, "verify_us_p50")) - std::stod(field(s, "verify_us_p50"));
    CHECK(saved == Approx(std::stod(field(b, "comm_pass_us"))).epsilon(0.01));
    // --inject stale faults the collective, so it runs (and --check catches it).
    std::vector<std::string> stale_args = one;
    stale_args.insert(stale_args.end(), {"--inject", "stale", "--check"});
    const CommandResult stale = sim_binary_run(stale_args);
    CHECK(stale.exit_code == 1);
    CHECK(field(lines(stale.out).front(), "collectives_skipped") == "false");
    // A caller's NCCL setting then changes nothing: said once on stderr, not under bare NCCL.
    const CommandResult tuned = sim_binary_run(one, {"NCCL_PROTO=LL"});
    CHECK(contains(tuned.err,
                   "at one rank --server sglang calls no collective, as SGLang does, so NCCL_PROTO "
                   "changes nothing in the pass"));
    CHECK(result_line(tuned) == result_line(sglang));
    CHECK(!contains(sim_binary_run(bare_args, {"NCCL_PROTO=LL"}).err, "calls no collective"));
    // More than one rank: the server calls them.
    CHECK(field(lines(sim_binary_run({"--json", "--tp", "2", "--iters", "3"}).out).front(),
                "collectives_skipped") == "false");
}
