// Kernel microbenchmark for the H200 (scripts/device-kernel-bench.sh): the W4A16 and bf16 GEMMs of
// the Kimi-K2.5 pass at their real shapes, each variant checked against a host reference and
// timed in a CUDA graph over weights rotated well past the L2, next to cuBLAS; the read and copy
// bandwidth ceilings; the cost of a tiny kernel in a graph (with and without programmatic
// dependent launch); the current attention path. Not part of tpverify: a tool to choose kernels.
// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I. kernel_bench.cu
//        engine/cuda/stream_gemm.cu engine/cuda/skinny_gemm.cu -lcublas
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "engine/cuda/bench/w4a16_variants.cuh"

using bf16 = __nv_bfloat16;
namespace w4 = tpverify::cuda::w4;

#define CK(call)                                                                                       \
    do {                                                                                               \
        cudaError_t e_ = (call);                                                                       \
        if (e_ != cudaSuccess) {                                                                       \
            std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            std::exit(1);                                                                              \
        }                                                                                              \
    } while (0)
#define CB(call)                                                                        \
    do {                                                                                \
        cublasStatus_t s_ = (call);                                                     \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                              \
            std::fprintf(stderr, "%s:%d %s: %d\n", __FILE__, __LINE__, #call, int(s_)); \
            std::exit(1);                                                               \
        }                                                                               \
    } while (0)

static double g_copy_gbps = 0, g_read_gbps = 0;
static FILE* g_table = nullptr;

static void row(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void row(const char* fmt, ...) {
    va_list a, b;
    va_start(a, fmt);
    va_copy(b, a);
    std::vprintf(fmt, a);
    if (g_table) std::vfprintf(g_table, fmt, b);
    va_end(a);
    va_end(b);
    std::fflush(stdout);
}

// ---------------------------------------------------------------------------------------------
// Fill and bandwidth kernels.
__global__ void fill_bytes(unsigned* p, std::uint64_t words, std::uint64_t seed) {
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < words;
         i += std::uint64_t(gridDim.x) * blockDim.x) {
        std::uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
        x ^= x >> 31;
        x *= 0xbf58476d1ce4e5b9ull;
        x ^= x >> 29;
        p[i] = unsigned(x);
    }
}
// Small bf16 values in [-1/64, 1/64] (weights of the bf16 GEMMs).
__global__ void fill_bf16(bf16* p, std::uint64_t n, std::uint64_t seed, float scale) {
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::uint64_t(gridDim.x) * blockDim.x) {
        std::uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
        x ^= x >> 31;
        x *= 0xbf58476d1ce4e5b9ull;
        x ^= x >> 29;
        p[i] = __float2bfloat16((float(x >> 40) / 16777216.0f * 2.0f - 1.0f) * scale);
    }
}
__global__ void read_kernel(const uint4* p, std::uint64_t vecs, unsigned* sink) {
    unsigned acc = 0;
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < vecs;
         i += std::uint64_t(gridDim.x) * blockDim.x) {
        uint4 v = w4::load_stream128(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x12345678u) *sink = acc;
}
__global__ void empty_kernel(int* p) {
    if (p && threadIdx.x == 9999) *p = 1;
}
__global__ void empty_pdl_kernel(int* p) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;");
    if (p && threadIdx.x == 9999) *p = 1;
}
// A tiny elementwise kernel like the ones of item 8: T rows x 7168, one block.
__global__ void tiny_kernel(const bf16* x, bf16* y, int elems) {
    for (int i = threadIdx.x * 8; i < elems; i += blockDim.x * 8) {
        uint4 v = *reinterpret_cast<const uint4*>(x + i);
        *reinterpret_cast<uint4*>(y + i) = v;
    }
}
__global__ void tiny_pdl_kernel(const bf16* x, bf16* y, int elems) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    for (int i = threadIdx.x * 8; i < elems; i += blockDim.x * 8) {
        uint4 v = *reinterpret_cast<const uint4*>(x + i);
        *reinterpret_cast<uint4*>(y + i) = v;
    }
    asm volatile("griddepcontrol.launch_dependents;");
}

