#pragma once
// Helpers for end-to-end tests: run the real ncclsweep binary against specs in a temp dir.
#include <string>
#include <vector>

#include "results/store.hpp"
#include "tests/support/temp_dir.hpp"

namespace ncclsweep::test {

/// Runs `ncclsweep args...` with the tpverify of this build and NO_COLOR set.
inline CommandResult run_ncclsweep(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv{binary_path("cli/ncclsweep").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> full_env{"NO_COLOR=1", "NCCLSWEEP_DB="};
    full_env.insert(full_env.end(), env.begin(), env.end());
    return run_command(argv, {}, full_env);
}

/// Same as run_ncclsweep, for callers that qualify it as test::ncclsweep(...).
inline CommandResult ncclsweep(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    return run_ncclsweep(args, env);
}

/// A spec running the simulated tpverify with the given axes block (YAML, indented 2).
inline std::string sim_spec(const std::string& name, const std::string& axes, int repeats = 1,
                            const std::string& timeouts = "  stall: 3\n  total: 60\n") {
    return "sweep: " + name +
           "\n"
           "target: local\n"
           "workload:\n"
           "  engine: tpverify\n"
           "  args:\n"
           "    backend: sim\n"
           "    topology: pcie-gen5\n"
           "    tp: 8\n"
           "    iters: 5\n"
           "    warmup: 1\n"
           "axes:\n" +
           axes + "repeats: " + std::to_string(repeats) + "\ntimeouts:\n" + timeouts;
}

/// All experiments of the newest sweep in `db`.
inline std::vector<results::StoredExperiment> latest_experiments(const std::string& db) {
    results::StoreOptions options;
    options.access = results::Access::read_only;
    auto store = results::Store::open(db, options);
    if (!store) return {};
    auto id = store->resolve_sweep_ref("latest");
    if (!id) return {};
    auto experiments = store->load_experiments(*id);
    return experiments ? *experiments : std::vector<results::StoredExperiment>{};
}

}  // namespace ncclsweep::test
