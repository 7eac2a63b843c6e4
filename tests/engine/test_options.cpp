#include <string>
#include <vector>

#include "engine/options.hpp"
#include "tests/support/catch.hpp"

using namespace tpverify;

namespace {
ParseOutcome parse(std::vector<std::string> args) {
    args.insert(args.begin(), "tpverify");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    return parse_options(static_cast<int>(argv.size()), argv.data());
}
}  // namespace

TEST_CASE("options: defaults") {
    ParseOutcome p = parse({});
    REQUIRE(p.error.empty());
    CHECK(p.options.model == "kimi-k2.5");
    CHECK(p.options.tp == 1);
    CHECK(p.options.tokens == 4);
    CHECK(p.options.graph);
    CHECK_FALSE(p.options.fusion);
    CHECK(p.options.backend == BackendKind::automatic);
    CHECK(p.options.process_model == ProcessModel::processes);
    CHECK(p.options.context == 4096);
    CHECK(p.options.draft_steps == 3);
    CHECK(p.options.sim_only_flags.empty());
}

TEST_CASE("options: the pass a server runs and how its ranks run") {
    ParseOutcome p = parse({"--process-model", "threads", "--context", "8192", "--draft-steps=0"});
    REQUIRE(p.error.empty());
    CHECK(p.options.process_model == ProcessModel::threads);
    CHECK(p.options.context == 8192);
    CHECK(p.options.draft_steps == 0);
    CHECK_FALSE(parse({}).options.expert_format.has_value());  // the model's own (engine/model)
    CHECK(parse({"--expert-format", "int4"}).options.expert_format == ExpertFormat::int4);
    CHECK(std::string(process_model_name(ProcessModel::processes)) == "process-per-rank");
    CHECK(std::string(process_model_name(ProcessModel::threads)) == "threads");
}

TEST_CASE("options: flags only the sim uses are recorded, ignored by CUDA, its faults refused there") {
    ParseOutcome p =
        parse({"--topology", "nvlink", "--noise", "0.1", "--inject", "hang", "--calibration", "c.txt"});
    REQUIRE(p.error.empty());
    CHECK(p.options.sim_only_flags ==
          std::vector<std::string>{"--topology", "--noise", "--inject", "--calibration"});
    // The sim's machine is ignored by the CUDA backend (main says so on stderr), not refused.
    CHECK(parse({"--backend", "cuda", "--noise", "0.1", "--topology", "pcie-gen5"}).error.empty());
    ParseOutcome fault = parse({"--backend", "cuda", "--inject", "segv"});
    CHECK(fault.error.find("--inject segv is a fault of the sim backend") != std::string::npos);
    // A stale collective is a fault of both backends.
    ParseOutcome stale = parse({"--backend", "cuda", "--inject", "stale"});
    CHECK(stale.error.empty());
    CHECK(stale.options.sim_only_flags.empty());
    CHECK(parse({"--backend", "cuda", "--seed", "3"}).error.empty());  // the router uses --seed
}

TEST_CASE("options: the server preset decides the capture mode unless it is given") {
    CHECK(parse({}).options.server == Server::sglang);
    CHECK(parse({}).options.capture_mode == CaptureMode::global);
    CHECK(parse({"--server", "none"}).options.capture_mode == CaptureMode::thread_local_mode);
    CHECK(parse({"--capture-mode", "relaxed"}).options.capture_mode == CaptureMode::relaxed);
    CHECK(parse({"--server", "none", "--capture-mode", "global"}).options.capture_mode ==
          CaptureMode::global);
    CHECK(parse({"--server", "vllm"}).error.find("sglang or none") != std::string::npos);
}

TEST_CASE("options: both value spellings and planner-style flags") {
    ParseOutcome p = parse({"--tp",
                            "8",
                            "--tokens=16",
                            "--graph",
                            "off",
                            "--fusion",
                            "on",
                            "--check",
                            "--json",
                            "--capture_mode",
                            "global",
                            "--target-rsd=0.01",
                            "--inject",
                            "hang@warmup:3",
                            "--inject=segv",
                            "--topology",
                            "nvlink",
                            "--backend",
                            "sim",
                            "--seed",
                            "7"});
    REQUIRE(p.error.empty());
    const Options& o = p.options;
    CHECK(o.tp == 8);
    CHECK(o.tokens == 16);
    CHECK_FALSE(o.graph);
    CHECK(o.fusion);
    CHECK(o.check);
    CHECK(o.json);
    CHECK(o.capture_mode == CaptureMode::global);
    REQUIRE(o.target_rsd);
    CHECK(*o.target_rsd == Approx(0.01));
    REQUIRE(o.inject.size() == 2);
    CHECK(o.inject[0].kind == "hang");
    CHECK(o.inject[0].phase == "warmup");
    CHECK(o.inject[0].seconds == Approx(3));
    CHECK(o.inject[1].kind == "segv");
    CHECK(o.inject[1].phase.empty());
    CHECK(o.topology == Topology::nvlink);
    CHECK(o.backend == BackendKind::sim);
    REQUIRE(o.seed);
    CHECK(*o.seed == 7u);
}