// ---------------------------------------------------------------------------------------------
// The W4A16 kernel tpverify had before (fp32 FMAs, no tensor cores), for comparison.
namespace old {
constexpr int k_threads = 256, k_tile = 1024, k_cols = k_threads / 2;
__device__ __forceinline__ float2 dequant_pair(unsigned u, int shift) {
    unsigned bits = ((u >> shift) & 0x000f000fu) | 0x43004300u;
    __nv_bfloat162 v = *reinterpret_cast<__nv_bfloat162*>(&bits);
    v = __hsub2(v, __floats2bfloat162_rn(136.0f, 136.0f));
    return __bfloat1622float2(v);
}
template <int M>
__global__ void __launch_bounds__(k_threads) kernel(w4::Batch batch, int n, int k, int ldx, int accumulate) {
    __shared__ __align__(16) float xs[M][k_tile];
    __shared__ float partial[M][k_cols];
    const int e = blockIdx.y;
    const int half = threadIdx.x / k_cols;
    const int col = blockIdx.x * k_cols + threadIdx.x % k_cols;
    const bf16* x = batch.x[e];
    const auto* packed = static_cast<const uint4*>(batch.w[e]);
    const auto* scales = reinterpret_cast<const __nv_bfloat162*>(static_cast<const char*>(batch.w[e]) +
                                                                 std::uint64_t(n) * k / 2);
    float acc[M];
    for (int m = 0; m < M; ++m) acc[m] = 0.0f;
    for (int t0 = 0; t0 < k; t0 += k_tile) {
        const int len = min(k_tile, k - t0);
        __syncthreads();
        for (int i = threadIdx.x; i < M * len; i += k_threads) {
            int m = i / len, j = i % len;
            xs[m][j] = __bfloat162float(x[std::uint64_t(m) * ldx + t0 + j]);
        }
        __syncthreads();
        if (col >= n) continue;
#pragma unroll 2
        for (int c = half; c < len / 64; c += 2) {
            const std::uint64_t chunk = std::uint64_t(t0 / 64 + c) * n + col;
            const uint4 lo = w4::load_stream128(packed + 2 * chunk);
            const uint4 hi = w4::load_stream128(packed + 2 * chunk + 1);
            const float2 s = __bfloat1622float2(scales[chunk]);
            const unsigned words[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
            for (int g = 0; g < 2; ++g) {
                float dot[M];
                for (int m = 0; m < M; ++m) dot[m] = 0.0f;
#pragma unroll
                for (int w = 0; w < 4; ++w) {
                    const unsigned u = words[4 * g + w];
                    const int base = c * 64 + g * 32 + 8 * w;
                    const float2 v0 = dequant_pair(u, 0), v1 = dequant_pair(u, 4), v2 = dequant_pair(u, 8),
                                 v3 = dequant_pair(u, 12);
#pragma unroll
                    for (int m = 0; m < M; ++m) {
                        const float4 a = *reinterpret_cast<const float4*>(&xs[m][base]);
                        const float4 b = *reinterpret_cast<const float4*>(&xs[m][base + 4]);
                        dot[m] += v0.x * a.x + v0.y * b.x + v1.x * a.y + v1.y * b.y + v2.x * a.z +
                                  v2.y * b.z + v3.x * a.w + v3.y * b.w;
                    }
                }
                for (int m = 0; m < M; ++m) acc[m] += dot[m] * (g == 0 ? s.x : s.y);
            }
        }
    }
    __syncthreads();
    if (half == 1)
        for (int m = 0; m < M; ++m) partial[m][threadIdx.x % k_cols] = acc[m];
    __syncthreads();
    if (half == 1 || col >= n) return;
    for (int m = 0; m < M; ++m) {
        bf16* out = batch.y[e] + std::uint64_t(m) * n + col;
        *out = __float2bfloat16(acc[m] + partial[m][threadIdx.x]);
    }
}
void launch(const w4::Batch& b, int m, int n, int k, int ldx, cudaStream_t s) {
    dim3 grid(unsigned((n + k_cols - 1) / k_cols), unsigned(b.count));
    switch (m) {
        case 1:
            kernel<1><<<grid, k_threads, 0, s>>>(b, n, k, ldx, 0);
            break;
        case 2:
            kernel<2><<<grid, k_threads, 0, s>>>(b, n, k, ldx, 0);
            break;
        case 3:
            kernel<3><<<grid, k_threads, 0, s>>>(b, n, k, ldx, 0);
            break;
        default:
            kernel<4><<<grid, k_threads, 0, s>>>(b, n, k, ldx, 0);
            break;
    }
}
}  // namespace old

// ---------------------------------------------------------------------------------------------
// bf16 weights on tensor cores, laid out per (16-column tile, 64-k chunk) as 4 steps x 32 lanes
// x 16 bytes (the A fragment of each k16 step).
template <int WPT, int U>
__global__ void __launch_bounds__(w4::k_threads) bf16_kernel(w4::Batch batch, int n, int k, int ldx, int m) {
    extern __shared__ __align__(16) unsigned char dynamic_smem[];
    __shared__ float4 partial[w4::k_warps][32];
    bf16* xs = reinterpret_cast<bf16*>(dynamic_smem);
    const int e = blockIdx.y;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    constexpr int tiles_per_block = w4::k_warps / WPT;
    const int tile = blockIdx.x * tiles_per_block + warp / WPT;
    const int split = warp % WPT;
    const int chunks = k / 64;
    const int stride = k + w4::k_pad;
    const bool active = tile * 16 < n;
    const uint4* wp = static_cast<const uint4*>(batch.w[e]) + std::uint64_t(tile) * chunks * 128 + lane;
    uint4 wv[U][4];
    int c0 = split * U;
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
        for (int s = 0; s < 4; ++s)
            if (active && c0 + u < chunks)
                wv[u][s] = w4::load_stream128(wp + std::uint64_t(c0 + u) * 128 + 32 * s);
    const bf16* x = batch.x[e];
    const int vecs = k / 8;
    for (int i = threadIdx.x; i < m * vecs; i += w4::k_threads) {
        const int r = i / vecs, v = i - r * vecs;
        *reinterpret_cast<uint4*>(xs + r * stride + v * 8) =
            *reinterpret_cast<const uint4*>(x + std::uint64_t(r) * ldx + v * 8);
    }
    __syncthreads();
    float acc[4] = {0, 0, 0, 0};
    if (active) {
        const int row = (lane & 7) < m ? (lane & 7) : 0;
        const unsigned xa = unsigned(__cvta_generic_to_shared(xs + row * stride + 8 * (lane >> 3)));
        for (; c0 < chunks; c0 += WPT * U) {
            uint4 cw[U][4];
#pragma unroll
            for (int u = 0; u < U; ++u)
#pragma unroll
                for (int s = 0; s < 4; ++s) cw[u][s] = wv[u][s];
            const int next = c0 + WPT * U;
#pragma unroll
            for (int u = 0; u < U; ++u)
#pragma unroll
                for (int s = 0; s < 4; ++s)
                    if (next + u < chunks)
                        wv[u][s] = w4::load_stream128(wp + std::uint64_t(next + u) * 128 + 32 * s);
#pragma unroll
            for (int u = 0; u < U; ++u) {
                if (c0 + u >= chunks) continue;
                unsigned b0[4], b1[4];
                const unsigned addr = xa + unsigned(c0 + u) * 128;
                w4::ldmatrix_x4(addr, b0);
                w4::ldmatrix_x4(addr + 64, b1);
                const unsigned a0[4] = {cw[u][0].x, cw[u][0].y, cw[u][0].z, cw[u][0].w};
                const unsigned a1[4] = {cw[u][1].x, cw[u][1].y, cw[u][1].z, cw[u][1].w};
                const unsigned a2[4] = {cw[u][2].x, cw[u][2].y, cw[u][2].z, cw[u][2].w};
                const unsigned a3[4] = {cw[u][3].x, cw[u][3].y, cw[u][3].z, cw[u][3].w};
                w4::mma_bf16(acc, a0, b0[0], b0[1]);
                w4::mma_bf16(acc, a1, b0[2], b0[3]);
                w4::mma_bf16(acc, a2, b1[0], b1[1]);
                w4::mma_bf16(acc, a3, b1[2], b1[3]);
            }
        }
    }
    if (WPT > 1) {
        partial[warp][lane] = make_float4(acc[0], acc[1], acc[2], acc[3]);
        __syncthreads();
        if (split == 0)
            for (int s = 1; s < WPT; ++s) {
                const float4 p = partial[warp + s][lane];
                acc[0] += p.x, acc[1] += p.y, acc[2] += p.z, acc[3] += p.w;
            }
    }
    if (!active || split != 0) return;
    const int g = lane >> 2, t = lane & 3;
    for (int i = 0; i < 4; ++i) {
        const int token = 2 * t + (i & 1);
        if (token >= m) continue;
        batch.y[e][std::uint64_t(token) * n + tile * 16 + g + (i >> 1) * 8] = __float2bfloat16(acc[i]);
    }
}

// ---------------------------------------------------------------------------------------------
struct Timer {
    cudaStream_t s;
    cudaEvent_t a, b;
    explicit Timer(cudaStream_t st) : s(st) {
        CK(cudaEventCreate(&a));
        CK(cudaEventCreate(&b));
    }
    // Captures `launches` calls of `work(i)` in one graph, replays it `reps` times; median µs per call.
    double per_call(int launches, const std::function<void(int)>& work, int reps = 7) {
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < launches; ++i) work(i);
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        CK(cudaGraphLaunch(ge, s));
        CK(cudaStreamSynchronize(s));
        std::vector<double> t;
        for (int r = 0; r < reps; ++r) {
            CK(cudaEventRecord(a, s));
            CK(cudaGraphLaunch(ge, s));
            CK(cudaEventRecord(b, s));
            CK(cudaEventSynchronize(b));
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, a, b));
            t.push_back(ms * 1000.0 / launches);
        }
        CK(cudaGetLastError());
        cudaGraphExecDestroy(ge);
        cudaGraphDestroy(g);
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
    }
};

