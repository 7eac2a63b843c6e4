#pragma once
// The router's split top-k as device functions: 4 warps rank a token's experts, a quarter each,
// then one warp merges their candidates. The top-k kernel (engine/cuda/ops.cu) and the router
// launch that ends in its own top-k (engine/cuda/skinny_gemm.cu, TopkTail) both run this code, so
// they pick the same experts with the same weights, bit for bit.
#include "engine/cuda/common.cuh"

namespace tpverify::cuda::topk_dev {

constexpr int k_split_warps = 4;  ///< warps that rank one token's experts
constexpr int k_max_experts = 512;
/// The largest k the split form takes: every warp's k candidates in one warp's lanes.
constexpr int k_max_k = 32 / k_split_warps;

/// The router score of a logit as a top-k key: the sigmoid's bits + 1 (0 means "taken"); keys
/// order as the scores do, the sigmoid being positive.
__device__ __forceinline__ unsigned sigmoid_key(bf16 logit) {
    return __float_as_uint(1.0f / (1.0f + __expf(-__bfloat162float(logit)))) + 1u;
}

/// Warp `warp` (< k_split_warps) ranks the experts of the 32-wide groups warp, warp +
/// k_split_warps, ... of `row` (`experts` <= k_max_experts logits, read through the L2: another
/// block of the same launch may have written them) and writes its top k keys and ids, best first,
/// to cand_key / cand_id [warp * k + round] (k <= k_max_k). Among equal keys the lower id wins.
__device__ __forceinline__ void candidates(const bf16* row, int experts, int k, int warp, int lane,
                                           unsigned* cand_key, int* cand_id) {
    constexpr int k_per_lane = k_max_experts / 32 / k_split_warps;
    unsigned key[k_per_lane];
#pragma unroll
    for (int j = 0; j < k_per_lane; ++j) {
        const int e = lane + 32 * (warp + k_split_warps * j);
        key[j] = e < experts ? sigmoid_key(__ldcg(row + e)) : 0u;
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
}

/// One warp: the top k of the k_split_warps x k candidates (one a lane) into ids[0, k) and their
/// scores normalised to sum 1 into weights[0, k). After candidates() of every warp of the token
/// (and a barrier).
__device__ __forceinline__ void finish(const unsigned* cand_key, const int* cand_id, int k, int lane, int* ids,
                                       float* weights) {
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
        ids[lane] = my_id;
        weights[lane] = sum > 0.0f ? mine / sum : 0.0f;
    }
}

}  // namespace tpverify::cuda::topk_dev
