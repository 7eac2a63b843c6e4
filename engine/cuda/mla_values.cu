// Decode attention of absorbed MLA as the cuBLAS path's scores GEMM and then one kernel for the
// softmax and the values product (engine/cuda/attention.cuh declares it; TPVERIFY_ATTENTION=values).
//
// Why: the cuBLAS path runs four kernels a layer (scores GEMM, softmax, values GEMM split over the
// context, its reduce), 12.8 us at one token on the H200 in a graph of their own against 1.1 us of
// cache bytes (tests/fixtures/tpverify-kernels/run19-h200-kernels-int4.txt): each waits for the
// one before it. Three custom forms that also compute the scores (mla_decode.cu, mla_two_pass.cu,
// mla_cluster.cu) were slower than cuBLAS's scores GEMM; this one keeps that GEMM and makes the
// other three kernels one.
//
// Grid (Parts, 8, row blocks of 64), clusters of Parts along x (context parts), 8 warps a block.
// Block (part p, dims j, rows i) takes rows 64i.., output dims 64j..64j+63 and the tokens of part
// p, 128 at a time:
//  - warp w turns rows 8w..8w+7 of the chunk's fp32 scores (8 lanes a row, 16 tokens a lane, read
//    once as float4) into P = exp2(S c - m) as bf16 in shared memory, m the row's running
//    maximum over the part, with each row's running sum and the chunk's correction exp2(m_old - m);
//  - the chunk's V rows (dims 64j.., cp.async) come in a two-stage ring, the next chunk's while
//    this one's is multiplied;
//  - warp (r, h) of the 4 x 2 scales its accumulators by the rows' corrections and adds P V for
//    rows 16r.., dims 64j + 32h.. on mma.sync (P by ldmatrix, V^T by ldmatrix.trans).
// Then each block leaves its O (fp32) and each row's (m, l) in shared memory; after a cluster
// barrier, block p writes rows 64i + (64 / Parts) p.. of the output: sum over the parts of
// O 2^(m - M) over sum of l 2^(m - M), M the largest m (distributed shared memory), as bf16.
// A second barrier keeps every block until the others have read it. Launched with programmatic
// dependent launch where it is on; it waits for the kernel before it before reading anything.
// Measured on an H100 (docs/benchmarks-gpu.md, 2026-12-07): right, and slower than the four
// kernels, because each of a part's 8 dim blocks computes the same exponentials.
//
// TPVERIFY_ATTENTION=probs runs the same kernel after the cuBLAS path's softmax (Probs = true):
// each chunk's bf16 P, already normalised, is copied into shared memory instead of computed, and
// the parts' O are summed unweighted, so only the values GEMM and its reduce are replaced.
#include <cooperative_groups.h>
#include <algorithm>
#include <cmath>

#include "engine/cuda/attention.cuh"
#include "engine/cuda/mla_common.cuh"
#include "engine/cuda/skinny_gemm.cuh"
#include "engine/cuda/stream_gemm.cuh"
#include "engine/knobs.hpp"

