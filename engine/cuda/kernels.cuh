#pragma once
// Element-wise and normalisation kernels of the verify pass (launch wrappers).
#include "engine/cuda/common.cuh"

namespace tpverify::cuda {

/// Most ranks a one-shot fused all-reduce supports.
constexpr int k_max_peers = 8;

/// Fills `n` bf16 with uniform values in [-scale, scale] from `seed` (deterministic).
cudaError_t fill_random(bf16* data, std::uint64_t n, float scale, std::uint64_t seed, cudaStream_t s);
/// Fills `n` bf16 with value(rank, i) = ((i * 7 + rank * 3 + seed) % 9 - 4) * 0.25: exact sums in
/// bf16. `seed` is read on the device when the kernel runs (so a graph replay sees the value of
/// that moment; null: 0).
cudaError_t fill_pattern(bf16* data, std::uint64_t n, int rank, cudaStream_t s,
                         const unsigned* seed = nullptr);
/// *counter += 1 on the device (a per-call seed that advances with every graph replay).
cudaError_t bump(unsigned* counter, cudaStream_t s);
/// Fills `n` 16-bit words with `bits` (e.g. 0x8000, bf16 -0.0, the one-shot "empty" mark).
cudaError_t fill_bits(bf16* data, std::uint64_t n, unsigned short bits, cudaStream_t s);

/// One thread that waits `ns` nanoseconds of the GPU's global timer (a check's delay: it holds
/// the work behind it on its stream back, so that a missing dependency shows).
cudaError_t spin(unsigned ns, cudaStream_t s);

/// residual += x; out = RMSNorm(residual) * gamma, for `rows` rows of `hidden` (one block a row).
cudaError_t add_rmsnorm(const bf16* x, bf16* residual, const bf16* gamma, bf16* out, int rows, int hidden,
                        float eps, cudaStream_t s);

/// Peer buffers of a one-shot all-reduce: [3 rotations][nranks slots][rows * hidden] per rank.
struct OneShotPeers {
    bf16* buffers[k_max_peers] = {};  ///< each rank's receive buffer, as this rank addresses it
    int nranks = 0;
    int rank = 0;
    int max_rows = 0;              ///< rows the buffers were sized for
    unsigned* counters = nullptr;  ///< this rank's per-row call counters (device, max_rows)
    /// Host-mapped words shared with the host: [0] abort (the host sets it: stop waiting),
    /// [1] timed out (the kernel sets it when a peer's rows did not arrive in time).
    volatile int* control = nullptr;
    unsigned long long spin_limit_ns = 1000000000ull;  ///< longest wait for a peer's rows
};

/// Rows the one-shot kernel can run at once on `device` (every row block must be co-resident:
/// a block waits for the same row of its peers). 0 when the query fails.
int oneshot_max_rows(int device, int hidden);

/// One-shot all-reduce of x over all ranks fused with residual add + RMSNorm: each rank pushes
/// its rows into every peer's buffer (a system-scope release: fence, then relaxed system-scope
/// stores), polls its own buffer with relaxed system-scope loads until all slots are written
/// (bf16 -0.0 marks "not yet"; a fence after the wait is the acquire), sums in rank order, then
/// does residual += sum; out = norm. The wait is bounded: after `spin_limit_ns` or when the
/// host sets control[0], the kernel sets control[1] and returns (the output is then garbage).
cudaError_t oneshot_allreduce_rmsnorm(const OneShotPeers& peers, const bf16* x, bf16* residual,
                                      const bf16* gamma, bf16* out, int rows, int hidden, float eps,
                                      cudaStream_t s);

}  // namespace tpverify::cuda
