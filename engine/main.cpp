// tpverify: reproduces a tensor-parallel speculative-decoding verify pass (see docs/engine.md).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/backend.hpp"
#include "engine/describe.hpp"
#include "engine/model.hpp"
#include "engine/options.hpp"
#include "engine/report.hpp"

int main(int argc, char** argv) {
    using namespace tpverify;
    if (argc == 3 && std::string(argv[1]) == "--describe" && std::string(argv[2]) == "--json") {
        std::fputs(describe_json(cuda_available() ? "cuda" : "sim").c_str(), stdout);
        return static_cast<int>(Exit::ok);
    }
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
    bool use_cuda = options.backend == BackendKind::cuda ||
                    (options.backend == BackendKind::automatic && cuda_available());
    return use_cuda ? run_cuda(options, plan, reporter) : run_sim(options, plan, reporter);
}
