#pragma once
// Weight-streaming GEMMs for few rows (m <= 8 per launch) on tensor cores: y[m x n] (+)= x[m x k]
// W^T with W in INT4 (W4A16: one bf16 scale per 32 along k) or bf16, fp32 accumulation.
//
// The weights are the mma.m16n8k16 A operand (its 16 rows are 16 output columns) and up to 8
// rows of x the B operand (its 8 columns are tokens), so one mma covers 16 columns x 16 k for
// every token at once; a warp streams one 16-column "tile" of W over a slice of k, 64 k (a
// "chunk") at a time. Both formats are laid out at load so that each lane reads its fragments
// with 16-byte coalesced loads (a Marlin-style layout; the facts, not Marlin's code):
//
//   INT4  weights [n/16][k/64][32 lanes][4 words]  then scales [n/16][k/64][8 g][4 bf16]
//   bf16  weights [n/16][k/64][4 k16 steps][32 lanes][4 bf16x2]
//
// Lane L = 4g + t holds, for k16 step s of a chunk, the A fragment of columns g and g + 8 of the
// tile at k = 16s + {2t, 2t+1, 2t+8, 2t+9}. INT4: word s holds its eight 4-bit weights (stored
// as q + 8, as the checkpoint stores them); nibble j (bits 4j..4j+3) is the low and nibble j+4
// the high half of fragment register j, so `(word >> 4j) & 0x000f000f | 0x43004300` is two bf16
// 128 + q + 8 and one bf16x2 subtraction of 136 leaves q, exactly. The four scales of lane (g, t)
// are (g, group 0), (g + 8, group 0), (g, group 1), (g + 8, group 1); each 16 x 32 block's dot
// products are scaled once, in fp32.
//
// A launch: grid (ceil(n / 128), k slices, experts); 8 warps per block, one tile each, over the
// block's k slice; the block first asks for its first weights, then stages its slice of x in
// shared memory (ldmatrix reads B from there). With one slice the warps write y; with several,
// each block writes fp32 partial sums to a workspace and the last block of a column group to
// arrive (an atomic counter, reset by that block) sums the slices in order and writes y, so
// results do not depend on arrival order.
#include "engine/cuda/common.cuh"
#include "engine/cuda/ops.cuh"
#include "engine/cuda/skinny_gemm.cuh"

