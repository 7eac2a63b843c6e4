#pragma once
// The GEMMs of the pass: y[m x n] (+)= x[m x k] W^T, bf16 activations, fp32 accumulation. Weights
// live in one arena; routed experts run on the weight-streaming kernel (stream_gemm.cuh), the
// other bf16 GEMMs of few rows on the skinny kernel (skinny_gemm.cuh), the rest (or, with
// TPVERIFY_GEMM=cublas, every bf16 GEMM) through cuBLAS.
#include <map>
#include <vector>

#include "engine/cuda/common.cuh"
#include "engine/cuda/skinny_gemm.cuh"
#include "engine/cuda/stream_gemm.cuh"
#include "engine/model/model.hpp"

namespace tpverify::cuda {

/// Which GEMM implementation runs (TPVERIFY_GEMM): auto = a layer's routed experts (INT4 or
/// bf16) as batched launches of the weight-streaming kernel, the other bf16 GEMMs of few rows up
/// to TPVERIFY_SKINNY_MAX_MB on the skinny kernel, the rest on cuBLAS; cublas = every bf16 GEMM
/// on cuBLAS, routed experts one cublasGemmEx each (INT4 experts always run on the streaming
/// kernel).
enum class GemmPath { automatic, cublas };
/// Reads TPVERIFY_GEMM; unknown values give `automatic` and `ok` false.
GemmPath gemm_path_from_env(bool& ok);
/// "auto" or "cublas".
const char* gemm_path_name(GemmPath path);

/// Device weights for the GEMMs and experts of every plan a rank runs. The weights lie in one
/// arena of at most `k_max_arena_bytes`; a plan that reads more cycles through it in plan order,
/// so a byte is read again only after at least the arena's size of other weights (far beyond
/// the L2), and every weight byte of a pass still comes from device memory. The arena holds
/// random bits (small bf16 values): random bits in either layout are the same bytes to stream;
/// --check runs the kernels on weights repacked from the checkpoint's layout instead.
class WeightPool {
public:
    /// Largest arena (bytes); smaller when the GPU has less free memory.
    static constexpr std::uint64_t k_max_arena_bytes = 24ull << 30;
    /// Smallest arena that still keeps reuse out of the L2.
    static constexpr std::uint64_t k_min_arena_bytes = 1ull << 30;
    WeightPool() = default;
    WeightPool(const WeightPool&) = delete;
    WeightPool& operator=(const WeightPool&) = delete;
    ~WeightPool();
    /// Allocates and fills the arena, and places every GEMM and expert of every plan in it.
    /// `reserve` bytes are left free for everything else the rank allocates.
    Status allocate(const std::vector<const PassPlan*>& plans, std::uint64_t reserve, std::uint64_t seed,
                    cudaStream_t stream);
    /// Weights of step `step` of `plan` (a GEMM step; for an experts step, expert `expert`).
    [[nodiscard]] const void* weight(const PassPlan& plan, std::size_t step, int expert = 0) const;
    /// Weight bytes the first plan reads per pass.
    [[nodiscard]] std::uint64_t bytes() const { return m_bytes; }
    /// Bytes allocated for weights.
    [[nodiscard]] std::uint64_t arena_bytes() const { return m_arena; }

private:
    void* m_base = nullptr;
    std::uint64_t m_bytes = 0, m_arena = 0;
    /// Per plan, per step: the first matrix's pointer (experts: one per expert, consecutive).
    std::map<const PassPlan*, std::map<std::size_t, std::vector<const void*>>> m_weights;
};

/// Whether `g` (a routed expert's when `expert`) runs on the weight-streaming kernel under `path`.
bool streams(GemmPath path, const Gemm& g, bool expert);
/// Whether the bf16 GEMM `g` (not a routed expert's) runs on the skinny kernel (skinny_gemm.cuh)
/// under `path`: `automatic`, m <= 8 and at most TPVERIFY_SKINNY_MAX_MB (default 160) MB of
/// weights; larger ones stream at copy bandwidth on cuBLAS already (docs/benchmarks-gpu.md).
/// Its weights are row-major [n][k], as cuBLAS reads them.
bool skinny_chosen(GemmPath path, const Gemm& g);

/// Runs one GEMM on `stream`; `accumulate` adds into y (y += x W^T) instead of overwriting. `ldx`:
/// the row stride of x (0: k).
Status run_gemm(cublasHandle_t handle, GemmPath path, const sg::Workspace& ws, const Gemm& g, const void* w,
                const bf16* x, bf16* y, bool accumulate, cudaStream_t stream, const char* phase, int ldx = 0);

}  // namespace tpverify::cuda
