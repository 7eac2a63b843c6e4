// tpverify: reproduces a tensor-parallel speculative-decoding verify pass (see docs/engine.md).
#include <cstdio>
#include <cstdlib>

#include "engine/backend.hpp"
#include "engine/model.hpp"
#include "engine/options.hpp"
#include "engine/report.hpp"

int main(int argc, char** argv) {
    using namespace tpverify;
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
    const Options& options = parsed.options;
    ModelShape model;
    std::string error;
    if (!resolve_model(options, model, error)) {
        std::fprintf(stderr, "tpverify: %s\n", error.c_str());
        return static_cast<int>(Exit::usage);
    }
    PassPlan plan = build_pass(model, options.nranks > 0 ? options.nranks : options.tp, options.tokens);
    Reporter reporter(options.json);
    if (options.backend == BackendKind::cuda ||
        (options.backend == BackendKind::automatic && cuda_available()))
        return run_cuda(options, plan, reporter);
    std::string fallback;
    if (options.backend == BackendKind::automatic) {
#if defined(TPVERIFY_HAVE_CUDA)
        fallback = "no CUDA GPU is visible";
#else
        fallback = "this tpverify was built without CUDA";
#endif
        std::fprintf(stderr,
                     "tpverify: --backend auto: %s; running the SIMULATION instead: modeled GPUs and NCCL, "
                     "not a measurement (--backend sim picks it without this notice)\n",
                     fallback.c_str());
    }
    return run_sim(options, plan, reporter, fallback);
}
