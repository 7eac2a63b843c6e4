#pragma once
// L2 prefetch of the weights a coming GEMM reads first, issued on a stream of its own (or chained
// on the pass's stream) while the pass's stream runs kernels that leave DRAM idle (rank.cu: the MLA
// attention, the end of a MoE layer). A prefetch is only a hint: no kernel waits for its data, and a GEMM
// that runs before it lands reads the same bytes from DRAM as it would have.
#include "engine/cuda/common.cuh"

namespace tpverify::cuda {

constexpr int k_prefetch_regions = 8;

/// Up to k_prefetch_regions regions, each 16-byte aligned and a multiple of 16 bytes long.
struct L2Prefetch {
    const void* p[k_prefetch_regions] = {};
    std::uint64_t bytes[k_prefetch_regions] = {};
    int count = 0;
};

/// How prefetch_l2 asks (TPVERIFY_PREFETCH_MODE, to compare on the GPU): `bulk` (unset) 16 KiB
/// cp.async.bulk.prefetch requests (sm_90 and newer, a no-op before) from one warp on each of
/// half the SMs; `line` a prefetch.global.L2 a 128-byte line, `touch` a 4-byte load a 256-byte
/// block (with the L2::256B hint; the kernel ends when the data has come), both from 256 threads
/// on every SM; `empty` the same launch asking for nothing (what the fork and the launch cost).
enum class PrefetchMode { bulk, line, touch, empty };
PrefetchMode prefetch_mode();

/// Asks the L2 for every region, first bytes first, as prefetch_mode() says, on a device of `sms`
/// SMs; does not wait for the data. `chain`: launched on the pass's own stream after its previous
/// kernel with programmatic dependent launch (it starts while that one runs, and ends only
/// after it, so the kernels after it may rely on it as on that one); else a plain launch.
cudaError_t prefetch_l2(const L2Prefetch& list, int sms, bool chain, cudaStream_t s);
/// TPVERIFY_PREFETCH_STREAM=main (to compare on the GPU): prefetch_l2 chained on the pass's
/// stream instead of on a stream of its own.
bool prefetch_on_main_stream();

}  // namespace tpverify::cuda