namespace tpverify::cuda::sg {

using skinny::prefetch_l2;

enum class Format { int4, bf16 };

constexpr int k_threads = 256;  ///< threads per block: 8 warps
constexpr int k_warps = k_threads / 32;
constexpr int k_chunk = 64;                     ///< k per chunk: four mma k16 steps, two scale groups
constexpr int k_tile = 16;                      ///< output columns per warp (mma m16)
constexpr int k_group_cols = k_tile * k_warps;  ///< output columns per block
constexpr int k_rows = 8;                       ///< rows of x per launch (mma n8)
constexpr int k_pad = 8;                        ///< bf16 of padding per staged x row (no bank conflicts)
constexpr int k_max_batch = 40;                 ///< experts per launch
constexpr int k_bf16_unroll = 1;                ///< chunks each warp keeps in flight (bf16: 1 x 2 KiB)

/// Bytes of packed INT4 weights of an [n x k] matrix (the scales follow them).
__host__ __device__ constexpr std::uint64_t int4_packed_bytes(int n, int k) {
    return std::uint64_t(n) * std::uint64_t(k) / 2;
}
/// Bytes of an [n x k] matrix in `format` (INT4: weights + scales).
__host__ __device__ constexpr std::uint64_t matrix_bytes(Format format, int n, int k) {
    return format == Format::int4 ? int4_packed_bytes(n, k) + std::uint64_t(n) * std::uint64_t(k / 32) * 2
                                  : std::uint64_t(n) * std::uint64_t(k) * 2;
}

/// Operands of up to k_max_batch GEMMs of one shape: y_e[rows_e x n] (+)= x_e[rows_e x k] W_e^T,
/// x_e with row stride ldx. rows_e <= k_rows.
struct Batch {
    const void* w[k_max_batch];
    const bf16* x[k_max_batch];
    bf16* y[k_max_batch];
    int rows[k_max_batch];
    int count = 0;
};

/// A MoE layer's weighted sum of its routed experts' rows, done by the down launch that writes
/// those rows (the expert_sum kernel's work, with its arithmetic: ops.cuh expert_sum_pair): y[t] (+)= sum
/// over j < k of weights[t k + j] x outs[slots[t k + j]], outs the launch's output rows stacked (n wide). The
/// last block of a column group to finish (a counter at the end of the workspace's) sums the group's columns
/// for every token. y null: no sum.
struct ExpertSum {
    const bf16* outs = nullptr;
    const int* slots = nullptr;
    const float* weights = nullptr;
    bf16* y = nullptr;
    int tokens = 0, k = 0, accumulate = 0;
};

/// Split-k scratch: fp32 partial sums and per-(expert, column group) arrival counters, which
/// must be zero before the first launch (each launch leaves them zero).
struct Workspace {
    float* partial = nullptr;
    std::uint64_t partial_floats = 0;
    unsigned* counters = nullptr;
    unsigned counter_count = 0;
};

__device__ __forceinline__ uint4 load_stream128(const void* p) {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
}

__device__ __forceinline__ uint2 load_stream64(const void* p) {
    uint2 v;
    asm("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
}

__device__ __forceinline__ unsigned and_or(unsigned a, unsigned b, unsigned c) {
    unsigned d;
    asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "r"(b), "r"(c));  // (a & b) | c
    return d;
}

/// Eight stored 4-bit weights of one word -> four bf16x2 fragment registers (value - 8, exact).
__device__ __forceinline__ void dequant(unsigned q, unsigned (&r)[4]) {
    constexpr unsigned mask = 0x000f000fu, exponent = 0x43004300u;  // bf16 128.0 + nibble
    r[0] = and_or(q, mask, exponent);
    r[1] = and_or(q >> 4, mask, exponent);
    r[2] = and_or(q >> 8, mask, exponent);
    r[3] = and_or(q >> 12, mask, exponent);
    const __nv_bfloat162 bias = __bfloat162bfloat162(__ushort_as_bfloat16(0x4308));  // 136.0
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        __nv_bfloat162 v = *reinterpret_cast<__nv_bfloat162*>(&r[j]);
        v = __hsub2(v, bias);
        r[j] = *reinterpret_cast<unsigned*>(&v);
    }
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned address, unsigned (&r)[4]) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
}

__device__ __forceinline__ float2 bf16x2_to_float2(unsigned v) {
    return make_float2(__uint_as_float(v << 16), __uint_as_float(v & 0xffff0000u));
}

/// The ring kernels' per-warp stages: one INT4 chunk each, its 512 bytes of weights (lane L's 16
/// at 16 L) then its 64 bytes of scales (lane L's 8 at 8 (L / 4)), as the chunk lies in global
/// memory; one mbarrier per stage after every warp's stages.
constexpr int k_stage_bytes = 576;
__host__ __device__ constexpr std::size_t ring_bytes(int stages) {
    return std::size_t(k_warps) * stages * (k_stage_bytes + 8);
}

__device__ __forceinline__ void mbar_init(unsigned bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
}

/// Makes the barriers just initialised visible to the copy engine (the async proxy).
__device__ __forceinline__ void mbar_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/// Waits until the barrier's phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "ring_wait:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra ring_wait;\n"
        "}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}

/// One chunk into a stage by the copy engine (bulk copies, no registers): the barrier's phase
/// completes when both copies have landed. Called by one lane; the stage's earlier contents must
/// be read by every lane first (its __syncwarp) and ordered before the copy (fence.proxy.async).
__device__ __forceinline__ void ring_fill(unsigned stage, unsigned bar, const void* weights,
                                          const void* scales) {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "n"(k_stage_bytes)
                 : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 512, [%2];" ::"r"(
            stage),
        "l"(weights), "r"(bar)
        : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 64, [%2];" ::"r"(
            stage + 512),
        "l"(scales), "r"(bar)
        : "memory");
}

/// As dequant(), without the subtraction: each register holds two bf16 136 + q (the stored
/// nibble + 128). The kernel's "folded" variant starts each group's mma sums at -136 x the
/// group's sum of x instead, which gives the same dot products with 4 instructions fewer a word.
__device__ __forceinline__ void dequant_biased(unsigned q, unsigned (&r)[4]) {
    constexpr unsigned mask = 0x000f000fu, exponent = 0x43004300u;
    r[0] = and_or(q, mask, exponent);
    r[1] = and_or(q >> 4, mask, exponent);
    r[2] = and_or(q >> 8, mask, exponent);
    r[3] = and_or(q >> 12, mask, exponent);
}

