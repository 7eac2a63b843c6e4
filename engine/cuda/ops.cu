// The layer's small kernels: one element (or one 8-element vector) per thread over many blocks,
// so that each costs about its launch and one round trip to memory.
#include <algorithm>

#include "engine/cuda/ops.cuh"
#include "engine/cuda/skinny_gemm.cuh"
#include "engine/knobs.hpp"

namespace tpverify::cuda {
namespace {

constexpr int k_threads = 128;

unsigned blocks_for(std::uint64_t items) {
    const std::uint64_t b = (items + k_threads - 1) / k_threads;
    return unsigned(b == 0 ? 1 : (b > 65535 ? 65535 : b));
}

// One block per row; each thread one pair, reduced through shared memory. Blocks from `rows`
// on work on the second set of rows (x2, width2, ld2): two norms in one launch.
__global__ void rmsnorm_rows_kernel(bf16* x, int width, int ld, int rows, bf16* x2, int width2, int ld2,
                                    const bf16* gamma, float eps) {
    skinny::pdl_trigger();  // the next GEMM may launch and fetch its weights
    __shared__ float partial[32];
    const bool second = int(blockIdx.x) >= rows;
    bf16* row = second ? x2 + std::uint64_t(blockIdx.x - rows) * ld2 : x + std::uint64_t(blockIdx.x) * ld;
    if (second) width = width2;
    // gamma is a weight, which no kernel writes: fetched before waiting for the previous kernel.
    float2 v[4], g[4];
    int n = 0;
    for (int i = 2 * threadIdx.x; i < width && n < 4; i += 2 * blockDim.x, ++n)
        g[n] = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(gamma + i));
    skinny::pdl_wait();  // launched early (PDL): the previous kernel's writes first
    float squares = 0.0f;
    n = 0;
    for (int i = 2 * threadIdx.x; i < width && n < 4; i += 2 * blockDim.x, ++n) {
        v[n] = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(row + i));
        squares += v[n].x * v[n].x + v[n].y * v[n].y;
    }
    for (int o = 16; o > 0; o >>= 1) squares += __shfl_xor_sync(0xffffffffu, squares, o);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = squares;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < int(blockDim.x + 31) / 32; ++w) total += partial[w];
    const float inv = rsqrtf(total / float(width) + eps);
    n = 0;
    for (int i = 2 * threadIdx.x; i < width && n < 4; i += 2 * blockDim.x, ++n)
        *reinterpret_cast<__nv_bfloat162*>(row + i) =
            __floats2bfloat162_rn(v[n].x * inv * g[n].x, v[n].y * inv * g[n].y);
}

__global__ void rope_kernel(bf16* x, int rows, int pairs_per_row, int ld, int position) {
    skinny::pdl_trigger();  // the next GEMM may launch and fetch its weights
    skinny::pdl_wait();     // launched early (PDL): the previous kernel's writes first
    const std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x;
    if (i >= std::uint64_t(rows) * pairs_per_row) return;
    const int r = int(i / pairs_per_row), p = int(i % pairs_per_row);
    __nv_bfloat162* pair = reinterpret_cast<__nv_bfloat162*>(x + std::uint64_t(r) * ld) + p;
    const float2 v = __bfloat1622float2(*pair);
    const float angle = float(position + r) * __powf(10000.0f, -float(p % 32) / 32.0f);
    float s, c;
    __sincosf(angle, &s, &c);
    *pair = __floats2bfloat162_rn(v.x * c - v.y * s, v.x * s + v.y * c);
}

__global__ void copy_rows_kernel(const bf16* src, int rows, int pairs_per_row, int ld, bf16* dst,
                                 int dst_ld) {
    skinny::pdl_trigger();  // the next GEMM may launch and fetch its weights
    skinny::pdl_wait();     // launched early (PDL): the previous kernel's writes first
    const std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x;
    if (i >= std::uint64_t(rows) * pairs_per_row) return;
    const int r = int(i / pairs_per_row), p = int(i % pairs_per_row);
    reinterpret_cast<__nv_bfloat162*>(dst + std::uint64_t(r) * dst_ld)[p] =
        reinterpret_cast<const __nv_bfloat162*>(src + std::uint64_t(r) * ld)[p];
}

