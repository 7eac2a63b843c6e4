#pragma once
// Internal: parsers of the `target:`, `workload:`, `search:` and `repeats:` sections.
#include <yaml-cpp/yaml.h>

#include "core/result.hpp"
#include "core/spec/spec.hpp"
#include "core/spec/spec_yaml.hpp"

namespace ncclsweep::inline spec::yaml {

/// `target:` as a URL string or a map {url, env_delivery, workdir, identity_file, accept_new_host_key}.
Result<TargetSpec> parse_target(const YAML::Node& node, const Where& where);

/// `workload:` — `engine: tpverify` + `args:`, or `command:` with client/ready/metrics; `rules:` for both.
Result<WorkloadSpec> parse_workload(const YAML::Node& node, const Where& where);

/// `search:` — {prune: {after}, race: {min_repeats, max_repeats, confidence}, budget, metric}.
Result<SearchSpec> parse_search(const YAML::Node& node, const Where& where);

/// `repeats:` — a whole number 1..1000, `auto`, or {auto: {alpha, max, default}}; fills
/// spec.repeats (auto: its default) and spec.auto_repeats.
Result<void> parse_repeats(const YAML::Node& node, const Where& where, Spec& spec);

}  // namespace ncclsweep::inline spec::yaml
