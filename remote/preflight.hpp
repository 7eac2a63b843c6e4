#pragma once
// Host preflight: what the host has (GPUs, driver, NCCL, nccl.conf) and whether its GPUs are
// already busy, recorded with the sweep; plus the between-experiments check that nothing of
// ours still holds a GPU.
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "core/target.hpp"

namespace ncclsweep::remote {

/// One GPU as nvidia-smi lists it.
struct GpuInfo {
    std::string name;
    std::string driver;
    std::string memory_used;  ///< as printed ("1 MiB")
};

/// A compute process on a GPU (nvidia-smi --query-compute-apps).
struct GpuProcess {
    long pid = 0;
    std::string name;
    std::string used_memory;
};

/// What a host looks like before a sweep.
struct HostPreflight {
    std::string target;  ///< Target::describe()
    bool has_nvidia_smi = false;
    std::vector<GpuInfo> gpus;       ///< empty without nvidia-smi
    std::string driver;              ///< driver of the first GPU ("" when none)
    std::string nccl_version;        ///< e.g. "2.21.5"; "" when not found
    std::string nccl_source;         ///< where it came from: "libnccl.so path", "torch", ""
    std::string etc_nccl_conf;       ///< contents of /etc/nccl.conf ("" if missing)
    std::string home_nccl_conf;      ///< contents of ~/.nccl.conf ("" if missing)
    std::vector<GpuProcess> busy;    ///< compute processes already on the GPUs
    std::vector<std::string> notes;  ///< what could not be determined and why
    /// Seconds the target took to run `true` (over ssh: one request to the agent, whose login
    /// shell started once, with the connection); every experiment pays it at least once.
    /// < 0: not measured.
    double command_start_s = -1;
    std::vector<std::string> warnings;  ///< worth the user's attention (a slow command start)
    /// For storing with the sweep (stable keys; versioned by "preflight_version").
    [[nodiscard]] nlohmann::json to_json() const;
};

/// Above this a command start earns a warning: it is the per-experiment overhead ncclsweep
/// aims to stay under over ssh, and on its own it would use all of it.
inline constexpr double k_slow_command_start_s = 0.5;

/// Times a trivial command on `target` (command_start_s; a warning when slower than
/// k_slow_command_start_s), then runs the probe script (one capture) and parses it, and adds
/// what Target::check_before_sweep finds. Missing tools are notes, not errors; fails
/// (infrastructure) when the target cannot run them, or with the target's own check's error.
Result<HostPreflight> run_preflight(Target& target, std::chrono::seconds timeout = std::chrono::seconds(60));

/// Parses the probe script's output (exposed for tests).
HostPreflight parse_preflight(const std::string& probe_output, const std::string& target_name);

/// Whether busy GPUs stop a sweep.
enum class BusyPolicy { refuse, force };

/// infrastructure error listing the busy pids (and saying --force overrides) when
/// `preflight.busy` is non-empty and `policy` is refuse.
Result<void> check_gpus_idle(const HostPreflight& preflight, BusyPolicy policy);

/// Between experiments: fails (infrastructure) when a GPU compute process still belongs to one
/// of `process_groups` (ours). Without nvidia-smi it checks nothing and returns a note saying so
/// (otherwise an empty string).
Result<std::string> verify_gpus_released(Target& target, const std::vector<long>& process_groups,
                                         std::chrono::seconds timeout = std::chrono::seconds(30));

/// The check the sweep loop runs before each experiment (SweepRunOptions::before_experiment):
/// the process groups the previous experiment started no longer hold a GPU (waiting up to
/// `timeout`). Only a host with nvidia-smi can say who holds a GPU, so elsewhere it checks
/// nothing and costs no round trip.
[[nodiscard]] std::function<Result<void>(const std::vector<long>&)> gpu_release_check(
    Target& target, const HostPreflight& preflight, std::chrono::seconds timeout = std::chrono::seconds(30));

}  // namespace ncclsweep::remote
