#pragma once
// The environment a workload inherits besides what the spec sets: NCCL_*, CUDA_* and
// TORCH_NCCL_* variables exported by a launch script, a module file or ~/.bashrc reach every
// experiment that does not set them. They are recorded with the sweep and said once at the start
// of `run`, so a result is never read as if they were absent.
#include <string>
#include <vector>

#include "core/experiment.hpp"
#include "core/result.hpp"
#include "core/target.hpp"

namespace ncclsweep::inline sweep {

/// True for a variable that changes what NCCL, CUDA or PyTorch's NCCL layer does.
[[nodiscard]] bool is_inherited_setting(const std::string& name);

/// The variables of `env_output` (the output of `env`: NAME=value lines) that change NCCL, CUDA
/// or PyTorch's NCCL layer and that not every experiment sets, minus the names the runner sets
/// itself (`runner_env`), in name order.
[[nodiscard]] std::vector<Assignment> inherited_settings(const std::string& env_output,
                                                         const std::vector<Experiment>& experiments,
                                                         const std::vector<Assignment>& runner_env);

/// inherited_settings of the environment a command of `target` starts with (`env` run there:
/// this process's own environment locally, the login environment over ssh, the login node's for
/// Slurm, whose tasks inherit it). On a target with several hosts (a pool) each host is asked; a
/// value that differs between them reads "VALUE on HOST; VALUE on HOST". Errors: the target's.
Result<std::vector<Assignment>> inherited_environment(Target& target,
                                                      const std::vector<Experiment>& experiments,
                                                      const std::vector<Assignment>& runner_env);

/// The warning `run` shows once at its start ("" when nothing is inherited).
[[nodiscard]] std::string inherited_warning(const std::vector<Assignment>& inherited,
                                            const std::string& target);

/// Why the sweep cannot run when an inherited variable is one the sweep varies and the plan has
/// NCCL's defaults points: those points set none of the swept variables, so they would run with
/// the inherited value and be stored as NCCL's defaults. "" when there is no such variable.
[[nodiscard]] std::string defaults_point_conflict(const std::vector<Assignment>& inherited,
                                                  const std::vector<Experiment>& experiments,
                                                  const std::string& target);

/// What differs between two recorded inherited environments, one sentence each ("NCCL_PROTO:
/// Simple -> (not set)").
[[nodiscard]] std::vector<std::string> inherited_differences(const std::vector<Assignment>& before,
                                                             const std::vector<Assignment>& now);

}  // namespace ncclsweep::inline sweep