static int g_sms = 132, g_max_smem = 0;
static unsigned char* g_arena = nullptr;
static std::uint64_t g_arena_bytes = 0;
static bf16 *g_x = nullptr, *g_y = nullptr;

template <int WPT, int U>
void set_w4_smem() {
    CK(cudaFuncSetAttribute(w4::w4a16_kernel<WPT, U>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            g_max_smem - int(sizeof(float4) * w4::k_warps * 32)));
    CK(cudaFuncSetAttribute(bf16_kernel<WPT, U>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            g_max_smem - int(sizeof(float4) * w4::k_warps * 32)));
}

using W4Launch = std::function<void(const w4::Batch&, int m, int n, int k, int ldx, cudaStream_t)>;

template <int WPT, int U>
W4Launch w4_variant() {
    return [](const w4::Batch& b, int m, int n, int k, int ldx, cudaStream_t s) {
        const int per_block = 16 * (w4::k_warps / WPT);
        dim3 grid(unsigned((n + per_block - 1) / per_block), unsigned(b.count));
        const std::size_t smem = std::size_t(m) * (k + w4::k_pad) * 2;
        w4::w4a16_kernel<WPT, U><<<grid, w4::k_threads, smem, s>>>(b, n, k, ldx, m, 0);
    };
}
template <int WPT, int U>
W4Launch bf16_variant() {
    return [](const w4::Batch& b, int m, int n, int k, int ldx, cudaStream_t s) {
        const int per_block = 16 * (w4::k_warps / WPT);
        dim3 grid(unsigned((n + per_block - 1) / per_block), unsigned(b.count));
        const std::size_t smem = std::size_t(m) * (k + w4::k_pad) * 2;
        bf16_kernel<WPT, U><<<grid, w4::k_threads, smem, s>>>(b, n, k, ldx, m);
    };
}

