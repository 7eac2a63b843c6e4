// libtpverify-cuda.so's entry points (engine/cuda_module.hpp), found by dlsym.
#include "engine/cuda/entry.hpp"
#include "engine/cuda_module.hpp"

extern "C" {

__attribute__((visibility("default"))) const char* tpverify_cuda_abi() {
    static const std::string abi = tpverify::cuda_module_abi();
    return abi.c_str();
}

__attribute__((visibility("default"))) int tpverify_cuda_device_count() {
    return tpverify::cuda::device_count();
}

__attribute__((visibility("default"))) int tpverify_cuda_run(const tpverify::Options* options,
                                                             const tpverify::PassPlan* plan,
                                                             tpverify::Reporter* reporter) {
    return tpverify::cuda::run_backend(*options, *plan, *reporter);
}

__attribute__((visibility("default"))) int tpverify_cuda_measure(const tpverify::Options* options,
                                                                 const tpverify::PassPlan* plan,
                                                                 tpverify::Reporter* reporter, const char* command) {
    return tpverify::cuda::run_measure(*options, *plan, *reporter, command);
}
}