/// One chunk's operands as a lane holds them.
template <Format F>
struct Fragments;
template <>
struct Fragments<Format::int4> {
    uint4 w;  ///< four words: k16 steps 0..3
    uint2 s;  ///< scales (g, group 0 | g + 8, group 0), (g, group 1 | g + 8, group 1)
};
template <>
struct Fragments<Format::bf16> {
    uint4 w[4];  ///< one A fragment per k16 step
};

/// Where a warp's chunks are: lane-offset pointers, one chunk apart per `load(c)`.
template <Format F>
struct Stream;
template <>
struct Stream<Format::int4> {
    const uint4* w;
    const uint2* s;
    __device__ Stream(const void* base, int n, int k, int tile, int first_chunk, int lane) {
        const int chunks = k / k_chunk;
        const std::uint64_t tc = std::uint64_t(tile) * chunks + first_chunk;
        w = static_cast<const uint4*>(base) + tc * 32 + lane;
        s = reinterpret_cast<const uint2*>(static_cast<const char*>(base) + int4_packed_bytes(n, k)) +
            tc * 8 + (lane >> 2);
    }
    __device__ Fragments<Format::int4> load(int c) const {
        return {load_stream128(w + std::uint64_t(c) * 32), load_stream64(s + std::uint64_t(c) * 8)};
    }
    /// Chunks [from, to) of the warp's tile into L2 (called by lane 0: its pointers start them).
    __device__ void prefetch(int from, int to) const {
        prefetch_l2(w + std::uint64_t(from) * 32, unsigned(to - from) * 512);
        prefetch_l2(s + std::uint64_t(from) * 8, unsigned(to - from) * 64);
    }
};
template <>
struct Stream<Format::bf16> {
    const uint4* w;
    __device__ Stream(const void* base, int, int k, int tile, int first_chunk, int lane) {
        const int chunks = k / k_chunk;
        w = static_cast<const uint4*>(base) + (std::uint64_t(tile) * chunks + first_chunk) * 128 + lane;
    }
    __device__ Fragments<Format::bf16> load(int c) const {
        Fragments<Format::bf16> f;
#pragma unroll
        for (int s = 0; s < 4; ++s) f.w[s] = load_stream128(w + std::uint64_t(c) * 128 + 32 * s);
        return f;
    }
    __device__ void prefetch(int from, int to) const {
        prefetch_l2(w + std::uint64_t(from) * 128, unsigned(to - from) * 2048);
    }
};

/// One chunk of one warp tile with the folded dequantisation: `bias` holds, for the chunk's two
/// scale groups, -136 x (the group's sum of x) for this lane's tokens 2t and 2t + 1. The two
/// groups are written out: the same code as one helper called twice (scale conversions moved
/// after the mmas) measured 30-55 us slower a pass on the H200
/// (tests/fixtures/tpverify-kernels/run7-ab.log).
__device__ __forceinline__ void chunk_mma_folded(const Fragments<Format::int4>& f, unsigned x_address,
                                                 float2 bias0, float2 bias1, float (&acc)[4]) {
    unsigned b0[4], b1[4];
    ldmatrix_x4(x_address, b0);
    ldmatrix_x4(x_address + 64, b1);
    const float2 s0 = bf16x2_to_float2(f.s.x), s1 = bf16x2_to_float2(f.s.y);
    unsigned a[4];
    float t[4] = {bias0.x, bias0.y, bias0.x, bias0.y};
    dequant_biased(f.w.x, a);
    mma_bf16(t, a, b0[0], b0[1]);
    dequant_biased(f.w.y, a);
    mma_bf16(t, a, b0[2], b0[3]);
    acc[0] = fmaf(s0.x, t[0], acc[0]);
    acc[1] = fmaf(s0.x, t[1], acc[1]);
    acc[2] = fmaf(s0.y, t[2], acc[2]);
    acc[3] = fmaf(s0.y, t[3], acc[3]);
    float u[4] = {bias1.x, bias1.y, bias1.x, bias1.y};
    dequant_biased(f.w.z, a);
    mma_bf16(u, a, b1[0], b1[1]);
    dequant_biased(f.w.w, a);
    mma_bf16(u, a, b1[2], b1[3]);
    acc[0] = fmaf(s1.x, u[0], acc[0]);
    acc[1] = fmaf(s1.x, u[1], acc[1]);
    acc[2] = fmaf(s1.y, u[2], acc[2]);
    acc[3] = fmaf(s1.y, u[3], acc[3]);
}

