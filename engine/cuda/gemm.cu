// bf16 GEMMs: cuBLAS (cublasGemmEx, fp32 accumulate) and a weight-streaming kernel for few tokens.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "engine/cuda/gemm.cuh"
#include "engine/cuda/kernels.cuh"

namespace tpverify::cuda {
namespace {

constexpr int k_skinny_max_m = 8;
constexpr int k_skinny_warps = 8;
constexpr int k_unroll = 4;

__device__ uint4 load_stream(const uint4* p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

__device__ void fma8(float& acc, const uint4& w, const uint4& x) {
    const __nv_bfloat162* wh = reinterpret_cast<const __nv_bfloat162*>(&w);
    const __nv_bfloat162* xh = reinterpret_cast<const __nv_bfloat162*>(&x);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        float2 a = __bfloat1622float2(wh[j]);
        float2 b = __bfloat1622float2(xh[j]);
        acc = fmaf(a.x, b.x, acc);
        acc = fmaf(a.y, b.y, acc);
    }
}

// One warp per output column (weight row): streams W once, x comes from L1/L2.
template <int M>
__global__ void __launch_bounds__(k_skinny_warps * 32)
    skinny_kernel(const uint4* w, const uint4* x, bf16* y, int n, int kvec, int accumulate) {
    int row = blockIdx.x * k_skinny_warps + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= n) return;
    const uint4* wr = w + std::uint64_t(row) * kvec;
    float acc[M];
#pragma unroll
    for (int m = 0; m < M; ++m) acc[m] = 0.0f;
    int v = lane;
    for (; v + 32 * (k_unroll - 1) < kvec; v += 32 * k_unroll) {
        uint4 wv[k_unroll];
#pragma unroll
        for (int u = 0; u < k_unroll; ++u) wv[u] = load_stream(wr + v + 32 * u);
#pragma unroll
        for (int u = 0; u < k_unroll; ++u)
#pragma unroll
            for (int m = 0; m < M; ++m) fma8(acc[m], wv[u], __ldg(x + std::uint64_t(m) * kvec + v + 32 * u));
    }
    for (; v < kvec; v += 32) {
        uint4 wv = load_stream(wr + v);
#pragma unroll
        for (int m = 0; m < M; ++m) fma8(acc[m], wv, __ldg(x + std::uint64_t(m) * kvec + v));
    }
#pragma unroll
    for (int m = 0; m < M; ++m)
        for (int o = 16; o > 0; o >>= 1) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], o);
    if (lane == 0) {
#pragma unroll
        for (int m = 0; m < M; ++m) {
            bf16* out = y + std::uint64_t(m) * n + row;
            float prior = accumulate ? __bfloat162float(*out) : 0.0f;
            *out = __float2bfloat16(acc[m] + prior);
        }
    }
}

template <int M>
cudaError_t launch_skinny(const Gemm& g, const bf16* w, const bf16* x, bf16* y, bool acc, cudaStream_t s) {
    unsigned blocks = unsigned((g.n + k_skinny_warps - 1) / k_skinny_warps);
    skinny_kernel<M><<<blocks, k_skinny_warps * 32, 0, s>>>(
        reinterpret_cast<const uint4*>(w), reinterpret_cast<const uint4*>(x), y, g.n, g.k / 8, acc ? 1 : 0);
    return cudaGetLastError();
}

cudaError_t dispatch_skinny(const Gemm& g, const bf16* w, const bf16* x, bf16* y, bool acc, cudaStream_t s) {
    switch (g.m) {
        case 1:
            return launch_skinny<1>(g, w, x, y, acc, s);
        case 2:
            return launch_skinny<2>(g, w, x, y, acc, s);
        case 3:
            return launch_skinny<3>(g, w, x, y, acc, s);
        case 4:
            return launch_skinny<4>(g, w, x, y, acc, s);
        case 5:
            return launch_skinny<5>(g, w, x, y, acc, s);
        case 6:
            return launch_skinny<6>(g, w, x, y, acc, s);
        case 7:
            return launch_skinny<7>(g, w, x, y, acc, s);
        default:
            return launch_skinny<8>(g, w, x, y, acc, s);
    }
}

constexpr int k_w4_threads = 256;
constexpr int k_w4_tile = 1024;  // k values of x staged in shared memory at a time

// Two bf16 (128 + nibble) from nibbles at bit `shift` and `shift + 16` of u, minus 136 = w - 8.
__device__ __forceinline__ float2 dequant_pair(unsigned u, int shift) {
    unsigned bits = ((u >> shift) & 0x000f000fu) | 0x43004300u;
    __nv_bfloat162 v = *reinterpret_cast<__nv_bfloat162*>(&bits);
    v = __hsub2(v, __floats2bfloat162_rn(136.0f, 136.0f));
    return __bfloat1622float2(v);
}

