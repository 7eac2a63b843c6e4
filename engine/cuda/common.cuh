#pragma once
// Shared helpers of the CUDA backend: error status, checked-call macros, clocks.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace tpverify::cuda {

using bf16 = __nv_bfloat16;

/// Outcome of a backend step: ok, or the phase, failing API and its error string.
struct Status {
    bool ok = true;
    std::string phase;  ///< init, warmup, capture, replay, check
    std::string api;    ///< e.g. "ncclAllReduce"
    std::string what;   ///< the API's own error string (plus context)
    /// A failure in `phase` of `api` with message `what`.
    static Status fail(std::string phase, std::string api, std::string what) {
        return Status{false, std::move(phase), std::move(api), std::move(what)};
    }
};

/// Text of a cuBLAS status (cuBLAS has cublasGetStatusString since 11.4).
inline std::string cublas_string(cublasStatus_t s) {
    return cublasGetStatusString(s);
}

/// The function name of a call's source text ("cudaMalloc(&p, n)" -> "cudaMalloc").
inline std::string api_name(const char* call) {
    std::string s(call);
    return s.substr(0, s.find('('));
}

/// Seconds on a monotonic clock.
inline double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace tpverify::cuda

// Checked calls: on failure return a Status naming the phase, the API and its error string.
#define TPV_CUDA(phase, call)                                                                 \
    do {                                                                                      \
        cudaError_t tpv_e_ = (call);                                                          \
        if (tpv_e_ != cudaSuccess)                                                            \
            return ::tpverify::cuda::Status::fail((phase), ::tpverify::cuda::api_name(#call), \
                                                  cudaGetErrorString(tpv_e_));                \
    } while (0)
#define TPV_NCCL(phase, call)                                                                 \
    do {                                                                                      \
        ncclResult_t tpv_r_ = (call);                                                         \
        if (tpv_r_ != ncclSuccess && tpv_r_ != ncclInProgress)                                \
            return ::tpverify::cuda::Status::fail((phase), ::tpverify::cuda::api_name(#call), \
                                                  ncclGetErrorString(tpv_r_));                \
    } while (0)
#define TPV_CUBLAS(phase, call)                                                               \
    do {                                                                                      \
        cublasStatus_t tpv_s_ = (call);                                                       \
        if (tpv_s_ != CUBLAS_STATUS_SUCCESS)                                                  \
            return ::tpverify::cuda::Status::fail((phase), ::tpverify::cuda::api_name(#call), \
                                                  ::tpverify::cuda::cublas_string(tpv_s_));   \
    } while (0)
#define TPV_TRY(expr)                              \
    do {                                           \
        ::tpverify::cuda::Status tpv_st_ = (expr); \
        if (!tpv_st_.ok) return tpv_st_;           \
    } while (0)