// Blocks [0, rope_blocks): rope_kernel's work on x; the rest: copy_rows_kernel's from src (a
// different buffer), so the two need no order.
__global__ void rope_copy_kernel(bf16* x, int rows, int pairs_per_row, int ld, int position,
                                 unsigned rope_blocks, const bf16* src, int copy_pairs, int src_ld, bf16* dst,
                                 int dst_ld) {
    skinny::pdl_trigger();  // the next GEMM may launch and fetch its weights
    skinny::pdl_wait();     // launched early (PDL): the previous kernel's writes first
    if (blockIdx.x < rope_blocks) {
        const std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x;
        if (i >= std::uint64_t(rows) * pairs_per_row) return;
        const int r = int(i / pairs_per_row), p = int(i % pairs_per_row);
        __nv_bfloat162* pair = reinterpret_cast<__nv_bfloat162*>(x + std::uint64_t(r) * ld) + p;
        const float2 v = __bfloat1622float2(*pair);
        const float angle = float(position + r) * __powf(10000.0f, -float(p % 32) / 32.0f);
        float s, c;
        __sincosf(angle, &s, &c);
        *pair = __floats2bfloat162_rn(v.x * c - v.y * s, v.x * s + v.y * c);
        return;
    }
    const std::uint64_t i = (blockIdx.x - rope_blocks) * std::uint64_t(blockDim.x) + threadIdx.x;
    if (i >= std::uint64_t(rows) * copy_pairs) return;
    const int r = int(i / copy_pairs), p = int(i % copy_pairs);
    reinterpret_cast<__nv_bfloat162*>(dst + std::uint64_t(r) * dst_ld)[p] =
        reinterpret_cast<const __nv_bfloat162*>(src + std::uint64_t(r) * src_ld)[p];
}