// 128 columns per block, two threads per column splitting the k chunks (even / odd), summed
// through shared memory at the end.
constexpr int k_w4_cols = k_w4_threads / 2;

template <int M>
__global__ void __launch_bounds__(k_w4_threads)
    w4a16_kernel(W4Batch batch, int n, int k, int ldx, int accumulate) {
    __shared__ __align__(16) float xs[M][k_w4_tile];
    __shared__ float partial[M][k_w4_cols];
    const int e = blockIdx.y;
    const int half = threadIdx.x / k_w4_cols;
    const int col = blockIdx.x * k_w4_cols + threadIdx.x % k_w4_cols;
    const bf16* x = batch.x[e];
    const auto* packed = static_cast<const uint4*>(batch.w[e]);
    const auto* scales = reinterpret_cast<const __nv_bfloat162*>(static_cast<const char*>(batch.w[e]) +
                                                                 std::uint64_t(n) * k / 2);
    float acc[M];
#pragma unroll
    for (int m = 0; m < M; ++m) acc[m] = 0.0f;
    for (int t0 = 0; t0 < k; t0 += k_w4_tile) {
        const int len = min(k_w4_tile, k - t0);
        __syncthreads();
        for (int i = threadIdx.x; i < M * len; i += k_w4_threads) {
            int m = i / len, j = i % len;
            xs[m][j] = __bfloat162float(x[std::uint64_t(m) * ldx + t0 + j]);
        }
        __syncthreads();
        if (col >= n) continue;
#pragma unroll 2
        for (int c = half; c < len / 64; c += 2) {
            const std::uint64_t chunk = std::uint64_t(t0 / 64 + c) * n + col;
            const uint4 lo = load_stream(packed + 2 * chunk);
            const uint4 hi = load_stream(packed + 2 * chunk + 1);
            const float2 s = __bfloat1622float2(scales[chunk]);
            const unsigned words[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
            for (int g = 0; g < 2; ++g) {
                float dot[M];
#pragma unroll
                for (int m = 0; m < M; ++m) dot[m] = 0.0f;
#pragma unroll
                for (int w = 0; w < 4; ++w) {
                    // Word w of group g holds weights 8w..8w+7 of the group: nibble i at bit 4i;
                    // dequant_pair(u, 4i) gives weights i and i + 4.
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
#pragma unroll
                for (int m = 0; m < M; ++m) acc[m] += dot[m] * (g == 0 ? s.x : s.y);
            }
        }
    }
    __syncthreads();
    if (half == 1)
#pragma unroll
        for (int m = 0; m < M; ++m) partial[m][threadIdx.x % k_w4_cols] = acc[m];
    __syncthreads();
    if (half == 1 || col >= n) return;
    bf16* y = batch.y[e];
#pragma unroll
    for (int m = 0; m < M; ++m) {
        bf16* out = y + std::uint64_t(m) * n + col;
        float total = acc[m] + partial[m][threadIdx.x];
        *out = __float2bfloat16(total + (accumulate ? __bfloat162float(*out) : 0.0f));
    }
}

template <int M>
cudaError_t launch_w4(const W4Batch& b, int n, int k, int ldx, bool acc, cudaStream_t s) {
    dim3 grid(unsigned((n + k_w4_cols - 1) / k_w4_cols), unsigned(b.count));
    w4a16_kernel<M><<<grid, k_w4_threads, 0, s>>>(b, n, k, ldx, acc ? 1 : 0);
    return cudaGetLastError();
}

}  // namespace

cudaError_t run_w4a16(const W4Batch& batch, int m, int n, int k, int ldx, bool accumulate,
                      cudaStream_t stream) {
    if (k % 64 != 0 || batch.count < 1 || batch.count > k_w4_max_batch) return cudaErrorInvalidValue;
    static_assert(k_int4_rows_per_launch == 4, "the switch below instantiates m = 1..4");
    for (int m0 = 0; m0 < m; m0 += k_int4_rows_per_launch) {  // at most 4 rows of x per launch
        W4Batch part = batch;
        for (int e = 0; e < batch.count; ++e) {
            part.x[e] = batch.x[e] + std::uint64_t(m0) * ldx;
            part.y[e] = batch.y[e] + std::uint64_t(m0) * n;
        }
        cudaError_t err = cudaSuccess;
        switch (std::min(k_int4_rows_per_launch, m - m0)) {
            case 1:
                err = launch_w4<1>(part, n, k, ldx, accumulate, stream);
                break;
            case 2:
                err = launch_w4<2>(part, n, k, ldx, accumulate, stream);
                break;
            case 3:
                err = launch_w4<3>(part, n, k, ldx, accumulate, stream);
                break;
            default:
                err = launch_w4<4>(part, n, k, ldx, accumulate, stream);
                break;
        }
        if (err != cudaSuccess) return err;
    }
    return cudaSuccess;
}

GemmPath gemm_path_from_env(bool& ok) {
    ok = true;
    const char* v = std::getenv("TPVERIFY_GEMM");
    if (v == nullptr || *v == '\0' || std::strcmp(v, "auto") == 0) return GemmPath::automatic;
    if (std::strcmp(v, "cublas") == 0) return GemmPath::cublas;
    if (std::strcmp(v, "skinny") == 0) return GemmPath::skinny;
    ok = false;
    return GemmPath::automatic;
}

const char* gemm_path_name(GemmPath path) {
    switch (path) {
        case GemmPath::cublas:
            return "cublas";
        case GemmPath::skinny:
            return "skinny";
        default:
            return "auto";
    }
}

WeightPool::~WeightPool() {
    if (m_base != nullptr) cudaFree(m_base);
}

Status WeightPool::allocate(const std::vector<const PassPlan*>& plans, std::uint64_t reserve,
                            std::uint64_t seed, cudaStream_t stream) {
    auto padded = [](std::uint64_t b) { return (b + 255) / 256 * 256; };
    std::uint64_t largest = 0, need = 256;
    for (const PassPlan* plan : plans) {
        std::uint64_t total = 0;
        for (const Step& step : plan->steps)
            if (step.kind == Step::Kind::gemm)
                total += padded(step.gemm.weight_bytes()),
                    largest = std::max(largest, padded(step.gemm.weight_bytes()));
        need = std::max(need, total);
    }
    m_bytes = plans.empty() ? 0 : plans.front()->weight_bytes();
    std::size_t free_bytes = 0, total_bytes = 0;
    TPV_CUDA("init", cudaMemGetInfo(&free_bytes, &total_bytes));
    std::uint64_t room = free_bytes > reserve ? free_bytes - reserve : 0;
    m_arena = std::min({need, k_max_arena_bytes, room});
    if (m_arena < need && m_arena < std::max(k_min_arena_bytes, 2 * largest)) {
        return Status::fail("init", "cudaMalloc",
                            "weights of this pass need " + std::to_string(need >> 20) + " MiB (at least " +
                                std::to_string(std::max(k_min_arena_bytes, 2 * largest) >> 20) +
                                " MiB as a reused arena) but only " + std::to_string(free_bytes >> 20) +
                                " MiB are free; shrink the model (--layers, --experts) or raise --tp");
    }
    TPV_CUDA("init", cudaMalloc(&m_base, m_arena));
    // Small random values (scale 1/sqrt(k) of the first GEMM, which is the largest k in the arena's
    // first use) keep activations O(1) through the chain of GEMMs.
    TPV_CUDA("init", fill_random(static_cast<bf16*>(m_base), m_arena / 2, 1.0f / 128.0f, seed, stream));
    for (const PassPlan* plan : plans) {
        auto& list = m_weights[plan];
        std::uint64_t offset = 0;
        for (const Step& step : plan->steps) {
            if (step.kind != Step::Kind::gemm) continue;
            std::uint64_t size = padded(step.gemm.weight_bytes());
            if (offset + size > m_arena) offset = 0;
            list.push_back(reinterpret_cast<const bf16*>(static_cast<char*>(m_base) + offset));
            offset += size;
        }
    }
    return {};
}

const bf16* WeightPool::weight(const PassPlan& plan, std::size_t gemm_index) const {
    return m_weights.at(&plan)[gemm_index];
}

Status run_gemm(cublasHandle_t handle, GemmPath path, const Gemm& g, const bf16* w, const bf16* x, bf16* y,
                bool accumulate, cudaStream_t stream, const char* phase) {
    // cuBLAS unless TPVERIFY_GEMM=skinny: on the H200 cuBLAS ran the Kimi pass 1.23x faster
    // than the skinny kernel (docs/benchmarks-gpu.md).
    if (g.int4) {
        W4Batch batch;
        batch.w[0] = w;
        batch.x[0] = x;
        batch.y[0] = y;
        batch.count = 1;
        TPV_CUDA(phase, run_w4a16(batch, g.m, g.n, g.k, g.k, accumulate, stream));
        return {};
    }
    bool skinny_fits = g.m <= k_skinny_max_m && g.k % 8 == 0;
    bool use_skinny = skinny_fits && path == GemmPath::skinny;
    if (use_skinny) {
        TPV_CUDA(phase, dispatch_skinny(g, w, x, y, accumulate, stream));
        return {};
    }
    // Column-major view: y^T [n x m] = W [n x k] (stored k x n, transposed) * x^T [k x m].
    float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    TPV_CUBLAS(phase, cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, g.n, g.m, g.k, &alpha, w, CUDA_R_16BF,
                                   g.k, x, CUDA_R_16BF, g.k, &beta, y, CUDA_R_16BF, g.n, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT));
    return {};
}

}  // namespace tpverify::cuda
