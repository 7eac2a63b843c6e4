#pragma once
// NCCL knowledge (docs/nccl-validation.md): which NCCL_* variables exist, which values they accept,
// and which settings are risky or ignored for the workload at hand.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/experiment.hpp"

namespace ncclsweep::nccl {

enum class Severity { error, warning };

/// One finding about a variable's value or a combination of values.
struct Finding {
    Severity severity = Severity::warning;
    std::string variable;  ///< NCCL_* name the finding is about ("" for combinations)
    std::string message;   ///< what is wrong and what to do, e.g. "bare NCCL_ALGO=Tree applies to
                           ///< every collective; use allreduce:tree"
    std::string code;  ///< short stable id: "bare-tree", "ll128-pcie", "ignored-small", "unknown-var", ...
};

/// What the validator knows about the workload (for "ignored at this size", "LL128 on PCIe").
struct WorkloadContext {
    std::optional<std::uint64_t> max_message_bytes;  ///< largest collective (tokens x hidden x 2)
    std::optional<std::string> topology;             ///< "pcie-gen4", "pcie-gen5", "nvlink", or unknown
};

/// Checks one NCCL_* value on its own (syntax and range). Unknown NCCL_* names yield a warning
/// with a "did you mean"; non-NCCL names yield nothing.
std::vector<Finding> check_value(const std::string& name, const std::string& value);

/// Checks one experiment's whole environment: per-value checks plus combinations
/// (MIN <= MAX after merging NCHANNELS/CTAS names, LL128 on PCIe, knobs ignored at small sizes).
std::vector<Finding> check_environment(const std::vector<Assignment>& env, const WorkloadContext& context);

/// All NCCL_* variables the validator knows (sorted), for docs and "did you mean".
std::vector<std::string> known_variables();

}  // namespace ncclsweep::nccl
