// Stand-ins for the CUDA backend when tpverify is built without CUDA (engine/cuda/ provides
// the real definitions and defines TPVERIFY_HAVE_CUDA).
#include "engine/backend.hpp"

#if !defined(TPVERIFY_HAVE_CUDA)

namespace tpverify {

bool cuda_available() {
    return false;
}

int run_cuda(const Options&, const PassPlan&, Reporter& reporter) {
    reporter.error(
        "init", "cudaGetDeviceCount",
        "this tpverify was built without CUDA (rebuild on a host with nvcc and NCCL, or use --backend sim)");
    return static_cast<int>(Exit::failure);
}

int run_measure_collectives(const Options&, const PassPlan&, Reporter& reporter, const std::string&) {
    reporter.error("init", "cudaGetDeviceCount",
                   "--measure-collectives needs the CUDA backend, and this tpverify was built without CUDA "
                   "(rebuild on a host with nvcc and NCCL; scripts/device-measure-collectives.sh does)");
    return static_cast<int>(Exit::failure);
}

}  // namespace tpverify

#endif
