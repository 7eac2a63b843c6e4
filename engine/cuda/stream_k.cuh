#pragma once
// The INT4 weight-streaming GEMM with the launch's work cut evenly over its warps (TPVERIFY_INT4=sk;
// "stream-K", Osama et al., "Stream-K: Work-centric Parallel Decomposition for Dense Matrix-Matrix
// Multiplication on the GPU", PPoPP 2023: the idea, our code).
//
// The sliced kernel (stream_gemm.cuh) gives each block one column group of one expert over one k
// slice, so a launch is whole rounds of the SMs' block slots plus a last, partial round. At one
// token the routed experts' down launch is 448 blocks for 396 slots (3 an SM on 132 SMs): the
// last 52 blocks stream their weights alone, at a fraction of the bandwidth. Here the work is the
// launch's "units" (one chunk of 64 k of one 16-column tile of one expert, expert-major, then tile,
// then chunk, which is also the order of the weights in memory within an expert) and warp w of the
// grid's W takes units [w N / W, (w + 1) N / W) of the N: the grid is exactly the block slots the SMs hold at
// once, and every warp streams the same number of chunks (± 1). On H100s it was right and slower
// than the sliced kernel (docs/benchmarks-gpu.md, 2026-12-07 tenth session): off by default.
//
// An item (one tile of one expert, all its chunks) whose units all belong to one warp is written by
// it. Otherwise each warp that holds part of it (a "piece") writes its fp32 sums to a slot of its
// own in the workspace (two a warp: the piece of its first item, and of its last) and takes a
// ticket on the item's counter; the warp that completes the item adds the pieces in warp order (so
// the result does not depend on who arrives last), writes y and sets the counter back to zero.
// Each block stages in shared memory the whole rows of x of every expert its warps touch (at most
// `slots`, host-computed), then the warps stream as the sliced kernel does: U chunks in flight in
// registers, plain dequantisation (dequant()), the first U asked for before the wait for the
// previous kernel (programmatic dependent launch).
#include "engine/cuda/stream_gemm.cuh"
#include "engine/cuda/stream_k_split.hpp"

namespace tpverify::cuda::sg {

/// The end of an item in a warp (its last chunk, or the warp's last unit): writes the item's y where
/// the warp holds all of it (`whole`), else the warp's piece, and the warp that completes the item
/// adds every piece in warp order and writes y. Scalars only: taken out of line, a struct argument
/// by reference would copy the kernel's parameters to the stack (inline, ptxas spilled less).
__device__ __forceinline__ void stream_k_flush(bf16* y, int m, int n, int accumulate, float* partial,
                                               unsigned* counters, long long units, long long warps,
                                               int chunks, long long w, long long item, int col0, bool whole,
                                               float a0, float a1, float a2, float a3) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int col = col0 + g;
    KSplit split;
    split.units = units;
    split.warps = warps;
    split.chunks = chunks;
    const float acc[4] = {a0, a1, a2, a3};
    if (whole) {
        store_lane_outputs(y, n, col, m, t, acc, accumulate);
        return;
    }
    float* mine = partial + std::uint64_t(ks_piece_slot(split, w, item)) * k_piece_floats;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int token = 2 * t + (i & 1);
        if (token < m) mine[token * k_tile + g + (i >> 1) * 8] = acc[i];
    }
    __threadfence();
    __syncwarp();
    const long long item_unit = item * split.chunks;  // the item's first unit
    const long long first_owner = ks_owner(split, item_unit);
    const long long last_owner = ks_owner(split, item_unit + split.chunks - 1);
    unsigned last = 0;
    if (lane == 0) {
        unsigned* counter = counters + item;
        const unsigned arrived = atomicAdd(counter, 1u);
        last = arrived == unsigned(last_owner - first_owner);
        if (last) *counter = 0;  // every piece is in: ready for the next launch
    }
    last = __shfl_sync(0xffffffffu, last, 0);
    if (!last) return;
    __threadfence();
    float total[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (long long p = first_owner; p <= last_owner; ++p) {
        const float* piece = partial + std::uint64_t(ks_piece_slot(split, p, item)) * k_piece_floats;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int token = 2 * t + (i & 1);
            if (token < m) total[i] += __ldcg(piece + token * k_tile + g + (i >> 1) * 8);
        }
    }
    store_lane_outputs(y, n, col, m, t, total, accumulate);
}