namespace tpverify::cuda {
namespace {

namespace cg = cooperative_groups;
using namespace mla;  // the MLA row shape and helpers (mla_common.cuh)

constexpr int k_rows = 64;                     ///< query rows a block
constexpr int k_dims = 64;                     ///< output dims a block
constexpr int k_dim_blocks = k_vdim / k_dims;  ///< 8
constexpr int k_threads = 256;                 ///< 8 warps
constexpr int k_chunk = 128;                   ///< tokens a step
constexpr int k_p_pitch = k_chunk + 8;         ///< bf16 a shared row of P (272 bytes: no bank conflicts)
constexpr int k_v_pitch = k_dims + 8;          ///< bf16 a shared row of V (144 bytes: no bank conflicts)
constexpr int k_o_pitch = k_dims + 4;          ///< floats a shared row of O

// Shared memory, in bytes: P, the V ring, O, then each row's correction, max and sum.
constexpr std::size_t k_p_at = 0;
constexpr std::size_t k_v_at = k_p_at + std::size_t(k_rows) * k_p_pitch * sizeof(bf16);
constexpr std::size_t k_o_at = k_v_at + std::size_t(2) * k_chunk * k_v_pitch * sizeof(bf16);
constexpr std::size_t k_stats_at = k_o_at + std::size_t(k_rows) * k_o_pitch * sizeof(float);
constexpr std::size_t k_smem = k_stats_at + std::size_t(3) * k_rows * sizeof(float);

// Probs = false: `scores` are fp32 S (the values form). Probs = true: `probs` are the softmax's
// bf16 P, already normalised (the probs form): each chunk's P is copied, not computed, and the
// parts' O are summed unweighted.
template <int Parts, bool Probs>
__global__ void __launch_bounds__(k_threads)
    mla_values_kernel(const float* scores, const bf16* probs, const bf16* cache, int rows, int context,
                      int part_len, float scale_log2, bf16* out) {
    static_assert(Parts == 8 || Parts == 16, "a part's rows of the output must be whole warps' pairs");
    constexpr int k_rows_per_part = k_rows / Parts;                  // output rows a block writes
    constexpr int k_outputs = k_rows_per_part * k_dims / k_threads;  // output dims a thread: 2 or 1
    skinny::pdl_trigger();  // the next kernel may launch (it waits for this one)
    skinny::pdl_wait();     // launched early (PDL): the scores GEMM's writes first
    cg::cluster_group cluster = cg::this_cluster();
    extern __shared__ uint4 smem_raw[];
    unsigned char* base = reinterpret_cast<unsigned char*>(smem_raw);
    bf16* ps = reinterpret_cast<bf16*>(base + k_p_at);
    bf16* vs = reinterpret_cast<bf16*>(base + k_v_at);
    float* os = reinterpret_cast<float*>(base + k_o_at);
    float* corr_s = reinterpret_cast<float*>(base + k_stats_at);
    float* m_s = corr_s + k_rows;
    float* l_s = m_s + k_rows;

    const int part = int(cluster.block_rank());
    const int dim0 = int(blockIdx.y) * k_dims, row0 = int(blockIdx.z) * k_rows;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int t0 = part * part_len, t1 = min(context, t0 + part_len);
    const int chunks = t1 > t0 ? (t1 - t0 + k_chunk - 1) / k_chunk : 0;

    // The chunk's V rows (dims dim0..dim0+63: 8 pieces of 16 bytes a row); rows past the
    // context repeat its last row (their P is zero).
    auto load_v = [&](int chunk) {
        bf16* dst = vs + (chunk & 1) * k_chunk * k_v_pitch;
        const int first = t0 + chunk * k_chunk;
        for (int i = threadIdx.x; i < k_chunk * 8; i += k_threads) {
            const int r = i >> 3, piece = i & 7;
            const int token = min(first + r, context - 1);
            copy_async16(dst + r * k_v_pitch + piece * 8,
                         cache + std::uint64_t(token) * k_dim + dim0 + piece * 8);
        }
    };

    // The producer's view: lane (sub, piece) takes row 8w + 4 pass + sub, tokens 16 piece.. of the chunk.
    const int sub = lane >> 3, piece = lane & 7;
    float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
    // The consumer's view: warp (r, h), the mma fragments' row g and column pair t.
    const int row_group = warp & 3, half = warp >> 2;
    const int g = lane >> 2, t = lane & 3;
    float o[4][4];
#pragma unroll
    for (int n = 0; n < 4; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;

    if (chunks > 0) load_v(0);
    asm volatile("cp.async.commit_group;");
    for (int chunk = 0; chunk < chunks; ++chunk) {
        if constexpr (Probs) {
            // The chunk's P rows (16 pieces of 16 bytes a row); tokens past the part are zeros.
            for (int i = threadIdx.x; i < k_rows * 16; i += k_threads) {
                const int r = i >> 4, pc = i & 15, token = t0 + chunk * k_chunk + pc * 8;
                bf16* dst = ps + r * k_p_pitch + pc * 8;
                // A piece is wholly in or out: t1 and the pieces' first tokens are multiples of 8.
                if (row0 + r < rows && token < t1)
                    copy_async16(dst, probs + std::uint64_t(row0 + r) * context + token);
                else
                    *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
            }
            asm volatile("cp.async.commit_group;");
        }
        if (chunk + 1 < chunks) load_v(chunk + 1);  // its stage's last reader finished last iteration
        asm volatile("cp.async.commit_group;");
        const int first = t0 + chunk * k_chunk + piece * 16;
#pragma unroll
        for (int pass = 0; pass < 2 && !Probs; ++pass) {
            const int r = warp * 8 + pass * 4 + sub, row = row0 + r;
            float v[16];
            const float4* src =
                reinterpret_cast<const float4*>(scores + std::uint64_t(row) * context + first);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                // t1 and first are multiples of 4, so a float4 is wholly in or out of the part.
                const float4 x = row < rows && first + 4 * q < t1
                                     ? src[q]
                                     : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
                v[4 * q] = x.x, v[4 * q + 1] = x.y, v[4 * q + 2] = x.z, v[4 * q + 3] = x.w;
            }
            float most = v[0];
#pragma unroll
            for (int j = 1; j < 16; ++j) most = fmaxf(most, v[j]);
            most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, 1));
            most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, 2));
            most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, 4));
            const float new_max = fmaxf(m_run[pass], most * scale_log2);
            const float corr = new_max == -INFINITY ? 1.0f : exp2f(m_run[pass] - new_max);
            float sum = 0.0f;
            unsigned packed[8];
