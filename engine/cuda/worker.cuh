#pragma once
// The work of one rank thread: setup, check, capture, measurement; shared with the watchdog.
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/cuda/check.cuh"
#include "engine/cuda/rank.cuh"
#include "engine/report.hpp"

namespace tpverify::cuda {

/// Meeting point of the rank threads of one process (std::barrier needs C++20, nvcc gets 17).
class ThreadBarrier {
public:
    explicit ThreadBarrier(int count) : m_count(count) {}
    /// Blocks until `count` threads have arrived (reusable).
    void arrive_and_wait() {
        std::unique_lock<std::mutex> lock(m_mutex);
        int generation = m_generation;
        if (++m_arrived == m_count) {
            m_arrived = 0;
            ++m_generation;
            m_cv.notify_all();
            return;
        }
        m_cv.wait(lock, [&] { return generation != m_generation; });
    }

private:
    std::mutex m_mutex;
    std::condition_variable m_cv;
    int m_count, m_arrived = 0, m_generation = 0;
};

/// What one rank thread publishes: progress for the watchdog, then its figures.
struct RankSlot {
    std::atomic<double> stamp{0};            ///< last progress (now_s)
    std::atomic<const char*> phase{"init"};  ///< phase in progress
    std::atomic<bool> done{false};
    std::atomic<bool> failed{false};       ///< `status` holds the failure (set before this)
    std::atomic<RankComm*> comm{nullptr};  ///< for abort / async-error polling
    Status status;
    std::vector<double> verify_us, baseline_us, comm_us, norm_us;
    std::vector<double> gemm_us, attention_us, norm_kernels_us, ops_us, draft_us;  ///< parts_us
    int check_replays = 0;  ///< timed replays followed by a --check
    std::uint64_t weight_arena_bytes = 0;
    double init_s = 0, capture_s = 0, copy_gbps = 0;
    std::uint64_t weight_bytes = 0;
    CheckOutcome check;
    bool check_failed_somewhere = false;  ///< some rank's --check found wrong elements
    bool fused_fallback = false;
    std::string fallback_reason;
};

/// Everything the rank threads of one process share.
struct SharedRun {
    const Options* options = nullptr;
    const PassPlan* plan = nullptr;      ///< the verify pass
    const PassPlan* baseline = nullptr;  ///< the 1-token pass
    const PassPlan* draft = nullptr;     ///< the EAGLE-3 draft pass (null: --draft-steps 0)
    ncclUniqueId id{};
    int nranks = 1;
    std::vector<int> ranks;    ///< global rank of each local thread
    std::vector<int> devices;  ///< device of each local thread
    GemmPath gemm = GemmPath::automatic;
    bool in_process = true;  ///< all ranks are threads of this process
    LocalPeers peers;        ///< in_process: one-shot buffers of every rank
    std::unique_ptr<ThreadBarrier> barrier;
    Reporter* reporter = nullptr;
    double t_start = 0;
    std::string fusion_fallback;  ///< why fusion falls back to NCCL, known before init ("" none)
    std::vector<std::unique_ptr<RankSlot>> slots;
};

/// Runs rank `local` (index into SharedRun::ranks) to the end; failures land in its slot.
void run_rank(SharedRun& run, int local);

}  // namespace tpverify::cuda
