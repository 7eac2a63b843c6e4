// Element-wise, residual + RMSNorm and fused one-shot all-reduce kernels.
#include "engine/cuda/kernels.cuh"
#include "engine/cuda/skinny_gemm.cuh"

namespace tpverify::cuda {
namespace {

constexpr int k_vec = 8;  // bf16 per 16-byte vector
constexpr int k_max_vec_per_thread = 4;
constexpr unsigned short k_empty = 0x8000;  // bf16 -0.0: "slot not written yet"

__device__ std::uint64_t mix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

__global__ void fill_random_kernel(bf16* data, std::uint64_t n, float scale, std::uint64_t seed) {
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::uint64_t(gridDim.x) * blockDim.x) {
        float u = float(mix(seed * 0x100000001b3ull + i) >> 40) * (1.0f / 16777216.0f);
        data[i] = __float2bfloat16((2.0f * u - 1.0f) * scale);
    }
}

__global__ void fill_pattern_kernel(bf16* data, std::uint64_t n, int rank, const unsigned* seed) {
    const std::uint64_t s = seed != nullptr ? *seed : 0;
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::uint64_t(gridDim.x) * blockDim.x)
        data[i] = __float2bfloat16(float(int((i * 7 + std::uint64_t(rank) * 3 + s) % 9) - 4) * 0.25f);
}

__global__ void bump_kernel(unsigned* counter) {
    *counter += 1;
}

__global__ void fill_bits_kernel(unsigned short* data, std::uint64_t n, unsigned short bits) {
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::uint64_t(gridDim.x) * blockDim.x)
        data[i] = bits;
}

unsigned grid_for(std::uint64_t n) {
    std::uint64_t blocks = (n + 255) / 256;
    return unsigned(blocks > 8192 ? 8192 : (blocks == 0 ? 1 : blocks));
}

__device__ void unpack(const uint4& v, float (&f)[k_vec]) {
    const bf16* h = reinterpret_cast<const bf16*>(&v);
#pragma unroll
    for (int j = 0; j < k_vec; ++j) f[j] = __bfloat162float(h[j]);
}

__device__ uint4 pack(const float (&f)[k_vec]) {
    uint4 v;
    bf16* h = reinterpret_cast<bf16*>(&v);
#pragma unroll
    for (int j = 0; j < k_vec; ++j) h[j] = __float2bfloat16(f[j]);
    return v;
}

__device__ float block_sum(float v) {
    __shared__ float partial[32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < int(blockDim.x / 32) ? partial[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) partial[0] = v;
    }
    __syncthreads();
    float total = partial[0];
    __syncthreads();
    return total;
}

// This thread's vectors of one row of the residual and of gamma, read together with x (one
// memory round trip before the block's reduction instead of one before it and one after).
template <int V>
struct RowOperands {
    uint4 residual[V];
    uint4 gamma[V];
};

template <int V>
__device__ void load_operands(RowOperands<V>& o, int nvec, const uint4* residual, const uint4* gamma) {
#pragma unroll
    for (int t = 0; t < V; ++t) {
        int v = threadIdx.x + t * blockDim.x;
        if (v < nvec) o.residual[t] = residual[v], o.gamma[t] = gamma[v];
    }
}

// sum (already reduced, one row's vectors held by this thread, V at most) -> residual += sum;
// out = norm.
template <int V>
__device__ void residual_norm(float (&sum)[V][k_vec], int nvec, const RowOperands<V>& o, uint4* residual,
                              uint4* out, int hidden, float eps) {
    float squares = 0.0f;
#pragma unroll
    for (int t = 0; t < V; ++t) {
        int v = threadIdx.x + t * blockDim.x;
        if (v >= nvec) break;
        float r[k_vec];
        unpack(o.residual[t], r);
#pragma unroll
        for (int j = 0; j < k_vec; ++j) {
            // The all-reduce output is bf16, as NCCL's would be: round before the add.
            float x = __bfloat162float(__float2bfloat16(sum[t][j]));
            sum[t][j] = __bfloat162float(__float2bfloat16(x + r[j]));
            squares += sum[t][j] * sum[t][j];
        }
        residual[v] = pack(sum[t]);
    }
    float inv = rsqrtf(block_sum(squares) / float(hidden) + eps);
#pragma unroll
    for (int t = 0; t < V; ++t) {
        int v = threadIdx.x + t * blockDim.x;
        if (v >= nvec) break;
        float g[k_vec];
        unpack(o.gamma[t], g);
#pragma unroll
        for (int j = 0; j < k_vec; ++j) sum[t][j] = sum[t][j] * inv * g[j];
        out[v] = pack(sum[t]);
    }
}

