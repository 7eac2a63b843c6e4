#pragma once
// bf16 GEMMs of the pass: y[m x n] = x[m x k] * W[n x k]^T, fp32 accumulate.
#include <map>
#include <vector>

#include "engine/cuda/common.cuh"
#include "engine/model/model.hpp"

namespace tpverify::cuda {

/// Which GEMM implementation runs (TPVERIFY_GEMM): auto = cuBLAS with each layer's experts as
/// batched GEMMs (like a fused-MoE kernel); cublas = one cuBLAS call per GEMM; skinny = a
/// weight-streaming kernel for m <= 8 (kept for comparison).
enum class GemmPath { automatic, cublas, skinny };
/// Reads TPVERIFY_GEMM; unknown values give `automatic` and `ok` false.
GemmPath gemm_path_from_env(bool& ok);
/// "auto", "cublas" or "skinny".
const char* gemm_path_name(GemmPath path);

/// Device weights for the GEMMs of every plan a rank runs. The weights lie in one arena of at
/// most `k_max_arena_bytes`; a plan that reads more cycles through it in plan order, so a byte
/// is read again only after at least the arena's size of other weights (far beyond the L2), and
/// every weight byte of a pass still comes from device memory.
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
    /// Allocates and fills the arena, and places every GEMM step of every plan in it.
    /// `reserve` bytes are left free for everything else the rank allocates.
    Status allocate(const std::vector<const PassPlan*>& plans, std::uint64_t reserve, std::uint64_t seed,
                    cudaStream_t stream);
    /// Weights of the i-th GEMM step of `plan` (in plan order, counting GEMM steps only).
    [[nodiscard]] const bf16* weight(const PassPlan& plan, std::size_t gemm_index) const;
    /// Weight bytes the first plan reads per pass.
    [[nodiscard]] std::uint64_t bytes() const { return m_bytes; }
    /// Bytes allocated for weights.
    [[nodiscard]] std::uint64_t arena_bytes() const { return m_arena; }

private:
    void* m_base = nullptr;
    std::uint64_t m_bytes = 0, m_arena = 0;
    std::map<const PassPlan*, std::vector<const bf16*>> m_weights;
};

/// The most GEMMs one W4A16 launch runs (one per grid row).
constexpr int k_w4_max_batch = k_int4_max_batch;  // engine/model/model.hpp (the sim prices launches by it)

/// Operands of a batch of INT4 GEMMs of equal shape: y_e[m x n] (+)= x_e[m x k] (row stride
/// ldx) * W_e^T. W_e is packed as [k/64][n][32 bytes] (64 4-bit weights w + 8 per row and
/// chunk, low nibble first) followed by [k/64][n] pairs of bf16 scales (one per 32 weights).
struct W4Batch {
    const void* w[k_w4_max_batch];
    const bf16* x[k_w4_max_batch];
    bf16* y[k_w4_max_batch];
    int count = 0;
};

/// Runs a W4A16 batch (our kernel: one thread per output column, 64-weight chunks read as two
/// coalesced 16-byte loads, x staged in shared memory, fp32 accumulation).
cudaError_t run_w4a16(const W4Batch& batch, int m, int n, int k, int ldx, bool accumulate,
                      cudaStream_t stream);

/// Runs one GEMM on `stream`; `accumulate` adds into y (y += x W^T) instead of overwriting.
Status run_gemm(cublasHandle_t handle, GemmPath path, const Gemm& g, const bf16* w, const bf16* x, bf16* y,
                bool accumulate, cudaStream_t stream, const char* phase);

}  // namespace tpverify::cuda
