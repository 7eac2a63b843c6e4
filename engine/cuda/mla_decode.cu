// Fused decode attention of absorbed MLA (one latent KV row of 576 shared by every head): a
// split-KV "flash decoding" kernel on tensor cores and a combine kernel, as FlashMLA runs it
// (two launches; the facts of the method, our code). engine/cuda/attention.cuh declares it.
//
// Split kernel: grid (splits, ceil(rows / R)), R = 16 x G query rows a block in G row groups of 4
// warps (G = 2 by default; TPVERIFY_MLA_ROWS=64 or 16 for G = 4, the kernel's first form, or 1). A block
// holds its R query rows in shared memory and walks its split of the context 32 tokens at a time, three tiles
// in a cp.async ring (the query rows come in the first tile's group, so they load together). Warp (g, d) of
// the G x 4: S for rows 16g..16g+15 and tokens 8d..8d+7 of the tile (36 mma over the 576 dims), written to
// shared memory; then every warp of row group g reads the 16 x 32 scores, does the online softmax (fp32,
// exp2) and multiplies P into its quarter of the 512 output dims (V = the first 512 of each cached row, read
// with ldmatrix.trans). Each split writes its unnormalised O and (max, sum) per row; the combine kernel
// weights them: the wide one (default) spreads a row's splits over 8 warps, each with 16 loads in flight, and
// meets their sums in shared memory; TPVERIFY_MLA_COMBINE=serial runs the first one (each thread one split
// for the weights, then two dims over every split, 8 loads in flight). Both kernels are launched with
// programmatic dependent launch (as the skinny GEMMs are): they let the next kernel launch first thing and
// wait for the previous one before reading.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "engine/cuda/attention.cuh"
#include "engine/cuda/mla_common.cuh"
#include "engine/cuda/skinny_gemm.cuh"
#include "engine/cuda/stream_gemm.cuh"
#include "engine/knobs.hpp"

