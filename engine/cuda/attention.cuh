#pragma once
// Decode attention over a KV cache: scores and values as cuBLAS batched GEMMs (one batch per
// KV head, tensor cores), softmax in between — absorbed MLA or GQA (engine/model/model.hpp Attention).
#include <map>
#include <string>
#include <vector>

#include "engine/cuda/common.cuh"
#include "engine/model/model.hpp"

namespace tpverify::cuda {

/// KV caches (one per attention label: the verify and 1-token passes share a layer's cache),
/// the query, score and output buffers of every attention step of the plans a rank runs.
class AttentionSet {
public:
    AttentionSet() = default;
    AttentionSet(const AttentionSet&) = delete;
    AttentionSet& operator=(const AttentionSet&) = delete;
    ~AttentionSet();
    /// Allocates and fills (small random values) every cache and buffer the plans need.
    Status allocate(const std::vector<const PassPlan*>& plans, cudaStream_t stream);
    /// Enqueues one attention step: S = Q K^T / sqrt(qk_dim) (fp32), P = softmax(S), O = P V.
    Status run(cublasHandle_t handle, const Step& step, cudaStream_t stream, const char* phase) const;
    /// Bytes allocated for KV caches.
    [[nodiscard]] std::uint64_t cache_bytes() const { return m_cache_bytes; }

private:
    std::map<std::string, bf16*> m_caches;
    std::vector<void*> m_allocations;
    bf16* m_q = nullptr;
    float* m_scores = nullptr;
    bf16* m_probs = nullptr;
    bf16* m_out = nullptr;
    std::uint64_t m_cache_bytes = 0;
};

}  // namespace tpverify::cuda
