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
float pattern(std::uint64_t i, int rank) {
    return float(int((i * 7 + std::uint64_t(rank) * 3) % 9) - 4) * 0.25f;
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
                TPV_NCCL("check",
                         ncclAllReduce(b.send, b.recv, elems, ncclBfloat16, ncclSum, e.comm().comm(), s));
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
Status norm_once(RankEngine& e, int rows, bool fused, std::vector<bf16>& normed,
                 std::vector<bf16>& residual) {
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

// One W4A16 GEMM (m = 1..4 rows, n = 300 columns, k = 192) on random INT4 weights and scales
// against a host reference: counts outputs off by more than 1e-2 relative + 1e-3.
Status check_w4a16(cudaStream_t s, CheckOutcome& out) {
    constexpr int n = 300, k = 192, chunks = k / 64;
    std::vector<unsigned char> packed(std::size_t(n) * k / 2);
    std::vector<bf16> scales(std::size_t(n) * k / 32), x(4 * std::size_t(k));
    std::uint64_t state = 12345;
    auto next = [&]() {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return unsigned(state >> 33);
    };
    for (auto& b : packed) b = static_cast<unsigned char>(next());
    for (auto& v : scales) v = __float2bfloat16(float(next() % 1000) / 64000.0f + 0.001f);
    for (auto& v : x) v = __float2bfloat16(float(int(next() % 2001) - 1000) / 1000.0f);
    // Weight (col, j): chunk j/64, byte of the 32-byte row chunk, low nibble first within words
    // of 8 weights (weights i and i+4 of a word are nibbles i and i+4).
    auto weight = [&](int col, int j) {
        int c = j / 64, g = (j % 64) / 32, w = (j % 32) / 8, i = j % 8;
        std::size_t word = (std::size_t(c) * n + col) * 8 + std::size_t(g) * 4 + w;
        unsigned u = 0;
        std::memcpy(&u, &packed[word * 4], 4);
        return float(int((u >> (4 * i)) & 15u) - 8);
    };
    std::vector<unsigned char> blob(packed);
    blob.resize(packed.size() + scales.size() * sizeof(bf16));
    // Scales as [k/64][n] pairs: (chunk c, col) holds groups 2c and 2c+1.
    std::vector<bf16> pairs(scales.size());
    for (int c = 0; c < chunks; ++c)
        for (int col = 0; col < n; ++col)
            for (int g = 0; g < 2; ++g)
                pairs[(std::size_t(c) * n + col) * 2 + g] = scales[std::size_t(col) * (k / 32) + 2 * c + g];
    std::memcpy(blob.data() + packed.size(), pairs.data(), pairs.size() * sizeof(bf16));
    void *dw = nullptr, *dx = nullptr, *dy = nullptr;
    TPV_CUDA("check", cudaMalloc(&dw, blob.size()));
    TPV_CUDA("check", cudaMalloc(&dx, x.size() * sizeof(bf16)));
    TPV_CUDA("check", cudaMalloc(&dy, 4 * std::size_t(n) * sizeof(bf16)));
    Status st = [&]() -> Status {
        TPV_CUDA("check", cudaMemcpy(dw, blob.data(), blob.size(), cudaMemcpyHostToDevice));
        TPV_CUDA("check", cudaMemcpy(dx, x.data(), x.size() * sizeof(bf16), cudaMemcpyHostToDevice));
        for (int m = 1; m <= 4; ++m) {
            W4Batch batch;
            batch.w[0] = dw;
            batch.x[0] = static_cast<const bf16*>(dx);
            batch.y[0] = static_cast<bf16*>(dy);
            batch.count = 1;
            TPV_CUDA("check", run_w4a16(batch, m, n, k, k, false, s));
            std::vector<bf16> y(std::size_t(m) * n);
            TPV_TRY(fetch(y, static_cast<const bf16*>(dy), y.size(), s));
            for (int r = 0; r < m; ++r)
                for (int col = 0; col < n; ++col) {
                    double ref = 0;
                    for (int j = 0; j < k; ++j)
                        ref += double(weight(col, j)) *
                               to_float(scales[std::size_t(col) * (k / 32) + j / 32]) *
                               to_float(x[std::size_t(r) * k + j]);
                    double got = to_float(y[std::size_t(r) * n + col]);
                    if (!(std::fabs(got - ref) <= 1e-2 * std::fabs(ref) + 1e-3)) ++out.wrong;
                }
            out.checked += (long long)m * n;
        }
        return {};
    }();
    cudaFree(dw);
    cudaFree(dx);
    cudaFree(dy);
    if (out.wrong > 0 && out.detail.empty())
        out.detail = "W4A16 GEMM against the host reference: wrong outputs";
    return st;
}

}  // namespace

Status run_check(RankEngine& engine, const PassPlan& plan, CheckOutcome& out) {
    if (plan.int4_experts && out.checked == 0) TPV_TRY(check_w4a16(engine.stream(), out));
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
