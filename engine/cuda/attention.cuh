#pragma once
// Decode attention over a KV cache: scores and values as cuBLAS batched GEMMs (one batch per
// KV head, tensor cores), softmax in between — absorbed MLA or GQA (engine/model/model.hpp Attention).
#include <map>
#include <string>
#include <vector>

#include "engine/cuda/common.cuh"
#include "engine/model/model.hpp"

namespace tpverify::cuda {

/// Fused decode attention of absorbed MLA (rows of 576 = 512 latent + 64 rope; V = the first
/// 512), engine/cuda/mla_decode.cu: softmax(Q K^T / sqrt(576)) V for `rows` query rows over
/// `context` cached rows, split over the context in `splits` parts (mla_splits) then combined.
/// `workspace`: mla_workspace_floats(rows, splits) floats. mla_setup() once per device first.
cudaError_t mla_decode(const bf16* q, const bf16* cache, bf16* out, int rows, int context, int splits,
                       float* workspace, cudaStream_t s);
/// Splits for about one block per SM (at least 32 tokens each, at most 256).
int mla_splits(int rows, int context, int sms);
std::size_t mla_workspace_floats(int rows, int splits);
cudaError_t mla_setup();
/// The split kernel's partial results (`splits` x `rows` unnormalised outputs of 512, then
/// `splits` x `rows` (max, sum) pairs, the max in log2 units) weighted and written to `out` as
/// bf16: the combine kernel of mla_decode and mla_cluster_decode.
cudaError_t mla_combine(const float* o_part, const float* ml_part, int rows, int splits, bf16* out,
                        cudaStream_t s);
/// The same attention with each context split spread over a cluster of 8 blocks
/// (engine/cuda/mla_cluster.cu; TPVERIFY_ATTENTION=cluster, through mla_decode, mla_splits and
/// mla_setup, which call these when it is chosen): each block scores its share of the split's
/// tokens for all 64 query rows of its row block, the blocks meet their maxima and their P
/// through distributed shared memory, and block j multiplies every block's P by dims 64j..64j+63
/// of V. `workspace` as mla_decode's (mla_workspace_floats(rows, splits)).
cudaError_t mla_cluster_decode(const bf16* q, const bf16* cache, bf16* out, int rows, int context, int splits,
                               float* workspace, cudaStream_t s);
/// Clusters per row block of 64: as many as run at once on the device (the occupancy API at the
/// kernel's shared memory), shared by the row blocks, each block at least one tile of 32 tokens
/// and at most 128.
int mla_cluster_splits(int rows, int context, int sms);
cudaError_t mla_cluster_setup();
/// Two-pass decode attention of absorbed MLA (engine/cuda/mla_two_pass.cu): a scores kernel
/// (exp of the scores per 32-token tile, and each tile's max and sum) and a values kernel split
/// over the 512 output dims and `splits` parts of the context (mla_two_pass_splits), whose sums
/// meet by atomic adds. `workspace`: mla_two_pass_bytes(rows, context) bytes, zeroed once before
/// the first call (each call leaves its accumulator and counters zero again).
/// mla_two_pass_setup() once per device first.
cudaError_t mla_two_pass(const bf16* q, const bf16* cache, bf16* out, int rows, int context, int splits,
                         void* workspace, cudaStream_t s);
std::size_t mla_two_pass_bytes(int rows, int context);
/// Context splits for about one values block an SM (at most 2,048 tokens each).
int mla_two_pass_splits(int rows, int context, int sms);
cudaError_t mla_two_pass_setup();
/// The softmax and values product of absorbed MLA in one kernel (engine/cuda/mla_values.cu;
/// TPVERIFY_ATTENTION=values): `scores` are the cuBLAS path's unscaled fp32 S (`rows` x
/// `context`, row-major), `out` gets softmax(S / sqrt(576)) V as bf16 (`rows` x 512), V the first
/// 512 of each cached row. Each context part of a cluster of mla_values_parts() blocks (8, or 16
/// with TPVERIFY_VALUES_PARTS=16) keeps a running max and sum; the parts meet in distributed shared
/// memory. mla_values_setup() once per device first; contexts that are not mla_values_fits() are
/// refused (cudaErrorInvalidValue).
cudaError_t mla_values(const float* scores, const bf16* cache, bf16* out, int rows, int context,
                       cudaStream_t s);
int mla_values_parts();
bool mla_values_fits(int context);
/// mla_values_setup() also prepares mla_probs_values.
cudaError_t mla_values_setup();
/// The same kernel fed the softmax's bf16 P (`rows` x `context`, normalised) instead of S
/// (TPVERIFY_ATTENTION=probs): it replaces only the cuBLAS path's values GEMM and its reduce.
/// Contexts that are not mla_probs_fits() are refused.
cudaError_t mla_probs_values(const bf16* probs, const bf16* cache, bf16* out, int rows, int context,
                             cudaStream_t s);
bool mla_probs_fits(int context);
/// The whole TPVERIFY_ATTENTION=values attention: S = Q K^T as the cuBLAS path's scores GEMM
/// (`handle` bound to `s`) into `scores` (rows x context floats), then mla_values.
Status mla_values_attention(cublasHandle_t handle, const bf16* q, const bf16* cache, bf16* out, int rows,
                            int context, float* scores, cudaStream_t s, const char* phase);
/// The whole TPVERIFY_ATTENTION=probs attention: the scores GEMM into `scores`, the cuBLAS path's
/// softmax into `probs` (rows x context bf16), then mla_probs_values.
Status mla_probs_attention(cublasHandle_t handle, const bf16* q, const bf16* cache, bf16* out, int rows,
                           int context, float* scores, bf16* probs, cudaStream_t s, const char* phase);
/// Whether `a` is absorbed MLA of the fused kernel's shape.
bool mla_shape(const Attention& a);
/// TPVERIFY_ATTENTION=fused or =cluster: MLA through mla_decode. Default (or cublas): two cuBLAS GEMMs and a
/// softmax, which ran faster on the H200 (docs/benchmarks-gpu.md).
bool fused_attention_chosen();
/// TPVERIFY_ATTENTION=two-pass: MLA through mla_two_pass.
bool two_pass_attention_chosen();
/// TPVERIFY_ATTENTION=values: MLA through mla_values_attention (the cuBLAS scores GEMM, then one
/// kernel for the softmax and the values).
bool values_attention_chosen();
/// TPVERIFY_ATTENTION=probs: MLA through mla_probs_attention.
bool probs_attention_chosen();
/// TPVERIFY_ATTENTION=cluster: MLA through mla_decode's cluster form (fused_attention_chosen()
/// is true too).
bool cluster_attention_chosen();

/// Decode attention of grouped-query heads of 128 dims at up to 4 query rows a KV head
/// (engine/cuda/head_decode.cu; the EAGLE-3 draft's): softmax(Q K^T / sqrt(128)) V in one kernel,
/// split over the context in `parts` (head_decode_parts), the last block of each head combining
/// them. q, cache and out as the cuBLAS path lays them out: per KV head `group_rows` rows of q and
/// of out, and `context` cached rows of `row_dim` bf16, K first, V at `v_offset`. `work`:
/// head_decode_floats(kv_heads, parts) floats; `tickets`: kv_heads ints, zeroed once before the
/// first call (each call leaves them zero).
cudaError_t head_decode(const bf16* q, const bf16* cache, bf16* out, int group_rows, int kv_heads,
                        int context, int row_dim, int v_offset, int parts, float* work, int* tickets,
                        cudaStream_t s);
/// Whether step `a` has head_decode's shape (head dims 128, 1 to 4 query rows a KV head).
bool head_decode_fits(const Attention& a);
/// Context parts for one wave of blocks (two an SM), at least 64 tokens each.
int head_decode_parts(int kv_heads, int context, int sms);
std::size_t head_decode_floats(int kv_heads, int parts);
/// Whether the steps of head_decode's shape run it (the default; TPVERIFY_HEAD_ATTENTION=cublas: the
/// cuBLAS path).
bool head_decode_chosen();

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
    /// Enqueues one attention step: S = Q K^T / sqrt(qk_dim) (fp32, cuBLAS), P = softmax(S), O = P V
    /// (cuBLAS); with TPVERIFY_ATTENTION=fused, MLA of the fused kernel's shape through mla_decode;
    /// with =values, the scores GEMM and then mla_values; with =probs, the scores GEMM, the softmax
    /// and then mla_probs_values; GQA of head_decode's shape through head_decode (unless
    /// TPVERIFY_HEAD_ATTENTION=cublas).
    Status run(cublasHandle_t handle, const Step& step, cudaStream_t stream, const char* phase) const;
    /// Bytes allocated for KV caches.
    [[nodiscard]] std::uint64_t cache_bytes() const { return m_cache_bytes; }
    /// The cache of attention label `label` (null when there is none), its rows (tokens) and
    /// the bf16 per row (of its first KV head).
    [[nodiscard]] bf16* cache(const std::string& label) const;
    [[nodiscard]] int rows(const std::string& label) const;
    [[nodiscard]] int row_width(const std::string& label) const;

private:
    struct Cache {
        bf16* data = nullptr;
        int rows = 0, row_width = 0;
    };
    std::map<std::string, Cache> m_caches;
    bool m_fused = true, m_two_pass = false, m_values = false, m_probs_form = false;
    int m_sms = 132;
    float* m_mla_workspace = nullptr;
    float* m_head_work = nullptr;  ///< head_decode's parts
    int* m_head_tickets = nullptr;
    void* m_two_pass_workspace = nullptr;
    std::vector<void*> m_allocations;
    bf16* m_q = nullptr;
    float* m_scores = nullptr;
    bf16* m_probs = nullptr;
    bf16* m_out = nullptr;
    std::uint64_t m_cache_bytes = 0;
};

}  // namespace tpverify::cuda
