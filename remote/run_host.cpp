#include "remote/run_host.hpp"

#include <fmt/format.h>

namespace ncclsweep::remote {

Result<std::unique_ptr<Target>> TargetHost::open(const TargetSpec& spec) {
    return make_target(spec, m_overrides);
}

Result<HostFacts> TargetHost::preflight(Target& target, const HostChecks& checks) {
    auto preflight = run_preflight(target);
    if (!preflight) return preflight.error();
    if (checks.refuse_busy_gpus)
        if (auto idle = check_gpus_idle(*preflight, BusyPolicy::refuse); !idle) return idle.error();
    HostFacts facts = host_facts(*preflight);
    if (checks.release_check) facts.before_experiment = gpu_release_check(target, *preflight);
    return facts;
}

HostFacts host_facts(const HostPreflight& preflight) {
    HostFacts facts;
    facts.record = preflight.to_json().dump();
    if (preflight.gpus.empty()) {
        facts.gpus = "none found";
    } else {
        facts.gpus = fmt::format("{} x {}", preflight.gpus.size(), preflight.gpus.front().name);
        if (!preflight.driver.empty()) facts.gpus += ", driver " + preflight.driver;
    }
    facts.nccl = preflight.nccl_version.empty()
                     ? "not found on the host"
                     : preflight.nccl_version +
                           (preflight.nccl_source.empty() ? "" : " (" + preflight.nccl_source + ")");
    facts.notes = preflight.notes;
    facts.warnings = preflight.warnings;
    return facts;
}

}  // namespace ncclsweep::remote
