#pragma once
// Builds the Target a spec (plus CLI overrides) asks for.
#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "core/result.hpp"
#include "core/spec/spec.hpp"
#include "core/target.hpp"

namespace ncclsweep::remote {

/// CLI-level overrides of the spec's target: block.
struct TargetOverrides {
    std::optional<std::string> url;            ///< --target
    bool accept_new_host_key = false;          ///< --accept-new-host-key (ORed with the spec)
    std::optional<std::string> known_hosts;    ///< --known-hosts PATH
    std::optional<std::string> identity_file;  ///< --identity PATH (wins over the spec)
    const std::atomic<bool>* stop = nullptr;   ///< Ctrl-C (a Slurm target stops waiting on the queue)
};

/// A LocalTarget, a connected SshTarget, a PoolTarget of connected hosts (target.hosts) or a
/// SlurmTarget (slurm://PARTITION, submitting from this machine). bad_input for a malformed URL (naming the
/// spec location when it came from the spec); infrastructure when the ssh connection fails.
Result<std::unique_ptr<Target>> make_target(const TargetSpec& spec, const TargetOverrides& overrides = {});

}  // namespace ncclsweep::remote
