// Decode attention of absorbed MLA in two kernels, neither holding a row's whole output
// (engine/cuda/attention.cuh declares it; TPVERIFY_ATTENTION=two-pass).
//
// Scores kernel: grid (tiles of 32 tokens, blocks of 64 query rows), 8 warps. A block copies its
// 64 query rows and its tile's 32 cached rows into shared memory (cp.async) and warp (g, h) of
// the 4 x 2 multiplies rows 16g..16g+15 by tokens 16h..16h+15 (two chains of 36 mma over the 576
// dims). It writes p = exp2(s - m) as bf16, m the row's largest score in the tile (log2 units),
// and the tile's (m, l = sum of p) per row. Tiles run up to an even count, those past the
// context all masked, so that the values kernel reads whole 64-token chunks.
//
// Values kernel: grid (512 / 64 output dims, context splits, blocks of 64 rows), 8 warps. A block
// starts its chunks' copies (p rows and the dims of V, a 3-stage cp.async ring), then reads every
// tile's (m, l) of its rows for the row's max M and total L, and weighs each of its tiles by
// exp2(m - M) / L. Warp (g, h): rows 16g.., dims 32h.. (4 n8 tiles, V^T fragments by
// ldmatrix.trans); a tile's product is scaled by its weight as it is added. The splits' sums
// meet in an fp32 accumulator by atomic adds (so the order of the additions, not the result up
// to rounding, varies from run to run); the last block of a (dims, rows) pair to arrive (an
// atomic counter it resets) writes them as bf16 and zeroes the accumulator for the next call.
// Both kernels launch with programmatic dependent launch where it is on.
#include <algorithm>
#include <cmath>

#include "engine/cuda/attention.cuh"
#include "engine/cuda/mla_common.cuh"
#include "engine/cuda/skinny_gemm.cuh"
#include "engine/cuda/stream_gemm.cuh"
#include "engine/knobs.hpp"

