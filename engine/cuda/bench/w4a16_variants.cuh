#pragma once
// The W4A16 kernel variants scripts/device-kernel-bench.sh timed on 2026-12-03 (tests/fixtures/
// tpverify-kernels/bench-2026-12-03.txt) before engine/cuda/stream_gemm.cuh took the best of them:
// WPT warps per 16-column tile splitting k inside a block, U chunks of 64 k in flight per warp,
// x staged whole in shared memory. Same layout as stream_gemm.cuh's INT4 (its repack makes it).
#include "engine/cuda/stream_gemm.cuh"

namespace tpverify::cuda::w4 {

using sg::chunk_mma;
using sg::ldmatrix_x4;
using sg::load_stream128;
using sg::mma_bf16;
constexpr int k_threads = sg::k_threads;
constexpr int k_warps = sg::k_warps;
constexpr int k_chunk = sg::k_chunk;
constexpr int k_tile = sg::k_tile;
constexpr int k_pad = sg::k_pad;

struct Batch {
    const void* w[sg::k_max_batch];
    const bf16* x[sg::k_max_batch];
    bf16* y[sg::k_max_batch];
    int count = 0;
};

__host__ __device__ constexpr std::uint64_t total_bytes(int n, int k) {
    return sg::matrix_bytes(sg::Format::int4, n, k);
}

template <int WPT, int U>
__global__ void __launch_bounds__(k_threads)
    w4a16_kernel(Batch batch, int n, int k, int ldx, int m, int accumulate) {
    extern __shared__ __align__(16) unsigned char dynamic_smem[];
    __shared__ float4 partial[k_warps][32];
    bf16* xs = reinterpret_cast<bf16*>(dynamic_smem);
    const int e = blockIdx.y;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    constexpr int tiles_per_block = k_warps / WPT;
    const int tile = blockIdx.x * tiles_per_block + warp / WPT;
    const int split = warp % WPT;
    const int chunks = k / k_chunk;
    const int stride = k + k_pad;
    const bool active = tile * k_tile < n;
    const sg::Stream<sg::Format::int4> stream(batch.w[e], n, k, active ? tile : 0, 0, lane);
    sg::Fragments<sg::Format::int4> wv[U];
    int c0 = split * U;
#pragma unroll
    for (int u = 0; u < U; ++u)
        if (active && c0 + u < chunks) wv[u] = stream.load(c0 + u);
    const bf16* x = batch.x[e];
    const int vecs = k / 8;
    for (int i = threadIdx.x; i < m * vecs; i += k_threads) {
        const int r = i / vecs, v = i - r * vecs;
        *reinterpret_cast<uint4*>(xs + r * stride + v * 8) =
            *reinterpret_cast<const uint4*>(x + std::uint64_t(r) * ldx + v * 8);
    }
    __syncthreads();
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (active) {
        const int row = (lane & 7) < m ? (lane & 7) : 0;
        const unsigned x_address =
            static_cast<unsigned>(__cvta_generic_to_shared(xs + row * stride + 8 * (lane >> 3)));
        for (; c0 < chunks; c0 += WPT * U) {
            sg::Fragments<sg::Format::int4> cw[U];
#pragma unroll
            for (int u = 0; u < U; ++u) cw[u] = wv[u];
            const int next = c0 + WPT * U;
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (next + u < chunks) wv[u] = stream.load(next + u);
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (c0 + u < chunks) chunk_mma(cw[u], x_address + unsigned(c0 + u) * k_chunk * 2, acc);
        }
    }
    if (WPT > 1) {
        partial[warp][lane] = make_float4(acc[0], acc[1], acc[2], acc[3]);
        __syncthreads();
        if (split == 0)
#pragma unroll
            for (int s = 1; s < WPT; ++s) {
                const float4 p = partial[warp + s][lane];
                acc[0] += p.x, acc[1] += p.y, acc[2] += p.z, acc[3] += p.w;
            }
    }
    if (!active || split != 0) return;
    const int g = lane >> 2, t = lane & 3;
    bf16* y = batch.y[e];
    const int col = tile * k_tile + g;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int token = 2 * t + (i & 1);
        const int c = col + (i >> 1) * 8;
        if (token >= m) continue;
        bf16* out = y + std::uint64_t(token) * n + c;
        *out = __float2bfloat16(acc[i] + (accumulate ? __bfloat162float(*out) : 0.0f));
    }
}

/// The checkpoint's layout into the kernel's (stream_gemm.cu's repack, one matrix).
inline cudaError_t repack(const unsigned* words, const bf16* scales, unsigned char* out, int n, int k,
                          cudaStream_t s) {
    return sg::repack_int4(words, scales, out, n, k, s);
}

}  // namespace tpverify::cuda::w4
