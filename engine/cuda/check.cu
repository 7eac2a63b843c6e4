// --check: every collective size against a host reference (like nccl-tests' #wrong), and the
// fused residual + RMSNorm against the unfused one.
#include <cmath>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

#include "engine/cuda/check.cuh"

namespace tpverify::cuda {
namespace {

// Host twin of fill_pattern (kernels.cu): exact in bf16, and so are sums of up to 8 ranks.
float pattern(std::uint64_t i, int rank) { return float(int((i * 7 + std::uint64_t(rank) * 3) % 9) - 4) * 0.25f; }

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

Status check_one(RankEngine& e, const Step& step, CheckOutcome& out) {
    RankEngine::Buffers b = e.buffers();
    int nranks = e.comm().nranks(), rank = e.comm().rank();
    std::uint64_t elems = step.bytes / 2;
    bool gather = step.collective == CollectiveKind::all_gather;
    cudaStream_t s = e.stream();
    TPV_CUDA("check", fill_pattern(b.send, elems, rank, s));
    bf16* result = gather ? b.gather : b.recv;
    std::uint64_t result_elems = gather ? elems * nranks : elems;
    TPV_CUDA("check", fill_bits(result, result_elems, 0x7fc0, s));  // poison: NaN
    TPV_TRY(e.run_once(
        [&]() -> Status {
            if (gather)
                TPV_NCCL("check", ncclAllGather(b.send, b.gather, elems, ncclBfloat16, e.comm().comm(), s));
            else
                TPV_NCCL("check", ncclAllReduce(b.send, b.recv, elems, ncclBfloat16, ncclSum, e.comm().comm(), s));
            return {};
        },
        "check"));
    std::vector<bf16> host;
    TPV_TRY(fetch(host, result, result_elems, s));
    long long wrong = 0;
    for (std::uint64_t i = 0; i < result_elems; ++i) {
        float expect = 0;
        if (gather) {
            expect = pattern(i % elems, int(i / elems));
        } else {
            for (int r = 0; r < nranks; ++r) expect += pattern(i, r);
        }
        if (to_float(host[i]) != expect) ++wrong;
    }
    if (wrong > 0 && out.detail.empty())
        out.detail = std::string(gather ? "all-gather" : "all-reduce") + " of " + std::to_string(step.bytes) +
                     " B: " + std::to_string(wrong) + " wrong elements";
    out.wrong += wrong;
    out.checked += (long long)result_elems;
    return {};
}

// Runs the norm step on pattern inputs; `normed` and `residual` come back.
Status norm_once(RankEngine& e, int rows, bool fused, std::vector<bf16>& normed, std::vector<bf16>& residual) {
    RankEngine::Buffers b = e.buffers();
    std::uint64_t elems = std::uint64_t(rows) * e.hidden();
    cudaStream_t s = e.stream();
    TPV_CUDA("check", fill_pattern(b.send, elems, e.comm().rank(), s));
    TPV_CUDA("check", fill_pattern(b.residual, elems, 5, s));  // same residual on every rank
    TPV_CUDA("check", fill_bits(b.normed, elems, 0x7fc0, s));
    TPV_TRY(e.run_once([&]() { return e.reduce_norm(rows, "check", fused); }, "check"));
    TPV_TRY(fetch(normed, b.normed, elems, s));
    TPV_TRY(fetch(residual, b.residual, elems, s));
    return {};
}

}  // namespace

Status run_check(RankEngine& engine, const PassPlan& plan, CheckOutcome& out) {
    std::set<std::pair<int, std::uint64_t>> seen;
    for (const Step& step : plan.steps) {
        if (step.kind != Step::Kind::collective) continue;
        if (!seen.insert({int(step.collective), step.bytes}).second) continue;
        TPV_TRY(check_one(engine, step, out));
    }
    if (!engine.fused()) return {};
    int rows = plan.tokens;
    std::vector<bf16> normed_u, residual_u, normed_f, residual_f;
    TPV_TRY(norm_once(engine, rows, false, normed_u, residual_u));
    TPV_TRY(norm_once(engine, rows, true, normed_f, residual_f));
    // Host reference for the residual: pattern sums are exact, so the residual must match exactly.
    int nranks = engine.comm().nranks();
    for (std::uint64_t i = 0; i < normed_u.size(); ++i) {
        float sum = 0;
        for (int r = 0; r < nranks; ++r) sum += pattern(i, r);
        float expect_residual = sum + pattern(i, 5);
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
