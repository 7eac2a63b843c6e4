#pragma once
// bf16 GEMMs of the pass: y[m x n] = x[m x k] * W[n x k]^T, fp32 accumulate.
#include <vector>

#include "engine/cuda/common.cuh"
#include "engine/model.hpp"

namespace tpverify::cuda {

/// Which GEMM implementation runs (TPVERIFY_GEMM): auto = cuBLAS with each layer's experts as
/// batched GEMMs (like a fused-MoE kernel); cublas = one cuBLAS call per GEMM; skinny = a
/// weight-streaming kernel for m <= 8 (kept for comparison).
enum class GemmPath { automatic, cublas, skinny };
/// Reads TPVERIFY_GEMM; unknown values give `automatic` and `ok` false.
GemmPath gemm_path_from_env(bool& ok);
/// "auto", "cublas" or "skinny".
const char* gemm_path_name(GemmPath path);

/// Device weights for every GEMM a plan touches (one allocation; only touched experts exist).
class WeightPool {
public:
    WeightPool() = default;
    WeightPool(const WeightPool&) = delete;
    WeightPool& operator=(const WeightPool&) = delete;
    ~WeightPool();
    /// Allocates n*k bf16 per GEMM step of `plan`, filled with small random values.
    Status allocate(const PassPlan& plan, std::uint64_t seed, cudaStream_t stream);
    /// Weights of the i-th GEMM step (in plan order, counting GEMM steps only).
    [[nodiscard]] const bf16* weight(std::size_t gemm_index) const { return m_weights[gemm_index]; }
    [[nodiscard]] std::uint64_t bytes() const { return m_bytes; }

private:
    void* m_base = nullptr;
    std::uint64_t m_bytes = 0;
    std::vector<const bf16*> m_weights;
};

/// Runs one GEMM on `stream`; `accumulate` adds into y (y += x W^T) instead of overwriting.
Status run_gemm(cublasHandle_t handle, GemmPath path, const Gemm& g, const bf16* w, const bf16* x,
                bf16* y, bool accumulate, cudaStream_t stream, const char* phase);

}  // namespace tpverify::cuda
