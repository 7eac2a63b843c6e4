#pragma once
// The host side of `ncclsweep run` (core/sweep/run_policy.hpp's RunHost) over remote/: the
// target a spec names (make_target) and its preflight with the GPU checks the run asks for.
#include <memory>

#include "core/sweep/run_policy.hpp"
#include "remote/preflight.hpp"
#include "remote/target_factory.hpp"

namespace ncclsweep::remote {

/// Opens targets with the command line's overrides and preflights them.
class TargetHost final : public RunHost {
public:
    explicit TargetHost(TargetOverrides overrides) : m_overrides(std::move(overrides)) {}

    Result<std::unique_ptr<Target>> open(const TargetSpec& spec) override;
    /// run_preflight, then check_gpus_idle (refuse_busy_gpus) and gpu_release_check
    /// (release_check); the returned check holds `target`, which must outlive it.
    Result<HostFacts> preflight(Target& target, const HostChecks& checks) override;

private:
    TargetOverrides m_overrides;
};

/// The words of the run header and the record for a preflight (no check applied).
[[nodiscard]] HostFacts host_facts(const HostPreflight& preflight);

}  // namespace ncclsweep::remote
