#pragma once
// The small kernels of a layer (engine/model/model.hpp, Op): norms of the MLA projections, RoPE,
// the KV-cache write, the router's top-k, SiLU-and-mul and the weighted sum of the routed
// experts. Each is one launch spread over enough blocks that its time is the launch and one
// round trip to memory; what they compute is real arithmetic on the pass's buffers, but the data
// they connect are stand-ins (docs/engine.md: the positions, the KV rows and the routing are the
// plan's, not the values').
#include "engine/cuda/common.cuh"

namespace tpverify::cuda {

/// In place: each of `rows` rows of `width` bf16 (row stride `ld`) becomes RMSNorm(row) * gamma.
cudaError_t rmsnorm_rows(bf16* x, int rows, int width, int ld, const bf16* gamma, float eps, cudaStream_t s);
/// rmsnorm_rows on two sets of `rows` rows in one launch (q_norm and kv_norm): x (width, ld) and
/// x2 (width2, ld2), which must not overlap.
cudaError_t rmsnorm_rows2(bf16* x, int width, int ld, bf16* x2, int width2, int ld2, int rows,
                          const bf16* gamma, float eps, cudaStream_t s);
/// rope on x and kv_write of src (a buffer rope does not touch) in one launch.
cudaError_t rope_kv_write(bf16* x, int rows, int width, int ld, int position, const bf16* src, int copy_width,
                          int src_ld, bf16* cache, int cache_width, int at, cudaStream_t s);
/// Whether the small kernels launch with programmatic dependent launch (TPVERIFY_PDL_OPS=0 or
/// TPVERIFY_PDL=0: no).
bool ops_pdl();
/// The router's top-k kernel: `split` (default; 4 warps a token, each over a quarter of the
/// experts, then a merge of their candidates; k <= 8, larger k run `redux`), TPVERIFY_TOPK=redux
/// (one warp a token on the warp's hardware reductions) or =shfl (one warp a token, shuffle
/// rounds). All three pick the same experts.
enum class TopkKernel { split, redux, shfl };
TopkKernel topk_kernel_choice();
/// In place: rotates the (even, odd) pairs of the first `width` elements of each row by the
/// angle position * 10000^(-2i / width) (positions start at `position`).
cudaError_t rope(bf16* x, int rows, int width, int ld, int position, cudaStream_t s);
/// Copies `rows` rows of `width` bf16 (source row stride `ld`) into rows [at, at + rows) of a
/// cache whose rows are `cache_width` apart.
cudaError_t kv_write(const bf16* src, int rows, int width, int ld, bf16* cache, int cache_width, int at,
                     cudaStream_t s);
/// Per token: the top `k` of `experts` router logits by sigmoid score, their ids and weights
/// (the scores normalised to sum 1), one warp per token. k <= 32.
cudaError_t topk(const bf16* logits, int tokens, int experts, int k, int* ids, float* weights,
                 cudaStream_t s);
/// In place: row r's first `inter` elements become SiLU(x[r][i]) * x[r][inter + i] (row stride ld).
cudaError_t silu_mul(bf16* x, int rows, int inter, int ld, cudaStream_t s);
/// y[t] (+)= sum over j < k of weights[t][j] * outs[slots[t][j]], rows of `hidden` bf16.
cudaError_t expert_sum(const bf16* outs, const int* slots, const float* weights, int tokens, int k,
                       int hidden, bf16* y, bool accumulate, cudaStream_t s);

/// Columns c and c + 1 (c even) of token `token`'s row of expert_sum(): y's pair (+)= the sum over
/// j < k of weights[token k + j] x outs[slots[token k + j]], in j order, rounded once. The
/// expert_sum kernel and the down launch that does the sum itself (stream_gemm.cuh, ExpertSum)
/// both call it, so the two give the same bits; outs is read through the L2 (another block of
/// the same launch may have written it).
__device__ __forceinline__ void expert_sum_pair(const bf16* outs, const int* slots, const float* weights,
                                                int token, int k, int hidden, int c, bf16* y,
                                                bool accumulate) {
    __nv_bfloat162* out = reinterpret_cast<__nv_bfloat162*>(y + std::uint64_t(token) * hidden + c);
    float2 acc = accumulate ? __bfloat1622float2(*out) : make_float2(0.0f, 0.0f);
    for (int j = 0; j < k; ++j) {
        const float w = weights[token * k + j];
        const unsigned bits = __ldcg(
            reinterpret_cast<const unsigned*>(outs + std::uint64_t(slots[token * k + j]) * hidden + c));
        const float2 v = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&bits));
        acc.x += w * v.x;
        acc.y += w * v.y;
    }
    *out = __floats2bfloat162_rn(acc.x, acc.y);
}
}  // namespace tpverify::cuda
