// Decode attention of absorbed MLA with each context split spread over a thread-block cluster of
// 8 blocks (engine/cuda/attention.cuh declares it; TPVERIFY_ATTENTION=cluster).
//
// Why: at one token the pass's 64 query rows (64 heads) are as many bytes as a few hundred cached
// rows, so the split kernel of mla_decode.cu, whose blocks each hold 32 query rows and 64 tokens,
// moves as much query and partial-output data as KV cache, and its combine reads 8 MB of fp32
// partials. Here the blocks of a cluster share one split's tokens and meet on chip instead.
//
// Grid (8 x splits, row blocks of 64), clusters of 8 along x, 8 warps a block, one block an SM.
// Block j of a cluster (its rank):
//  1. copies the row block's 64 query rows and its own T tokens (T <= 128: 1..4 tiles of 32, in
//     a two-stage cp.async ring) and writes S = Q K^T (log2 units) for them to shared memory:
//     warp (m, h) of the 4 x 2 takes rows 16m.. and tokens 16h.. of each tile (36 mma a tile
//     and n8 half, in two chains);
//  2. takes each row's largest score over its tokens; after a cluster barrier every block reads
//     the 8 blocks' maxima (distributed shared memory) for the split's row max M;
//  3. writes P = exp2(S - M) as bf16 and each row's sum of P; a second barrier;
//  4. copies every block's P (distributed shared memory) and the split's V rows, dims 64j..64j+63
//     (global memory: the L2 holds them, the other blocks having just read them), into the
//     shared memory steps 1-3 used (all 8 blocks' in one round at T = 32 and 64, in two at 128),
//     and multiplies: warp (m, h) rows 16m.., dims 64j + 32h.. (4 n8 tiles; V^T by
//     ldmatrix.trans). A third barrier before any block leaves (the others read its P).
// The split's result, O unnormalised against M and (M, L = the sum of the 8 blocks' row sums), is
// what mla_decode's split kernel writes, so its combine kernel finishes (one split: the block
// writes O / L as bf16 itself). Launched with programmatic dependent launch where it is on.
#include <cooperative_groups.h>
#include <algorithm>
#include <cmath>

#include "engine/cuda/attention.cuh"
#include "engine/cuda/mla_common.cuh"
#include "engine/cuda/skinny_gemm.cuh"
#include "engine/cuda/stream_gemm.cuh"