#pragma unroll
            for (int j = 0; j < 16; j += 2) {
                const float a = new_max == -INFINITY ? 0.0f : exp2f(fmaf(v[j], scale_log2, -new_max));
                const float b = new_max == -INFINITY ? 0.0f : exp2f(fmaf(v[j + 1], scale_log2, -new_max));
                sum += a + b;
                packed[j / 2] = pack_bf16(a, b);
            }
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            sum += __shfl_xor_sync(0xffffffffu, sum, 4);
            l_run[pass] = l_run[pass] * corr + sum;
            m_run[pass] = new_max;
            uint4* dst = reinterpret_cast<uint4*>(ps + r * k_p_pitch + piece * 16);
            dst[0] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
            dst[1] = make_uint4(packed[4], packed[5], packed[6], packed[7]);
            if (piece == 0) corr_s[r] = corr;
        }
        asm volatile("cp.async.wait_group 1;" ::: "memory");  // this chunk's V (and P): the next V may fly
        __syncthreads();
        if constexpr (!Probs) {
            const float c_lo = corr_s[row_group * 16 + g], c_hi = corr_s[row_group * 16 + g + 8];
#pragma unroll
            for (int n = 0; n < 4; ++n) o[n][0] *= c_lo, o[n][1] *= c_lo, o[n][2] *= c_hi, o[n][3] *= c_hi;
        }
        const unsigned a_base =
            smem_address(ps + (row_group * 16 + (lane & 15)) * k_p_pitch + 8 * (lane >> 4));
        const bf16* vb = vs + (chunk & 1) * k_chunk * k_v_pitch;
#pragma unroll
        for (int step = 0; step < k_chunk / 16; ++step) {
            unsigned a[4];
            sg::ldmatrix_x4(a_base + step * 32, a);
            const unsigned v_base =
                smem_address(vb + (step * 16 + (lane & 7) + 8 * ((lane >> 3) & 1)) * k_v_pitch + half * 32 +
                             8 * (lane >> 4));
#pragma unroll
            for (int np = 0; np < 2; ++np) {
                unsigned b[4];
                ldmatrix_x4_trans(v_base + np * 32, b);
                sg::mma_bf16(o[2 * np], a, b[0], b[1]);
                sg::mma_bf16(o[2 * np + 1], a, b[2], b[3]);
            }
        }
        __syncthreads();  // P, the corrections and this V stage are written again
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");

    // This part's O and (m, l) for the other blocks of the cluster.
#pragma unroll
    for (int n = 0; n < 4; ++n)
#pragma unroll
        for (int h = 0; h < 2; ++h)
            *reinterpret_cast<float2*>(os + (row_group * 16 + g + 8 * h) * k_o_pitch + half * 32 + n * 8 +
                                       2 * t) = make_float2(o[n][2 * h], o[n][2 * h + 1]);
    if (piece == 0)
