#pragma once
// The CUDA backend is a module of its own, libtpverify-cuda.so beside the tpverify executable
// (engine/CMakeLists.txt), which tpverify loads with dlopen when a run needs CUDA
// (engine/run/cuda_loader.cpp). So the simulation, --help and --describe never load cudart, cuBLAS
// and NCCL, whose dynamic relocation alone took ~0.4 s of every start, and a tpverify built
// with CUDA still runs its simulation on a host that lacks those libraries. The module's
// entry points, with C names so dlsym finds them; the module resolves tpverify's own
// functions (the model, the reporter) from the executable, which exports them.
#include <cstdio>
#include <string>

#include "engine/model/model.hpp"
#include "engine/options.hpp"
#include "engine/report.hpp"

namespace tpverify {

/// The module's file name, looked for in the executable's folder.
inline constexpr const char* k_cuda_module_file = "libtpverify-cuda.so";

/// What the executable and the module must agree on: the interface version and the sizes of
/// the types passed across. A module from another build is refused with both strings.
inline std::string cuda_module_abi() {
    char text[160];
    std::snprintf(text, sizeof text, "tpverify-cuda 1 %s Options=%zu PassPlan=%zu Reporter=%zu",
                  NCCLSWEEP_VERSION, sizeof(Options), sizeof(PassPlan), sizeof(Reporter));
    return text;
}

}  // namespace tpverify

extern "C" {
/// cuda_module_abi() as the module was built.
const char* tpverify_cuda_abi();
/// CUDA devices visible to this process, or -1 when cudaGetDeviceCount fails.
int tpverify_cuda_device_count();
/// The CUDA backend's run of the pass (engine/cuda/run_cuda.cu, beside the pass it runs).
int tpverify_cuda_run(const tpverify::Options* options, const tpverify::PassPlan* plan,
                      tpverify::Reporter* reporter);
/// --measure-collectives (engine/cuda/measure.cu); `command` is written into the file.
int tpverify_cuda_measure(const tpverify::Options* options, const tpverify::PassPlan* plan,
                          tpverify::Reporter* reporter, const char* command);
}