namespace tpverify::cuda {
namespace {

namespace cg = cooperative_groups;
using namespace mla;  // the MLA row shape and helpers (mla_common.cuh)

constexpr int k_cluster = 8;                 ///< blocks a cluster (the portable most)
constexpr int k_rows = 64;                   ///< query rows a block
constexpr int k_threads = 256;               ///< 8 warps
constexpr int k_tile = 32;                   ///< tokens a K tile
constexpr int k_max_tokens = 128;            ///< tokens a block at most (4 tiles)
constexpr int k_s_pitch = k_max_tokens + 4;  ///< floats a shared row of S
constexpr int k_p_pitch = k_max_tokens + 8;  ///< bf16 a shared row of P (272 bytes: no bank conflicts)
constexpr int k_dims = k_vdim / k_cluster;   ///< output dims a block: 64
constexpr int k_v_pitch = k_dims + 8;        ///< bf16 a shared row of V's 64 dims
constexpr int k_max_splits = 256;            ///< the combine's most
constexpr int k_copy_batch = 8;              ///< remote 16-byte loads a thread keeps in flight

// Shared memory, in bytes: Q and the K ring (the region step 4 reuses), S, P, the row statistics.
constexpr std::size_t k_q_at = 0;
constexpr std::size_t k_k_at = k_q_at + std::size_t(k_rows) * k_pitch * sizeof(bf16);
constexpr std::size_t k_region = k_k_at + std::size_t(2) * k_tile * k_pitch * sizeof(bf16);
constexpr std::size_t k_s_at = k_region;
constexpr std::size_t k_p_at = k_s_at + std::size_t(k_rows) * k_s_pitch * sizeof(float);
constexpr std::size_t k_stats_at = k_p_at + std::size_t(k_rows) * k_p_pitch * sizeof(bf16);
constexpr std::size_t k_smem = k_stats_at + std::size_t(4) * k_rows * sizeof(float);

/// Bytes one block's P and V rows take in step 4's region (P rows of tokens + 8 bf16).
__host__ __device__ constexpr std::size_t peer_bytes(int tokens) {
    return std::size_t(k_rows) * (tokens + 8) * sizeof(bf16) + std::size_t(tokens) * k_v_pitch * sizeof(bf16);
}

__global__ void __launch_bounds__(k_threads, 1)
    mla_cluster_kernel(const bf16* q, const bf16* cache, int rows, int context, int tokens, float scale_log2,
                       float* o_part, float* ml_part, bf16* out) {
    skinny::pdl_trigger();  // the next kernel may launch (it waits for this one)
    skinny::pdl_wait();     // launched early (PDL): the previous kernel's writes first
    cg::cluster_group cluster = cg::this_cluster();
    extern __shared__ uint4 smem_raw[];
    unsigned char* base = reinterpret_cast<unsigned char*>(smem_raw);
    bf16* qs = reinterpret_cast<bf16*>(base + k_q_at);
    bf16* ks = reinterpret_cast<bf16*>(base + k_k_at);
    float* ss = reinterpret_cast<float*>(base + k_s_at);
    bf16* ps = reinterpret_cast<bf16*>(base + k_p_at);
    float* m_local = reinterpret_cast<float*>(base + k_stats_at);  // this block's row maxima
    float* l_local = m_local + k_rows;                             // its row sums of P
    float* m_split = l_local + k_rows;                             // the split's row max M
    float* l_split = m_split + k_rows;                             // the split's row sum L
    const int rank = int(cluster.block_rank());
    const int split = int(blockIdx.x) / k_cluster, splits = int(gridDim.x) / k_cluster;
    const int row0 = int(blockIdx.y) * k_rows;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int mt = warp >> 1, half = warp & 1;  // warp (m, h): rows 16m.., tokens or dims by h
    const int split_t0 = split * k_cluster * tokens, t0 = split_t0 + rank * tokens;
    const int tiles = tokens / k_tile;

    // 1. Q, the K tiles, S.
    copy_query_rows<k_rows, k_threads>(qs, q, row0, rows);
    auto load_tile = [&](int tile) {  // rows past the context: masked below
        copy_cache_rows<k_tile, k_threads>(ks + (tile & 1) * k_tile * k_pitch, cache, t0 + tile * k_tile,
                                           context);
    };
    // Groups {Q, tile 0}, {tile 1}, then one an iteration (empty past the last tile): "all but
    // the newest one done" is "this iteration's tile is here".
    load_tile(0);
    asm volatile("cp.async.commit_group;");
    if (tiles > 1) load_tile(1);
    asm volatile("cp.async.commit_group;");
    const unsigned a_base = smem_address(qs + (mt * 16 + (lane & 15)) * k_pitch + 8 * (lane >> 4));
    for (int tile = 0; tile < tiles; ++tile) {
        asm volatile("cp.async.wait_group 1;" ::: "memory");
        __syncthreads();
        const bf16* kb = ks + (tile & 1) * k_tile * k_pitch;
        // B fragments of tokens 16h..16h+15 (two n8 tiles) by one ldmatrix.x4 a k16 step.
        const unsigned b_base =
            smem_address(kb + (half * 16 + (lane & 7) + 8 * (lane >> 4)) * k_pitch + 8 * ((lane >> 3) & 1));
        float s[2][2][4] = {};  // [n8 tile][even / odd k16 step]
#pragma unroll 6
        for (int step = 0; step < k_dim / 16; step += 2) {
            unsigned a0[4], a1[4], b0[4], b1[4];
            sg::ldmatrix_x4(a_base + step * 32, a0);
            sg::ldmatrix_x4(b_base + step * 32, b0);
            sg::ldmatrix_x4(a_base + step * 32 + 32, a1);
            sg::ldmatrix_x4(b_base + step * 32 + 32, b1);
            sg::mma_bf16(s[0][0], a0, b0[0], b0[1]);
            sg::mma_bf16(s[1][0], a0, b0[2], b0[3]);
            sg::mma_bf16(s[0][1], a1, b1[0], b1[1]);
            sg::mma_bf16(s[1][1], a1, b1[2], b1[3]);
        }
#pragma unroll
        for (int nt = 0; nt < 2; ++nt)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int col = tile * k_tile + half * 16 + nt * 8 + 2 * t + (i & 1);
                ss[(mt * 16 + g + 8 * (i >> 1)) * k_s_pitch + col] =
                    t0 + col < context ? (s[nt][0][i] + s[nt][1][i]) * scale_log2 : -INFINITY;
            }
        __syncthreads();  // the tile's buffer is free again; S of the tile is written
        if (tile + 2 < tiles) load_tile(tile + 2);
        asm volatile("cp.async.commit_group;");
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");

    // 2. Row maxima: 4 threads a row, float4 columns 4s, 4s + 16, ...
    const int my_row = threadIdx.x >> 2, sub = threadIdx.x & 3;
    const float* srow = ss + my_row * k_s_pitch;
    float most = -INFINITY;
    for (int c = sub * 4; c < tokens; c += 16) {
        const float4 v = *reinterpret_cast<const float4*>(srow + c);
        most = fmaxf(most, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    }
    most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, 1));
    most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, 2));
    if (sub == 0) m_local[my_row] = most;
    cluster.sync();
    float m = -INFINITY;
    for (int p = sub; p < k_cluster; p += 4) m = fmaxf(m, cluster.map_shared_rank(m_local, p)[my_row]);
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));

    // 3. P = exp2(S - M) (0 where S is masked, or the whole split is), and its row sums.
    float sum = 0.0f;
    bf16* prow = ps + my_row * k_p_pitch;
    for (int c = sub * 4; c < tokens; c += 16) {
        const float4 v = *reinterpret_cast<const float4*>(srow + c);
        const bool none = m == -INFINITY;
        const float e0 = none ? 0.0f : exp2f(v.x - m), e1 = none ? 0.0f : exp2f(v.y - m);
        const float e2 = none ? 0.0f : exp2f(v.z - m), e3 = none ? 0.0f : exp2f(v.w - m);
        sum += (e0 + e1) + (e2 + e3);
        *reinterpret_cast<uint2*>(prow + c) = make_uint2(pack_bf16(e0, e1), pack_bf16(e2, e3));
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    if (sub == 0) l_local[my_row] = sum, m_split[my_row] = m;
    cluster.sync();

    // 4. Every block's P and the split's V rows (this block's 64 dims), in rounds that fit the
    // region; O = P V.
    if (threadIdx.x < k_rows) {
        float total = 0.0f;
#pragma unroll
        for (int p = 0; p < k_cluster; ++p) total += cluster.map_shared_rank(l_local, p)[threadIdx.x];
        l_split[threadIdx.x] = total;
    }
    const int pitch = tokens + 8;
    const int per_round = min(k_cluster, int(k_region / peer_bytes(tokens)));
    const int pvecs = tokens / 8;  // 16-byte vectors a row of P
    float acc[4][4] = {};
    for (int p0 = 0; p0 < k_cluster; p0 += per_round) {
        const int n = min(per_round, k_cluster - p0);
        for (int i = threadIdx.x; i < n * tokens * 8; i += k_threads) {
            const int pp = i / (tokens * 8), r = i / 8 % tokens, c = i % 8;
            const int token = min(split_t0 + (p0 + pp) * tokens + r, context - 1);  // P is 0 there
            bf16* vb = reinterpret_cast<bf16*>(base + pp * peer_bytes(tokens)) + k_rows * pitch;
            copy_async16(vb + r * k_v_pitch + c * 8,
                         cache + std::uint64_t(token) * k_dim + rank * k_dims + c * 8);
        }
        asm volatile("cp.async.commit_group;");
        const int copies = n * k_rows * pvecs;
        for (int i0 = threadIdx.x; i0 < copies; i0 += k_threads * k_copy_batch) {
            uint4 v[k_copy_batch];
#pragma unroll
            for (int u = 0; u < k_copy_batch; ++u) {
                const int i = i0 + u * k_threads;
                if (i < copies) {
                    const int pp = i / (k_rows * pvecs), r = i / pvecs % k_rows, c = i % pvecs;
                    v[u] = *reinterpret_cast<const uint4*>(cluster.map_shared_rank(ps, p0 + pp) +
                                                           r * k_p_pitch + c * 8);
                }
            }
#pragma unroll
            for (int u = 0; u < k_copy_batch; ++u) {
                const int i = i0 + u * k_threads;
                if (i < copies) {
                    const int pp = i / (k_rows * pvecs), r = i / pvecs % k_rows, c = i % pvecs;
                    *reinterpret_cast<uint4*>(reinterpret_cast<bf16*>(base + pp * peer_bytes(tokens)) +
                                              r * pitch + c * 8) = v[u];
                }
            }
        }
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        __syncthreads();
        for (int pp = 0; pp < n; ++pp) {
            const bf16* pb = reinterpret_cast<const bf16*>(base + pp * peer_bytes(tokens));
            const bf16* vb = pb + k_rows * pitch;
            const unsigned p_base = smem_address(pb + (mt * 16 + (lane & 15)) * pitch + 8 * (lane >> 4));
            const unsigned v_base = smem_address(vb + ((lane & 7) + 8 * ((lane >> 3) & 1)) * k_v_pitch +
                                                 half * 32 + 8 * (lane >> 4));
            for (int kk = 0; kk < tokens / 16; ++kk) {
                unsigned a[4], b0[4], b1[4];
                sg::ldmatrix_x4(p_base + kk * 32, a);
                ldmatrix_x4_trans(v_base + kk * 16 * k_v_pitch * 2, b0);
                ldmatrix_x4_trans(v_base + kk * 16 * k_v_pitch * 2 + 32, b1);
                sg::mma_bf16(acc[0], a, b0[0], b0[1]);
                sg::mma_bf16(acc[1], a, b0[2], b0[3]);
                sg::mma_bf16(acc[2], a, b1[0], b1[1]);
                sg::mma_bf16(acc[3], a, b1[2], b1[3]);
            }
        }
        __syncthreads();  // the region is refilled by the next round
    }
    cluster.sync();  // no block leaves while another may still read its P or sums

    // The split's rows: unnormalised O and (M, L); or, with one split, the output.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int r = mt * 16 + g + 8 * h, row = row0 + r;
        if (row >= rows) continue;
        const float inv = l_split[r] > 0.0f ? 1.0f / l_split[r] : 0.0f;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
            const int dim = rank * k_dims + half * 32 + nt * 8 + 2 * t;
            if (splits == 1)
                *reinterpret_cast<__nv_bfloat162*>(out + std::uint64_t(row) * k_vdim + dim) =
                    __floats2bfloat162_rn(acc[nt][2 * h] * inv, acc[nt][2 * h + 1] * inv);
            else
                *reinterpret_cast<float2*>(o_part + (std::uint64_t(split) * rows + row) * k_vdim + dim) =
                    make_float2(acc[nt][2 * h], acc[nt][2 * h + 1]);
        }
    }
    if (splits > 1 && rank == 0 && threadIdx.x < k_rows && row0 + int(threadIdx.x) < rows)
        *reinterpret_cast<float2*>(ml_part + (std::uint64_t(split) * rows + row0 + threadIdx.x) * 2) =
            make_float2(m_split[threadIdx.x], l_split[threadIdx.x]);
}