namespace tpverify::cuda {
namespace {

using namespace mla;          // the MLA row shape and helpers (mla_common.cuh)
constexpr int k_tokens = 32;  // tokens per tile
constexpr int k_s_pitch = k_tokens + 4;
constexpr int k_stages = 3;  // K tiles in the cp.async ring
constexpr int k_combine_threads = 128, k_combine_dims = 2 * k_combine_threads;
// The wide combine: a block of 8 warps per (row, 64 dims); warp w sums splits w, w + 8, ...
constexpr int k_wide_warps = 8, k_wide_dims = 64, k_wide_unroll = 16;
constexpr int k_max_splits = 256;

/// A split block of `Groups` row groups of 16 query rows, 4 warps each (Groups = 4: 64 rows, 16
/// warps, the kernel's first form; 2: 32 rows, 8 warps; 1: 16 rows, 4 warps).
template <int Groups>
struct SplitShape {
    static constexpr int rows = 16 * Groups;
    static constexpr int threads = 128 * Groups;
    static constexpr std::size_t smem =
        (std::size_t(rows) * k_pitch + std::size_t(k_stages) * k_tokens * k_pitch) * sizeof(bf16) +
        std::size_t(rows) * k_s_pitch * sizeof(float);
};

template <int Groups>
__global__ void __launch_bounds__(SplitShape<Groups>::threads, 1)
    mla_split_kernel(const bf16* q, const bf16* cache, int rows, int context, int split_len, float scale_log2,
                     float* o_part, float* ml_part, bf16* out) {
    constexpr int k_rows_per_block = SplitShape<Groups>::rows, k_threads = SplitShape<Groups>::threads;
    skinny::pdl_trigger();  // the next kernel may launch (it waits for this one)
    skinny::pdl_wait();     // launched early (PDL): the previous kernel's writes first
    extern __shared__ uint4 smem_raw[];
    bf16* qs = reinterpret_cast<bf16*>(smem_raw);
    bf16* ks = qs + k_rows_per_block * k_pitch;
    float* ss = reinterpret_cast<float*>(ks + k_stages * k_tokens * k_pitch);
    const int split = blockIdx.x, block_row0 = blockIdx.y * k_rows_per_block;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int group = warp >> 2, quarter = warp & 3;
    const int g = lane >> 2, t = lane & 3;
    const int t0 = split * split_len, t1 = min(context, t0 + split_len);
    const int tiles = t1 > t0 ? (t1 - t0 + k_tokens - 1) / k_tokens : 0;

    copy_query_rows<k_rows_per_block, k_threads>(qs, q, block_row0, rows);
    auto load_tile = [&](int tile) {  // rows past the context: masked below
        copy_cache_rows<k_tokens, k_threads>(ks + (tile % k_stages) * k_tokens * k_pitch, cache,
                                             t0 + tile * k_tokens, context);
    };
    // Groups: {q, tile 0}, {tile 1}, then one per iteration (empty past the last tile), so that
    // "all but the newest two done" always means "this iteration's tile is here".
    for (int tile = 0; tile < k_stages - 1; ++tile) {
        if (tile < tiles) load_tile(tile);
        asm volatile("cp.async.commit_group;");
    }

    float o[16][4];
#pragma unroll
    for (int n = 0; n < 16; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};
    for (int tile = 0; tile < tiles; ++tile) {
        if (tile + k_stages - 1 < tiles) load_tile(tile + k_stages - 1);  // its buffer's last use ended below
        asm volatile("cp.async.commit_group;");
        asm volatile("cp.async.wait_group %0;" ::"n"(k_stages - 1) : "memory");
        __syncthreads();
        const bf16* kb = ks + (tile % k_stages) * k_tokens * k_pitch;
        // S = Q K^T for this warp's 16 rows and 8 tokens: two accumulators, so that two chains of
        // 18 mma run interleaved instead of one of 36.
        float s[4] = {0.0f, 0.0f, 0.0f, 0.0f}, s2[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        const unsigned a_base = smem_address(qs + (group * 16 + (lane & 15)) * k_pitch + 8 * (lane >> 4));
        const unsigned b_base =
            smem_address(kb + (quarter * 8 + (lane & 7)) * k_pitch + 8 * ((lane >> 3) & 1));
#pragma unroll 3
        for (int step = 0; step < k_dim / 16; step += 2) {
            unsigned a[4], b0, b1, a2[4], c0, c1;
            sg::ldmatrix_x4(a_base + step * 32, a);
            ldmatrix_x2(b_base + step * 32, b0, b1);
            sg::ldmatrix_x4(a_base + step * 32 + 32, a2);
            ldmatrix_x2(b_base + step * 32 + 32, c0, c1);
            sg::mma_bf16(s, a, b0, b1);
            sg::mma_bf16(s2, a2, c0, c1);
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) s[i] += s2[i];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int col = quarter * 8 + 2 * t + (i & 1);
            const int token = t0 + tile * k_tokens + col;
            ss[(group * 16 + g + 8 * (i >> 1)) * k_s_pitch + col] =
                token < t1 ? s[i] * scale_log2 : -INFINITY;
        }
        __syncthreads();
        // Online softmax of rows g and g + 8 of the group over the tile's 32 tokens; the lane's
        // scores are at tokens 2t, 2t+1, 2t+8, 2t+9 of each 16 (its A fragments of P).
        float p[2][8];
        unsigned pa[2][4];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const float* row = ss + (group * 16 + g + 8 * h) * k_s_pitch;
            float most = -INFINITY;
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                p[h][j] = row[(j >> 1) * 8 + 2 * t + (j & 1)];
                most = fmaxf(most, p[h][j]);
            }
            most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, 1));
            most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, 2));
            const float new_max = fmaxf(row_max[h], most);
            const float correction = new_max == -INFINITY ? 1.0f : exp2f(row_max[h] - new_max);
            float sum = 0.0f;
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                p[h][j] = new_max == -INFINITY ? 0.0f : exp2f(p[h][j] - new_max);
                sum += p[h][j];
            }
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            row_sum[h] = row_sum[h] * correction + sum;
            row_max[h] = new_max;
#pragma unroll
            for (int n = 0; n < 16; ++n) o[n][2 * h] *= correction, o[n][2 * h + 1] *= correction;
        }
#pragma unroll
        for (int kk = 0; kk < 2; ++kk) {
            pa[kk][0] = pack_bf16(p[0][4 * kk + 0], p[0][4 * kk + 1]);
            pa[kk][1] = pack_bf16(p[1][4 * kk + 0], p[1][4 * kk + 1]);
            pa[kk][2] = pack_bf16(p[0][4 * kk + 2], p[0][4 * kk + 3]);
            pa[kk][3] = pack_bf16(p[1][4 * kk + 2], p[1][4 * kk + 3]);
        }
        // O += P V over this warp's 128 dims: 16 n8 tiles, V^T fragments by ldmatrix.trans.