namespace tpverify::cuda {
namespace {

using namespace mla;                        // the MLA row shape and helpers (mla_common.cuh)
constexpr int k_rows = 64;                  ///< query rows a block (both kernels)
constexpr int k_threads = 256;              ///< 8 warps
constexpr int k_tile = 32;                  ///< tokens of a scores block (one (m, l) each)
constexpr int k_chunk = 64;                 ///< tokens a values-kernel stage
constexpr int k_out_dims = 64;              ///< output dims a values block
constexpr int k_chunk_pitch = k_chunk + 8;  ///< bf16 a shared row of p (64 tokens) or V (64 dims)
constexpr int k_stages = 3;
constexpr int k_max_split_tiles = 64;  ///< tiles a split at most (2,048 tokens)

constexpr std::size_t k_scores_smem = std::size_t(k_rows + k_tile) * k_pitch * sizeof(bf16);
constexpr std::size_t k_stage_elems = std::size_t(k_rows + k_chunk) * k_chunk_pitch;
constexpr std::size_t k_values_smem =
    k_stages * k_stage_elems * sizeof(bf16) + std::size_t(k_rows) * k_max_split_tiles * sizeof(float);

/// Tiles the scores kernel covers: the context's, rounded up to whole chunks.
__host__ __device__ inline int padded_tiles(int context) {
    return (context + k_chunk - 1) / k_chunk * (k_chunk / k_tile);
}

__global__ void __launch_bounds__(k_threads)
    mla_scores_kernel(const bf16* q, const bf16* cache, int rows, int context, float scale_log2, bf16* p,
                      float2* ml, int late) {
    if (!late) skinny::pdl_trigger();
    skinny::pdl_wait();
    extern __shared__ uint4 smem_raw[];
    bf16* qs = reinterpret_cast<bf16*>(smem_raw);
    bf16* ks = qs + k_rows * k_pitch;
    __shared__ float red[2][k_rows];
    const int tile = blockIdx.x, row0 = blockIdx.y * k_rows;
    const int tiles = gridDim.x, p_pitch = tiles * k_tile;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int grp = warp & 3, half = warp >> 2;
    const int g = lane >> 2, t = lane & 3;
    constexpr int vecs = k_dim / 8;
    for (int i = threadIdx.x; i < k_rows * vecs; i += k_threads) {
        const int r = i / vecs, c = i % vecs,
                  row = min(row0 + r, rows - 1);  // rows past the end: not written
        copy_async16(qs + r * k_pitch + c * 8, q + std::uint64_t(row) * k_dim + c * 8);
    }
    copy_cache_rows<k_tile, k_threads>(ks, cache, tile * k_tile, context);  // past the context: masked below
    asm volatile("cp.async.commit_group;");
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();
    if (late) skinny::pdl_trigger();
    float s0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, s1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const unsigned a_base = smem_address(qs + (grp * 16 + (lane & 15)) * k_pitch + 8 * (lane >> 4));
    // B fragments of tokens 16h..16h+7 (r0, r1) and 16h+8.. (r2, r3): matrix j of the x4 is
    // tokens 8 (j >> 1) + 0..7 at dims 8 (j & 1) + 0..7 of the k step.
    const unsigned b_base =
        smem_address(ks + (half * 16 + (lane & 7) + 8 * (lane >> 4)) * k_pitch + 8 * ((lane >> 3) & 1));
#pragma unroll 4
    for (int step = 0; step < k_dim / 16; ++step) {
        unsigned a[4], b[4];
        sg::ldmatrix_x4(a_base + step * 32, a);
        sg::ldmatrix_x4(b_base + step * 32, b);
        sg::mma_bf16(s0, a, b[0], b[1]);
        sg::mma_bf16(s1, a, b[2], b[3]);
    }
    // The lane's scores: rows g (i < 2) and g + 8, tokens 16h + 2t + (i & 1) (s0) and + 8 (s1).
    float x[2][4];
    float most[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int h = i >> 1;
        const int tok0 = tile * k_tile + half * 16 + 2 * t + (i & 1);
        x[h][(i & 1)] = tok0 < context ? s0[i] * scale_log2 : -INFINITY;
        x[h][2 + (i & 1)] = tok0 + 8 < context ? s1[i] * scale_log2 : -INFINITY;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        most[h] = fmaxf(fmaxf(x[h][0], x[h][1]), fmaxf(x[h][2], x[h][3]));
        most[h] = fmaxf(most[h], __shfl_xor_sync(0xffffffffu, most[h], 1));
        most[h] = fmaxf(most[h], __shfl_xor_sync(0xffffffffu, most[h], 2));
        if (t == 0) red[half][grp * 16 + g + 8 * h] = most[h];
    }
    __syncthreads();
    float m[2], sum[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int r = grp * 16 + g + 8 * h;
        m[h] = fmaxf(red[0][r], red[1][r]);
        sum[h] = 0.0f;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            x[h][j] = m[h] == -INFINITY ? 0.0f : exp2f(x[h][j] - m[h]);
            sum[h] += x[h][j];
        }
        sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 1);
        sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 2);
    }
    __syncthreads();  // every warp has read red[] as maxima
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int r = grp * 16 + g + 8 * h, row = row0 + r;
        if (t == 0) red[half][r] = sum[h];
        if (row >= rows) continue;
        bf16* out = p + std::uint64_t(row) * p_pitch + tile * k_tile + half * 16 + 2 * t;
        *reinterpret_cast<__nv_bfloat162*>(out) = __floats2bfloat162_rn(x[h][0], x[h][1]);
        *reinterpret_cast<__nv_bfloat162*>(out + 8) = __floats2bfloat162_rn(x[h][2], x[h][3]);
    }
    __syncthreads();
    if (half == 0 && t == 0) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int r = grp * 16 + g + 8 * h, row = row0 + r;
            if (row < rows) ml[std::uint64_t(row) * tiles + tile] = make_float2(m[h], red[0][r] + red[1][r]);
        }
    }
}

