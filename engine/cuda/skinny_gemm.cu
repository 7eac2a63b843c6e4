// Skinny bf16 GEMMs on row-major weights (engine/cuda/skinny_gemm.cuh): the kernel and the
// launcher, which picks how many warps and cluster blocks split k.
#include <cooperative_groups.h>

#include <algorithm>

#include "engine/cuda/skinny_gemm.cuh"
#include "engine/knobs.hpp"

namespace tpverify::cuda::skinny {
namespace {

constexpr int k_warps = k_threads / 32;
constexpr int k_unroll = 4;  ///< iterations (32 k, 1 KiB of W per warp) in flight per warp

__device__ __forceinline__ uint4 load_weights(const bf16* p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

__device__ __forceinline__ void mma(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                    unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

struct DevPart {
    const bf16* w;
    const bf16* x;
    bf16* y;
    int ldx, n, k, silu, tile_end;  ///< tile_end: this part's tiles end there in the grid's order
};
struct DevParts {
    DevPart p[k_max_parts];
    int count;
};

// Grid (ceil(tiles / tiles_per_block), cluster); a cluster of gridDim.y blocks shares each
// block's tiles, splitting k with the k_split = k_warps / tiles_per_block warps of each block.
// The tiles of the parts follow one another; a warp's tile says which part it computes.
template <bool kSilu>
__global__ void __launch_bounds__(k_threads, 2)
    skinny_kernel(DevParts parts, int m, int accumulate, int tiles_per_block, int prefetch) {
    __shared__ float4 part[k_warps][32];
    pdl_trigger();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const int k_split = k_warps / tiles_per_block;
    const int grid_tile = blockIdx.x * tiles_per_block + warp / k_split;
    // The warp's part (selects, not an indexed copy of the parameters).
    const int j =
        grid_tile < parts.p[0].tile_end ? 0 : (parts.count > 2 && grid_tile >= parts.p[1].tile_end ? 2 : 1);
#define TPV_PART(f) (j == 0 ? parts.p[0].f : (j == 1 ? parts.p[1].f : parts.p[2].f))
    const bf16* w = TPV_PART(w);
    const bf16* x = TPV_PART(x);
    bf16* y = TPV_PART(y);
    const int ldx = TPV_PART(ldx), n = TPV_PART(n), k = TPV_PART(k), silu = TPV_PART(silu);
#undef TPV_PART
    const int tile = grid_tile - (j == 0 ? 0 : (j == 1 ? parts.p[0].tile_end : parts.p[1].tile_end));
    const int splits = k_split * int(gridDim.y);
    const int split = int(blockIdx.y) * k_split + warp % k_split;
    const int iterations = k / 32;
    const int first = int((long long)iterations * split / splits);
    const int last = int((long long)iterations * (split + 1) / splits);
    const bool active = grid_tile < parts.p[parts.count - 1].tile_end;
    const bf16* wa = w + (std::uint64_t(active ? tile : 0) * 16 + g) * std::uint64_t(k) + 8 * t;
    const bf16* wb = wa + 8 * std::uint64_t(k);
    uint4 cur_a[k_unroll], cur_b[k_unroll];
    // The weights first: no kernel writes them, so they need not wait for the previous one.
#pragma unroll
    for (int u = 0; u < k_unroll; ++u)
        if (active && first + u < last) {
            cur_a[u] = load_weights(wa + 32 * (first + u));
            cur_b[u] = load_weights(wb + 32 * (first + u));
        }
    // The next `prefetch` iterations into L2 (rows g and g + 8: lanes t == 0 ask for the tile).
    if (active && t == 0) {
        const int from = first + k_unroll, to = min(last, from + prefetch);
        if (to > from) {
            prefetch_l2(wa + 32 * from, unsigned(to - from) * 64);
            prefetch_l2(wb + 32 * from, unsigned(to - from) * 64);
        }
    }
    pdl_wait();
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (active) {
        const bf16* xr = x + std::uint64_t(min(g, m - 1)) * ldx + 8 * t;
        for (int i = first; i < last; i += k_unroll) {
            uint4 xs[k_unroll], next_a[k_unroll], next_b[k_unroll];
            if constexpr (kSilu) {
                // The next weights first: the SiLU of x waits for x's loads, and the weights'
                // loads (volatile asm) would otherwise queue behind it.
#pragma unroll
                for (int u = 0; u < k_unroll; ++u)
                    if (i + k_unroll + u < last) {
                        next_a[u] = load_weights(wa + 32 * (i + k_unroll + u));
                        next_b[u] = load_weights(wb + 32 * (i + k_unroll + u));
                    }
#pragma unroll
                for (int u = 0; u < k_unroll; ++u)
                    if (i + u < last)
                        xs[u] = silu ? silu_load(xr + 32 * (i + u), k)
                                     : *reinterpret_cast<const uint4*>(xr + 32 * (i + u));
            } else {
#pragma unroll
                for (int u = 0; u < k_unroll; ++u)
                    if (i + u < last) xs[u] = *reinterpret_cast<const uint4*>(xr + 32 * (i + u));
#pragma unroll
                for (int u = 0; u < k_unroll; ++u)
                    if (i + k_unroll + u < last) {
                        next_a[u] = load_weights(wa + 32 * (i + k_unroll + u));
                        next_b[u] = load_weights(wb + 32 * (i + k_unroll + u));
                    }
            }
#pragma unroll
            for (int u = 0; u < k_unroll; ++u)
                if (i + u < last) {
                    // k16 step 0: k = 8t + {0,1 | 2,3}; step 1: 8t + {4,5 | 6,7} (A and B alike).
                    mma(acc, cur_a[u].x, cur_b[u].x, cur_a[u].y, cur_b[u].y, xs[u].x, xs[u].y);
                    mma(acc, cur_a[u].z, cur_b[u].z, cur_a[u].w, cur_b[u].w, xs[u].z, xs[u].w);
                }
#pragma unroll
            for (int u = 0; u < k_unroll; ++u) cur_a[u] = next_a[u], cur_b[u] = next_b[u];
        }
    }
    // acc: (column g, tokens 2t, 2t+1), (column g + 8, tokens 2t, 2t+1) of the tile.
    const bool reduce = splits > 1;
    if (reduce) {
        part[warp][lane] = make_float4(acc[0], acc[1], acc[2], acc[3]);
        __syncthreads();
        if (warp % k_split == 0) {
            float4 s = part[warp][lane];
            for (int j = 1; j < k_split; ++j) {
                const float4 o = part[warp + j][lane];
                s.x += o.x, s.y += o.y, s.z += o.z, s.w += o.w;
            }
            part[warp][lane] = s;
        }
    }
    bool writer = warp % k_split == 0 && active;
    if (gridDim.y > 1) {
        namespace cg = cooperative_groups;
        cg::cluster_group cluster = cg::this_cluster();
        cluster.sync();  // every block's partial sums are in its shared memory
        const unsigned rank = cluster.block_rank();
        if (rank == 0 && writer) {
            float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            for (unsigned r = 0; r < cluster.num_blocks(); ++r) {
                const float4 o = cluster.map_shared_rank(&part[warp][0], r)[lane];
                s.x += o.x, s.y += o.y, s.z += o.z, s.w += o.w;
            }
            acc[0] = s.x, acc[1] = s.y, acc[2] = s.z, acc[3] = s.w;
        }
        cluster.sync();  // no block leaves while its shared memory may still be read
        writer = writer && rank == 0;
    } else if (reduce && writer) {
        const float4 s = part[warp][lane];
        acc[0] = s.x, acc[1] = s.y, acc[2] = s.z, acc[3] = s.w;
    }
    if (!writer) return;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int token = 2 * t + (i & 1);
        if (token >= m) continue;
        bf16* out = y + std::uint64_t(token) * n + tile * 16 + g + (i >> 1) * 8;
        *out = __float2bfloat16(acc[i] + (accumulate ? __bfloat162float(*out) : 0.0f));
    }
}

int g_sms = 0;

// Warps per SM the k split aims at: 8 (TPVERIFY_SKINNY_WARPS_PER_SM, for a grouped launch
// TPVERIFY_SKINNY_GROUP_WARPS_PER_SM; for comparing on the GPU).
int warps_per_sm(bool group) {
    static const int single = [] {
        const int n = env_int("TPVERIFY_SKINNY_WARPS_PER_SM", 8);
        return n > 0 ? n : 8;
    }();
    static const int grouped = [] {
        const int n = env_int("TPVERIFY_SKINNY_GROUP_WARPS_PER_SM", single);
        return n > 0 ? n : single;
    }();
    return group ? grouped : single;
}

}  // namespace

int prefetch_kib() {
    // Unset: k_prefetch_default_kib (docs/benchmarks-gpu.md, 2026-12-05).
    constexpr int k_prefetch_default_kib = 0;
    static const int kib = env_int("TPVERIFY_PREFETCH_KB", k_prefetch_default_kib);
    return kib;
}

bool pdl_enabled() {
    static const bool on = !env_is("TPVERIFY_PDL", "0");
    return on;
}

bool fits(int m, int n, int k) {
    return m >= 1 && m <= k_max_rows && n > 0 && k > 0 && n % 16 == 0 && k % 32 == 0;
}

cudaError_t run(const bf16* w, const bf16* x, int ldx, bf16* y, int m, int n, int k, bool accumulate,
                cudaStream_t stream) {
    Part p;
    p.w = w, p.x = x, p.y = y, p.ldx = ldx, p.n = n, p.k = k;
    return run_group(&p, 1, m, accumulate, stream);
}

cudaError_t run_group(const Part* parts, int count, int m, bool accumulate, cudaStream_t stream) {
    if (count < 1 || count > k_max_parts) return cudaErrorInvalidValue;
    DevParts dev{};
    dev.count = count;
    int tiles = 0, iterations = 1 << 30;
    for (int i = 0; i < count; ++i) {
        const Part& p = parts[i];
        const std::uintptr_t pointers =
            reinterpret_cast<std::uintptr_t>(p.w) | reinterpret_cast<std::uintptr_t>(p.x);
        if (!fits(m, p.n, p.k) || p.ldx % 8 != 0 || pointers % 16 != 0 || (p.silu && p.ldx < 2 * p.k))
            return cudaErrorInvalidValue;
        tiles += p.n / 16;
        iterations = std::min(iterations, p.k / 32);
        dev.p[i] = DevPart{p.w, p.x, p.y, p.ldx, p.n, p.k, p.silu ? 1 : 0, tiles};
    }
    if (g_sms == 0) {
        int device = 0;
        if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
        if (cudaError_t e = cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, device);
            e != cudaSuccess)
            return e;
    }
    // Split k in powers of two until the tiles give 8 warps per SM, while each split keeps at
    // least 3 iterations of 32 k (of the part with the fewest). (Splitting further, to 8
    // iterations per warp loaded at once, measured slower on the H200: o_proj 48 us instead of 33.)
    int splits = 1;
    const long long target = (long long)warps_per_sm(count > 1) * g_sms;
    while (splits < 64 && (long long)tiles * splits < target && iterations / (2 * splits) >= 3) splits *= 2;
    const int k_split = std::min(splits, k_warps);
    const int cluster = splits / k_split;
    const int per_block = k_warps / k_split;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(unsigned((tiles + per_block - 1) / per_block), unsigned(cluster), 1);
    config.blockDim = dim3(k_threads, 1, 1);
    config.dynamicSmemBytes = 0;
    config.stream = stream;
    cudaLaunchAttribute attributes[2];
    int n_attributes = 0;
    if (pdl_enabled()) {
        attributes[n_attributes].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attributes[n_attributes].val.programmaticStreamSerializationAllowed = 1;
        ++n_attributes;
    }
    if (cluster > 1) {
        attributes[n_attributes].id = cudaLaunchAttributeClusterDimension;
        attributes[n_attributes].val.clusterDim.x = 1;
        attributes[n_attributes].val.clusterDim.y = unsigned(cluster);
        attributes[n_attributes].val.clusterDim.z = 1;
        ++n_attributes;
    }
    config.attrs = attributes;
    config.numAttrs = unsigned(n_attributes);
    bool silu = false;
    for (int i = 0; i < count; ++i) silu = silu || parts[i].silu;
    // A kernel of its own for the SiLU load, so that the plain one keeps its registers.
    const int prefetch = prefetch_kib();  // an iteration is 1 KiB of a warp's tile
    if (silu)
        return cudaLaunchKernelEx(&config, skinny_kernel<true>, dev, m, accumulate ? 1 : 0, per_block,
                                  prefetch);
    return cudaLaunchKernelEx(&config, skinny_kernel<false>, dev, m, accumulate ? 1 : 0, per_block, prefetch);
}

}  // namespace tpverify::cuda::skinny
