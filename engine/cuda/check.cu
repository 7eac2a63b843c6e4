// --check: the pass's collectives against a host reference (like nccl-tests' #wrong) on inputs
// that change with every call, through one graph replayed at every check; the fused residual +
// RMSNorm against the unfused one; the weight-streaming GEMMs at the pass's own shapes against
// a double-precision reference.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "engine/cuda/check.cuh"
#include "engine/cuda/kernels.cuh"

namespace tpverify::cuda {
namespace {

// Host twin of fill_pattern (kernels.cu): exact in bf16, and so are sums of up to 8 ranks.
float pattern(std::uint64_t i, int rank, unsigned seed) {
    return float(int((i * 7 + std::uint64_t(rank) * 3 + seed) % 9) - 4) * 0.25f;
}

float to_float(bf16 v) {
    unsigned short bits;
    std::memcpy(&bits, &v, 2);
    unsigned w = unsigned(bits) << 16;
    float f;
    std::memcpy(&f, &w, 4);
    return f;
}

Status fetch(std::vector<bf16>& host, const bf16* dev, std::uint64_t elems, cudaStream_t s) {
    host.resize(elems);
    TPV_CUDA("check", cudaMemcpyAsync(host.data(), dev, elems * sizeof(bf16), cudaMemcpyDeviceToHost, s));
    TPV_CUDA("check", cudaStreamSynchronize(s));
    return {};
}

// Runs the norm step on pattern inputs; `normed` and `residual` come back.
Status norm_once(RankEngine& e, int rows, bool fused, unsigned seed, std::vector<bf16>& normed,
                 std::vector<bf16>& residual) {
    RankEngine::Buffers b = e.buffers();
    std::uint64_t elems = std::uint64_t(rows) * e.hidden();
    cudaStream_t s = e.stream();
    TPV_CUDA("check", fill_pattern(b.send, elems, e.comm().rank() + int(seed), s));
    TPV_CUDA("check", fill_pattern(b.residual, elems, 5, s));  // same residual on every rank
    TPV_CUDA("check", fill_bits(b.normed, elems, 0x7fc0, s));
    TPV_TRY(e.run_once([&]() { return e.reduce_norm(rows, "check", fused); }, "check"));
    TPV_TRY(fetch(normed, b.normed, elems, s));
    TPV_TRY(fetch(residual, b.residual, elems, s));
    return {};
}

}  // namespace

CollectiveCheck::~CollectiveCheck() {
    if (m_exec != nullptr) cudaGraphExecDestroy(m_exec);
    for (void* p : m_allocations) cudaFree(p);
}

Status CollectiveCheck::prepare(RankEngine& engine, const PassPlan& plan) {
    std::set<std::pair<int, std::uint64_t>> seen;
    std::uint64_t offset = 0;
    const int nranks = engine.comm().nranks();
    for (const Step& step : plan.steps) {
        if (step.kind != Step::Kind::collective) continue;
        if (!seen.insert({int(step.collective), step.bytes}).second) continue;
        Item item;
        item.gather = step.collective == CollectiveKind::all_gather;
        item.elems = step.bytes / 2;
        item.result_elems = item.gather ? item.elems * nranks : item.elems;
        item.offset = offset;
        offset += item.result_elems;
        m_items.push_back(item);
    }
    void* out = nullptr;
    TPV_CUDA("check", cudaMalloc(&out, std::max<std::uint64_t>(offset, 1) * sizeof(bf16)));
    m_allocations.push_back(out);
    m_results = static_cast<bf16*>(out);
    void* seed = nullptr;
    TPV_CUDA("check", cudaMalloc(&seed, sizeof(unsigned)));
    m_allocations.push_back(seed);
    m_seed = static_cast<unsigned*>(seed);
    TPV_CUDA("check", cudaMemset(m_seed, 0, sizeof(unsigned)));
    // Done before any kernel reads it: the engine's streams are non-blocking, and a legacy-stream
    // cudaMemset is not ordered with them.
    TPV_CUDA("check", cudaDeviceSynchronize());
    return {};
}

Status CollectiveCheck::enqueue(RankEngine& engine) {
    RankEngine::Buffers b = engine.buffers();
    const int rank = engine.comm().rank();
    cudaStream_t s = engine.stream();
    // Every call runs on new inputs: the seed advances on the device, inside the graph.
    TPV_CUDA("check", bump(m_seed, s));
    for (const Item& item : m_items) {
        bf16* result = item.gather ? b.gather : b.recv;
        TPV_CUDA("check", fill_pattern(b.send, item.elems, rank, s, m_seed));
        TPV_CUDA("check", fill_bits(result, item.result_elems, 0x7fc0, s));  // poison: NaN
        TPV_TRY(engine.collective_call(item.gather ? CollectiveKind::all_gather : CollectiveKind::all_reduce,
                                       b.send, result, item.elems, "check"));
        TPV_CUDA("check", cudaMemcpyAsync(m_results + item.offset, result, item.result_elems * sizeof(bf16),
                                          cudaMemcpyDeviceToDevice, s));
    }
    return {};
}

Status CollectiveCheck::run(RankEngine& engine, const Options& options, CheckOutcome& out) {
    cudaStream_t s = engine.stream();
    if (!options.graph) {
        TPV_TRY(enqueue(engine));
    } else {
        if (m_exec == nullptr) {
            // Captured once, replayed at every check: what a replayed graph computes is checked.
            cudaGraph_t graph = nullptr;
            TPV_CUDA("check", cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
            Status inside = enqueue(engine);
            cudaError_t end = cudaStreamEndCapture(s, &graph);
            if (!inside.ok) {
                if (graph != nullptr) cudaGraphDestroy(graph);
                return inside;
            }
            if (end != cudaSuccess)
                return Status::fail("check", "cudaStreamEndCapture", cudaGetErrorString(end));
            cudaError_t inst = cudaGraphInstantiate(&m_exec, graph, 0);
            cudaGraphDestroy(graph);
            if (inst != cudaSuccess)
                return Status::fail("check", "cudaGraphInstantiate", cudaGetErrorString(inst));
        }
        TPV_CUDA("check", cudaGraphLaunch(m_exec, s));
        ++out.graph_replays;
    }
    TPV_CUDA("check", cudaStreamSynchronize(s));
    ++m_calls;
    const unsigned seed = m_calls;  // the device seed after this call's bump
    const int nranks = engine.comm().nranks();
    for (const Item& item : m_items) {
        std::vector<bf16> host;
        TPV_TRY(fetch(host, m_results + item.offset, item.result_elems, s));
        long long wrong = 0;
        for (std::uint64_t i = 0; i < item.result_elems; ++i) {
            float expect = 0;
            if (item.gather) {
                expect = pattern(i % item.elems, int(i / item.elems), seed);
            } else {
                for (int r = 0; r < nranks; ++r) expect += pattern(i, r, seed);
            }
            if (to_float(host[i]) != expect) ++wrong;
        }
        if (wrong > 0 && out.detail.empty())
            out.detail = std::string(item.gather ? "all-gather" : "all-reduce") + " of " +
                         std::to_string(item.elems * 2) + " B: " + std::to_string(wrong) +
                         " wrong elements (call " + std::to_string(m_calls) + ")";
        out.wrong += wrong;
        out.checked += (long long)item.result_elems;
    }
    return {};
}

Status check_fused_norm(RankEngine& engine, const PassPlan& plan, unsigned seed, CheckOutcome& out) {
    if (!engine.fused()) return {};
    int rows = plan.tokens;
    std::vector<bf16> normed_u, residual_u, normed_f, residual_f;
    TPV_TRY(norm_once(engine, rows, false, seed, normed_u, residual_u));
    TPV_TRY(norm_once(engine, rows, true, seed, normed_f, residual_f));
    // Host reference for the residual: pattern sums are exact, so the residual must match exactly.
    int nranks = engine.comm().nranks();
    for (std::uint64_t i = 0; i < normed_u.size(); ++i) {
        float sum = 0;
        for (int r = 0; r < nranks; ++r) sum += pattern(i, r + int(seed), 0);
        float expect_residual = sum + pattern(i, 5, 0);
        if (to_float(residual_u[i]) != expect_residual) ++out.wrong;
        if (to_float(residual_f[i]) != expect_residual) ++out.wrong;
        double u = to_float(normed_u[i]), f = to_float(normed_f[i]);
        double err = std::fabs(u - f);
        if (!(err <= 1e-2 * std::fabs(u) + 1e-2)) ++out.fused_mismatch;  // NaN counts as a mismatch
        if (err > out.fused_max_err || std::isnan(err)) out.fused_max_err = err;
    }
    out.checked += (long long)normed_u.size() * 2;
    if (out.fused_mismatch > 0 && out.detail.empty())
        out.detail = "fused vs unfused residual+RMSNorm: " + std::to_string(out.fused_mismatch) +
                     " elements differ beyond bf16 tolerance";
    return {};
}

}  // namespace tpverify::cuda