/// One chunk of one warp tile. `x_address`: this lane's ldmatrix row address at the chunk.
__device__ __forceinline__ void chunk_mma(const Fragments<Format::int4>& f, unsigned x_address,
                                          float (&acc)[4]) {
    unsigned b0[4], b1[4];
    ldmatrix_x4(x_address, b0);       // k 0..31: steps 0 and 1
    ldmatrix_x4(x_address + 64, b1);  // k 32..63: steps 2 and 3
    const float2 s0 = bf16x2_to_float2(f.s.x), s1 = bf16x2_to_float2(f.s.y);
    unsigned a[4];
    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    dequant(f.w.x, a);
    mma_bf16(t, a, b0[0], b0[1]);
    dequant(f.w.y, a);
    mma_bf16(t, a, b0[2], b0[3]);
    acc[0] = fmaf(s0.x, t[0], acc[0]);
    acc[1] = fmaf(s0.x, t[1], acc[1]);
    acc[2] = fmaf(s0.y, t[2], acc[2]);
    acc[3] = fmaf(s0.y, t[3], acc[3]);
    float u[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    dequant(f.w.z, a);
    mma_bf16(u, a, b1[0], b1[1]);
    dequant(f.w.w, a);
    mma_bf16(u, a, b1[2], b1[3]);
    acc[0] = fmaf(s1.x, u[0], acc[0]);
    acc[1] = fmaf(s1.x, u[1], acc[1]);
    acc[2] = fmaf(s1.y, u[2], acc[2]);
    acc[3] = fmaf(s1.y, u[3], acc[3]);
}

__device__ __forceinline__ void chunk_mma(const Fragments<Format::bf16>& f, unsigned x_address,
                                          float (&acc)[4]) {
    unsigned b0[4], b1[4];
    ldmatrix_x4(x_address, b0);
    ldmatrix_x4(x_address + 64, b1);
#pragma unroll
    for (int s = 0; s < 4; ++s) {
        const unsigned a[4] = {f.w[s].x, f.w[s].y, f.w[s].z, f.w[s].w};
        const unsigned* b = s < 2 ? b0 : b1;
        mma_bf16(acc, a, b[2 * (s & 1)], b[2 * (s & 1) + 1]);
    }
}

/// A lane's four outputs of a 16-column tile (v[0], v[1]: column col, tokens 2t and 2t + 1;
/// v[2], v[3]: column col + 8) into y [tokens x n], added to what is there with `accumulate`;
/// tokens from m on are dropped.
__device__ __forceinline__ void store_lane_outputs(bf16* y, int n, int col, int m, int t, const float (&v)[4],
                                                   int accumulate) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int token = 2 * t + (i & 1);
        if (token >= m) continue;
        bf16* out = y + std::uint64_t(token) * n + col + (i >> 1) * 8;
        *out = __float2bfloat16(v[i] + (accumulate ? __bfloat162float(*out) : 0.0f));
    }
}

/// The fused expert sum (ExpertSum) at the end of a block that has written its expert's rows of
/// column group `group`: the last of the launch's experts to get there sums the group's columns.
/// Every thread of the block calls it; `flag` is the block's shared int.
__device__ __forceinline__ void expert_sum_last(const Batch& batch, int n, const Workspace& ws,
                                                const ExpertSum& sum, int group, int& flag) {
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned* counter = ws.counters + (ws.counter_count - gridDim.x) + group;
        const unsigned arrived = atomicAdd(counter, 1u);
        flag = arrived == unsigned(batch.count - 1);
        if (flag) *counter = 0;  // every expert's rows are there: ready for the next launch
    }
    __syncthreads();
    if (!flag) return;
    __threadfence();
    constexpr int pairs = k_group_cols / 2;
    for (int i = threadIdx.x; i < sum.tokens * pairs; i += k_threads) {
        const int token = i / pairs, c = group * k_group_cols + 2 * (i % pairs);
        if (c < n)
            expert_sum_pair(sum.outs, sum.slots, sum.weights, token, sum.k, n, c, sum.y, sum.accumulate != 0);
    }
}

