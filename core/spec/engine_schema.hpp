#pragma once
// The engine's own schema (`tpverify --describe --json`): which parameters exist, their types
// and allowed values, and the metrics it reports. A spec's engine parameters (fixed `args:`,
// lower_case axes, include points, --set/--axis) are checked against it before anything runs.
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/spec/metric.hpp"
#include "core/spec/spec.hpp"
#include "core/target.hpp"

namespace ncclsweep::inline spec {

/// The engine's spelling of a parameter: '-' where a spec may write '_' (tpverify accepts
/// both), so `draft_us` and `draft-us` name the same flag.
[[nodiscard]] std::string flag_name(std::string_view name);

/// One engine flag.
struct EngineParameter {
    std::string name;                 ///< without "--", e.g. "topology"
    std::string type;                 ///< "int", "number", "bool", "enum" or "text"
    std::vector<std::string> values;  ///< enum and bool: the allowed values
    double min = 0, max = 0;          ///< int and number: inclusive range
};

/// What `tpverify --describe --json` says.
struct EngineSchema {
    std::vector<EngineParameter> parameters;
    std::vector<MetricDefinition> metrics;
    std::string
        auto_backend;  ///< what `--backend auto` runs on the engine's host ("cuda", "sim"; "" = not said)
};

/// The backend that produces `spec`'s numbers: its fixed `backend` arg when it is not "auto",
/// else what the engine says auto picks there; "" for command workloads or when unknown.
/// (A `backend` axis is per experiment: see results' point backend.)
[[nodiscard]] std::string sweep_backend(const Spec& spec, const EngineSchema* schema);

/// Parses the describe JSON; bad_input naming `source` (the engine path) when it is not one.
[[nodiscard]] Result<EngineSchema> parse_engine_schema(std::string_view json, std::string_view source);

/// Runs `engine_path --describe --json` on `target` and parses it. An error (infrastructure:
/// the engine cannot run or predates --describe) says so; callers decide whether that stops them.
[[nodiscard]] Result<EngineSchema> read_engine_schema(Target& target, const std::string& engine_path);

/// Checks every engine parameter of `spec` (an `engine:` workload): each name is a parameter
/// of the engine (did-you-mean otherwise) and each value fits its type and allowed values.
/// bad_input at the value's place (file:line:col, or the --set/--axis flag).
[[nodiscard]] Result<void> check_engine_parameters(const Spec& spec, const EngineSchema& schema);

}  // namespace ncclsweep::inline spec