__global__ void __launch_bounds__(k_threads)
    mla_values_kernel(const bf16* p, const float2* ml, const bf16* cache, int rows, int context, int tiles,
                      int split_tiles, float* acc, int* counters, bf16* out, int late) {
    if (!late) skinny::pdl_trigger();
    skinny::pdl_wait();
    extern __shared__ uint4 smem_raw[];
    bf16* stages = reinterpret_cast<bf16*>(smem_raw);
    float* weight = reinterpret_cast<float*>(stages + k_stages * k_stage_elems);  // [row][split tile]
    __shared__ int last;
    const int dim0 = blockIdx.x * k_out_dims, split = blockIdx.y, row0 = blockIdx.z * k_rows;
    const int p_pitch = tiles * k_tile;
    const int tile0 = split * split_tiles, my_tiles = min(split_tiles, tiles - tile0);
    const int chunks = my_tiles * k_tile / k_chunk;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int grp = warp & 3, half = warp >> 2;
    const int g = lane >> 2, t = lane & 3;
    auto load_chunk = [&](int c) {
        bf16* ps = stages + (c % k_stages) * k_stage_elems;
        const int token0 = (tile0 * k_tile) + c * k_chunk;
        constexpr int vecs = k_chunk / 8;  // 16-byte vectors a row of p (64 tokens) or of V (64 dims)
        for (int i = threadIdx.x; i < (k_rows + k_chunk) * vecs; i += k_threads) {
            const int r = i / vecs, v = i % vecs;
            if (r < k_rows) {
                const int row = min(row0 + r, rows - 1);
                copy_async16(ps + r * k_chunk_pitch + v * 8,
                             p + std::uint64_t(row) * p_pitch + token0 + v * 8);
            } else {
                const int token = min(token0 + r - k_rows, context - 1);  // p is 0 past the context
                copy_async16(ps + r * k_chunk_pitch + v * 8,
                             cache + std::uint64_t(token) * k_dim + dim0 + v * 8);
            }
        }
    };
    for (int c = 0; c < k_stages - 1; ++c) {
        if (c < chunks) load_chunk(c);
        asm volatile("cp.async.commit_group;");
    }
    // While those land: each row's max and total over every tile (4 threads a row), then the
    // weights of this split's tiles.
    {
        const int r = threadIdx.x >> 2, part = threadIdx.x & 3, row = min(row0 + r, rows - 1);
        const float2* mine = ml + std::uint64_t(row) * tiles;
        float most = -INFINITY;
#pragma unroll 8
        for (int i = part; i < tiles; i += 4) most = fmaxf(most, mine[i].x);
        most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, 1));
        most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, 2));
        float total = 0.0f;
#pragma unroll 8
        for (int i = part; i < tiles; i += 4) {
            const float2 v = mine[i];
            total += v.x == -INFINITY ? 0.0f : exp2f(v.x - most) * v.y;
        }
        total += __shfl_xor_sync(0xffffffffu, total, 1);
        total += __shfl_xor_sync(0xffffffffu, total, 2);
        const float inv = total > 0.0f ? 1.0f / total : 0.0f;
        for (int i = part; i < my_tiles; i += 4) {
            const float mt = mine[tile0 + i].x;
            weight[r * k_max_split_tiles + i] = mt == -INFINITY ? 0.0f : exp2f(mt - most) * inv;
        }
    }
    float o[4][4];
