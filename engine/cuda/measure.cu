// tpverify --measure-collectives: NCCL all-reduce and all-gather timed on this host's GPUs, as
// nccl-tests times them, written as a calibration file for the sim (engine/sim/calibration.hpp).
//
// All ranks live in this process and this thread, one communicator per GPU from
// ncclCommInitAll (nccl-tests' `-g N`). For each size and collective, bf16 (sum for the
// all-reduce, as the pass runs them): `--warmup` eager calls, then `--iters` calls captured in
// one CUDA graph (as `-G`; `--graph off`: launched eagerly), replayed k_launches times per
// trial and timed with a host clock around the replays and a stream synchronize; per-collective
// time = trial time / (iters x launches), median of k_trials trials. Out-of-place (what the
// pass runs: send and receive buffers differ) and in-place.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "engine/cuda/common.cuh"
#include "engine/cuda/kernels.cuh"
#include "engine/run/backend.hpp"
#include "engine/run/cuda_module.hpp"
#include "engine/sim/calibration.hpp"

namespace tpverify {
namespace {

using cuda::Status;

constexpr int k_trials = 5;     ///< timed trials per size; the median is written
constexpr int k_launches = 10;  ///< graph replays (eager: batches of --iters calls) per trial

struct Rank {
    int device = 0;
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
    cuda::bf16* send = nullptr;  ///< max bytes
    cuda::bf16* recv = nullptr;  ///< max bytes x nranks (all-gather output)
};

struct Ranks {
    std::vector<Rank> ranks;
    ~Ranks() {
        for (Rank& r : ranks) {
            cudaSetDevice(r.device);
            if (r.send != nullptr) cudaFree(r.send);
            if (r.recv != nullptr) cudaFree(r.recv);
            if (r.stream != nullptr) cudaStreamDestroy(r.stream);
            if (r.comm != nullptr) ncclCommDestroy(r.comm);
        }
    }
};

std::string nccl_version() {
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
    return std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." + std::to_string(v % 100);
}

/// One call of `collective` on every rank (a group when there are several).
Status issue(Ranks& rs, bool all_gather, std::uint64_t bytes, bool in_place) {
    const std::uint64_t elems = bytes / sizeof(cuda::bf16);
    const int n = static_cast<int>(rs.ranks.size());
    if (n > 1) TPV_NCCL("measure", ncclGroupStart());
    for (int i = 0; i < n; ++i) {
        Rank& r = rs.ranks[i];
        if (all_gather) {
            const void* send = in_place ? static_cast<const void*>(r.recv + elems * i) : r.send;
            TPV_NCCL("measure", ncclAllGather(send, r.recv, elems, ncclBfloat16, r.comm, r.stream));
        } else {
            const void* send = in_place ? static_cast<const void*>(r.recv) : r.send;
            TPV_NCCL("measure", ncclAllReduce(send, r.recv, elems, ncclBfloat16, ncclSum, r.comm, r.stream));
        }
    }
    if (n > 1) TPV_NCCL("measure", ncclGroupEnd());
    return {};
}

Status sync_all(Ranks& rs) {
    for (Rank& r : rs.ranks) {
        TPV_CUDA("measure", cudaSetDevice(r.device));
        TPV_CUDA("measure", cudaStreamSynchronize(r.stream));
    }
    return {};
}

/// Median time of one collective call at this size, in µs.
Status time_one(Ranks& rs, const Options& o, bool all_gather, std::uint64_t bytes, bool in_place,
                double& us) {
    for (int i = 0; i < o.warmup; ++i) TPV_TRY(issue(rs, all_gather, bytes, in_place));
    TPV_TRY(sync_all(rs));
    std::vector<cudaGraphExec_t> execs;
    if (o.graph) {
        for (Rank& r : rs.ranks) {
            TPV_CUDA("capture", cudaSetDevice(r.device));
            TPV_CUDA("capture", cudaStreamBeginCapture(r.stream, cudaStreamCaptureModeThreadLocal));
        }
        for (int i = 0; i < o.iters; ++i) TPV_TRY(issue(rs, all_gather, bytes, in_place));
        for (Rank& r : rs.ranks) {
            cudaGraph_t graph = nullptr;
            TPV_CUDA("capture", cudaSetDevice(r.device));
            TPV_CUDA("capture", cudaStreamEndCapture(r.stream, &graph));
            cudaGraphExec_t exec = nullptr;
            TPV_CUDA("capture", cudaGraphInstantiate(&exec, graph, 0));
            cudaGraphDestroy(graph);
            execs.push_back(exec);
        }
    }
    auto one_batch = [&]() -> Status {
        if (!o.graph) {
            for (int i = 0; i < o.iters; ++i) TPV_TRY(issue(rs, all_gather, bytes, in_place));
            return {};
        }
        for (std::size_t i = 0; i < rs.ranks.size(); ++i) {
            TPV_CUDA("replay", cudaSetDevice(rs.ranks[i].device));
            TPV_CUDA("replay", cudaGraphLaunch(execs[i], rs.ranks[i].stream));
        }
        return {};
    };
    Status st = one_batch();  // the graph's first launch uploads it: not timed
    if (st.ok) st = sync_all(rs);
    std::vector<double> trials;
    for (int t = 0; t < k_trials && st.ok; ++t) {
        const double t0 = cuda::now_s();
        for (int l = 0; l < k_launches && st.ok; ++l) st = one_batch();
        if (st.ok) st = sync_all(rs);
        trials.push_back((cuda::now_s() - t0) * 1e6 / (double(o.iters) * k_launches));
    }
    for (cudaGraphExec_t e : execs) cudaGraphExecDestroy(e);
    if (!st.ok) return st;
    std::sort(trials.begin(), trials.end());
    us = trials[trials.size() / 2];
    return {};
}

Status measure(const Options& o, const PassPlan& plan, sim::Measurement& m) {
    int count = 0;
    TPV_CUDA("init", cudaGetDeviceCount(&count));
    const int n = o.tp;
    if (count < n)
        return Status::fail("init", "cudaGetDeviceCount",
                            "--tp " + std::to_string(n) + " needs " + std::to_string(n) + " GPUs but " +
                                std::to_string(count) + " are visible (CUDA_VISIBLE_DEVICES?)");
    const PassShape shape = pass_shape(o, plan.model);
    const PassPlan baseline = build_pass(plan.model, n, 1, shape);
    const PassPlan draft = build_draft_pass(plan.model, n, o.draft_steps, shape);
    std::vector<const PassPlan*> passes = {&plan, &baseline};
    if (o.draft_steps > 0) passes.push_back(&draft);
    const std::vector<std::uint64_t> sizes = sim::measurement_sizes(passes);
    const std::uint64_t max_bytes = sizes.back();

    Ranks rs;
    rs.ranks.resize(n);
    std::vector<ncclComm_t> comms(n);
    std::vector<int> devices(n);
    for (int i = 0; i < n; ++i) devices[i] = i;
    TPV_NCCL("init", ncclCommInitAll(comms.data(), n, devices.data()));
    for (int i = 0; i < n; ++i) {
        Rank& r = rs.ranks[i];
        r.device = i;
        r.comm = comms[i];
        TPV_CUDA("init", cudaSetDevice(i));
        TPV_CUDA("init", cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
        TPV_CUDA("init", cudaMalloc(&r.send, max_bytes));
        TPV_CUDA("init", cudaMalloc(&r.recv, max_bytes * n));
        TPV_CUDA("init", cuda::fill_random(r.send, max_bytes / 2, 1.0f, 1 + i, r.stream));
        TPV_CUDA("init", cuda::fill_random(r.recv, max_bytes / 2 * n, 1.0f, 100 + i, r.stream));
    }
    TPV_TRY(sync_all(rs));

    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    char stamp[32] = "";
    const std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    m.nranks = n;
    m.setting = sim::setting_key(sim::nccl_environment());
    m.notes = {
        "Measured by 'tpverify --backend cuda --measure-collectives' (engine/cuda/measure.cu), " +
            std::string(stamp),
        "machine: " + std::to_string(n) + " x " + prop.name + " (of " + std::to_string(count) +
            " visible), NCCL " + nccl_version() + ", CUDA runtime " + std::to_string(runtime) +
            ", driver API " + std::to_string(driver),
        "NCCL setting: " + sim::setting_label(m.setting) + " (this process's NCCL_* environment)",
        "method: bf16" + std::string(" (all-reduce: sum), all ranks in one process (nccl-tests -g N); ") +
            std::to_string(o.warmup) + " warm-up calls, then " + std::to_string(o.iters) + " calls " +
            (o.graph ? "captured in one CUDA graph (nccl-tests -G) replayed " : "launched eagerly, ") +
            std::to_string(k_launches) + " times per trial; host clock around the trial;",
        "time per collective = trial / (" + std::to_string(o.iters) + " x " + std::to_string(k_launches) +
            "), median of " + std::to_string(k_trials) + " trials",
        "pass sizes (" + plan.model.name + ", tp " + std::to_string(n) + "): all-reduce " +
            std::to_string(plan.all_reduce_bytes()) + " B at " + std::to_string(plan.tokens) + " tokens, " +
            std::to_string(baseline.all_reduce_bytes()) + " B at 1 token; all-gather " +
            std::to_string(plan.all_gather_bytes()) + " B and " +
            std::to_string(baseline.all_gather_bytes()) + " B",
    };
    for (const bool all_gather : {false, true}) {
        std::vector<sim::MeasuredSize> row;
        for (const std::uint64_t bytes : sizes) {
            sim::MeasuredSize s;
            s.bytes = bytes;
            TPV_TRY(time_one(rs, o, all_gather, bytes, false, s.out_of_place_us));
            TPV_TRY(time_one(rs, o, all_gather, bytes, true, s.in_place_us));
            row.push_back(s);
            std::fprintf(stderr, "tpverify: measure: %s %llu B: %.2f us out-of-place, %.2f us in-place\n",
                         all_gather ? "all_gather" : "all_reduce", static_cast<unsigned long long>(bytes),
                         s.out_of_place_us, s.in_place_us);
        }
        m.tables.emplace_back(all_gather ? "all_gather" : "all_reduce", std::move(row));
    }
    return {};
}

}  // namespace

static int run_measure(const Options& options, const PassPlan& plan, Reporter& reporter,
                       const std::string& command) {
    sim::Measurement m;
    Status st = measure(options, plan, m);
    if (!st.ok) {
        reporter.error(st.phase, st.api, st.what);
        return static_cast<int>(Exit::failure);
    }
    m.notes.insert(m.notes.begin() + 1, "command: " + command);
    std::fputs(sim::measurement_text(m).c_str(), stdout);
    return std::fflush(stdout) == 0 ? static_cast<int>(Exit::ok) : static_cast<int>(Exit::failure);
}

}  // namespace tpverify

// The module's entry point for --measure-collectives (engine/run/cuda_module.hpp).
extern "C" __attribute__((visibility("default"))) int tpverify_cuda_measure(const tpverify::Options* options,
                                                                            const tpverify::PassPlan* plan,
                                                                            tpverify::Reporter* reporter,
                                                                            const char* command) {
    return tpverify::run_measure(*options, *plan, *reporter, command);
}