/// Bytes of shared memory the folded variant keeps before x: slice_chunks x 2 groups x k_rows
/// floats (-136 x each group's sum of x, per token).
__host__ __device__ constexpr std::size_t fold_bytes(int slice_chunks) {
    return std::size_t(slice_chunks) * 2 * k_rows * sizeof(float);
}

/// The kernel (see the top of this file). Dynamic shared memory: m_max x (slice_chunks x 64 +
/// k_pad) bf16 (after fold_bytes() when Fold). `slices` x `slice_chunks` >= k / 64; the last
/// slice may be shorter. Each warp keeps U chunks in flight ahead of the U it multiplies; Fold
/// (INT4 only) uses chunk_mma_folded. Before the wait for the previous kernel each warp asks the
/// L2 for its next `prefetch` chunks (skinny::prefetch_kib()). Rotate: the load ring as two
/// register sets used in turn (two rounds a loop iteration) instead of one copied into the other
/// every round; the same loads and products in the same order. Ring > 0 (INT4 only): no loads in
/// registers; each warp keeps `Ring` chunks in flight in shared-memory stages (ring_bytes(), at
/// the start of the dynamic shared memory) that the copy engine fills, one chunk a stage, and
/// refills a stage once the warp has multiplied its chunk; U and Rotate are then unused.
template <Format F, int U, bool Fold = false, bool Rotate = false, int Ring = 0>
__global__ void __launch_bounds__(k_threads)
    stream_gemm_kernel(Batch batch, int n, int k, int ldx, int slice_chunks, int slices, int accumulate,
                       Workspace ws, int prefetch, int silu, ExpertSum sum) {
    static_assert(!Fold || F == Format::int4, "only INT4 has a bias to fold");
    static_assert(Ring == 0 || F == Format::int4, "the stages hold INT4 chunks");
    extern __shared__ uint4 dynamic_smem[];
    __shared__ int last_block;
    const unsigned ring_base = static_cast<unsigned>(__cvta_generic_to_shared(dynamic_smem));
    float* fold = reinterpret_cast<float*>(reinterpret_cast<char*>(dynamic_smem) + ring_bytes(Ring));
    bf16* xs = reinterpret_cast<bf16*>(reinterpret_cast<char*>(fold) + (Fold ? fold_bytes(slice_chunks) : 0));
    const int e = blockIdx.z, slice = blockIdx.y, group = blockIdx.x;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int tile = group * k_warps + warp;
    const int first = slice * slice_chunks;
    const int len = min(k / k_chunk, first + slice_chunks) - first;  // chunks in this slice
    const int m = batch.rows[e];
    const int stride = len * k_chunk + k_pad;
    const bool active = tile * k_tile < n;
    const Stream<F> stream(batch.w[e], n, k, active ? tile : 0, first, lane);

    // The first weights do not depend on x: ask for them before staging it, and (launched as a
    // programmatic dependent launch) before the previous kernel has finished.
    skinny::pdl_trigger();
    // Ring: this warp's stages and their barriers.
    const unsigned stages = ring_base + unsigned(warp * Ring * k_stage_bytes);
    const unsigned bars = ring_base + unsigned(k_warps * Ring * k_stage_bytes + warp * Ring * 8);
    Fragments<F> next[Ring > 0 ? 1 : U];
    if constexpr (Ring > 0) {
        if (active && lane == 0) {
            for (int s = 0; s < Ring; ++s) mbar_init(bars + 8 * s);
            mbar_init_fence();
            for (int c = 0; c < min(len, Ring); ++c)
                ring_fill(stages + c * k_stage_bytes, bars + 8 * c, stream.w + c * 32, stream.s + c * 8);
            if (min(len, Ring + prefetch) > Ring) stream.prefetch(Ring, min(len, Ring + prefetch));
        }
    } else {
#pragma unroll
        for (int u = 0; u < U; ++u)
            if (active && u < len) next[u] = stream.load(u);
        if (active && lane == 0 && min(len, U + prefetch) > U) stream.prefetch(U, min(len, U + prefetch));
    }
    skinny::pdl_wait();
    const bf16* x = batch.x[e] + std::uint64_t(first) * k_chunk;
    const int vecs = len * (k_chunk / 8);
    for (int i = threadIdx.x; i < m * vecs; i += k_threads) {
        const int r = i / vecs, v = i - r * vecs;
        const bf16* from = x + std::uint64_t(r) * ldx + v * 8;
        *reinterpret_cast<uint4*>(xs + r * stride + v * 8) =
            silu ? skinny::silu_load(from, k) : *reinterpret_cast<const uint4*>(from);
    }
    __syncthreads();
    if constexpr (Fold) {
        // -136 x the sum of each 32 k of x, for every token slot (0 past m: those outputs are dropped).
        for (int i = threadIdx.x; i < 2 * len * k_rows; i += k_threads) {
            const int group = i / k_rows, r = i - group * k_rows;
            float x_sum = 0.0f;
            if (r < m) {
                const uint4* p = reinterpret_cast<const uint4*>(xs + r * stride + group * 32);
#pragma unroll
                for (int v = 0; v < 4; ++v) {
                    const uint4 q = p[v];
                    const unsigned words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        const float2 f = bf16x2_to_float2(words[j]);
                        x_sum += f.x + f.y;
                    }
                }
            }
            fold[i] = -136.0f * x_sum;
        }
        __syncthreads();
    }
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (active) {
        // ldmatrix row = token (lane % 8); rows past m repeat row 0 (their outputs are dropped).
        const int row = (lane & 7) < m ? (lane & 7) : 0;
        const unsigned x_address =
            static_cast<unsigned>(__cvta_generic_to_shared(xs + row * stride + 8 * (lane >> 3)));
        // Chunk c of the slice.
        auto multiply_one = [&](const Fragments<F>& f, int c) {
            const unsigned address = x_address + unsigned(c) * k_chunk * 2;
            if constexpr (Fold) {
                const float2* bias = reinterpret_cast<const float2*>(fold) + c * k_rows + (lane & 3);
                chunk_mma_folded(f, address, bias[0], bias[k_rows / 2], acc);
            } else {
                chunk_mma(f, address, acc);
            }
        };
        // The U chunks from c0 (those past the slice are skipped).
        auto multiply = [&](const Fragments<F>(&f)[U], int c0) {
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (c0 + u < len) multiply_one(f[u], c0 + u);
        };
        auto fetch = [&](Fragments<F>(&f)[U], int c0) {
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (c0 + u < len) f[u] = stream.load(c0 + u);
        };
        if constexpr (Ring > 0) {
            // Wait for chunk c's stage, multiply it, then (every lane done with the stage) have
            // the copy engine refill it with chunk c + Ring.
            for (int c = 0; c < len; ++c) {
                const int s = c % Ring;
                mbar_wait(bars + 8 * s, unsigned(c / Ring) & 1u);
                const unsigned stage = stages + unsigned(s * k_stage_bytes);
                Fragments<F> f[1];
                asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
                             : "=r"(f[0].w.x), "=r"(f[0].w.y), "=r"(f[0].w.z), "=r"(f[0].w.w)
                             : "r"(stage + 16 * lane));
                asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];"
                             : "=r"(f[0].s.x), "=r"(f[0].s.y)
                             : "r"(stage + 512 + 8 * (lane >> 2)));
                multiply_one(f[0], c);
                if (c + Ring < len) {
                    __syncwarp();
                    if (lane == 0)
                        ring_fill(stage, bars + 8 * s, stream.w + (c + Ring) * 32, stream.s + (c + Ring) * 8);
                }
            }
        } else if constexpr (Rotate) {
            Fragments<F> other[U];
            for (int c0 = 0; c0 < len; c0 += 2 * U) {
                fetch(other, c0 + U);
                multiply(next, c0);
                fetch(next, c0 + 2 * U);
                multiply(other, c0 + U);
            }
        } else {
            for (int c0 = 0; c0 < len; c0 += U) {
                Fragments<F> cur[U];
#pragma unroll
                for (int u = 0; u < U; ++u) cur[u] = next[u];
                fetch(next, c0 + U);
                multiply(cur, c0);
            }
        }
    }
    // acc[0], acc[1]: column g, tokens 2t and 2t + 1; acc[2], acc[3]: column g + 8.
    const int g = lane >> 2, t = lane & 3;
    const int col = tile * k_tile + g;
    if (slices == 1) {
        if (active) store_lane_outputs(batch.y[e], n, col, m, t, acc, accumulate);
        if (sum.y != nullptr) expert_sum_last(batch, n, ws, sum, group, last_block);
        return;
    }
    float* partial = ws.partial + (std::uint64_t(e) * slices + slice) * k_rows * std::uint64_t(n);
    if (active)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int token = 2 * t + (i & 1);
            if (token < m) partial[std::uint64_t(token) * n + col + (i >> 1) * 8] = acc[i];
        }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned* counter = ws.counters + std::uint64_t(e) * gridDim.x + group;
        const unsigned arrived = atomicAdd(counter, 1u);
        last_block = arrived == unsigned(slices - 1);
        if (last_block) *counter = 0;  // every block of the group has arrived: ready for the next launch
    }
    __syncthreads();
    if (!last_block) return;
    __threadfence();
    const float* all = ws.partial + std::uint64_t(e) * slices * k_rows * std::uint64_t(n);
    bf16* y = batch.y[e];
    for (int i = threadIdx.x; i < k_group_cols * m; i += k_threads) {
        const int token = i / k_group_cols, c = group * k_group_cols + i % k_group_cols;
        if (c >= n) continue;
        float total = 0.0f;
        for (int s = 0; s < slices; ++s) total += __ldcg(all + (std::uint64_t(s) * k_rows + token) * n + c);
        bf16* out = y + std::uint64_t(token) * n + c;
        *out = __float2bfloat16(total + (accumulate ? __bfloat162float(*out) : 0.0f));
    }
    if (sum.y != nullptr) expert_sum_last(batch, n, ws, sum, group, last_block);
}