// One warp per token: k rounds of a warp-wide arg-max over the sigmoid scores.
__global__ void topk_kernel(const bf16* logits, int tokens, int experts, int k, int* ids, float* weights) {
    skinny::pdl_trigger();  // the next GEMM may launch and fetch its weights
    skinny::pdl_wait();     // launched early (PDL): the previous kernel's writes first
    const int warp = int((blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / 32),
              lane = threadIdx.x & 31;
    if (warp >= tokens) return;
    const bf16* row = logits + std::uint64_t(warp) * experts;
    constexpr int k_per_lane = 16;  // up to 512 experts
    float score[k_per_lane];
#pragma unroll
    for (int j = 0; j < k_per_lane; ++j) {
        const int e = lane + 32 * j;
        score[j] = e < experts ? 1.0f / (1.0f + __expf(-__bfloat162float(row[e]))) : -1.0f;
    }
    float sum = 0.0f, mine = 0.0f;
    int my_id = -1;
    for (int round = 0; round < k; ++round) {
        float best = -1.0f;
        int best_j = 0;
#pragma unroll
        for (int j = 0; j < k_per_lane; ++j)
            if (score[j] > best) best = score[j], best_j = j;
        int id = lane + 32 * best_j;
        for (int o = 16; o > 0; o >>= 1) {
            const float other = __shfl_xor_sync(0xffffffffu, best, o);
            const int other_id = __shfl_xor_sync(0xffffffffu, id, o);
            if (other > best || (other == best && other_id < id)) best = other, id = other_id;
        }
        if (lane == round) mine = best, my_id = id;
        sum += best;
        if ((id & 31) == lane)
#pragma unroll
            for (int j = 0; j < k_per_lane; ++j)       // (a constant index keeps score in registers)
                if (j == (id >> 5)) score[j] = -2.0f;  // taken
    }
    if (lane < k) {
        ids[std::uint64_t(warp) * k + lane] = my_id;
        weights[std::uint64_t(warp) * k + lane] = sum > 0.0f ? mine / sum : 0.0f;
    }
}

// The same selection with one 32-bit key per expert (sigmoid bits + 1, 0 = taken or absent:
// positive floats order as their bits) and the warp's reductions in hardware: per round one
// redux.max over the lanes' best keys, one redux.min over the tied lanes' expert ids (the lowest
// id wins a tie, as above), and only the winning lane rescans its keys (a tree of maxima).
// The router score of a logit as a top-k key: the sigmoid's bits + 1 (0 means "taken"); keys
// order as the scores do, the sigmoid being positive.
__device__ __forceinline__ unsigned sigmoid_key(bf16 logit) {
    return __float_as_uint(1.0f / (1.0f + __expf(-__bfloat162float(logit)))) + 1u;
}

__global__ void topk_redux_kernel(const bf16* logits, int tokens, int experts, int k, int* ids,
                                  float* weights) {
    skinny::pdl_trigger();
    skinny::pdl_wait();
    const int warp = int((blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / 32),
              lane = threadIdx.x & 31;
    if (warp >= tokens) return;
    const bf16* row = logits + std::uint64_t(warp) * experts;
    constexpr int k_per_lane = 16;  // up to 512 experts
    unsigned key[k_per_lane];
#pragma unroll
    for (int j = 0; j < k_per_lane; ++j) {
        const int e = lane + 32 * j;
        key[j] = e < experts ? sigmoid_key(row[e]) : 0u;
    }
    auto lane_best = [&](unsigned& best, int& best_j) {
        unsigned m[k_per_lane / 2];
#pragma unroll
        for (int j = 0; j < k_per_lane / 2; ++j) m[j] = max(key[2 * j], key[2 * j + 1]);
#pragma unroll
        for (int w = k_per_lane / 4; w >= 1; w /= 2)
#pragma unroll
            for (int j = 0; j < w; ++j) m[j] = max(m[j], m[j + w]);
        best = m[0];
        best_j = k_per_lane;
#pragma unroll
        for (int j = k_per_lane - 1; j >= 0; --j)
            if (key[j] == best) best_j = j;  // the lowest j (lowest id) of the lane's ties
    };
    unsigned best;
    int best_j;
    lane_best(best, best_j);
    float sum = 0.0f, mine = 0.0f;
    int my_id = -1;
    for (int round = 0; round < k; ++round) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        const unsigned top = __reduce_max_sync(0xffffffffu, best);
        const unsigned id = __reduce_min_sync(0xffffffffu, best == top ? unsigned(lane + 32 * best_j) : ~0u);
#else
        unsigned top = best;
        for (int o = 16; o > 0; o >>= 1) top = max(top, __shfl_xor_sync(0xffffffffu, top, o));
        unsigned id = best == top ? unsigned(lane + 32 * best_j) : ~0u;
        for (int o = 16; o > 0; o >>= 1) id = min(id, __shfl_xor_sync(0xffffffffu, id, o));
#endif
        const float score = top == 0u ? 0.0f : __uint_as_float(top - 1u);
        if (lane == round) mine = score, my_id = int(id);
        sum += score;
        if (int(id & 31u) == lane) {
#pragma unroll
            for (int j = 0; j < k_per_lane; ++j)     // (a constant index keeps key in registers)
                if (j == int(id >> 5)) key[j] = 0u;  // taken
            lane_best(best, best_j);
        }
    }
    if (lane < k) {
        ids[std::uint64_t(warp) * k + lane] = my_id;
        weights[std::uint64_t(warp) * k + lane] = sum > 0.0f ? mine / sum : 0.0f;
    }
}

// One block of k_split_warps warps per token: warp w ranks the experts of the 32-wide groups w,
// w + k_split_warps, ... (up to 4 keys a lane) and keeps its own top k, as topk_redux_kernel does
// for a whole row; warp 0 then takes the top k of the k_split_warps x k candidates (k <= 32 /
// k_split_warps), one candidate a lane. Each warp's chain is 4 keys a lane instead of 16 and the
// warps run on the SM's four schedulers at once. The same experts as the other two kernels: a
// warp's top k holds every expert of the row's top k among its own, ties to the lower id.
constexpr int k_split_warps = 4;

__global__ void __launch_bounds__(k_split_warps * 32)
    topk_split_kernel(const bf16* logits, int tokens, int experts, int k, int* ids, float* weights) {
    skinny::pdl_trigger();
    skinny::pdl_wait();
    __shared__ unsigned cand_key[32];
    __shared__ int cand_id[32];
    const int token = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    if (token >= tokens) return;
    const bf16* row = logits + std::uint64_t(token) * experts;
    constexpr int k_per_lane = 512 / 32 / k_split_warps;
    unsigned key[k_per_lane];
#pragma unroll
    for (int j = 0; j < k_per_lane; ++j) {
        const int e = lane + 32 * (warp + k_split_warps * j);
        key[j] = e < experts ? sigmoid_key(row[e]) : 0u;
    }
    // This lane's best key and its j (the lowest j, so the lowest expert id, among equal keys).
    auto lane_best = [&](unsigned& best, int& best_j) {
        best = key[0], best_j = 0;
#pragma unroll
        for (int j = 1; j < k_per_lane; ++j)
            if (key[j] > best) best = key[j], best_j = j;
    };
    unsigned best;
    int best_j;
    lane_best(best, best_j);
    for (int round = 0; round < k; ++round) {
        const unsigned top = __reduce_max_sync(0xffffffffu, best);
        const unsigned id = __reduce_min_sync(
            0xffffffffu, best == top ? unsigned(lane + 32 * (warp + k_split_warps * best_j)) : ~0u);
        if (lane == 0) cand_key[warp * k + round] = top, cand_id[warp * k + round] = int(id);
        if (int(id & 31u) == lane) {
#pragma unroll
            for (int j = 0; j < k_per_lane; ++j)  // (a constant index keeps key in registers)
                if (j == int(id >> 5) / k_split_warps) key[j] = 0u;  // taken
            lane_best(best, best_j);
        }
    }
    __syncthreads();
    if (warp != 0) return;
    unsigned mine_key = lane < k_split_warps * k ? cand_key[lane] : 0u;
    const unsigned mine_id = lane < k_split_warps * k ? unsigned(cand_id[lane]) : ~0u;
    float sum = 0.0f, mine = 0.0f;
    int my_id = -1;
    for (int round = 0; round < k; ++round) {
        const unsigned top = __reduce_max_sync(0xffffffffu, mine_key);
        const unsigned id = __reduce_min_sync(0xffffffffu, mine_key == top ? mine_id : ~0u);
        const float score = top == 0u ? 0.0f : __uint_as_float(top - 1u);
        if (lane == round) mine = score, my_id = int(id);
        sum += score;
        if (mine_id == id) mine_key = 0u;  // taken
    }
    if (lane < k) {
        ids[std::uint64_t(token) * k + lane] = my_id;
        weights[std::uint64_t(token) * k + lane] = sum > 0.0f ? mine / sum : 0.0f;
    }
}

__global__ void silu_mul_kernel(bf16* x, int rows, int inter, int ld) {
    skinny::pdl_trigger();  // the next GEMM may launch and fetch its weights
    skinny::pdl_wait();     // launched early (PDL): the previous kernel's writes first
    const std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x;
    const int pairs = inter / 2;
    if (i >= std::uint64_t(rows) * pairs) return;
    const int r = int(i / pairs), p = int(i % pairs);
    __nv_bfloat162* gate = reinterpret_cast<__nv_bfloat162*>(x + std::uint64_t(r) * ld) + p;
    const float2 g = __bfloat1622float2(*gate);
    const float2 u = __bfloat1622float2(*(gate + pairs));
    *gate = __floats2bfloat162_rn(g.x / (1.0f + __expf(-g.x)) * u.x, g.y / (1.0f + __expf(-g.y)) * u.y);
}

__global__ void expert_sum_kernel(const bf16* outs, const int* slots, const float* weights, int tokens, int k,
                                  int hidden, bf16* y, int accumulate) {
    skinny::pdl_trigger();  // the next GEMM may launch and fetch its weights
    skinny::pdl_wait();     // launched early (PDL): the previous kernel's writes first
    const std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x;
    const int pairs = hidden / 2;
    if (i >= std::uint64_t(tokens) * pairs) return;
    expert_sum_pair(outs, slots, weights, int(i / pairs), k, hidden, 2 * int(i % pairs), y, accumulate != 0);
}

}  // namespace