// V: vectors of the row per thread (vecs_per_thread; 1 for hidden <= 8,192, so that 1,024
// threads hold their row in registers without spilling).
template <int V>
__global__ void __launch_bounds__(1024)
    add_rmsnorm_kernel(const uint4* x, uint4* residual, const uint4* gamma, uint4* out, int hidden,
                       float eps) {
    skinny::pdl_trigger();  // the next GEMM may launch and fetch its weights
    int nvec = hidden / k_vec;
    std::uint64_t row = std::uint64_t(blockIdx.x) * nvec;
    uint4 xv[V];
#pragma unroll
    for (int t = 0; t < V; ++t) {
        int v = threadIdx.x + t * blockDim.x;
        if (v < nvec) xv[t] = x[row + v];
    }
    RowOperands<V> o;
    load_operands(o, nvec, residual + row, gamma);
    float sum[V][k_vec];
#pragma unroll
    for (int t = 0; t < V; ++t)
        if (threadIdx.x + t * blockDim.x < nvec) unpack(xv[t], sum[t]);
    residual_norm(sum, nvec, o, residual + row, out + row, hidden, eps);
}

__device__ bool has_empty(const uint4& v) {
    const unsigned* w = reinterpret_cast<const unsigned*>(&v);
#pragma unroll
    for (int j = 0; j < 4; ++j)
        if ((w[j] & 0xffffu) == k_empty || (w[j] >> 16) == k_empty) return true;
    return false;
}

// Relaxed system-scope accesses (morally strong: no data race under the PTX memory model);
// each bf16 element carries its own "written" state, so no order between elements is needed.
__device__ uint4 load_relaxed_sys(const uint4* p) {
    uint4 v;
    asm volatile("ld.relaxed.sys.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

__device__ void store_relaxed_sys(uint4* p, const uint4& v) {
    asm volatile("st.relaxed.sys.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
                 "r"(v.w)
                 : "memory");
}

__device__ void fence_acq_rel_sys() {
    asm volatile("fence.acq_rel.sys;" ::: "memory");
}

__device__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

template <int V>
__global__ void __launch_bounds__(1024)
    oneshot_kernel(OneShotPeers peers, const uint4* x, uint4* residual, const uint4* gamma, uint4* out,
                   int hidden, float eps) {
    __shared__ unsigned rotation;
    volatile __shared__ int gave_up;
    int nvec = hidden / k_vec;
    int row = blockIdx.x;
    if (threadIdx.x == 0) rotation = peers.counters[row] % 3, gave_up = 0;
    __syncthreads();
    unsigned b = rotation;
    std::uint64_t row_vecs = std::uint64_t(peers.max_rows) * nvec;  // one slot
    auto slot = [&](int rank_buffer, unsigned rot, int s) {
        return reinterpret_cast<uint4*>(peers.buffers[rank_buffer]) +
               (std::uint64_t(rot) * peers.nranks + s) * row_vecs + std::uint64_t(row) * nvec;
    };
    // This rank's residual and gamma (no peer writes them): in flight while the peers' rows arrive.
    RowOperands<V> o;
    load_operands(o, nvec, residual + std::uint64_t(row) * nvec, gamma);
    // Release: this block's earlier clearing of its own buffer is visible before its pushes.
    fence_acq_rel_sys();
    // Push this rank's row into slot `rank` of every rank's buffer (-0.0 becomes +0.0).
    for (int v = threadIdx.x; v < nvec; v += blockDim.x) {
        uint4 val = x[std::uint64_t(row) * nvec + v];
        unsigned* w = reinterpret_cast<unsigned*>(&val);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            if ((w[j] & 0xffffu) == k_empty) w[j] &= 0xffff0000u;
            if ((w[j] >> 16) == k_empty) w[j] &= 0x0000ffffu;
        }
        for (int p = 0; p < peers.nranks; ++p) store_relaxed_sys(slot(p, b, peers.rank) + v, val);
    }
    // Poll own buffer until every slot is written (bounded); sum in rank order (same on every rank).
    const unsigned long long start = global_ns();
    float sum[V][k_vec];
#pragma unroll
    for (int t = 0; t < V; ++t) {
        int v = threadIdx.x + t * blockDim.x;
        if (v >= nvec) break;
#pragma unroll
        for (int j = 0; j < k_vec; ++j) sum[t][j] = 0.0f;
        for (int p = 0; p < peers.nranks; ++p) {
            const uint4* src = slot(peers.rank, b, p) + v;
            uint4 val = load_relaxed_sys(src);
            for (unsigned spins = 0; has_empty(val); ++spins) {
                if ((spins & 1023u) == 1023u &&
                    (peers.control[0] != 0 || global_ns() - start > peers.spin_limit_ns || gave_up != 0)) {
                    gave_up = 1;
                    peers.control[1] = 1;
                    break;
                }
                val = load_relaxed_sys(src);
            }
            float f[k_vec];
            unpack(val, f);
#pragma unroll
            for (int j = 0; j < k_vec; ++j) sum[t][j] += f[j];
        }
    }
    fence_acq_rel_sys();  // acquire: the peers' rows are read before anything that follows
    residual_norm(sum, nvec, o, residual + std::uint64_t(row) * nvec, out + std::uint64_t(row) * nvec, hidden,
                  eps);
    // Reset the rotation used by the previous call: every peer has finished writing it.
    uint4 empty = make_uint4(0x80008000u, 0x80008000u, 0x80008000u, 0x80008000u);
    for (int p = 0; p < peers.nranks; ++p)
        for (int v = threadIdx.x; v < nvec; v += blockDim.x)
            store_relaxed_sys(slot(peers.rank, (b + 2) % 3, p) + v, empty);
    if (threadIdx.x == 0) peers.counters[row] = peers.counters[row] + 1;
}

int threads_for(int hidden) {
    int nvec = hidden / k_vec;
    int threads = ((nvec + 31) / 32) * 32;
    return threads > 1024 ? 1024 : threads;
}

// The V of the kernels above for a row of `hidden` (check_hidden keeps it <= k_max_vec_per_thread).
int vecs_per_thread(int hidden) {
    int nvec = hidden / k_vec;
    return nvec <= 1024 ? 1 : nvec <= 2048 ? 2 : 4;
}

using OneShotKernel = void (*)(OneShotPeers, const uint4*, uint4*, const uint4*, uint4*, int, float);
using AddNormKernel = void (*)(const uint4*, uint4*, const uint4*, uint4*, int, float);

OneShotKernel oneshot_for(int hidden) {
    int v = vecs_per_thread(hidden);
    return v == 1 ? oneshot_kernel<1> : v == 2 ? oneshot_kernel<2> : oneshot_kernel<4>;
}

AddNormKernel add_rmsnorm_for(int hidden) {
    int v = vecs_per_thread(hidden);
    return v == 1 ? add_rmsnorm_kernel<1> : v == 2 ? add_rmsnorm_kernel<2> : add_rmsnorm_kernel<4>;
}

cudaError_t check_hidden(int hidden) {
    if (hidden % k_vec != 0 || hidden / k_vec > 1024 * k_max_vec_per_thread) return cudaErrorInvalidValue;
    return cudaSuccess;
}

}  // namespace