/// How run() cuts one launch: k slices of slice_chunks chunks, and the dynamic shared memory.
struct LaunchShape {
    int slices = 1, slice_chunks = 1;
    std::size_t smem = 0;
    bool ok = false;  ///< false: x of one chunk does not fit, or the workspace is too small
};

/// Reads the device's SM count and shared-memory limit and lets both kernels use it; once per
/// device, before the first run() (and outside any capture).
cudaError_t setup(int device);
/// Whether the kernels take an [n x k] matrix (n % 16 == 0, k % 64 == 0).
bool fits(int n, int k);
/// The slices of one launch over `count` matrices with at most `max_rows` rows of x. INT4: slices
/// of at most 32 chunks (k 2,048), more where the blocks would not fill every SM once (the blocks
/// that fit an SM at once, from the kernel's registers and the launch's shared memory); bf16: one
/// slice when the column groups alone give 4 blocks per SM, else enough slices for that. Each at
/// least two rounds of the unroll for INT4, four for bf16, within the workspace and the shared
/// memory.
LaunchShape plan_launch(Format format, int n, int k, int count, int max_rows, const Workspace& ws);
/// Enqueues the batch (rows above k_rows run as more launches of up to k_rows rows each). With
/// `silu`, x' = SiLU(gate) * up of x's rows (gate at [0, k), up at [k, 2k); ldx >= 2k), rounded as
/// the silu_mul kernel rounds it: the SiLU-and-mul in the staging of x.
/// With `sum` (its y set), the launch also does the layer's expert sum (ExpertSum): the batch must
/// be one launch (at most k_rows rows an expert) and its y the rows `sum.outs` stacks.
cudaError_t run(Format format, const Batch& batch, int n, int k, int ldx, bool accumulate,
                const Workspace& ws, cudaStream_t stream, bool silu = false, const ExpertSum& sum = {});
/// Repacks one INT4 matrix from the checkpoint's layout into `out` (matrix_bytes(int4, n, k)).
cudaError_t repack_int4(const unsigned* ct_words, const bf16* ct_scales, void* out, int n, int k,
                        cudaStream_t s);
/// Repacks one row-major bf16 [n][k] matrix into `out` (matrix_bytes(bf16, n, k)).
cudaError_t repack_bf16(const bf16* w, void* out, int n, int k, cudaStream_t s);

/// Repacks an INT4 matrix from the checkpoint's layout (compressed-tensors "pack-quantized":
/// int32 words [n][k/8], weight i of a word at bits 4i, stored as q + 8; bf16 scales [n][k/32])
/// into the layout above at `out` (matrix_bytes(int4, n, k)): one thread per output word, then
/// one per output scale.
__global__ void int4_repack_kernel(const unsigned* ct_words, const bf16* ct_scales, unsigned char* out, int n,
                                   int k);
/// Repacks a bf16 matrix from row-major [n][k] (the checkpoint's nn.Linear weight) into the
/// layout above at `out`: one thread per output bf16 pair.
__global__ void bf16_repack_kernel(const bf16* w, unsigned char* out, int n, int k);

}  // namespace tpverify::cuda::sg