float bf(bf16 v) {
    return __bfloat162float(v);
}

// ---------------------------------------------------------------------------------------------
// Correctness of the W4A16 kernel (and the repack) at a real shape, against a double reference.
double check_w4(const W4Launch& launch, int m, int n, int k, int ldx, int count, cudaStream_t s) {
    std::mt19937_64 rng(std::uint64_t(n) * 131 + k * 7 + m + count);
    std::vector<unsigned> ct(std::size_t(n) * k / 8 * count);
    for (auto& w : ct) w = unsigned(rng());
    std::vector<bf16> sc(std::size_t(n) * (k / 32) * count);
    for (auto& v : sc) v = __float2bfloat16(float(rng() % 1000) / 64000.0f + 0.001f);
    std::vector<bf16> x(std::size_t(m) * ldx * count);
    for (auto& v : x) v = __float2bfloat16(float(int(rng() % 2001) - 1000) / 1000.0f);
    unsigned* dct;
    bf16 *dsc, *dx, *dy;
    unsigned char* dw;
    const std::uint64_t tb = w4::total_bytes(n, k);
    CK(cudaMalloc(&dct, ct.size() * 4));
    CK(cudaMalloc(&dsc, sc.size() * 2));
    CK(cudaMalloc(&dx, x.size() * 2));
    CK(cudaMalloc(&dy, std::size_t(m) * n * count * 2));
    CK(cudaMalloc(&dw, tb * count));
    CK(cudaMemcpy(dct, ct.data(), ct.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dsc, sc.data(), sc.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemset(dy, 0xff, std::size_t(m) * n * count * 2));  // poison: NaN
    CK(cudaDeviceSynchronize());  // s is non-blocking: the legacy-stream copies are not ordered with it
    w4::Batch b;
    b.count = count;
    for (int e = 0; e < count; ++e) {
        CK(w4::repack(dct + std::size_t(n) * k / 8 * e, dsc + std::size_t(n) * (k / 32) * e, dw + tb * e, n,
                      k, s));
        b.w[e] = dw + tb * e;
        b.x[e] = dx + std::size_t(m) * ldx * e;
        b.y[e] = dy + std::size_t(m) * n * e;
    }
    launch(b, m, n, k, ldx, s);
    CK(cudaStreamSynchronize(s));
    CK(cudaGetLastError());
    std::vector<bf16> y(std::size_t(m) * n * count);
    CK(cudaMemcpy(y.data(), dy, y.size() * 2, cudaMemcpyDeviceToHost));
    double num = 0, den = 0;
    for (int e = 0; e < count; ++e)
        for (int col = 0; col < n; col += (e == 0 ? 1 : 7))
            for (int r = 0; r < m; ++r) {
                double ref = 0;
                for (int j = 0; j < k; ++j) {
                    unsigned word = ct[std::size_t(n) * k / 8 * e + std::size_t(col) * (k / 8) + j / 8];
                    int q = int((word >> (4 * (j % 8))) & 15u) - 8;
                    ref += double(q) *
                           bf(sc[std::size_t(n) * (k / 32) * e + std::size_t(col) * (k / 32) + j / 32]) *
                           bf(x[std::size_t(m) * ldx * e + std::size_t(r) * ldx + j]);
                }
                double got = bf(y[std::size_t(m) * n * e + std::size_t(r) * n + col]);
                if (std::isnan(got)) return INFINITY;
                num += (got - ref) * (got - ref);
                den += ref * ref;
            }
    cudaFree(dct);
    cudaFree(dsc);
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(dw);
    return std::sqrt(num / den);
}

// Correctness of the bf16 tensor-core kernel: weights laid out per fragment.
double check_bf16(const W4Launch& launch, int m, int n, int k, cudaStream_t s) {
    std::mt19937_64 rng(99 + n + k + m);
    std::vector<bf16> W(std::size_t(n) * k), x(std::size_t(m) * k);
    for (auto& v : W) v = __float2bfloat16(float(int(rng() % 2001) - 1000) / 64000.0f);
    for (auto& v : x) v = __float2bfloat16(float(int(rng() % 2001) - 1000) / 1000.0f);
    // [tile][chunk][step][lane][8 bf16]: reg r of lane (g, t): row g + 8 (r & 1), k 2t + 8 (r >> 1) + {0, 1}
    std::vector<bf16> packed(W.size());
    const int chunks = k / 64;
    for (int tile = 0; tile < n / 16; ++tile)
        for (int c = 0; c < chunks; ++c)
            for (int st = 0; st < 4; ++st)
                for (int lane = 0; lane < 32; ++lane)
                    for (int r = 0; r < 4; ++r)
                        for (int h = 0; h < 2; ++h) {
                            int g = lane >> 2, t = lane & 3;
                            int col = tile * 16 + g + 8 * (r & 1);
                            int kk = c * 64 + st * 16 + 2 * t + 8 * (r >> 1) + h;
                            std::size_t at =
                                ((((std::size_t(tile) * chunks + c) * 4 + st) * 32 + lane) * 8) + r * 2 + h;
                            packed[at] = W[std::size_t(col) * k + kk];
                        }
    bf16 *dw, *dx, *dy;
    CK(cudaMalloc(&dw, W.size() * 2));
    CK(cudaMalloc(&dx, x.size() * 2));
    CK(cudaMalloc(&dy, std::size_t(m) * n * 2));
    CK(cudaMemcpy(dw, packed.data(), W.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemset(dy, 0xff, std::size_t(m) * n * 2));
    CK(cudaDeviceSynchronize());  // as above: s does not wait for the legacy stream
    w4::Batch b;
    b.count = 1;
    b.w[0] = dw;
    b.x[0] = dx;
    b.y[0] = dy;
    launch(b, m, n, k, k, s);
    CK(cudaStreamSynchronize(s));
    CK(cudaGetLastError());
    std::vector<bf16> y(std::size_t(m) * n);
    CK(cudaMemcpy(y.data(), dy, y.size() * 2, cudaMemcpyDeviceToHost));
    double num = 0, den = 0;
    for (int col = 0; col < n; ++col)
        for (int r = 0; r < m; ++r) {
            double ref = 0;
            for (int j = 0; j < k; ++j)
                ref += double(bf(W[std::size_t(col) * k + j])) * bf(x[std::size_t(r) * k + j]);
            double got = bf(y[std::size_t(r) * n + col]);
            if (std::isnan(got)) return INFINITY;
            num += (got - ref) * (got - ref);
            den += ref * ref;
        }
    cudaFree(dw);
    cudaFree(dx);
    cudaFree(dy);
    return std::sqrt(num / den);
}

// ---------------------------------------------------------------------------------------------
// Timing: `count` matrices of `bytes` each per launch, rotated over the arena so consecutive
// launches read different weights (>= 4x the L2 between two reads of one byte).
double time_batched(const std::function<void(const w4::Batch&, cudaStream_t)>& launch, std::uint64_t bytes,
                    int count, int m, int ldx_elems, cudaStream_t s, Timer& timer) {
    const std::uint64_t per_launch = bytes * count;
    const std::uint64_t padded = (bytes + 255) / 256 * 256;
    const std::uint64_t sets =
        std::max<std::uint64_t>(2, std::min<std::uint64_t>(g_arena_bytes / (padded * count), 64));
    const int launches =
        int(std::max<std::uint64_t>(sets, std::min<std::uint64_t>(64, (4ull << 30) / per_launch + 2)));
    (void)m;
    (void)ldx_elems;
    return timer.per_call(launches, [&](int i) {
        w4::Batch b;
        b.count = count;
        const std::uint64_t set = std::uint64_t(i) % sets;
        for (int e = 0; e < count; ++e) {
            b.w[e] = g_arena + (set * count + e) * padded;
            b.x[e] = g_x;
            b.y[e] = g_y + std::size_t(e) * 8 * 65536;
        }
        launch(b, s);
    });
}

int main(int argc, char** argv) {
    const char* table_path = argc > 1 ? argv[1] : nullptr;
    if (table_path) g_table = std::fopen(table_path, "w");
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties(&prop, 0));
    g_sms = prop.multiProcessorCount;
    g_max_smem = int(prop.sharedMemPerBlockOptin);
    row("# %s, %d SMs, L2 %d MB, smem opt-in %d KB\n", prop.name, g_sms, prop.l2CacheSize >> 20,
        g_max_smem >> 10);
    Timer timer(s);
    cublasHandle_t h;
    CB(cublasCreate(&h));
    CB(cublasSetStream(h, s));
    void* ws;
    CK(cudaMalloc(&ws, 32 << 20));
    CB(cublasSetWorkspace(h, ws, 32 << 20));

    g_arena_bytes = 8ull << 30;
    CK(cudaMalloc(&g_arena, g_arena_bytes));
    fill_bf16<<<4096, 256, 0, s>>>(reinterpret_cast<bf16*>(g_arena), g_arena_bytes / 2, 7, 1.0f / 64);
    CK(cudaMalloc(&g_x, 64ull << 20));
    fill_bf16<<<1024, 256, 0, s>>>(g_x, 32ull << 20, 3, 1.0f);
    CK(cudaMalloc(&g_y, 256ull << 20));
    unsigned* sink;
    CK(cudaMalloc(&sink, 4));
    CK(cudaStreamSynchronize(s));

    // Ceilings: cudaMemcpy D2D (read + write bytes, as tpverify's copy_gbps) and a pure read.
    {
        const std::uint64_t bytes = 1ull << 30;
        // Eager copies between events, as tpverify's copy_gbps (memcpy nodes in a graph ran slower).
        for (int i = 0; i < 3; ++i)
            CK(cudaMemcpyAsync(g_arena + bytes, g_arena, bytes, cudaMemcpyDeviceToDevice, s));
        CK(cudaEventRecord(timer.a, s));
        for (int i = 0; i < 10; ++i)
            CK(cudaMemcpyAsync(g_arena + bytes, g_arena, bytes, cudaMemcpyDeviceToDevice, s));
        CK(cudaEventRecord(timer.b, s));
        CK(cudaEventSynchronize(timer.b));
        float copy_ms = 0;
        CK(cudaEventElapsedTime(&copy_ms, timer.a, timer.b));
        double us = copy_ms * 100.0;
        g_copy_gbps = 2.0 * bytes / (us * 1e3);
        double rus = timer.per_call(8, [&](int i) {
            read_kernel<<<g_sms * 8, 512, 0, s>>>(
                reinterpret_cast<const uint4*>(g_arena + (i % 4) * 2 * bytes), 2 * bytes / 16, sink);
        });
        g_read_gbps = 2.0 * bytes / (rus * 1e3);
        row("ceiling copy_gbps %.0f read_gbps %.0f (read / copy %.3f)\n", g_copy_gbps, g_read_gbps,
            g_read_gbps / g_copy_gbps);
    }
    // Tiny kernels in a graph.
    {
        double e = timer.per_call(400, [&](int) { empty_kernel<<<1, 128, 0, s>>>(nullptr); });
        cudaLaunchAttribute attr{};
        attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr.val.programmaticStreamSerializationAllowed = 1;
        auto pdl = [&](auto kernel, auto... args) {
            cudaLaunchConfig_t cfg{};
            cfg.gridDim = dim3(1);
            cfg.blockDim = dim3(256);
            cfg.stream = s;
            cfg.attrs = &attr;
            cfg.numAttrs = 1;
            CK(cudaLaunchKernelEx(&cfg, kernel, args...));
        };
        double ep = timer.per_call(400, [&](int) { pdl(empty_pdl_kernel, (int*)nullptr); });
        double t1 = timer.per_call(400, [&](int i) {
            tiny_kernel<<<1, 256, 0, s>>>(g_x + (i % 2) * 65536, g_y + ((i + 1) % 2) * 65536, 4 * 7168);
        });
        double tp = timer.per_call(400, [&](int i) {
            pdl(tiny_pdl_kernel, (const bf16*)(g_x + (i % 2) * 65536), g_y + ((i + 1) % 2) * 65536, 4 * 7168);
        });
        row("tiny empty %.2f us, empty+pdl %.2f us, copy 4x7168 %.2f us, copy+pdl %.2f us (per kernel in a "
            "graph)\n",
            e, ep, t1, tp);
    }

    set_w4_smem<1, 2>();
    set_w4_smem<1, 4>();
    set_w4_smem<2, 2>();
    set_w4_smem<2, 4>();
    set_w4_smem<4, 2>();
    set_w4_smem<4, 4>();
    set_w4_smem<1, 8>();
    set_w4_smem<1, 1>();
    set_w4_smem<2, 1>();
    set_w4_smem<4, 1>();
    struct Variant {
        const char* name;
        W4Launch launch;
    };
    std::vector<Variant> w4v = {{"tc_w1_u2", w4_variant<1, 2>()}, {"tc_w1_u4", w4_variant<1, 4>()},
                                {"tc_w1_u8", w4_variant<1, 8>()}, {"tc_w2_u2", w4_variant<2, 2>()},
                                {"tc_w2_u4", w4_variant<2, 4>()}, {"tc_w4_u2", w4_variant<4, 2>()},
                                {"tc_w4_u4", w4_variant<4, 4>()}};
    // Correctness at the pass's shapes: gate_up (x = the normed hidden, ldx = k), down (x = the
    // first half of each gate_up row, ldx = 2 * k), m = 1..8, batched.
    {
        int bad = 0;
        for (const Variant& v : w4v)
            for (auto [m, n, k, ldx, count] : std::vector<std::array<int, 5>>{{4, 4096, 7168, 7168, 2},
                                                                              {1, 4096, 7168, 7168, 3},
                                                                              {3, 7168, 2048, 4096, 2},
                                                                              {8, 512, 7168, 7168, 1},
                                                                              {2, 7168, 256, 512, 2}}) {
                double err = check_w4(v.launch, m, n, k, ldx, count, s);
                if (!(err < 2e-3)) ++bad;
                row("check w4 %-10s m=%d n=%d k=%d ldx=%d count=%d rel_err %.2e %s\n", v.name, m, n, k, ldx,
                    count, err, err < 2e-3 ? "ok" : "WRONG");
            }
        row("w4 checks wrong: %d\n", bad);
    }
    // Timing at the pass's shapes.
    struct Shape {
        const char* name;
        int n, k, ldx, count, m;
    };
    std::vector<Shape> shapes = {
        {"gate_up", 4096, 7168, 7168, 31, 1}, {"down", 7168, 2048, 4096, 31, 1},
        {"gate_up", 4096, 7168, 7168, 28, 1}, {"gate_up", 4096, 7168, 7168, 2, 2},
        {"down", 7168, 2048, 4096, 2, 2},     {"gate_up", 4096, 7168, 7168, 8, 1},
        {"down", 7168, 2048, 4096, 8, 1},     {"gate_up", 4096, 7168, 7168, 1, 1},
        {"down", 7168, 2048, 4096, 1, 1},     {"gate_up", 4096, 7168, 7168, 1, 4},
        {"down", 7168, 2048, 4096, 1, 4},     {"gate_up", 4096, 7168, 7168, 31, 4},
        {"gate_up8", 512, 7168, 7168, 31, 1}, {"down8", 7168, 256, 512, 31, 1},
    };
    for (const Shape& sh : shapes) {
        const std::uint64_t bytes = w4::total_bytes(sh.n, sh.k);
        auto us_of = [&](const W4Launch& l) {
            return time_batched(
                [&](const w4::Batch& b, cudaStream_t st) { l(b, sh.m, sh.n, sh.k, sh.ldx, st); }, bytes,
                sh.count, sh.m, sh.ldx, s, timer);
        };
        double old_us =
            sh.m <= 4 ? time_batched([&](const w4::Batch& b,
                                         cudaStream_t st) { old::launch(b, sh.m, sh.n, sh.k, sh.ldx, st); },
                                     bytes, sh.count, sh.m, sh.ldx, s, timer)
                      : 0;
        const double roof = double(bytes) * sh.count / (g_copy_gbps * 1e3);
        row("w4 %-8s n=%d k=%d count=%d m=%d bytes=%.1fMB roof %.1f us | old %.1f (%.2fx)", sh.name, sh.n,
            sh.k, sh.count, sh.m, bytes * sh.count / 1e6, roof, old_us, old_us / roof);
        for (const Variant& v : w4v) {
            double us = us_of(v.launch);
            row(" | %s %.1f (%.3fx)", v.name, us, us / roof);
        }
        row("\n");
    }

    // bf16: cuBLAS against the tensor-core streaming kernel at the pass's bf16 shapes.
    std::vector<Variant> bfv = {{"tc_w1_u1", bf16_variant<1, 1>()},
                                {"tc_w1_u2", bf16_variant<1, 2>()},
                                {"tc_w2_u1", bf16_variant<2, 1>()},
                                {"tc_w4_u1", bf16_variant<4, 1>()},
                                {"tc_w2_u2", bf16_variant<2, 2>()}};
    {
        int bad = 0;
        for (const Variant& v : bfv)
            for (auto [m, n, k] :
                 std::vector<std::array<int, 3>>{{4, 1536, 7168}, {1, 7168, 8192}, {3, 512, 512}}) {
                double err = check_bf16(v.launch, m, n, k, s);
                if (!(err < 2e-3)) ++bad;
                row("check bf16 %-10s m=%d n=%d k=%d rel_err %.2e %s\n", v.name, m, n, k, err,
                    err < 2e-3 ? "ok" : "WRONG");
            }
        row("bf16 checks wrong: %d\n", bad);
    }
    struct Dense {
        const char* name;
        int n, k;
    };
    std::vector<Dense> dense = {
        {"q_a", 1536, 7168},        {"kv_a", 576, 7168},         {"q_b", 12288, 1536},
        {"kv_b", 16384, 512},       {"o_proj", 7168, 8192},      {"router", 384, 7168},
        {"sh_gate_up", 4096, 7168}, {"sh_down", 7168, 2048},     {"lm_head", 163840, 7168},
        {"d_gate_up", 36864, 7168}, {"d_down", 7168, 18432},     {"dr_fc", 7168, 21504},
        {"dr_qkv", 24576, 14336},   {"dr_gate_up", 24576, 7168}, {"dr_down", 7168, 12288}};
    for (int m : {1, 4}) {
        for (const Dense& d : dense) {
            const std::uint64_t bytes = std::uint64_t(d.n) * d.k * 2;
            const double roof = double(bytes) / (g_copy_gbps * 1e3);
            double cub = time_batched(
                [&](const w4::Batch& b, cudaStream_t) {
                    float one = 1, zero = 0;
                    CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, d.n, m, d.k, &one, b.w[0], CUDA_R_16BF, d.k,
                                    g_x, CUDA_R_16BF, d.k, &zero, b.y[0], CUDA_R_16BF, d.n,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
                },
                bytes, 1, m, d.k, s, timer);
            row("bf16 %-10s m=%d n=%d k=%d %.1fMB roof %.2f us | cublas %.2f (%.3fx)", d.name, m, d.n, d.k,
                bytes / 1e6, roof, cub, cub / roof);
            if (d.n % 16 == 0 && d.k % 64 == 0 &&
                std::size_t(m) * (d.k + 8) * 2 < std::size_t(g_max_smem) - 4096)
                for (const Variant& v : bfv) {
                    double us = time_batched(
                        [&](const w4::Batch& b, cudaStream_t st) { v.launch(b, m, d.n, d.k, d.k, st); },
                        bytes, 1, m, d.k, s, timer);
                    row(" | %s %.2f (%.3fx)", v.name, us, us / roof);
                }
            row("\n");
        }
    }
    // bf16 experts as tpverify's bf16 option runs them: one cublasGemmBatchedEx per side.
    for (auto [count, m] : std::vector<std::array<int, 2>>{{31, 1}, {8, 1}}) {
        for (auto [n, k] : std::vector<std::array<int, 2>>{{4096, 7168}, {7168, 2048}}) {
            const std::uint64_t bytes = std::uint64_t(n) * k * 2;
            void** ptrs;
            CK(cudaMalloc(&ptrs, sizeof(void*) * 3 * 64 * 64));
            std::vector<void*> host(3 * 64 * 64);
            const std::uint64_t sets = std::min<std::uint64_t>(64, g_arena_bytes / (bytes * count));
            for (std::uint64_t st = 0; st < sets; ++st)
                for (int e = 0; e < count; ++e) {
                    host[st * 3 * 64 + e] = g_arena + (st * count + e) * bytes;
                    host[st * 3 * 64 + count + e] = g_x;
                    host[st * 3 * 64 + 2 * count + e] = g_y + e * 65536;
                }
            CK(cudaMemcpy(ptrs, host.data(), host.size() * sizeof(void*), cudaMemcpyHostToDevice));
            double us = timer.per_call(int(sets), [&](int i) {
                float one = 1, zero = 0;
                void** p = ptrs + std::size_t(i) * 3 * 64;
                CB(cublasGemmBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, (const void**)p,
                                       CUDA_R_16BF, k, (const void**)(p + count), CUDA_R_16BF, k, &zero,
                                       p + 2 * count, CUDA_R_16BF, n, count, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT));
            });
            const double roof = double(bytes) * count / (g_copy_gbps * 1e3);
            row("bf16 batched experts n=%d k=%d count=%d m=%d roof %.1f us | cublas %.1f (%.3fx)\n", n, k,
                count, m, roof, us, us / roof);
            cudaFree(ptrs);
        }
    }
    if (g_table) std::fclose(g_table);
    return 0;
}