int oneshot_max_rows(int device, int hidden) {
    int per_sm = 0, sms = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, oneshot_for(hidden), threads_for(hidden), 0) !=
            cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return per_sm * sms;
}

cudaError_t fill_random(bf16* data, std::uint64_t n, float scale, std::uint64_t seed, cudaStream_t s) {
    fill_random_kernel<<<grid_for(n), 256, 0, s>>>(data, n, scale, seed);
    return cudaGetLastError();
}

cudaError_t fill_pattern(bf16* data, std::uint64_t n, int rank, cudaStream_t s, const unsigned* seed) {
    fill_pattern_kernel<<<grid_for(n), 256, 0, s>>>(data, n, rank, seed);
    return cudaGetLastError();
}

cudaError_t bump(unsigned* counter, cudaStream_t s) {
    bump_kernel<<<1, 1, 0, s>>>(counter);
    return cudaGetLastError();
}

cudaError_t fill_bits(bf16* data, std::uint64_t n, unsigned short bits, cudaStream_t s) {
    fill_bits_kernel<<<grid_for(n), 256, 0, s>>>(reinterpret_cast<unsigned short*>(data), n, bits);
    return cudaGetLastError();
}

namespace {

__global__ void spin_kernel(unsigned ns) {
    const unsigned long long start = global_ns();
    while (global_ns() - start < ns) __nanosleep(1000);
}

}  // namespace

cudaError_t spin(unsigned ns, cudaStream_t s) {
    spin_kernel<<<1, 1, 0, s>>>(ns);
    return cudaGetLastError();
}

cudaError_t add_rmsnorm(const bf16* x, bf16* residual, const bf16* gamma, bf16* out, int rows, int hidden,
                        float eps, cudaStream_t s) {
    if (cudaError_t e = check_hidden(hidden); e != cudaSuccess) return e;
    add_rmsnorm_for(hidden)<<<rows, threads_for(hidden), 0, s>>>(
        reinterpret_cast<const uint4*>(x), reinterpret_cast<uint4*>(residual),
        reinterpret_cast<const uint4*>(gamma), reinterpret_cast<uint4*>(out), hidden, eps);
    return cudaGetLastError();
}

cudaError_t oneshot_allreduce_rmsnorm(const OneShotPeers& peers, const bf16* x, bf16* residual,
                                      const bf16* gamma, bf16* out, int rows, int hidden, float eps,
                                      cudaStream_t s) {
    if (cudaError_t e = check_hidden(hidden); e != cudaSuccess) return e;
    if (rows > peers.max_rows || peers.nranks > k_max_peers) return cudaErrorInvalidValue;
    oneshot_for(hidden)<<<rows, threads_for(hidden), 0, s>>>(
        peers, reinterpret_cast<const uint4*>(x), reinterpret_cast<uint4*>(residual),
        reinterpret_cast<const uint4*>(gamma), reinterpret_cast<uint4*>(out), hidden, eps);
    return cudaGetLastError();
}

}  // namespace tpverify::cuda