#pragma unroll
    for (int n = 0; n < 4; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    for (int c = 0; c < chunks; ++c) {
        if (c + k_stages - 1 < chunks) load_chunk(c + k_stages - 1);
        asm volatile("cp.async.commit_group;");
        asm volatile("cp.async.wait_group %0;" ::"n"(k_stages - 1) : "memory");
        __syncthreads();  // the chunk (and, the first time, the weights) for every warp
        const bf16* ps = stages + (c % k_stages) * k_stage_elems;
        const bf16* vs = ps + k_rows * k_chunk_pitch;
        const unsigned a_base = smem_address(ps + (grp * 16 + (lane & 15)) * k_chunk_pitch + 8 * (lane >> 4));
#pragma unroll
        for (int tt = 0; tt < k_chunk / k_tile; ++tt) {
            float u[4][4];
#pragma unroll
            for (int n = 0; n < 4; ++n) u[n][0] = u[n][1] = u[n][2] = u[n][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < k_tile / 16; ++kk) {
                const int k0 = tt * k_tile + kk * 16;
                unsigned a[4];
                sg::ldmatrix_x4(a_base + k0 * 2, a);
                const unsigned v_base =
                    smem_address(vs + (k0 + (lane & 7) + 8 * ((lane >> 3) & 1)) * k_chunk_pitch + half * 32 +
                                 8 * (lane >> 4));
#pragma unroll
                for (int np = 0; np < 2; ++np) {
                    unsigned b[4];
                    ldmatrix_x4_trans(v_base + np * 32, b);
                    sg::mma_bf16(u[2 * np], a, b[0], b[1]);
                    sg::mma_bf16(u[2 * np + 1], a, b[2], b[3]);
                }
            }
            const int wt = c * (k_chunk / k_tile) + tt;
            const float w0 = weight[(grp * 16 + g) * k_max_split_tiles + wt];
            const float w1 = weight[(grp * 16 + g + 8) * k_max_split_tiles + wt];
#pragma unroll
            for (int n = 0; n < 4; ++n) {
                o[n][0] += w0 * u[n][0], o[n][1] += w0 * u[n][1];
                o[n][2] += w1 * u[n][2], o[n][3] += w1 * u[n][3];
            }
        }
        __syncthreads();  // the stage is refilled next
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    if (late) skinny::pdl_trigger();
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = row0 + grp * 16 + g + 8 * h;
        if (row >= rows) continue;
#pragma unroll
        for (int n = 0; n < 4; ++n) {
            const int dim = dim0 + half * 32 + n * 8 + 2 * t;
            atomicAdd(reinterpret_cast<float2*>(acc + std::uint64_t(row) * k_vdim + dim),
                      make_float2(o[n][2 * h], o[n][2 * h + 1]));
        }
    }
    __threadfence();
    __syncthreads();
    int* counter = counters + blockIdx.z * gridDim.x + blockIdx.x;
    if (threadIdx.x == 0) last = atomicAdd(counter, 1) == int(gridDim.y) - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    // The last block of these rows and dims: the sums as bf16, the accumulator zeroed.
    for (int i = threadIdx.x; i < k_rows * k_out_dims / 2; i += k_threads) {
        const int r = i / (k_out_dims / 2), d = dim0 + 2 * (i % (k_out_dims / 2)), row = row0 + r;
        if (row >= rows) continue;
        float2* a = reinterpret_cast<float2*>(acc + std::uint64_t(row) * k_vdim + d);
        const float2 v = __ldcg(a);
        *reinterpret_cast<__nv_bfloat162*>(out + std::uint64_t(row) * k_vdim + d) =
            __floats2bfloat162_rn(v.x, v.y);
        __stcg(a, make_float2(0.0f, 0.0f));
    }
    if (threadIdx.x == 0) *counter = 0;
}

/// TPVERIFY_TWO_PASS_PDL (to compare on the GPU): `late`, each kernel lets the next launch only
/// after its loads (its blocks then hold no SM while the next one's wait); `off`, plain launches;
/// else, as the other kernels, first thing.
enum class Pdl { early, late, off };
Pdl pdl_mode() {
    static const Pdl mode = env_is("TPVERIFY_TWO_PASS_PDL", "late")  ? Pdl::late
                            : env_is("TPVERIFY_TWO_PASS_PDL", "off") ? Pdl::off
                                                                     : Pdl::early;
    return mode;
}

struct Layout {
    int tiles = 0, row_blocks = 0;
    std::size_t p_bytes = 0, ml_bytes = 0, acc_bytes = 0, counter_bytes = 0;
};