/// The stream-K kernel: grid W / 8 blocks of 8 warps (warps past W idle); dynamic shared memory
/// slots x max_rows x (k + k_pad) bf16. ws.counters: one per item (experts x tiles), zero before
/// and after; ws.partial: ks_partial_floats(split). U chunks in flight a warp; MinBlocks:
/// __launch_bounds__'s blocks an SM (the launcher's choice: stream_gemm.cu k_stream_k_kernel).
template <int U, int MinBlocks>
__global__ void __launch_bounds__(k_threads, MinBlocks)
    stream_k_kernel(Batch batch, int n, int k, int ldx, KSplit split, int accumulate, Workspace ws) {
    extern __shared__ uint4 dynamic_smem[];
    bf16* xs = reinterpret_cast<bf16*>(dynamic_smem);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const long long w = (long long)blockIdx.x * k_warps + warp;
    const int chunks = split.chunks, tiles = split.tiles;
    const int per_expert = tiles * chunks;
    const long long u0 = ks_begin(split, w);
    const int len = int(ks_begin(split, w + 1) - u0);  // this warp's units
    const int stride = k + k_pad;
    const int slot_elems = split.max_rows * stride;
    // The experts this block's warps touch: the x rows it stages.
    const int e_base = int(ks_block_first_expert(split, blockIdx.x, k_warps));
    const int e_count = ks_block_experts(split, blockIdx.x, k_warps);

    // The load cursor: the lane's pointers at the next unit to load, and the units left in its expert.
    int load_e = int(u0 / per_expert);
    int load_left = per_expert - int(u0 - (long long)load_e * per_expert);
    const uint4* load_w = nullptr;
    const uint2* load_s = nullptr;
    auto point = [&](int e, int offset) {  // unit `offset` of expert e
        load_w = static_cast<const uint4*>(batch.w[e]) + std::uint64_t(offset) * 32 + lane;
        load_s =
            reinterpret_cast<const uint2*>(static_cast<const char*>(batch.w[e]) + int4_packed_bytes(n, k)) +
            std::uint64_t(offset) * 8 + (lane >> 2);
    };
    if (len > 0) point(load_e, per_expert - load_left);
    auto load_next = [&]() {
        if (load_left == 0) {
            ++load_e;
            load_left = per_expert;
            point(load_e, 0);
        }
        Fragments<Format::int4> f{load_stream128(load_w), load_stream64(load_s)};
        load_w += 32;
        load_s += 8;
        --load_left;
        return f;
    };

    skinny::pdl_trigger();
    Fragments<Format::int4> next[U];
#pragma unroll
    for (int i = 0; i < U; ++i)
        if (i < len) next[i] = load_next();
    skinny::pdl_wait();
    for (int s = 0; s < e_count; ++s) {
        const int e = e_base + s;
        const int m = batch.rows[e];
        const int vecs = k / 8;
        for (int i = threadIdx.x; i < m * vecs; i += k_threads) {
            const int r = i / vecs, v = i - r * vecs;
            *reinterpret_cast<uint4*>(xs + s * slot_elems + r * stride + v * 8) =
                *reinterpret_cast<const uint4*>(batch.x[e] + std::uint64_t(r) * ldx + v * 8);
        }
    }
    __syncthreads();
    if (len <= 0) return;

    // The consume cursor: expert, tile and chunk of the next unit to multiply.
    int e = int(u0 / per_expert);
    int tile = int(u0 - (long long)e * per_expert) / chunks;
    int c = int(u0 - (long long)e * per_expert) - tile * chunks;
    auto x_address_of = [&](int expert) {
        const int rows = batch.rows[expert];
        const int row = (lane & 7) < rows ? (lane & 7) : 0;  // rows past m repeat row 0 (dropped)
        return static_cast<unsigned>(
            __cvta_generic_to_shared(xs + (expert - e_base) * slot_elems + row * stride + 8 * (lane >> 3)));
    };
    unsigned x_address = x_address_of(e);
    bool whole = c == 0;  // the warp holds the item's first chunk
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};

    auto multiply_one = [&](const Fragments<Format::int4>& f, int i) {
        chunk_mma(f, x_address + unsigned(c) * k_chunk * 2, acc);
        ++c;
        const bool end = c == chunks;
        if (end || i + 1 == len) {
            stream_k_flush(batch.y[e], batch.rows[e], n, accumulate, ws.partial, ws.counters, split.units,
                           split.warps, chunks, w, (long long)e * tiles + tile, tile * k_tile, whole && end,
                           acc[0], acc[1], acc[2], acc[3]);
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[j] = 0.0f;
            if (end && i + 1 < len) {
                c = 0;
                whole = true;
                if (++tile == tiles) {
                    tile = 0;
                    ++e;
                    x_address = x_address_of(e);
                }
            }
        }
    };

    // Each chunk's registers are refilled with the chunk U later as soon as it is taken: U chunks
    // stay in flight with one set of registers. (The sliced kernel copies the set first, which
    // sends the U loads out together; refilling made it slower, docs/benchmarks-gpu.md. Here both
    // ways measured the same: the copy at U = 4 and 2 blocks an SM, 660 us slower than the sliced
    // kernel a 1-token pass, this at U = 6, 655 us, on two H100s.)
    for (int i0 = 0; i0 < len; i0 += U) {
#pragma unroll
        for (int i = 0; i < U; ++i) {
            if (i0 + i >= len) break;
            const Fragments<Format::int4> f = next[i];
            if (i0 + U + i < len) next[i] = load_next();
            multiply_one(f, i0 + i);
        }
    }
}

}  // namespace tpverify::cuda::sg
