// tpverify --measure-kernels: the time of every distinct kernel of the pass on this GPU (GEMMs
// and expert launches by shape, the small ops, attention, the residual + RMSNorm), written as the
// sim's price list (engine/sim/kernel_table.hpp).
//
// One rank on device 0 (with a one-rank communicator: no collective is timed), the plans of the
// run (--tokens, the 1-token pass, the draft pass) at --tp's shapes. Steps are grouped by what
// they run; each group's steps (the same shape in different layers: different weights, so
// nothing comes from the L2) are enqueued in plan order, repeated to at least 16 launches,
// captured in one CUDA graph and replayed 7 times; time per kernel = replay time / launches,
// median. So each time holds the kernel's share of the graph's gaps, as in the pass.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "engine/cuda/rank.cuh"
#include "engine/run/backend.hpp"

namespace tpverify::cuda {
namespace {

constexpr int k_min_launches = 16;
constexpr int k_replays = 7;

/// The table line's key of a step ("" for steps that are not timed here), and the pass kind
/// that runs only it.
std::string key_of(const Step& s, PassKind& kind) {
    char line[200];
    kind = PassKind::full;
    switch (s.kind) {
        case Step::Kind::gemm:
            std::snprintf(line, sizeof line, "gemm %s %d %d %d 1", s.gemm.int4 ? "int4" : "bf16", s.gemm.m,
                          s.gemm.n, s.gemm.k);
            return line;
        case Step::Kind::experts: {
            const std::vector<ExpertLaunch> launches = expert_launches(s.experts);
            if (launches.size() != 1 || launches[0].max_rows > k_stream_rows_per_launch) return {};
            std::snprintf(line, sizeof line, "gemm %s %d %d %d %d", s.experts.int4 ? "int4" : "bf16",
                          launches[0].max_rows, s.experts.n, s.experts.k, s.experts.count());
            return line;
        }
        case Step::Kind::op:
            std::snprintf(line, sizeof line, "op %s %d %d", op_name(s.op), s.op_rows, s.op_width);
            return line;
        case Step::Kind::attention: {
            const Attention& a = s.attention;
            std::snprintf(line, sizeof line, "attention %d %d %d %d %d %d %d", a.rows, a.heads, a.kv_heads,
                          a.row_dim, a.qk_dim, a.v_dim, a.context);
            return line;
        }
        case Step::Kind::collective:
            if (!s.fused_norm) return {};
            kind = PassKind::norm_kernels;
            std::snprintf(line, sizeof line, "norm %llu", static_cast<unsigned long long>(s.bytes));
            return line;
        case Step::Kind::norm:
            std::snprintf(line, sizeof line, "norm %llu", static_cast<unsigned long long>(s.bytes));
            return line;
    }
    return {};
}

Status time_group(RankEngine& engine, const PassPlan& plan, const std::vector<std::size_t>& steps,
                  PassKind kind, double& us) {
    cudaStream_t s = engine.stream();
    const int launches = int(std::max<std::size_t>(steps.size(), k_min_launches));
    // Warm (first use of a kernel), then capture the group.
    for (std::size_t i : steps) TPV_TRY(engine.enqueue_step(plan, i, kind, "warmup"));
    TPV_CUDA("warmup", cudaStreamSynchronize(s));
    cudaGraph_t graph = nullptr;
    TPV_CUDA("capture", cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    Status inside;
    for (int l = 0; l < launches && inside.ok; ++l)
        inside = engine.enqueue_step(plan, steps[std::size_t(l) % steps.size()], kind, "capture");
    cudaError_t end = cudaStreamEndCapture(s, &graph);
    if (!inside.ok) {
        if (graph != nullptr) cudaGraphDestroy(graph);
        return inside;
    }
    if (end != cudaSuccess) return Status::fail("capture", "cudaStreamEndCapture", cudaGetErrorString(end));
    cudaGraphExec_t exec = nullptr;
    cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (inst != cudaSuccess) return Status::fail("capture", "cudaGraphInstantiate", cudaGetErrorString(inst));
    cudaEvent_t a = nullptr, b = nullptr;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::vector<double> times;
    Status st;
    cudaError_t e = cudaGraphLaunch(exec, s);  // upload
    for (int r = 0; r < k_replays && e == cudaSuccess; ++r) {
        cudaEventRecord(a, s);
        e = cudaGraphLaunch(exec, s);
        cudaEventRecord(b, s);
        if (e == cudaSuccess) e = cudaEventSynchronize(b);
        float ms = 0;
        if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, a, b);
        times.push_back(double(ms) * 1e3 / launches);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaGraphExecDestroy(exec);
    if (e != cudaSuccess) return Status::fail("replay", "cudaGraphLaunch", cudaGetErrorString(e));
    std::sort(times.begin(), times.end());
    us = times[times.size() / 2];
    return st;
}

Status measure(const Options& o, const PassPlan& plan, std::string& text) {
    const PassShape shape = pass_shape(o, plan.model);
    const PassPlan baseline = build_pass(plan.model, plan.tp, 1, shape);
    const PassPlan draft = build_draft_pass(plan.model, plan.tp, o.draft_steps, shape);
    std::vector<const PassPlan*> plans = {&plan, &baseline};
    if (o.draft_steps > 0) plans.push_back(&draft);
    bool ok = true;
    RankEngine engine(o, 0, 1, 0, gemm_path_from_env(ok));
    ncclUniqueId id{};
    TPV_NCCL("init", ncclGetUniqueId(&id));
    TPV_TRY(engine.setup(plans, id));
    cudaDeviceProp prop{};
    TPV_CUDA("init", cudaGetDeviceProperties(&prop, 0));
    char stamp[32] = "";
    const std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d", std::gmtime(&now));
    char line[1024];
    std::snprintf(
        line, sizeof line,
        "# Measured by 'tpverify --backend cuda --measure-kernels' (engine/cuda/measure_kernels.cu) on %s, "
        "%s\n# %s, tp %d shapes, %d tokens (and 1), experts %s, GEMM path %s; us per kernel in a "
        "CUDA graph of its kind\ngpu %s\ncopy_gbps %.0f\n",
        prop.name, stamp, plan.model.name.c_str(), plan.tp, plan.tokens,
        plan.int4_experts ? "int4-g32" : "bf16", gemm_path_name(engine.gemm_path()), prop.name,
        engine.copy_gbps());
    text = "tpverify-kernels 1\n";
    text += line;
    std::map<std::string, double> done;
    for (const PassPlan* p : plans) {
        std::map<std::string, std::vector<std::size_t>> groups;
        std::map<std::string, PassKind> kinds;
        std::vector<std::string> order;
        for (std::size_t i = 0; i < p->steps.size(); ++i) {
            PassKind kind = PassKind::full;
            const std::string key = key_of(p->steps[i], kind);
            if (key.empty() || done.count(key)) continue;
            if (!groups.count(key)) order.push_back(key);
            groups[key].push_back(i);
            kinds[key] = kind;
        }
        for (const std::string& key : order) {
            double us = 0;
            TPV_TRY(time_group(engine, *p, groups[key], kinds[key], us));
            done[key] = us;
            std::snprintf(line, sizeof line, "%s %.3f\n", key.c_str(), us);
            text += line;
            std::fprintf(stderr, "tpverify: measure: %s", line);
        }
    }
    return {};
}

}  // namespace

int measure_kernels(const Options& options, const PassPlan& plan, Reporter& reporter,
                    const std::string& command) {
    std::string text;
    Status st = measure(options, plan, text);
    if (!st.ok) {
        reporter.error(st.phase, st.api, st.what);
        return static_cast<int>(Exit::failure);
    }
    const std::size_t header_end = text.find('\n') + 1;
    text.insert(header_end, "# command: " + command + "\n");
    std::fputs(text.c_str(), stdout);
    return std::fflush(stdout) == 0 ? static_cast<int>(Exit::ok) : static_cast<int>(Exit::failure);
}

}  // namespace tpverify::cuda
