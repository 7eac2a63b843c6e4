#pragma once
// L2 prefetch of the weights a coming GEMM reads first, issued on a stream of its own while the
// pass's stream runs kernels that leave DRAM idle (rank.cu: the MLA attention, the end of a MoE
// layer). A prefetch is only a hint: no kernel waits for its data, and a GEMM that runs before it
// lands reads the same bytes from DRAM as it would have.
#include "engine/cuda/common.cuh"

namespace tpverify::cuda {

constexpr int k_prefetch_regions = 8;

/// Up to k_prefetch_regions regions, each 16-byte aligned and a multiple of 16 bytes long.
struct L2Prefetch {
    const void* p[k_prefetch_regions] = {};
    std::uint64_t bytes[k_prefetch_regions] = {};
    int count = 0;
};

/// Asks the L2 for every region, in order, as 16 KiB bulk prefetches (cp.async.bulk.prefetch;
/// sm_90 and newer, a no-op before) spread over `blocks` one-warp blocks, so that many SMs'
/// copy engines issue them at once. Returns without waiting for the data.
cudaError_t prefetch_l2(const L2Prefetch& list, int blocks, cudaStream_t s);

}  // namespace tpverify::cuda