#pragma unroll
        for (int kk = 0; kk < 2; ++kk) {
            const unsigned v_base =
                smem_address(kb + (kk * 16 + (lane & 7) + 8 * ((lane >> 3) & 1)) * k_pitch + quarter * 128 +
                             8 * (lane >> 4));
#pragma unroll
            for (int np = 0; np < 8; ++np) {
                unsigned b[4];
                ldmatrix_x4_trans(v_base + np * 32, b);
                sg::mma_bf16(o[2 * np], pa[kk], b[0], b[1]);
                sg::mma_bf16(o[2 * np + 1], pa[kk], b[2], b[3]);
            }
        }
        __syncthreads();  // the tile's buffer and the scores are reused
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    // This split's rows: unnormalised O, and (max, sum); or, with one split, the output.
    const int splits = gridDim.x;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = block_row0 + group * 16 + g + 8 * h;
        if (row >= rows) continue;
#pragma unroll
        for (int n = 0; n < 16; ++n) {
            const int dim = quarter * 128 + n * 8 + 2 * t;
            if (splits == 1) {
                const float inv = row_sum[h] > 0.0f ? 1.0f / row_sum[h] : 0.0f;
                *reinterpret_cast<__nv_bfloat162*>(out + std::uint64_t(row) * k_vdim + dim) =
                    __floats2bfloat162_rn(o[n][2 * h] * inv, o[n][2 * h + 1] * inv);
            } else {
                *reinterpret_cast<float2*>(o_part + (std::uint64_t(split) * rows + row) * k_vdim + dim) =
                    make_float2(o[n][2 * h], o[n][2 * h + 1]);
            }
        }
        if (splits > 1 && quarter == 0 && t == 0)
            *reinterpret_cast<float2*>(ml_part + (std::uint64_t(split) * rows + row) * 2) =
                make_float2(row_max[h], row_sum[h]);
    }
}

// Grid (rows, 512 / k_combine_dims): the splits' results weighted by exp2(max_s - max) and
// normalised. Each thread weighs splits tid, tid + 128, ... (block reductions for the max and
// the sum), then sums two dims over every split.
__global__ void __launch_bounds__(k_combine_threads)
    mla_combine_kernel(const float* o_part, const float* ml_part, int rows, int splits, bf16* out) {
    skinny::pdl_trigger();
    skinny::pdl_wait();
    const int row = blockIdx.x;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    constexpr int warps = k_combine_threads / 32;
    __shared__ float weight[256];
    __shared__ float red_max[warps], red_sum[warps];
    float most = -INFINITY;
    for (int s = threadIdx.x; s < splits; s += k_combine_threads)
        most = fmaxf(most, ml_part[(std::uint64_t(s) * rows + row) * 2]);
    for (int o = 16; o > 0; o >>= 1) most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, o));
    if (lane == 0) red_max[warp] = most;
    __syncthreads();
    most = red_max[0];
#pragma unroll
    for (int w = 1; w < warps; ++w) most = fmaxf(most, red_max[w]);
    float sum = 0.0f;
    for (int s = threadIdx.x; s < splits; s += k_combine_threads) {
        const float2 ml = *reinterpret_cast<const float2*>(ml_part + (std::uint64_t(s) * rows + row) * 2);
        const float w = ml.x == -INFINITY ? 0.0f : exp2f(ml.x - most);
        weight[s] = w;
        sum += w * ml.y;
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) red_sum[warp] = sum;
    __syncthreads();
    sum = 0.0f;
#pragma unroll
    for (int w = 0; w < warps; ++w) sum += red_sum[w];
    const float total = sum > 0.0f ? 1.0f / sum : 0.0f;
    const int d = blockIdx.y * k_combine_dims + threadIdx.x * 2;
    float2 acc = make_float2(0.0f, 0.0f);
#pragma unroll 8
    for (int s = 0; s < splits; ++s) {
        const float2 v =
            *reinterpret_cast<const float2*>(o_part + (std::uint64_t(s) * rows + row) * k_vdim + d);
        acc.x += weight[s] * v.x;
        acc.y += weight[s] * v.y;
    }
    *reinterpret_cast<__nv_bfloat162*>(out + std::uint64_t(row) * k_vdim + d) =
        __floats2bfloat162_rn(acc.x * total, acc.y * total);
}