#pragma unroll
        for (int pass = 0; pass < 2; ++pass) {
            const int r = warp * 8 + pass * 4 + sub;
            m_s[r] = m_run[pass];
            l_s[r] = l_run[pass];
        }
    cluster.sync();
    const int flat = int(threadIdx.x) * k_outputs;
    const int r = part * k_rows_per_part + flat / k_dims, d = flat % k_dims, row = row0 + r;
    float total = 0.0f, acc[k_outputs] = {};
    if constexpr (Probs) {
        total = 1.0f;  // P is normalised already: the parts' O add up
#pragma unroll
        for (int p = 0; p < Parts; ++p) {
            const float* op = cluster.map_shared_rank(os, p) + r * k_o_pitch + d;
#pragma unroll
            for (int e = 0; e < k_outputs; ++e) acc[e] += op[e];
        }
    } else {
        float m_part[Parts];
        float most = -INFINITY;
#pragma unroll
        for (int p = 0; p < Parts; ++p) {
            m_part[p] = cluster.map_shared_rank(m_s, p)[r];
            most = fmaxf(most, m_part[p]);
        }
#pragma unroll
        for (int p = 0; p < Parts; ++p) {
            const float w = m_part[p] == -INFINITY ? 0.0f : exp2f(m_part[p] - most);
            total += w * cluster.map_shared_rank(l_s, p)[r];
            const float* op = cluster.map_shared_rank(os, p) + r * k_o_pitch + d;
#pragma unroll
            for (int e = 0; e < k_outputs; ++e) acc[e] += w * op[e];
        }
    }
    if (row < rows) {
        const float inv = total > 0.0f ? 1.0f / total : 0.0f;
        bf16* dst = out + std::uint64_t(row) * k_vdim + dim0 + d;
        if constexpr (k_outputs == 2)
            *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(acc[0] * inv, acc[1] * inv);
        else
            *dst = __float2bfloat16(acc[0] * inv);
    }
    cluster.sync();  // no block leaves while another may still read its O and statistics
}

template <int Parts, bool Probs>
cudaError_t launch_values(const float* scores, const bf16* probs, const bf16* cache, bf16* out, int rows,
                          int context, cudaStream_t s) {
    // Whole pieces of 16 tokens a part, so that every part but the last is full.
    const int part_len = ((context + Parts - 1) / Parts + 15) / 16 * 16;
    cudaLaunchAttribute attrs[2];
    const cudaLaunchConfig_t config =
        cluster_launch(dim3(Parts, k_dim_blocks, unsigned((rows + k_rows - 1) / k_rows)), k_threads, k_smem,
                       Parts, s, attrs, skinny::pdl_enabled());
    const float scale_log2 = 1.4426950408889634f / std::sqrt(float(k_dim));
    if (cudaError_t e = cudaLaunchKernelEx(&config, mla_values_kernel<Parts, Probs>, scores, probs, cache,
                                           rows, context, part_len, scale_log2, out);
        e != cudaSuccess)
        return e;
    return cudaGetLastError();
}

}  // namespace

int mla_values_parts() {
    static const int parts = env_is("TPVERIFY_VALUES_PARTS", "16") ? 16 : 8;
    return parts;
}

bool mla_values_fits(int context) {
    return context > 0 && context % 4 == 0;
}

namespace {

template <int Parts, bool Probs>
cudaError_t setup_one() {
    auto kernel = mla_values_kernel<Parts, Probs>;
    if (cudaError_t e =
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(k_smem));
        e != cudaSuccess || Parts <= 8)
        return e;
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
}

}  // namespace

cudaError_t mla_values_setup() {
    for (cudaError_t e :
         {setup_one<8, false>(), setup_one<16, false>(), setup_one<8, true>(), setup_one<16, true>()})
        if (e != cudaSuccess) return e;
    return cudaSuccess;
}

cudaError_t mla_values(const float* scores, const bf16* cache, bf16* out, int rows, int context,
                       cudaStream_t s) {
    if (rows < 1 || !mla_values_fits(context)) return cudaErrorInvalidValue;
    return mla_values_parts() == 16 ? launch_values<16, false>(scores, nullptr, cache, out, rows, context, s)
                                    : launch_values<8, false>(scores, nullptr, cache, out, rows, context, s);
}

bool mla_probs_fits(int context) {
    return context > 0 && context % 8 == 0;
}

cudaError_t mla_probs_values(const bf16* probs, const bf16* cache, bf16* out, int rows, int context,
                             cudaStream_t s) {
    if (rows < 1 || !mla_probs_fits(context)) return cudaErrorInvalidValue;
    return mla_values_parts() == 16 ? launch_values<16, true>(nullptr, probs, cache, out, rows, context, s)
                                    : launch_values<8, true>(nullptr, probs, cache, out, rows, context, s);
}

}  // namespace tpverify::cuda