TEST_CASE("options: bare booleans and explicit true/false") {
    ParseOutcome p = parse({"--fusion", "--check", "true", "--graph=false", "--no-warmup-before-capture"});
    REQUIRE(p.error.empty());
    CHECK(p.options.fusion);
    CHECK(p.options.check);
    CHECK_FALSE(p.options.graph);
    CHECK_FALSE(p.options.warmup_before_capture);
}

TEST_CASE("options: model overrides") {
    ParseOutcome p =
        parse({"--model", "deepseek-v3", "--layers", "4", "--active-experts", "2", "--dense-layers", "0"});
    REQUIRE(p.error.empty());
    CHECK(p.options.model == "deepseek-v3");
    CHECK(*p.options.layers == 4);
    CHECK(*p.options.active_experts == 2);
    CHECK(*p.options.dense_layers == 0);
}

TEST_CASE("options: bad values say what is wrong") {
    struct Case {
        std::vector<std::string> args;
        std::string needle;
    };
    const std::vector<Case> cases = {
        {{"--tp", "0"}, "--tp"},
        {{"--tp", "eight"}, "--tp"},
        {{"--tokens"}, "needs a value"},
        {{"--graph", "maybe"}, "unexpected argument 'maybe'"},
        {{"--graph=maybe"}, "on or off"},
        {{"--capture-mode", "local"}, "thread-local, global or relaxed"},
        {{"--topology", "infiniband"}, "pcie-gen4"},
        {{"--backend", "gpu"}, "auto, cuda or sim"},
        {{"--inject", "explode"}, "unknown kind 'explode'"},
        {{"--inject", "hang@later"}, "unknown phase 'later'"},
        {{"--inject", "hang:soon"}, "SECONDS"},
        {{"--inject", "capture-fail", "--graph", "off"}, "needs --graph on"},
        {{"--frobnicate"}, "unknown flag --frobnicate"},
        {{"--rank", "2"}, "--nranks"},
        {{"--rank", "4", "--nranks", "4"}, "out of range"},
        {{"--target-rsd", "2"}, "--target-rsd"},
        {{"--seed", "-1"}, "--seed"},
        {{"--json=yes", "extra"}, "unexpected argument"},
        {{"--process-model", "fork"}, "processes or threads"},
        {{"--expert-format", "fp8"}, "bf16 or int4"},
        {{"--rank", "0", "--nranks", "2", "--process-model", "threads"}, "--process-model threads"},
        {{"--context", "-1"}, "--context"},
        {{"--draft-steps", "65"}, "--draft-steps"},
    };
    for (const Case& c : cases) {
        INFO(c.args[0]);
        ParseOutcome p = parse(c.args);
        CHECK_FALSE(p.error.empty());
        CHECK(p.error.find(c.needle) != std::string::npos);
    }
}

TEST_CASE("options: --help and usage text") {
    CHECK(parse({"--help"}).help);
    const std::string u = usage();
    for (const char* flag :
         {"--model", "--tp", "--tokens", "--graph", "--capture-mode", "--fusion", "--check", "--target-rsd",
          "--accept-len", "--draft-us", "--topology", "--inject", "--json"})
        CHECK(u.find(flag) != std::string::npos);
}

TEST_CASE("options: the repeat index from NCCLSWEEP_REPEAT and the sim's noise seed per repeat") {
    CHECK(repeat_index(nullptr) == 0);
    CHECK(repeat_index("") == 0);
    CHECK(repeat_index("3") == 3);
    CHECK(repeat_index("x") == 0);
    CHECK(repeat_index("-1") == 0);
    // Repeat 0 keeps --seed (a run on its own is unchanged); later repeats get distinct seeds.
    CHECK(noise_seed(7, 0) == 7);
    CHECK(noise_seed(7, 1) != 7);
    CHECK(noise_seed(7, 1) != noise_seed(7, 2));
    CHECK(noise_seed(7, 1) != noise_seed(8, 1));
    CHECK(noise_seed(7, 2) == noise_seed(7, 2));
}
