#pragma once
// Internal: `workload.metrics` options and `workload.stop_after` (core/spec/spec_parser_metrics.cpp).
#include <string_view>

#include <yaml-cpp/yaml.h>

#include "core/result.hpp"
#include "core/spec/spec.hpp"
#include "core/spec/spec_yaml.hpp"

namespace ncclsweep::inline spec::yaml {

/// bad_input at the regex when its capture group can match no number (e.g. `(token/s)`): the
/// metric would never be recorded.
Result<void> check_number_group(const SpecValue& regex, std::string_view what);

/// The long form's `aggregate: last|median|mean` and `warmup: N` into `extraction`.
Result<void> parse_metric_options(const YAML::Node& node, const Where& where, std::string_view what,
                                  MetricExtraction& extraction);

/// `stop_after: exit | N matches | DURATION`.
Result<StopAfter> parse_stop_after(const YAML::Node& node, const Where& where);

/// bad_input at `ready:` for a command that becomes ready (a server) with neither a `client:`
/// nor a `stop_after:`: nothing would end its runs; the message says what to add.
Result<void> check_server_ends(const WorkloadSpec& workload);

}  // namespace ncclsweep::inline spec::yaml
