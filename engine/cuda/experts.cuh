#pragma once
// A MoE layer's routed experts as the server runs them: one batched launch for every expert's
// gate_up, SiLU-and-mul over all their rows, one batched launch for every down, and the
// weighted sum into the layer output (engine/model/model.hpp, Experts; the launches are
// expert_launches()).
#include <map>
#include <vector>

#include "engine/cuda/gemm.cuh"

namespace tpverify::cuda {

/// The experts steps of every plan a rank runs: their stacked intermediate and output rows and,
/// per expert_sum, the device table of each token's rows.
class ExpertSet {
public:
    ExpertSet() = default;
    ExpertSet(const ExpertSet&) = delete;
    ExpertSet& operator=(const ExpertSet&) = delete;
    ~ExpertSet();
    /// Sizes the buffers for every experts step of `plans` and uploads the routing tables.
    Status build(const std::vector<const PassPlan*>& plans, cudaStream_t stream);
    /// Enqueues experts step `step` of `plan`: gate_up reads `input` (the normed hidden rows),
    /// writes each expert's rows of mid(); down reads the first half of those rows, writes outs().
    /// `silu` (down only): down first applies the layer's SiLU-and-mul to mid()'s rows, in the
    /// streaming kernel's staging of x (mid() is left as gate_up wrote it), or on paths without
    /// it (cuBLAS) as the silu_mul kernel before the GEMMs. `sum` (its y set; down only, where
    /// sum_fusable()): the launch also does the layer's expert sum.
    Status run(cublasHandle_t handle, GemmPath path, const sg::Workspace& ws, const WeightPool& weights,
               const PassPlan& plan, std::size_t step, const bf16* input, cudaStream_t stream,
               const char* phase, bool silu = false, const sg::ExpertSum& sum = {}) const;
    /// Whether experts step `step` (a down) runs as one streaming launch, which can then do the
    /// layer's weighted sum too (run()'s `sum`).
    [[nodiscard]] bool sum_fusable(GemmPath path, const PassPlan& plan, std::size_t step) const;
    /// The arguments of op step `step`'s weighted sum (Op::expert_sum) into `y`: what sum() and a
    /// down launch that does the sum itself (run()'s `sum`) use.
    Status sum_args(const PassPlan& plan, std::size_t step, const float* weights, bf16* y, bool accumulate,
                    const char* phase, sg::ExpertSum& out) const;
    /// Enqueues the weighted sum of op step `step` (Op::expert_sum) into `y`.
    Status sum(const PassPlan& plan, std::size_t step, const float* weights, bf16* y, bool accumulate,
               cudaStream_t stream, const char* phase) const;
    /// Stacked gate_up rows (2 x inter wide) of the last experts step that ran.
    [[nodiscard]] bf16* mid() const { return m_mid; }
    /// Fills mid() and the down outputs with `bits` (a check's poison: NaN).
    cudaError_t fill(unsigned short bits, cudaStream_t stream) const;

private:
    std::map<std::pair<const PassPlan*, std::size_t>, int*> m_slots;
    std::vector<void*> m_allocations;
    bf16* m_mid = nullptr;
    bf16* m_outs = nullptr;
    std::uint64_t m_mid_elems = 0, m_outs_elems = 0;
};

}  // namespace tpverify::cuda