cudaLaunchConfig_t cluster_config(dim3 grid, cudaStream_t s, cudaLaunchAttribute (&attrs)[2], bool pdl) {
    return cluster_launch(grid, k_threads, k_smem, k_cluster, s, attrs, pdl);
}

/// Clusters of the kernel that run at once on the current device (0 where the query fails).
int clusters_at_once() {
    static const int n = [] {
        if (mla_cluster_setup() != cudaSuccess) return 0;
        cudaLaunchAttribute attrs[2];
        const cudaLaunchConfig_t config = cluster_config(dim3(k_cluster, 1, 1), nullptr, attrs, false);
        int clusters = 0;
        if (cudaOccupancyMaxActiveClusters(&clusters, mla_cluster_kernel, &config) != cudaSuccess) {
            (void)cudaGetLastError();
            return 0;
        }
        return clusters;
    }();
    return n;
}

/// Tokens a block for `splits` clusters over `context`: whole tiles.
int block_tokens(int context, int splits) {
    const int per_split = (context + splits - 1) / splits;
    return ((per_split + k_cluster - 1) / k_cluster + k_tile - 1) / k_tile * k_tile;
}

}  // namespace

cudaError_t mla_cluster_setup() {
    return cudaFuncSetAttribute(mla_cluster_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(k_smem));
}