TopkKernel topk_kernel_choice() {
    static const TopkKernel chosen = env_enum(
        "TPVERIFY_TOPK", {std::pair{"shfl", TopkKernel::shfl}, std::pair{"redux", TopkKernel::redux}},
        TopkKernel::split);
    return chosen;
}

bool ops_pdl() {
    static const bool on = skinny::pdl_enabled() && !env_is("TPVERIFY_PDL_OPS", "0");
    return on;
}

namespace {

// Launches with programmatic dependent launch where enabled: the kernel's blocks are placed
// while the previous kernel runs and wait for it in griddepcontrol.wait.
template <typename... Params, typename... Args>
cudaError_t launch(void (*kernel)(Params...), unsigned blocks, unsigned threads, cudaStream_t s,
                   Args... args) {
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(blocks, 1, 1);
    config.blockDim = dim3(threads, 1, 1);
    config.stream = s;
    cudaLaunchAttribute pdl{};
    pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    pdl.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = &pdl;
    config.numAttrs = ops_pdl() ? 1 : 0;
    return cudaLaunchKernelEx(&config, kernel, Params(args)...);
}

}  // namespace

cudaError_t rmsnorm_rows(bf16* x, int rows, int width, int ld, const bf16* gamma, float eps, cudaStream_t s) {
    if (width % 2 != 0 || ld % 2 != 0 || width > 8 * 1024) return cudaErrorInvalidValue;
    // Up to 4 pairs per thread, at least one warp.
    const int threads = std::max(32, ((width / 2 + 3) / 4 + 31) / 32 * 32);
    return launch(rmsnorm_rows_kernel, unsigned(rows), unsigned(threads), s, x, width, ld, rows, x, width, ld,
                  gamma, eps);
}

