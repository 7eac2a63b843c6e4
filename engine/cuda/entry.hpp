#pragma once
// The CUDA backend's functions behind the module's C entry points (engine/cuda_module.hpp).
#include <string>

#include "engine/model.hpp"
#include "engine/options.hpp"
#include "engine/report.hpp"

namespace tpverify::cuda {

/// CUDA devices visible to this process, or -1 when cudaGetDeviceCount fails.
int device_count();
/// Runs the pass on the GPUs (engine/cuda/run_cuda.cu).
int run_backend(const Options& options, const PassPlan& plan, Reporter& reporter);
/// --measure-collectives (engine/cuda/measure.cu).
int run_measure(const Options& options, const PassPlan& plan, Reporter& reporter, const std::string& command);

}  // namespace tpverify::cuda
