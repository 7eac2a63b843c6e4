// tpverify: reproduces a tensor-parallel speculative-decoding verify pass (see docs/engine.md).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/launch/launch.hpp"
#include "engine/model/model.hpp"
#include "engine/options.hpp"
#include "engine/report.hpp"
#include "engine/run/backend.hpp"
#include "engine/run/describe.hpp"
#include "engine/run/server_env.hpp"
#include "engine/run/validate.hpp"

namespace {

/// Says once, where the caller set NCCL variables, that a one-rank pass under --server sglang
/// calls no collective (collectives_skipped), so they change nothing in it. NCCL_DEBUG* (logging)
/// and NCCL_VERSION (which NVIDIA's containers set as a stamp) are not settings of the pass.
void note_skipped_collectives(const tpverify::Options& options) {
    using namespace tpverify;
    if (!collectives_skipped(options)) return;
    std::string tuning;
    for (const EnvSetting& e : process_server_environment(options.server, false))
        if (e.from_caller && e.name.rfind("NCCL_", 0) == 0 && e.name.rfind("NCCL_DEBUG", 0) != 0 &&
            e.name != "NCCL_VERSION")
            tuning += (tuning.empty() ? "" : ", ") + e.name;
    if (tuning.empty()) return;
    std::fprintf(stderr,
                 "tpverify: note: at one rank --server sglang calls no collective, as SGLang does, so %s "
                 "change%s nothing in the pass; --server none calls NCCL at one rank\n",
                 tuning.c_str(), tuning.find(',') == std::string::npos ? "s" : "");
}

}  // namespace

int main(int argc, char** argv) {
    using namespace tpverify;
    if (argc == 3 && std::string(argv[1]) == "--describe" && std::string(argv[2]) == "--json") {
        std::fputs(describe_json(cuda_available() ? "cuda" : "sim").c_str(), stdout);
        return static_cast<int>(Exit::ok);
    }
    if (argc == 2 && std::string(argv[1]) == "--describe") {
        std::fputs(describe_text().c_str(), stdout);
        return static_cast<int>(Exit::ok);
    }
    if (argc >= 2 && std::string(argv[1]) == "--validate") {
        // Judges argument lists (split at each lone "--") as a run would; runs nothing.
        std::vector<std::vector<std::string>> lists(1);
        for (int i = 2; i < argc; ++i) {
            if (std::string(argv[i]) == "--")
                lists.emplace_back();
            else
                lists.back().emplace_back(argv[i]);
        }
        std::fputs(validate_json(lists).c_str(), stdout);
        return static_cast<int>(Exit::ok);
    }
    // A rank whose output the launcher relays: each line leaves as soon as it is complete.
    if (std::getenv(k_relayed_env) != nullptr) std::setvbuf(stdout, nullptr, _IOLBF, 0);
    ParseOutcome parsed = parse_options(argc, argv);
    if (parsed.help) {
        std::fputs(usage().c_str(), stdout);
        return static_cast<int>(Exit::ok);
    }
    if (!parsed.error.empty()) {
        std::fprintf(stderr, "tpverify: %s\nRun 'tpverify --help' for the options.\n", parsed.error.c_str());
        return static_cast<int>(Exit::usage);
    }
    parsed.options.repeat = repeat_index(std::getenv("NCCLSWEEP_REPEAT"));
    parsed.options.command_line = "tpverify";
    for (int i = 1; i < argc; ++i) parsed.options.command_line += std::string(" ") + argv[i];
    const Options& options = parsed.options;
    ModelShape model;
    std::string error;
    if (!resolve_model(options, model, error)) {
        std::fprintf(stderr, "tpverify: %s\n", error.c_str());
        return static_cast<int>(Exit::usage);
    }
    const PassShape shape = pass_shape(options, model);
    PassPlan plan =
        build_pass(model, options.nranks > 0 ? options.nranks : options.tp, options.tokens, shape);
    Reporter reporter(options.json);
    if (options.measure_collectives) {
        // Not the pass: NCCL's collectives at its sizes, written as a calibration file.
        if (const std::string why = cuda_unavailable_reason(); !why.empty()) {
            std::fprintf(stderr,
                         "tpverify: --measure-collectives: %s; run it on the GPU host whose NCCL you want to "
                         "calibrate (scripts/device-measure-collectives.sh)\n",
                         why.c_str());
            return static_cast<int>(Exit::failure);
        }
        std::string command = "tpverify";
        for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
        return run_measure_collectives(options, plan, reporter, command);
    }
    if (options.rank < 0 || std::getenv(k_bootstrap_env) == nullptr) note_skipped_collectives(options);
    // --backend auto asks once why the CUDA backend cannot run ("" when it can).
    const std::string no_cuda = options.backend == BackendKind::automatic ? cuda_unavailable_reason() : "";
    const bool use_cuda = options.backend == BackendKind::cuda ||
                          (options.backend == BackendKind::automatic && no_cuda.empty());
    if (!use_cuda) {
        std::string fallback;
        if (options.backend == BackendKind::automatic) {
            fallback = no_cuda;
            std::fprintf(
                stderr,
                "tpverify: --backend auto: %s; running the SIMULATION instead: modeled GPUs and NCCL, "
                "not a measurement (--backend sim picks it without this notice)\n",
                fallback.c_str());
        }
        return run_sim(options, plan, reporter, fallback);
    }
    // Said once: by the process the user started (not again by a rank tpverify started).
    const bool started_by_user = options.rank < 0 || std::getenv(k_bootstrap_env) == nullptr;
    if (!options.sim_only_flags.empty() && started_by_user && options.rank <= 0) {
        std::string flags;
        for (const std::string& f : options.sim_only_flags)
            if (flags.find(f) == std::string::npos) flags += (flags.empty() ? "" : ", ") + f;
        std::fprintf(
            stderr,
            "tpverify: note: %s only %s to the sim backend; the CUDA backend runs on this machine and "
            "ignores %s\n",
            flags.c_str(), options.sim_only_flags.size() > 1 ? "apply" : "applies",
            options.sim_only_flags.size() > 1 ? "them" : "it");
    }
    // The server's process environment, before any NCCL call of this process or its ranks.
    std::string preset_set;
    for (const EnvSetting& e : process_server_environment(options.server, true))
        if (!e.from_caller) preset_set += (preset_set.empty() ? "" : ",") + e.name;
    if (!preset_set.empty() && std::getenv(k_preset_env) == nullptr)
        setenv(k_preset_env, preset_set.c_str(), 1);
    if (options.measure_kernels) {
        if (const std::string why = cuda_unavailable_reason(); !why.empty()) {
            std::fprintf(
                stderr,
                "tpverify: --measure-kernels: %s; run it on the GPU whose kernels the sim should price\n",
                why.c_str());
            return static_cast<int>(Exit::failure);
        }
        return run_cuda(options, plan, reporter);  // one rank, in this process
    }
    if (options.process_model == ProcessModel::processes && options.rank < 0) {
        // One process per rank, as a server runs: start them and report as they end.
        LaunchSpec spec;
        spec.exe = self_exe(argv[0]);
        spec.args.assign(argv + 1, argv + argc);
        spec.nranks = options.tp;
        LaunchOutcome outcome = launch_ranks(spec);
        if (outcome.exit_status != 0) std::fprintf(stderr, "tpverify: launch: %s\n", outcome.message.c_str());
        return outcome.exit_status;
    }
    return run_cuda(options, plan, reporter);
}