// Grid (rows, 512 / 64), 8 warps: the same weighting as mla_combine_kernel, with the splits
// spread over the warps (warp w sums splits w, w + 8, ..., its loads issued 16 at a time) and
// the 8 warps' sums met in shared memory, so that a row's splits are read in about one round of
// memory latency instead of one round per 8 splits.
__global__ void __launch_bounds__(k_wide_warps * 32)
    mla_combine_wide_kernel(const float* o_part, const float* ml_part, int rows, int splits, bf16* out) {
    skinny::pdl_trigger();
    skinny::pdl_wait();
    const int row = blockIdx.x;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __shared__ float weight[k_max_splits];
    __shared__ float red[k_wide_warps];
    __shared__ float2 acc_w[k_wide_warps][k_wide_dims / 2];
    // Each thread holds at most one split's (max, sum): splits <= 256 = the block's threads.
    float2 ml = make_float2(-INFINITY, 0.0f);
    if (threadIdx.x < splits)
        ml = *reinterpret_cast<const float2*>(ml_part + (std::uint64_t(threadIdx.x) * rows + row) * 2);
    float most = ml.x;
    for (int o = 16; o > 0; o >>= 1) most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, o));
    if (lane == 0) red[warp] = most;
    __syncthreads();
    most = red[0];
#pragma unroll
    for (int w = 1; w < k_wide_warps; ++w) most = fmaxf(most, red[w]);
    const float wt = ml.x == -INFINITY ? 0.0f : exp2f(ml.x - most);
    if (threadIdx.x < splits) weight[threadIdx.x] = wt;
    float sum = wt * ml.y;
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    __syncthreads();  // every warp has read red[] as maxima
    if (lane == 0) red[warp] = sum;
    __syncthreads();
    sum = 0.0f;
#pragma unroll
    for (int w = 0; w < k_wide_warps; ++w) sum += red[w];
    const int d = blockIdx.y * k_wide_dims + 2 * lane;
    float2 acc = make_float2(0.0f, 0.0f);
    for (int s0 = warp; s0 < splits; s0 += k_wide_warps * k_wide_unroll) {
        // Loads past the last split are predicated off (not branched around), so the ones that
        // run all issue before the first is used.
        float2 v[k_wide_unroll];
#pragma unroll
        for (int u = 0; u < k_wide_unroll; ++u) {
            const int s = s0 + u * k_wide_warps;
            v[u] = make_float2(0.0f, 0.0f);
            if (s < splits)
                v[u] = __ldcg(
                    reinterpret_cast<const float2*>(o_part + (std::uint64_t(s) * rows + row) * k_vdim + d));
        }
#pragma unroll
        for (int u = 0; u < k_wide_unroll; ++u) {
            const int s = s0 + u * k_wide_warps;
            const float w = s < splits ? weight[s] : 0.0f;
            acc.x += w * v[u].x;
            acc.y += w * v[u].y;
        }
    }
    acc_w[warp][lane] = acc;
    __syncthreads();
    if (warp == 0) {
        float2 total = acc_w[0][lane];
#pragma unroll
        for (int w = 1; w < k_wide_warps; ++w) total.x += acc_w[w][lane].x, total.y += acc_w[w][lane].y;
        const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
        *reinterpret_cast<__nv_bfloat162*>(out + std::uint64_t(row) * k_vdim + d) =
            __floats2bfloat162_rn(total.x * inv, total.y * inv);
    }
}

}  // namespace

namespace {

/// Query rows per split block: TPVERIFY_MLA_ROWS (16, 32 or 64, to compare on the GPU), else 32:
/// on the H100 (docs/benchmarks-gpu.md, 2026-12-05) the 1-token pass's attention took 1,000 µs
/// at 32 against 1,263 at 64 and 1,016 at 16, the 4-token pass's 2,393 at 32 and 64.
int rows_per_block() {
    static const int chosen = [] {
        const int n = env_int("TPVERIFY_MLA_ROWS", 32);
        return n == 16 || n == 64 ? n : 32;
    }();
    return chosen;
}

/// TPVERIFY_MLA_COMBINE=serial: the first combine kernel (one thread per split for the weights,
/// then each thread over every split), to compare; else the wide one.
bool serial_combine() {
    static const bool serial = env_is("TPVERIFY_MLA_COMBINE", "serial");
    return serial;
}

}  // namespace

