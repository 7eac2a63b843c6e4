#pragma once
// How the stream-K INT4 kernel (engine/cuda/stream_k.cuh) cuts a launch's work over its warps, and
// where each warp's partial sums go: plain arithmetic, shared by the kernel, its launcher and the
// host unit test (tests/engine/test_stream_k_split.cpp), which checks that every unit has one
// warp, every piece a slot of its own, and every block room for the x it stages.
//
// Units are one chunk (64 k) of one 16-column tile of one expert, numbered expert-major, then tile,
// then chunk; an item is one tile of one expert (`chunks` units). Warp w of the grid's W takes units
// [w N / W, (w + 1) N / W) of the launch's N.
#if defined(__CUDACC__)
#define TPV_HOST_DEVICE __host__ __device__
#else
#define TPV_HOST_DEVICE
#endif

namespace tpverify::cuda::sg {

struct KSplit {
    long long units = 0;  ///< experts x tiles x chunks
    long long warps = 0;  ///< the grid's warps, W (at most units: no warp is empty)
    int tiles = 0;        ///< 16-column tiles of n
    int chunks = 0;       ///< chunks of k
    int slots = 0;        ///< experts whose x a block stages, at most
    int max_rows = 0;     ///< rows of x an expert has, at most
};

/// The first unit of warp w (w >= W: one past the last unit; such warps of the last block are idle).
TPV_HOST_DEVICE inline long long ks_begin(const KSplit& s, long long w) {
    return w >= s.warps ? s.units : w * s.units / s.warps;
}
/// The warp whose units hold unit u: the largest w with ks_begin(w) <= u.
TPV_HOST_DEVICE inline long long ks_owner(const KSplit& s, long long u) {
    return ((u + 1) * s.warps - 1) / s.units;
}
/// The workspace slot of warp w's piece of `item`: two a warp, 0 for the piece of its first item
/// (the item of its first unit), 1 for the piece of its last. A warp's other items are whole and
/// written by it straight to y, so no two pieces share a slot.
TPV_HOST_DEVICE inline long long ks_piece_slot(const KSplit& s, long long w, long long item) {
    return 2 * w + (ks_begin(s, w) / s.chunks == item ? 0 : 1);
}
/// Floats of one piece slot (8 rows x 16 columns), and of a launch's slots.
constexpr int k_piece_floats = 8 * 16;
TPV_HOST_DEVICE constexpr unsigned long long ks_partial_floats(const KSplit& s) {
    return (unsigned long long)(2 * s.warps) * k_piece_floats;
}
/// The experts block b (its warps_per_block warps from b x warps_per_block) touches: its first,
/// and how many.
TPV_HOST_DEVICE inline long long ks_block_first_expert(const KSplit& s, long long b, int warps_per_block) {
    return ks_begin(s, b * warps_per_block) / (long long)(s.tiles * s.chunks);
}
TPV_HOST_DEVICE inline int ks_block_experts(const KSplit& s, long long b, int warps_per_block) {
    const long long first = ks_begin(s, b * warps_per_block), end = ks_begin(s, (b + 1) * warps_per_block);
    const long long per_expert = (long long)s.tiles * s.chunks;
    return end > first ? int((end - 1) / per_expert - first / per_expert + 1) : 0;
}

/// The split of `count` experts' [n x k] GEMMs over `warps` warps (capped at the units), with the
/// largest number of experts a block of `warps_per_block` touches (its shared-memory slots).
inline KSplit ks_make(int count, int n, int k, int max_rows, long long warps, int warps_per_block) {
    KSplit s;
    s.tiles = n / 16;
    s.chunks = k / 64;
    s.units = (long long)count * s.tiles * s.chunks;
    s.warps = warps < s.units ? warps : s.units;
    s.max_rows = max_rows;
    const long long blocks = (s.warps + warps_per_block - 1) / warps_per_block;
    for (long long b = 0; b < blocks; ++b) {
        const int e = ks_block_experts(s, b, warps_per_block);
        if (e > s.slots) s.slots = e;
    }
    return s;
}

}  // namespace tpverify::cuda::sg

#undef TPV_HOST_DEVICE
