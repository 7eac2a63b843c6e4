#pragma once
// Skinny bf16 GEMMs (m <= 8 rows of x) on the weights' own row-major layout, for the pass's
// projections that are too small for cuBLAS to reach copy bandwidth (q_a, kv_a, the router,
// q_b, kv_b, the shared expert, o_proj: 5-120 MB each): y[m x n] (+)= x[m x k] W^T, W [n][k].
//
// One mma.m16n8k16 covers 16 rows of W (16 output columns) x 16 k for all 8 token columns. A
// dot product's k order is free, so each lane reads its A fragment straight from row-major
// memory: lane (g, t) loads 16 bytes (8 k) of rows g and g + 8 at k = 32 i + 8 t, and 16 bytes
// of x (token g) at the same k; the 8 k of a load are the two k16 steps' pairs (2t, 2t+1) and
// (2t+8, 2t+9), the same permutation for A and B. A warp streams one 16-row tile over its
// k range, four iterations (32 k, 1 KiB of W each) in flight. Warps of a block and blocks of a
// cluster split k when the tiles alone give too few warps; partial sums meet in shared memory
// (the cluster's through distributed shared memory, in rank order: deterministic).
//
// Launched with programmatic dependent launch: a block asks for its first weights (which no
// kernel writes), then waits for the previous kernel (griddepcontrol.wait) before it reads x,
// and lets the next kernel launch early (griddepcontrol.launch_dependents) so that it does the
// same; without the launch attribute both instructions are no-ops.
#include "engine/cuda/common.cuh"

namespace tpverify::cuda::skinny {

constexpr int k_threads = 256;  ///< 8 warps
constexpr int k_max_rows = 8;   ///< rows of x (mma n8)

/// Whether the kernel takes this GEMM: m <= 8, n % 16 == 0, k % 32 == 0.
bool fits(int m, int n, int k);
/// Enqueues y (+)= x W^T; x rows `ldx` apart (ldx % 8 == 0, 16-byte aligned pointers).
cudaError_t run(const bf16* w, const bf16* x, int ldx, bf16* y, int m, int n, int k, bool accumulate,
                cudaStream_t stream);

/// One GEMM of a grouped launch: y [m x n] = x' W^T, W [n][k] row-major, x rows `ldx` apart.
/// With `silu`, x' = SiLU(gate) * up of the gate_up rows x (gate at [0, k), up at [k, 2k),
/// rounded to bf16 as the silu_mul kernel does): the SiLU-and-mul in the GEMM's input load.
struct Part {
    const bf16* w = nullptr;
    const bf16* x = nullptr;
    bf16* y = nullptr;
    int ldx = 0, n = 0, k = 0;
    bool silu = false;
};
constexpr int k_max_parts = 3;
/// Enqueues up to k_max_parts independent GEMMs of the same m as one launch (their tiles side by
/// side in one grid): one launch and one tail instead of several. `accumulate` adds into every y.
cudaError_t run_group(const Part* parts, int count, int m, bool accumulate, cudaStream_t stream);
/// Whether launches use programmatic dependent launch (TPVERIFY_PDL=0: no).
bool pdl_enabled();
/// KiB of weights each warp of the skinny and streaming kernels asks the L2 to fetch before it
/// waits for the previous kernel, past the loads it keeps in flight (TPVERIFY_PREFETCH_KB;
/// unset: the default of skinny_gemm.cu). Launched early (PDL), the warps resident during a
/// small kernel before them so read weights while it runs.
int prefetch_kib();

/// Asks the L2 for `bytes` (a multiple of 16) from `p` (16-byte aligned); no registers, no wait.
__device__ __forceinline__ void prefetch_l2(const void* p, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#endif
}

/// x' = SiLU(gate) * up for 8 k of a gate_up row (gate at g, up at g + k; 16-byte aligned), rounded
/// to bf16 pairs exactly as silu_mul_kernel (engine/cuda/ops.cu) rounds them.
__device__ __forceinline__ uint4 silu_load(const bf16* g, int k) {
    const uint4 gv = *reinterpret_cast<const uint4*>(g);
    const uint4 uv = *reinterpret_cast<const uint4*>(g + k);
    const unsigned* gw = reinterpret_cast<const unsigned*>(&gv);
    const unsigned* uw = reinterpret_cast<const unsigned*>(&uv);
    uint4 out;
    unsigned* ow = reinterpret_cast<unsigned*>(&out);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&gw[j]));
        const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&uw[j]));
        const __nv_bfloat162 r =
            __floats2bfloat162_rn(a.x / (1.0f + __expf(-a.x)) * b.x, a.y / (1.0f + __expf(-a.y)) * b.y);
        ow[j] = *reinterpret_cast<const unsigned*>(&r);
    }
    return out;
}

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// Launches `kernel` (`threads` a block, `smem` bytes of dynamic shared memory) with programmatic
/// dependent launch when `pdl` (callers pass pdl_enabled(), or less), so that it may start while
/// the previous kernel of the stream runs and must pdl_wait() before reading its writes.
template <typename... Params, typename... Args>
cudaError_t launch_pdl(void (*kernel)(Params...), dim3 grid, unsigned threads, std::size_t smem,
                       cudaStream_t s, bool pdl, Args... args) {
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = dim3(threads, 1, 1);
    config.dynamicSmemBytes = smem;
    config.stream = s;
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = &attribute;
    config.numAttrs = pdl ? 1 : 0;
    return cudaLaunchKernelEx(&config, kernel, Params(args)...);
}

}  // namespace tpverify::cuda::skinny
