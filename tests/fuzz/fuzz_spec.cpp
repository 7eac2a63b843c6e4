// Fuzz target: spec text -> parse_spec -> validate_spec -> plan (at most k_max_experiments)
// -> render and check each experiment, plus check_plan and the workload's watcher rules.
// Invariants: errors are bad_input with a message; experiment ids count 1, 2, ...; keys are
// set; no argv element carries a NUL; a shell command is {"/bin/sh", "-c", script}; a plan
// that walks cleanly has as many experiments in check_plan as the planner produced.
#include <cstdint>
#include <string>

#include "core/nccl/nccl.hpp"
#include "core/plan/plan.hpp"
#include "core/plan/planner.hpp"
#include "core/plan/render.hpp"
#include "core/spec/spec_parser.hpp"
#include "core/watch/rule_catalog.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ncclsweep;

namespace {

/// Small enough that no input can blow up time or memory.
constexpr std::uint64_t k_max_experiments = 24;
/// Bigger inputs only slow the fuzzer down; real specs are a few KB.
constexpr std::size_t k_max_input = 64 * 1024;

void check_error(const Error& error) {
    FUZZ_CHECK(error.kind == ErrorKind::bad_input, error.message);
    FUZZ_CHECK(!error.message.empty(), "an error must say what is wrong");
}

void check_experiment(const Spec& spec, const Experiment& experiment, int expected_id) {
    FUZZ_CHECK(experiment.id == expected_id, std::to_string(experiment.id));
    FUZZ_CHECK(!experiment.key.empty(), experiment.canonical);
    FUZZ_CHECK(!experiment.argv.empty(), "an experiment needs a program");
    for (const auto& word : experiment.argv)
        FUZZ_CHECK(word.find('\0') == std::string::npos, "argv element with a NUL byte: " + word);
    if (experiment.shell)
        FUZZ_CHECK(
            experiment.argv.size() == 3 && experiment.argv[0] == "/bin/sh" && experiment.argv[1] == "-c",
            "a string command runs as /bin/sh -c script");
    const render::Provenance provenance{spec.name, experiment.id, experiment.key};
    (void)render::sitecustomize(experiment.env, provenance);
    auto env = render::env_file(experiment.env, provenance);
    if (!env) check_error(env.error());
    (void)nccl::check_environment(experiment.env, workload_context(spec, experiment));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > k_max_input) return 0;
    auto spec = parse_spec(fuzz::as_text(data, size), "fuzz.yaml");
    if (!spec) {
        check_error(spec.error());
        return 0;
    }
    if (auto valid = validate_spec(*spec); !valid) {
        check_error(valid.error());
        return 0;
    }
    if (auto rules = rules_from_workload(spec->workload); rules) {
        auto catalog = RuleCatalog::with_user_rules(*rules);
        if (!catalog) check_error(catalog.error());
    } else {
        check_error(rules.error());
    }

    PlanOptions options;
    options.max_experiments = k_max_experiments;
    auto planner = Planner::create(*spec, options);
    if (!planner) {
        check_error(planner.error());
        return 0;
    }
    Experiment experiment;
    int produced = 0;
    bool clean = true;
    for (std::uint64_t i = 0; i <= k_max_experiments; ++i) {
        auto more = planner->next(experiment);
        if (!more) {
            check_error(more.error());
            clean = false;
            break;
        }
        if (!*more) break;
        ++produced;
        FUZZ_CHECK(static_cast<std::uint64_t>(produced) <= k_max_experiments,
                   "max_experiments was not enforced");
        check_experiment(*spec, experiment, produced);
    }
    auto summary = check_plan(*spec, options);
    if (!summary) {
        check_error(summary.error());
    } else if (clean) {
        FUZZ_CHECK(summary->count == static_cast<std::uint64_t>(produced),
                   "check_plan counted " + std::to_string(summary->count) + ", planner gave " +
                       std::to_string(produced));
    }
    return 0;
}