std::size_t mla_workspace_floats(int rows, int splits) {
    return std::size_t(splits) * rows * (k_vdim + 2);
}

int mla_splits(int rows, int context, int sms) {
    if (cluster_attention_chosen()) return mla_cluster_splits(rows, context, sms);
    const int row_blocks = (rows + rows_per_block() - 1) / rows_per_block();
    // About one block per SM, each split at least one tile of tokens; at most 256 (the combine's table).
    int splits = std::max(1, sms / row_blocks);
    // TPVERIFY_MLA_SPLITS=N (to compare on the GPU): at most N splits instead.
    static const int cap = env_int("TPVERIFY_MLA_SPLITS", 0);
    if (cap > 0) splits = std::min(splits, cap);
    splits = std::min({splits, (context + k_tokens - 1) / k_tokens, k_max_splits});
    return splits;
}

cudaError_t mla_setup() {
    if (cluster_attention_chosen()) return mla_cluster_setup();
    if (cudaError_t e = cudaFuncSetAttribute(mla_split_kernel<4>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             int(SplitShape<4>::smem));
        e != cudaSuccess)
        return e;
    if (cudaError_t e = cudaFuncSetAttribute(mla_split_kernel<2>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             int(SplitShape<2>::smem));
        e != cudaSuccess)
        return e;
    return cudaFuncSetAttribute(mla_split_kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                int(SplitShape<1>::smem));
}

namespace {

template <int Groups>
cudaError_t launch_split(const bf16* q, const bf16* cache, bf16* out, int rows, int context, int per_split,
                         int used, float* o_part, float* ml_part, cudaStream_t s) {
    using Shape = SplitShape<Groups>;
    const dim3 grid(unsigned(used), unsigned((rows + Shape::rows - 1) / Shape::rows));
    const float scale_log2 = 1.4426950408889634f / std::sqrt(float(k_dim));
    return skinny::launch_pdl(mla_split_kernel<Groups>, grid, Shape::threads, Shape::smem, s,
                              skinny::pdl_enabled(), q, cache, rows, context, per_split, scale_log2, o_part,
                              ml_part, out);
}

}  // namespace

cudaError_t mla_decode(const bf16* q, const bf16* cache, bf16* out, int rows, int context, int splits,
                       float* workspace, cudaStream_t s) {
    if (cluster_attention_chosen())
        return mla_cluster_decode(q, cache, out, rows, context, splits, workspace, s);
    if (rows < 1 || context < 1 || splits < 1 || splits > k_max_splits) return cudaErrorInvalidValue;
    const int per_split = ((context + splits - 1) / splits + k_tokens - 1) / k_tokens * k_tokens;
    const int used = (context + per_split - 1) / per_split;
    float* o_part = workspace;
    float* ml_part = workspace + std::size_t(used) * rows * k_vdim;
    const int per_block = rows_per_block();
    const cudaError_t e =
        per_block == 16 ? launch_split<1>(q, cache, out, rows, context, per_split, used, o_part, ml_part, s)
        : per_block == 32
            ? launch_split<2>(q, cache, out, rows, context, per_split, used, o_part, ml_part, s)
            : launch_split<4>(q, cache, out, rows, context, per_split, used, o_part, ml_part, s);
    if (e != cudaSuccess || used == 1) return e;
    return mla_combine(o_part, ml_part, rows, used, out, s);
}

cudaError_t mla_combine(const float* o_part, const float* ml_part, int rows, int splits, bf16* out,
                        cudaStream_t s) {
    if (rows < 1 || splits < 1 || splits > k_max_splits) return cudaErrorInvalidValue;
    if (serial_combine())
        return skinny::launch_pdl(
            mla_combine_kernel, dim3(unsigned(rows), unsigned(k_vdim / k_combine_dims), 1), k_combine_threads,
            0, s, skinny::pdl_enabled(), o_part, ml_part, rows, splits, out);
    return skinny::launch_pdl(mla_combine_wide_kernel,
                              dim3(unsigned(rows), unsigned(k_vdim / k_wide_dims), 1), k_wide_warps * 32, 0,
                              s, skinny::pdl_enabled(), o_part, ml_part, rows, splits, out);
}

}  // namespace tpverify::cuda
