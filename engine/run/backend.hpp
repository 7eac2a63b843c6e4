#pragma once
// A backend runs the verify pass and reports through the Reporter.
#include <string>
#include <vector>

#include "engine/model/model.hpp"
#include "engine/options.hpp"
#include "engine/report.hpp"

namespace tpverify {

/// Exit codes of tpverify.
enum class Exit : int { ok = 0, failure = 1, usage = 2 };

/// Runs the simulation backend (always available). `backend_fallback`: why --backend auto
/// chose the sim ("" when it was asked for), said in the start event.
int run_sim(const Options& options, const PassPlan& plan, Reporter& reporter,
            const std::string& backend_fallback = "");

/// One assumption of the sim's collective model: its name, the figure as the sim uses it, and
/// where that figure comes from (a measurement, NCCL's source, or "estimate").
struct SimAssumption {
    std::string name, value, source;
};
/// Every assumption of the sim's collective model and the fused kernel's price
/// (engine/sim/assumptions.cpp), for tpverify --describe.
std::vector<SimAssumption> sim_assumptions();

/// True when the CUDA backend was compiled in, its module loads and at least one GPU is visible
/// (engine/run/cuda_loader.cpp).
bool cuda_available();
/// Why the CUDA backend cannot run here, "" when it can: "this tpverify was built without
/// CUDA", "no NVIDIA driver on this host …", the module's load error, "no CUDA GPU is visible".
std::string cuda_unavailable_reason();
/// Runs the CUDA backend (returns failure with a message if it was not compiled in or its
/// module does not load).
int run_cuda(const Options& options, const PassPlan& plan, Reporter& reporter);
/// --measure-collectives: times NCCL all-reduce and all-gather at the pass's sizes and
/// 1 KiB..1 MiB on --tp GPUs and prints a calibration file on stdout (engine/cuda/measure.cu);
/// `command` (the command line) is written into it.
int run_measure_collectives(const Options& options, const PassPlan& plan, Reporter& reporter,
                            const std::string& command);

}  // namespace tpverify
