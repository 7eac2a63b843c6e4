#pragma once
// `tpverify --describe --json`: the engine's own schema (every flag a spec may set, with its
// type and allowed values, and every metric with its unit and better direction), so that
// ncclsweep checks a spec's engine parameters before anything runs.
#include <string>
#include <vector>

namespace tpverify {

/// One flag as a spec sets it (name without "--").
struct ParameterSchema {
    std::string name;
    std::string type;                 ///< "int", "number", "bool", "enum", "text"
    std::vector<std::string> values;  ///< enum: the allowed values
    double min = 0, max = 0;          ///< int/number: inclusive range
    std::string help;                 ///< one line
};

/// One metric of the `result` event.
struct MetricSchema {
    std::string name, unit, better;  ///< better: "higher" or "lower"
};

/// The flags a spec may set (not --json, --help: ncclsweep passes --json itself).
const std::vector<ParameterSchema>& parameter_schema();
/// The metrics of the `result` event.
const std::vector<MetricSchema>& metric_schema();
/// All as one JSON object {"engine","describe_version","auto_backend","parameters":[...],
/// "metrics":[...],"assumptions":[{"name","value","source"},...]}; `auto_backend` is what
/// --backend auto runs on this host ("cuda" or "sim").
std::string describe_json(const std::string& auto_backend);
/// `tpverify --describe`: the sim's assumptions with their sources, for people.
std::string describe_text();

}  // namespace tpverify