cudaError_t rmsnorm_rows2(bf16* x, int width, int ld, bf16* x2, int width2, int ld2, int rows,
                          const bf16* gamma, float eps, cudaStream_t s) {
    for (int w : {width, width2, ld, ld2})
        if (w % 2 != 0) return cudaErrorInvalidValue;
    if (width > 8 * 1024 || width2 > 8 * 1024) return cudaErrorInvalidValue;
    const int wide = std::max(width, width2);
    const int threads = std::max(32, ((wide / 2 + 3) / 4 + 31) / 32 * 32);
    return launch(rmsnorm_rows_kernel, unsigned(2 * rows), unsigned(threads), s, x, width, ld, rows, x2,
                  width2, ld2, gamma, eps);
}

cudaError_t rope_kv_write(bf16* x, int rows, int width, int ld, int position, const bf16* src, int copy_width,
                          int src_ld, bf16* cache, int cache_width, int at, cudaStream_t s) {
    for (int w : {width, ld, copy_width, src_ld, cache_width})
        if (w % 2 != 0) return cudaErrorInvalidValue;
    if (at < 0) return cudaErrorInvalidValue;
    const unsigned rope_blocks = blocks_for(std::uint64_t(rows) * (width / 2));
    const unsigned copy_blocks = blocks_for(std::uint64_t(rows) * (copy_width / 2));
    return launch(rope_copy_kernel, rope_blocks + copy_blocks, unsigned(k_threads), s, x, rows, width / 2, ld,
                  position, rope_blocks, src, copy_width / 2, src_ld, cache + std::uint64_t(at) * cache_width,
                  cache_width);
}

cudaError_t rope(bf16* x, int rows, int width, int ld, int position, cudaStream_t s) {
    if (width % 2 != 0 || ld % 2 != 0) return cudaErrorInvalidValue;
    return launch(rope_kernel, blocks_for(std::uint64_t(rows) * (width / 2)), k_threads, s, x, rows,
                  width / 2, ld, position);
}

cudaError_t kv_write(const bf16* src, int rows, int width, int ld, bf16* cache, int cache_width, int at,
                     cudaStream_t s) {
    if (width % 2 != 0 || ld % 2 != 0 || cache_width % 2 != 0 || at < 0) return cudaErrorInvalidValue;
    return launch(copy_rows_kernel, blocks_for(std::uint64_t(rows) * (width / 2)), k_threads, s, src, rows,
                  width / 2, ld, cache + std::uint64_t(at) * cache_width, cache_width);
}

cudaError_t topk(const bf16* logits, int tokens, int experts, int k, int* ids, float* weights,
                 cudaStream_t s) {
    if (k < 1 || k > 32 || experts > 512 || experts < k) return cudaErrorInvalidValue;
    const TopkKernel choice = topk_kernel_choice();
    if (choice == TopkKernel::split && k * k_split_warps <= 32)
        return launch(topk_split_kernel, unsigned(tokens), unsigned(k_split_warps * 32), s, logits, tokens,
                      experts, k, ids, weights);
    return launch(choice == TopkKernel::shfl ? topk_kernel : topk_redux_kernel,
                  blocks_for(std::uint64_t(tokens) * 32), k_threads, s, logits, tokens, experts, k, ids,
                  weights);
}

cudaError_t silu_mul(bf16* x, int rows, int inter, int ld, cudaStream_t s) {
    if (inter % 2 != 0 || ld % 2 != 0) return cudaErrorInvalidValue;
    return launch(silu_mul_kernel, blocks_for(std::uint64_t(rows) * (inter / 2)), k_threads, s, x, rows,
                  inter, ld);
}

cudaError_t expert_sum(const bf16* outs, const int* slots, const float* weights, int tokens, int k,
                       int hidden, bf16* y, bool accumulate, cudaStream_t s) {
    if (hidden % 2 != 0) return cudaErrorInvalidValue;
    return launch(expert_sum_kernel, blocks_for(std::uint64_t(tokens) * (hidden / 2)), k_threads, s, outs,
                  slots, weights, tokens, k, hidden, y, accumulate ? 1 : 0);
}

}  // namespace tpverify::cuda
