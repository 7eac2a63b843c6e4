// NCCL communicator setup, flag agreement, and peer buffers of the fused one-shot all-reduce.
#include <unistd.h>
#include <cstdlib>
#include <cstring>

#include "engine/launch/launch.hpp"

#include "engine/cuda/comm.cuh"

namespace tpverify::cuda {

static_assert(sizeof(ncclUniqueId) == k_unique_id_bytes, "the launcher relays NCCL's unique id as raw bytes");

Status make_unique_id(int rank, ncclUniqueId& id, bool& launched) {
    BootstrapFds fds;
    launched = parse_bootstrap_fds(std::getenv(k_bootstrap_env), fds);
    if (!launched) {
        TPV_NCCL("init", ncclGetUniqueId(&id));
        return {};
    }
    if (rank == 0) {
        TPV_NCCL("init", ncclGetUniqueId(&id));
        std::string err = write_all(fds.write_fd, &id, sizeof id);
        close(fds.write_fd);
        if (!err.empty())
            return Status::fail("init", "bootstrap", "handing NCCL's unique id to the launcher: " + err);
        return {};
    }
    std::string err = read_exact(fds.read_fd, &id, sizeof id, 120);
    close(fds.read_fd);
    if (!err.empty())
        return Status::fail(
            "init", "bootstrap",
            "reading NCCL's unique id from the launcher: " + err + " (rank 0 failed or the launcher died)");
    return {};
}

RankComm::~RankComm() {
    for (void* p : m_opened) cudaIpcCloseMemHandle(p);
    if (m_buffer != nullptr) cudaFree(m_buffer);
    if (m_counters != nullptr) cudaFree(m_counters);
    if (m_flag != nullptr) cudaFree(m_flag);
    if (m_control != nullptr) cudaFreeHost(const_cast<int*>(m_control));
    if (m_comm != nullptr) ncclCommDestroy(m_comm);
}

bool enable_peer_access(int self, const std::vector<int>& devices, std::string& reason) {
    if (cudaSetDevice(self) != cudaSuccess) {
        reason = "cudaSetDevice(" + std::to_string(self) + ") failed";
        return false;
    }
    for (int dev : devices) {
        if (dev == self) continue;
        int can = 0;
        if (cudaDeviceCanAccessPeer(&can, self, dev) != cudaSuccess || can == 0) {
            reason = "GPU " + std::to_string(self) + " cannot access GPU " + std::to_string(dev) +
                     " (cudaDeviceCanAccessPeer = 0)";
            return false;
        }
        cudaError_t e = cudaDeviceEnablePeerAccess(dev, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled) {
            cudaGetLastError();
        } else if (e != cudaSuccess) {
            reason = std::string("cudaDeviceEnablePeerAccess failed: ") + cudaGetErrorString(e);
            return false;
        }
    }
    return true;
}

Status RankComm::init(const ncclUniqueId& id, int nranks, int rank) {
    m_rank = rank;
    m_nranks = nranks;
    TPV_CUDA("init", cudaMalloc(&m_flag, sizeof(int)));
    TPV_NCCL("init", ncclCommInitRank(&m_comm, nranks, id, rank));
    return {};
}

Status RankComm::agree_max(int& value, cudaStream_t stream, const char* phase) {
    TPV_CUDA(phase, cudaMemcpyAsync(m_flag, &value, sizeof(int), cudaMemcpyHostToDevice, stream));
    TPV_NCCL(phase, ncclAllReduce(m_flag, m_flag, 1, ncclInt32, ncclMax, m_comm, stream));
    TPV_CUDA(phase, cudaMemcpyAsync(&value, m_flag, sizeof(int), cudaMemcpyDeviceToHost, stream));
    TPV_CUDA(phase, cudaStreamSynchronize(stream));
    return {};
}

Status RankComm::allocate_oneshot(int max_rows, int hidden, cudaStream_t stream) {
    m_buffer_elems = std::uint64_t(3) * m_nranks * max_rows * hidden;
    TPV_CUDA("init", cudaMalloc(&m_buffer, m_buffer_elems * sizeof(bf16)));
    TPV_CUDA("init", fill_bits(m_buffer, m_buffer_elems, 0x8000, stream));
    TPV_CUDA("init", cudaMalloc(&m_counters, sizeof(unsigned) * max_rows));
    TPV_CUDA("init", cudaMemsetAsync(m_counters, 0, sizeof(unsigned) * max_rows, stream));
    TPV_CUDA("init", cudaStreamSynchronize(stream));
    m_peers.nranks = m_nranks;
    m_peers.rank = m_rank;
    m_peers.max_rows = max_rows;
    m_peers.counters = m_counters;
    void* control = nullptr;
    TPV_CUDA("init", cudaHostAlloc(&control, 2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
    m_control = static_cast<volatile int*>(control);
    m_control[0] = m_control[1] = 0;
    void* device_control = nullptr;
    TPV_CUDA("init", cudaHostGetDevicePointer(&device_control, control, 0));
    m_peers.control = static_cast<volatile int*>(device_control);
    return {};
}

Status RankComm::connect_peers(const std::vector<bf16*>* local, const std::vector<int>* local_devices,
                               cudaStream_t stream, bool& usable, std::string& reason) {
    int failed = 0;
    if (m_nranks > k_max_peers) {
        failed = 1;
        reason = "the one-shot kernel supports at most " + std::to_string(k_max_peers) + " ranks";
    } else if (local != nullptr) {
        // One process: enable peer access to every other rank's device and use raw pointers.
        int self = (*local_devices)[m_rank];
        if (!enable_peer_access(self, *local_devices, reason)) failed = 1;
        for (int p = 0; p < m_nranks; ++p) m_peers.buffers[p] = (*local)[p];
    } else {
        // One process per rank: all-gather IPC handles through NCCL, then open each peer's.
        cudaIpcMemHandle_t mine{};
        TPV_CUDA("init", cudaIpcGetMemHandle(&mine, m_buffer));
        char* dev_handles = nullptr;
        TPV_CUDA("init", cudaMalloc(&dev_handles, sizeof(mine) * m_nranks));
        TPV_CUDA("init", cudaMemcpyAsync(dev_handles + sizeof(mine) * m_rank, &mine, sizeof(mine),
                                         cudaMemcpyHostToDevice, stream));
        TPV_NCCL("init", ncclAllGather(dev_handles + sizeof(mine) * m_rank, dev_handles, sizeof(mine),
                                       ncclUint8, m_comm, stream));
        std::vector<cudaIpcMemHandle_t> handles(m_nranks);
        TPV_CUDA("init", cudaMemcpyAsync(handles.data(), dev_handles, sizeof(mine) * m_nranks,
                                         cudaMemcpyDeviceToHost, stream));
        TPV_CUDA("init", cudaStreamSynchronize(stream));
        cudaFree(dev_handles);
        for (int p = 0; p < m_nranks; ++p) {
            if (p == m_rank) {
                m_peers.buffers[p] = m_buffer;
                continue;
            }
            void* ptr = nullptr;
            cudaError_t e = cudaIpcOpenMemHandle(&ptr, handles[p], cudaIpcMemLazyEnablePeerAccess);
            if (e != cudaSuccess) {
                cudaGetLastError();
                failed = 1;
                reason =
                    "cudaIpcOpenMemHandle of rank " + std::to_string(p) + " failed: " + cudaGetErrorString(e);
                break;
            }
            m_opened.push_back(ptr);
            m_peers.buffers[p] = static_cast<bf16*>(ptr);
        }
    }
    // Every rank must take the same path, or the fused kernel would wait forever.
    TPV_TRY(agree_max(failed, stream, "init"));
    usable = failed == 0;
    if (!usable && reason.empty()) reason = "another rank could not reach its peers";
    return {};
}

void RankComm::abort() {
    if (m_control != nullptr) m_control[0] = 1;
    if (m_comm != nullptr) {
        ncclCommAbort(m_comm);
        m_comm = nullptr;
    }
}

}  // namespace tpverify::cuda