Layout layout(int rows, int context) {
    Layout l;
    l.tiles = padded_tiles(context);
    l.row_blocks = (rows + k_rows - 1) / k_rows;
    auto round = [](std::size_t b) { return (b + 255) / 256 * 256; };
    l.p_bytes = round(std::size_t(rows) * l.tiles * k_tile * sizeof(bf16));
    l.ml_bytes = round(std::size_t(rows) * l.tiles * sizeof(float2));
    l.acc_bytes = round(std::size_t(rows) * k_vdim * sizeof(float));
    l.counter_bytes = round(std::size_t(l.row_blocks) * (k_vdim / k_out_dims) * sizeof(int));
    return l;
}

}  // namespace

std::size_t mla_two_pass_bytes(int rows, int context) {
    const Layout l = layout(rows, context);
    return l.p_bytes + l.ml_bytes + l.acc_bytes + l.counter_bytes;
}

int mla_two_pass_splits(int rows, int context, int sms) {
    const Layout l = layout(rows, context);
    const int dims = k_vdim / k_out_dims;
    // About one block an SM (each reads every tile's (m, l) of its rows: more splits, more
    // such reads); each split whole chunks, at most k_max_split_tiles tiles.
    const int chunks = l.tiles * k_tile / k_chunk;
    int splits = std::max(1, sms / (dims * l.row_blocks));
    splits = std::min(splits, chunks);
    const int per_split = (chunks + splits - 1) / splits;  // chunks
    splits = (chunks + per_split - 1) / per_split;
    const int min_splits = (l.tiles + k_max_split_tiles - 1) / k_max_split_tiles;
    return std::max(splits, min_splits);
}

cudaError_t mla_two_pass_setup() {
    if (cudaError_t e = cudaFuncSetAttribute(mla_scores_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             int(k_scores_smem));
        e != cudaSuccess)
        return e;
    return cudaFuncSetAttribute(mla_values_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                int(k_values_smem));
}

cudaError_t mla_two_pass(const bf16* q, const bf16* cache, bf16* out, int rows, int context, int splits,
                         void* workspace, cudaStream_t s) {
    if (rows < 1 || context < 1 || splits < 1 || workspace == nullptr) return cudaErrorInvalidValue;
    const Layout l = layout(rows, context);
    const int chunks = l.tiles * k_tile / k_chunk;
    const int per_split = (chunks + std::min(splits, chunks) - 1) / std::min(splits, chunks);  // chunks
    const int split_tiles = per_split * (k_chunk / k_tile);
    if (split_tiles > k_max_split_tiles) return cudaErrorInvalidValue;
    const int used = (chunks + per_split - 1) / per_split;
    auto* base = static_cast<unsigned char*>(workspace);
    auto* p = reinterpret_cast<bf16*>(base);
    auto* ml = reinterpret_cast<float2*>(base + l.p_bytes);
    auto* acc = reinterpret_cast<float*>(base + l.p_bytes + l.ml_bytes);
    auto* counters = reinterpret_cast<int*>(base + l.p_bytes + l.ml_bytes + l.acc_bytes);
    const float scale_log2 = 1.4426950408889634f / std::sqrt(float(k_dim));
    const int late = pdl_mode() == Pdl::late ? 1 : 0;
    const bool pdl = skinny::pdl_enabled() && pdl_mode() != Pdl::off;
    if (cudaError_t e = skinny::launch_pdl(
            mla_scores_kernel, dim3(unsigned(l.tiles), unsigned(l.row_blocks), 1), k_threads, k_scores_smem,
            s, pdl, q, cache, rows, context, scale_log2, p, ml, late);
        e != cudaSuccess)
        return e;
    return skinny::launch_pdl(mla_values_kernel,
                              dim3(unsigned(k_vdim / k_out_dims), unsigned(used), unsigned(l.row_blocks)),
                              k_threads, k_values_smem, s, pdl, p, ml, cache, rows, context, l.tiles,
                              split_tiles, acc, counters, out, late);
}

}  // namespace tpverify::cuda
