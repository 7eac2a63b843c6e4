#pragma once
// MoE experts as one batched GEMM each for gate_up and down (like a fused-MoE kernel), then a sum.
#include <map>
#include <vector>

#include "engine/cuda/common.cuh"
#include "engine/cuda/gemm.cuh"

namespace tpverify::cuda {

/// A run of >= 2 (gate_up, down) GEMM pairs of equal shapes in one plan (the layer's experts).
struct ExpertGroup {
    std::size_t first_step = 0;  ///< index in plan.steps of the first gate_up
    std::size_t first_gemm = 0;  ///< its index among the plan's GEMM steps
    int pairs = 0;
    Gemm gate_up, down;
    const void** up_ptrs = nullptr;               ///< device: A, B, C pointer arrays (3 x pairs) for gate_up
    const void** down_ptrs = nullptr;             ///< device: A, B, C pointer arrays (3 x pairs) for down
    std::vector<const void*> host_up, host_down;  ///< the same arrays on the host (INT4 launches)
};

/// The expert groups of every plan a rank runs, with their device pointer arrays.
class ExpertBatches {
public:
    ExpertBatches() = default;
    ExpertBatches(const ExpertBatches&) = delete;
    ExpertBatches& operator=(const ExpertBatches&) = delete;
    ~ExpertBatches();
    /// Finds the groups of `plan` and builds pointer arrays: gate_up reads `input`, writes the
    /// per-expert `mid`; down reads the first half of each `mid` row, writes per-expert `outs`.
    Status build(const PassPlan& plan, const WeightPool& weights, const bf16* input, int hidden,
                 cudaStream_t stream);
    /// The group starting at `step` of `plan`, or null.
    [[nodiscard]] const ExpertGroup* at(const PassPlan& plan, std::size_t step) const;
    /// Enqueues a group: two batched GEMMs and the sum into `y` (added when `accumulate`).
    Status run(cublasHandle_t handle, const ExpertGroup& g, bf16* y, bool accumulate, cudaStream_t stream,
               const char* phase) const;

private:
    std::map<const PassPlan*, std::map<std::size_t, ExpertGroup>> m_groups;
    std::vector<void*> m_allocations;
    bf16* m_mid = nullptr;
    bf16* m_outs = nullptr;
    std::uint64_t m_mid_elems = 0, m_out_elems = 0;
};

}  // namespace tpverify::cuda
