#pragma once
// NCCL communicator setup and the collectives of the pass (NCCL or fused one-shot).
#include <string>
#include <vector>

#include "engine/cuda/common.cuh"
#include "engine/cuda/kernels.cuh"

namespace tpverify::cuda {

/// Creates the shared unique id. Rank processes started by tpverify ($TPVERIFY_BOOTSTRAP_FDS):
/// rank 0 calls ncclGetUniqueId (its process hosts the bootstrap root) and writes the id to its
/// pipe; the launcher hands it to the others, who read it from theirs. Otherwise
/// ncclGetUniqueId directly (threads; or --rank with NCCL_COMM_ID, where every process gets
/// the same id and rank 0 hosts the root). `launched` tells which way it went.
Status make_unique_id(int rank, ncclUniqueId& id, bool& launched);

/// One rank's communicator and the peer buffers of the fused one-shot all-reduce.
/// One process, one thread per GPU: lets `self` address every other device in `devices`
/// (cudaDeviceEnablePeerAccess; already enabled is fine). Sets `reason` and returns false when
/// a pair cannot reach each other. Must run before the first NCCL call of the rank: NCCL's
/// in-process P2P transport failed with "internal error" on the H200 x2 machine without it.
bool enable_peer_access(int self, const std::vector<int>& devices, std::string& reason);

class RankComm {
public:
    RankComm() = default;
    RankComm(const RankComm&) = delete;
    RankComm& operator=(const RankComm&) = delete;
    ~RankComm();
    /// ncclCommInitRank on the current device (blocking; the caller's watchdog bounds it).
    Status init(const ncclUniqueId& id, int nranks, int rank);
    /// Allocates this rank's one-shot buffer ([3][nranks][max_rows*hidden] bf16, -0.0 filled)
    /// and per-row counters. Peers are connected afterwards by connect_peers.
    Status allocate_oneshot(int max_rows, int hidden, cudaStream_t stream);
    /// Makes peer buffers addressable: `local` = every rank's buffer pointer in this process
    /// (one thread per GPU), else exchanged as CUDA IPC handles through ncclAllGather.
    /// Returns ok with `usable` false (and a reason) where peers cannot reach each other;
    /// all ranks agree on `usable` (an all-reduce of the verdict).
    Status connect_peers(const std::vector<bf16*>* local, const std::vector<int>* local_devices,
                         cudaStream_t stream, bool& usable, std::string& reason);
    /// This rank's one-shot buffer (for in-process peers).
    [[nodiscard]] bf16* oneshot_buffer() const { return m_buffer; }
    [[nodiscard]] const OneShotPeers& peers() const { return m_peers; }
    [[nodiscard]] ncclComm_t comm() const { return m_comm; }
    [[nodiscard]] int rank() const { return m_rank; }
    [[nodiscard]] int nranks() const { return m_nranks; }
    /// Max over ranks of `value` (an int all-reduce, never inside a capture); agrees on flags.
    Status agree_max(int& value, cudaStream_t stream, const char* phase);
    /// Aborts the communicator (unblocks hung collectives) and tells a waiting one-shot kernel to
    /// stop; safe from another thread.
    void abort();
    /// True when a one-shot kernel gave up waiting for a peer (since allocate_oneshot).
    [[nodiscard]] bool oneshot_timed_out() const { return m_control != nullptr && m_control[1] != 0; }

private:
    ncclComm_t m_comm = nullptr;
    int m_rank = 0, m_nranks = 1;
    bf16* m_buffer = nullptr;
    std::uint64_t m_buffer_elems = 0;
    unsigned* m_counters = nullptr;
    int* m_flag = nullptr;
    volatile int* m_control = nullptr;  ///< host-mapped: [0] abort, [1] a kernel timed out
    OneShotPeers m_peers;
    std::vector<void*> m_opened;  ///< IPC-opened peer pointers to close
};

}  // namespace tpverify::cuda