int mla_cluster_splits(int rows, int context, int sms) {
    const int row_blocks = (rows + k_rows - 1) / k_rows;
    int at_once = clusters_at_once();
    if (at_once < 1) at_once = std::max(1, sms / (2 * k_cluster));
    int splits = std::max(1, at_once / row_blocks);
    splits = std::min(splits, (context + k_cluster * k_tile - 1) / (k_cluster * k_tile));
    splits = std::max(splits, (context + k_cluster * k_max_tokens - 1) / (k_cluster * k_max_tokens));
    return std::min(splits, k_max_splits);
}

cudaError_t mla_cluster_decode(const bf16* q, const bf16* cache, bf16* out, int rows, int context, int splits,
                               float* workspace, cudaStream_t s) {
    if (rows < 1 || context < 1 || splits < 1 || splits > k_max_splits) return cudaErrorInvalidValue;
    const int tokens = block_tokens(context, splits);
    if (tokens > k_max_tokens) return cudaErrorInvalidValue;  // too few splits for the context
    const int used = (context + k_cluster * tokens - 1) / (k_cluster * tokens);
    float* o_part = workspace;
    float* ml_part = workspace + std::size_t(used) * rows * k_vdim;
    cudaLaunchAttribute attrs[2];
    const cudaLaunchConfig_t config =
        cluster_config(dim3(unsigned(used * k_cluster), unsigned((rows + k_rows - 1) / k_rows), 1), s, attrs,
                       skinny::pdl_enabled());
    const float scale_log2 = 1.4426950408889634f / std::sqrt(float(k_dim));
    if (cudaError_t e = cudaLaunchKernelEx(&config, mla_cluster_kernel, q, cache, rows, context, tokens,
                                           scale_log2, o_part, ml_part, out);
        e != cudaSuccess)
        return e;
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    if (used == 1) return cudaSuccess;
    return mla_combine(o_part, ml_part, rows, used, out, s);
}

}  // namespace tpverify::cuda
