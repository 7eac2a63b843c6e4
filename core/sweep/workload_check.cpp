#include "core/sweep/workload_check.hpp"

#include "core/log.hpp"
#include "core/spec/engine_schema.hpp"

namespace ncclsweep::inline sweep {

Result<CheckedWorkload> check_engine_spec(const Spec& spec, const std::string& engine_path,
                                          const std::vector<EngineRun>& runs, Target& target) {
    if (spec.workload.engine.empty()) return CheckedWorkload{spec.workload.metric_definitions, {}};
    auto schema = read_engine_schema(target, engine_path);
    if (!schema) {
        if (schema.error().kind == ErrorKind::bad_input) return schema.error();
        NCCLSWEEP_LOG(warning, "engine parameters not checked before running: {}", schema.error().message);
        return CheckedWorkload{{}, sweep_backend(spec, nullptr)};
    }
    if (auto ok = check_engine_parameters(spec, *schema); !ok) return ok.error();
    // Values that fit on their own may still not run together (tp: 3 with 64 heads).
    if (auto runnable = validate_engine_runs(spec, runs, target, engine_path); !runnable) {
        if (runnable.error().kind == ErrorKind::bad_input) return runnable.error();
        NCCLSWEEP_LOG(warning, "points not checked against the engine before running: {}",
                      runnable.error().message);
    }
    return CheckedWorkload{schema->metrics, sweep_backend(spec, &*schema)};
}

}  // namespace ncclsweep::inline sweep
