// --check of the weight-streaming GEMMs at the pass's shapes (engine/cuda/check.cuh).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "engine/cuda/check.cuh"
#include "engine/cuda/kernels.cuh"
#include "engine/cuda/ops.cuh"
#include "engine/cuda/rank.cuh"

namespace tpverify::cuda {
namespace {

float as_float(bf16 v) {
    unsigned short bits;
    std::memcpy(&bits, &v, 2);
    unsigned w = unsigned(bits) << 16;
    float f;
    std::memcpy(&f, &w, 4);
    return f;
}

bf16 as_bf16(float f) {
    unsigned w;
    std::memcpy(&w, &f, 4);
    w += 0x7fffu + ((w >> 16) & 1u);  // round to nearest even
    return __ushort_as_bfloat16(static_cast<unsigned short>(w >> 16));
}

/// Device buffers freed at scope exit.
struct Scratch {
    std::vector<void*> ptrs;
    ~Scratch() {
        for (void* p : ptrs) cudaFree(p);
    }
    template <typename T>
    Status alloc(T*& p, std::uint64_t count) {
        void* raw = nullptr;
        TPV_CUDA("check", cudaMalloc(&raw, std::max<std::uint64_t>(count, 1) * sizeof(T)));
        ptrs.push_back(raw);
        p = static_cast<T*>(raw);
        return {};
    }
};

/// Copies host data to the device on the engine's stream and waits for it. That stream is
/// non-blocking: a plain cudaMemcpy (legacy stream) is not ordered with its kernels, and one
/// from pageable memory may return before its DMA has landed, so a kernel enqueued next could
/// read part of the old contents (a GPU test's fused-attention check failed so on one H100).
cudaError_t copy_in(void* dst, const void* src, std::size_t bytes, cudaStream_t s) {
    if (cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s); e != cudaSuccess)
        return e;
    return cudaStreamSynchronize(s);
}

/// One case: `rows.size()` matrices [n x k] of `format`, x rows with stride ldx.
struct Case {
    std::string what;
    sg::Format format = sg::Format::bf16;
    int n = 0, k = 0, ldx = 0;
    std::vector<int> rows;
    bool through_run_gemm = false;  ///< one bf16 GEMM, dispatched as the pass dispatches it
    bool row_major = false;         ///< the kernel reads the checkpoint's [n][k] (skinny kernel)
    bool silu = false;              ///< x' = SiLU(x[j]) * x[j + k], rounded to bf16, in the kernel's staging
};

Status check_case(RankEngine& engine, const Case& c, std::uint64_t seed, CheckOutcome& out) {
    cudaStream_t s = engine.stream();
    const int count = int(c.rows.size());
    const int most = *std::max_element(c.rows.begin(), c.rows.end());
    std::mt19937_64 rng(seed);
    const bool int4 = c.format == sg::Format::int4;
    const std::uint64_t nk = std::uint64_t(c.n) * c.k;
    // Checkpoint layout: INT4 words [n][k/8] + scales [n][k/32]; bf16 [n][k].
    std::vector<unsigned> words(int4 ? nk / 8 * count : 0);
    std::vector<bf16> scales(int4 ? nk / 32 * count : 0), dense(int4 ? 0 : nk * count);
    for (auto& w : words) w = unsigned(rng());
    for (auto& v : scales) v = as_bf16(float(rng() % 1000) / 64000.0f + 0.001f);
    for (auto& v : dense) v = as_bf16(float(int(rng() % 2001) - 1000) / 64000.0f);
    std::vector<bf16> x(std::uint64_t(most) * c.ldx * count);
    for (auto& v : x) v = as_bf16(float(int(rng() % 2001) - 1000) / 1000.0f);
    Scratch scratch;
    unsigned* d_words = nullptr;
    bf16 *d_scales = nullptr, *d_dense = nullptr, *d_x = nullptr, *d_y = nullptr;
    unsigned char* d_w = nullptr;
    const std::uint64_t matrix = sg::matrix_bytes(c.format, c.n, c.k);
    TPV_TRY(scratch.alloc(d_w, matrix * count));
    TPV_TRY(scratch.alloc(d_x, x.size()));
    TPV_TRY(scratch.alloc(d_y, std::uint64_t(most) * c.n * count));
    TPV_CUDA("check", copy_in(d_x, x.data(), x.size() * sizeof(bf16), s));
    if (int4) {
        TPV_TRY(scratch.alloc(d_words, words.size()));
        TPV_TRY(scratch.alloc(d_scales, scales.size()));
        TPV_CUDA("check", copy_in(d_words, words.data(), words.size() * 4, s));
        TPV_CUDA("check", copy_in(d_scales, scales.data(), scales.size() * 2, s));
    } else {
        TPV_TRY(scratch.alloc(d_dense, dense.size()));
        TPV_CUDA("check", copy_in(d_dense, dense.data(), dense.size() * 2, s));
    }
    // Repacked on the device into the layout the kernel reads, as a load would.
    for (int e = 0; e < count && !c.row_major; ++e) {
        if (int4)
            TPV_CUDA("check", sg::repack_int4(d_words + nk / 8 * e, d_scales + nk / 32 * e, d_w + matrix * e,
                                              c.n, c.k, s));
        else
            TPV_CUDA("check", sg::repack_bf16(d_dense + nk * e, d_w + matrix * e, c.n, c.k, s));
    }
    // Twice, the second output checked: split-k counters or stream-K tickets the first launch left
    // behind show (the pass's launches follow one another on the same workspace).
    for (int run = 0; run < 2; ++run) {
        TPV_CUDA("check",
                 cudaMemsetAsync(d_y, 0xff, std::uint64_t(most) * c.n * count * sizeof(bf16), s));  // NaN
        if (c.through_run_gemm) {
            Gemm g;
            g.m = c.rows[0];
            g.n = c.n;
            g.k = c.k;
            const void* w = c.row_major ? static_cast<const void*>(d_dense) : d_w;
            TPV_TRY(run_gemm(engine.cublas(), engine.gemm_path(), engine.workspace(), g, w, d_x, d_y, false,
                             s, "check", c.ldx));
        } else {
            sg::Batch batch;
            batch.count = count;
            for (int e = 0; e < count; ++e) {
                batch.w[e] = d_w + matrix * e;
                batch.x[e] = d_x + std::uint64_t(most) * c.ldx * e;
                batch.y[e] = d_y + std::uint64_t(most) * c.n * e;
                batch.rows[e] = c.rows[std::size_t(e)];
            }
            TPV_CUDA("check",
                     sg::run(c.format, batch, c.n, c.k, c.ldx, false, engine.workspace(), s, c.silu));
        }
    }
    std::vector<bf16> y(std::uint64_t(most) * c.n * count);
    TPV_CUDA("check", cudaMemcpyAsync(y.data(), d_y, y.size() * sizeof(bf16), cudaMemcpyDeviceToHost, s));
    TPV_CUDA("check", cudaStreamSynchronize(s));
    // References of the checked outputs first, for their RMS.
    struct Out {
        double ref, got;
    };
    std::vector<Out> outs;
    for (int e = 0; e < count; ++e)
        for (int col = 0; col < c.n; col += e == 0 ? 1 : 7)
            for (int r = 0; r < c.rows[std::size_t(e)]; ++r) {
                double ref = 0;
                const bf16* xr = x.data() + std::uint64_t(most) * c.ldx * e + std::uint64_t(r) * c.ldx;
                auto x_at = [&](int j) {
                    if (!c.silu) return double(as_float(xr[j]));
                    const float g = as_float(xr[j]), u = as_float(xr[j + c.k]);
                    return double(as_float(as_bf16(g / (1.0f + std::exp(-g)) * u)));
                };
                for (int j = 0; j < c.k; ++j) {
                    double w;
                    if (int4) {
                        const unsigned word = words[nk / 8 * e + std::uint64_t(col) * (c.k / 8) + j / 8];
                        w = double(int((word >> (4 * (j % 8))) & 15u) - 8) *
                            as_float(scales[nk / 32 * e + std::uint64_t(col) * (c.k / 32) + j / 32]);
                    } else {
                        w = as_float(dense[nk * e + std::uint64_t(col) * c.k + j]);
                    }
                    ref += w * x_at(j);
                }
                outs.push_back(
                    {ref, as_float(y[std::uint64_t(most) * c.n * e + std::uint64_t(r) * c.n + col])});
            }
    double squares = 0;
    for (const Out& o : outs) squares += o.ref * o.ref;
    const double rms = std::sqrt(squares / double(std::max<std::size_t>(outs.size(), 1)));
    long long wrong = 0;
    for (const Out& o : outs) {
        const double err = std::fabs(o.got - o.ref);
        if (!(err <= 1e-2 * std::fabs(o.ref) + 1e-2 * rms)) ++wrong;
        if (rms > 0 && (std::isnan(err) || err / rms > out.gemm_max_rel_err))
            out.gemm_max_rel_err = std::isnan(err) ? INFINITY : err / rms;
    }
    out.gemm_checked += (long long)outs.size();
    out.checked += (long long)outs.size();
    out.wrong += wrong;
    if (wrong > 0 && out.detail.empty())
        out.detail = c.what + ": " + std::to_string(wrong) + " of " + std::to_string(outs.size()) +
                     " outputs differ from the double-precision reference";
    return {};
}

/// The router's top-k at the pass's shape (tokens x experts, k) on random logits with ties:
/// ids exactly (by falling score, lower id first among equals) and the normalised weights.
Status check_topk(RankEngine& engine, int tokens, int experts, int k, std::uint64_t seed, CheckOutcome& out) {
    std::mt19937_64 rng(seed);
    std::vector<bf16> logits(std::size_t(tokens) * experts);
    for (auto& v : logits) v = as_bf16(float(int(rng() % 801) - 400) / 100.0f);  // repeats: ties
    Scratch scratch;
    bf16* d_logits = nullptr;
    int* d_ids = nullptr;
    float* d_weights = nullptr;
    TPV_TRY(scratch.alloc(d_logits, logits.size()));
    TPV_TRY(scratch.alloc(d_ids, std::uint64_t(tokens) * k));
    TPV_TRY(scratch.alloc(d_weights, std::uint64_t(tokens) * k));
    cudaStream_t s = engine.stream();
    TPV_CUDA("check", copy_in(d_logits, logits.data(), logits.size() * 2, s));
    TPV_CUDA("check", cudaMemsetAsync(d_ids, 0xff, std::size_t(tokens) * k * sizeof(int), s));
    TPV_CUDA("check", topk(d_logits, tokens, experts, k, d_ids, d_weights, s));
    std::vector<int> ids(std::size_t(tokens) * k);
    std::vector<float> weights(ids.size());
    TPV_CUDA("check",
             cudaMemcpyAsync(ids.data(), d_ids, ids.size() * sizeof(int), cudaMemcpyDeviceToHost, s));
    TPV_CUDA("check", cudaMemcpyAsync(weights.data(), d_weights, weights.size() * sizeof(float),
                                      cudaMemcpyDeviceToHost, s));
    TPV_CUDA("check", cudaStreamSynchronize(s));
    long long wrong = 0;
    for (int t = 0; t < tokens; ++t) {
        std::vector<std::pair<double, int>> order;
        for (int e = 0; e < experts; ++e)
            order.push_back(
                {-1.0 / (1.0 + std::exp(-double(as_float(logits[std::size_t(t) * experts + e])))), e});
        std::sort(order.begin(), order.end());
        double sum = 0;
        for (int j = 0; j < k; ++j) sum -= order[std::size_t(j)].first;
        for (int j = 0; j < k; ++j) {
            const std::size_t i = std::size_t(t) * k + j;
            const double want = -order[std::size_t(j)].first / sum;
            if (ids[i] != order[std::size_t(j)].second || !(std::fabs(weights[i] - want) <= 1e-4)) ++wrong;
        }
    }
    out.checked += (long long)ids.size();
    out.wrong += wrong;
    if (wrong > 0 && out.detail.empty())
        out.detail = "router top-" + std::to_string(k) + ": " + std::to_string(wrong) + " of " +
                     std::to_string(ids.size()) + " choices differ from the host reference";
    return {};
}

/// The grouped skinny launch of the fused pass (RankEngine::enqueue_fused) at the pass's shapes:
/// q_b and kv_b in one launch (kv_b's x rows wider than its k, as kv_a's output is), the router
/// and the shared gate_up in one launch, and (TPVERIFY_FUSE=silu) the shared expert's down with
/// SiLU-and-mul in its input load, each part against a host reference.
Status check_skinny_group(RankEngine& engine, const PassPlan& plan, std::uint64_t seed, CheckOutcome& out) {
    const KernelFusion& fusion = kernel_fusion();
    auto ends = [](const std::string& s, const std::string& tail) {
        return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
    };
    const Gemm *qb = nullptr, *kvb = nullptr, *down = nullptr, *router = nullptr, *up = nullptr;
    for (const Step& s : plan.steps) {
        if (s.kind != Step::Kind::gemm || !skinny_chosen(engine.gemm_path(), s.gemm)) continue;
        if (fusion.mla && qb == nullptr && ends(s.label, ".q_b")) qb = &s.gemm;
        if (fusion.mla && kvb == nullptr && ends(s.label, ".kv_b")) kvb = &s.gemm;
        if (fusion.silu && down == nullptr && ends(s.label, ".shared0.down")) down = &s.gemm;
        if (fusion.moe && router == nullptr && ends(s.label, ".router")) router = &s.gemm;
        if (fusion.moe && up == nullptr && ends(s.label, ".shared0.gate_up")) up = &s.gemm;
    }
    struct Host {
        int n, k, ldx;
        bool silu;
        int launch;  ///< parts of one launch share this
        std::vector<bf16> w, x;
    };
    std::vector<Host> hosts;
    int m = 0;
    if (qb != nullptr && kvb != nullptr) {
        hosts.push_back({qb->n, qb->k, qb->k, false, 0, {}, {}});
        hosts.push_back({kvb->n, kvb->k, kvb->k + 64, false, 0, {}, {}});
        m = qb->m;
    }
    if (router != nullptr && up != nullptr && (m == 0 || router->m == m)) {
        hosts.push_back({router->n, router->k, router->k, false, 1, {}, {}});
        hosts.push_back({up->n, up->k, up->k, false, 1, {}, {}});
        m = router->m;
    }
    if (down != nullptr && (m == 0 || down->m == m)) {
        hosts.push_back({down->n, down->k, 2 * down->k, true, 2, {}, {}});
        m = down->m;
    }
    if (hosts.empty()) return {};
    std::mt19937_64 rng(seed);
    Scratch scratch;
    cudaStream_t s = engine.stream();
    skinny::Part parts[5];
    std::vector<bf16*> d_y;
    for (std::size_t i = 0; i < hosts.size(); ++i) {
        Host& h = hosts[i];
        h.w.resize(std::uint64_t(h.n) * h.k);
        h.x.resize(std::uint64_t(m) * h.ldx);
        for (auto& v : h.w) v = as_bf16(float(int(rng() % 2001) - 1000) / 64000.0f);
        for (auto& v : h.x) v = as_bf16(float(int(rng() % 2001) - 1000) / 500.0f);
        bf16 *w = nullptr, *x = nullptr, *y = nullptr;
        TPV_TRY(scratch.alloc(w, h.w.size()));
        TPV_TRY(scratch.alloc(x, h.x.size()));
        TPV_TRY(scratch.alloc(y, std::uint64_t(m) * h.n));
        TPV_CUDA("check", copy_in(w, h.w.data(), h.w.size() * 2, s));
        TPV_CUDA("check", copy_in(x, h.x.data(), h.x.size() * 2, s));
        TPV_CUDA("check", cudaMemsetAsync(y, 0xff, std::uint64_t(m) * h.n * 2, s));  // NaN
        parts[i].w = w, parts[i].x = x, parts[i].y = y, parts[i].ldx = h.ldx, parts[i].n = h.n;
        parts[i].k = h.k, parts[i].silu = h.silu;
        d_y.push_back(y);
    }
    // As the pass launches them: q_b + kv_b in one launch, router + gate_up in one, down alone.
    for (std::size_t first = 0; first < hosts.size();) {
        std::size_t end = first + 1;
        while (end < hosts.size() && hosts[end].launch == hosts[first].launch) ++end;
        TPV_CUDA("check", skinny::run_group(parts + first, int(end - first), m, false, s));
        first = end;
    }
    TPV_CUDA("check", cudaStreamSynchronize(s));
    for (std::size_t i = 0; i < hosts.size(); ++i) {
        const Host& h = hosts[i];
        std::vector<bf16> y(std::uint64_t(m) * h.n);
        TPV_CUDA("check", cudaMemcpy(y.data(), d_y[i], y.size() * 2, cudaMemcpyDeviceToHost));
        std::vector<double> ref, got;
        for (int r = 0; r < m; ++r) {
            std::vector<double> xr(std::size_t(h.k));
            for (int j = 0; j < h.k; ++j) {
                const float g = as_float(h.x[std::uint64_t(r) * h.ldx + j]);
                xr[std::size_t(j)] =
                    h.silu ? as_float(as_bf16(g / (1.0f + std::exp(-g)) *
                                              as_float(h.x[std::uint64_t(r) * h.ldx + h.k + j])))
                           : g;
            }
            for (int col = 0; col < h.n; col += 3) {
                double acc = 0;
                for (int j = 0; j < h.k; ++j)
                    acc += double(as_float(h.w[std::uint64_t(col) * h.k + j])) * xr[std::size_t(j)];
                ref.push_back(acc);
                got.push_back(as_float(y[std::uint64_t(r) * h.n + col]));
            }
        }
        double squares = 0;
        for (double v : ref) squares += v * v;
        const double rms = std::sqrt(squares / double(std::max<std::size_t>(ref.size(), 1)));
        long long wrong = 0;
        for (std::size_t j = 0; j < ref.size(); ++j) {
            const double err = std::fabs(got[j] - ref[j]);
            if (!(err <= 1e-2 * std::fabs(ref[j]) + 1e-2 * rms)) ++wrong;
            if (rms > 0 && (std::isnan(err) || err / rms > out.gemm_max_rel_err))
                out.gemm_max_rel_err = std::isnan(err) ? INFINITY : err / rms;
        }
        out.gemm_checked += (long long)ref.size();
        out.checked += (long long)ref.size();
        out.wrong += wrong;
        if (wrong > 0 && out.detail.empty())
            out.detail = "grouped skinny GEMM part " + std::to_string(i) + (h.silu ? " (SiLU input)" : "") +
                         ": " + std::to_string(wrong) + " of " + std::to_string(ref.size()) +
                         " outputs differ from the double-precision reference";
    }
    return {};
}

/// softmax(q k / sqrt(qk_dim)) v in double for one query row `q` (qk_dim values) over `context`
/// cached rows of `row_dim` (k the first qk_dim of each, v the v_dim at v_offset), added to `ref`.
void reference_attention(const bf16* q, const bf16* cache, int context, int row_dim, int qk_dim, int v_offset,
                         int v_dim, double* ref) {
    std::vector<double> score(static_cast<std::size_t>(context));
    double most = -1e300;
    for (int j = 0; j < context; ++j) {
        double dot = 0;
        for (int d = 0; d < qk_dim; ++d)
            dot += double(as_float(q[d])) * as_float(cache[std::size_t(j) * row_dim + d]);
        score[j] = dot / std::sqrt(double(qk_dim));
        most = std::max(most, score[j]);
    }
    double sum = 0;
    for (double& x : score) sum += (x = std::exp(x - most));
    for (int j = 0; j < context; ++j)
        for (int d = 0; d < v_dim; ++d)
            ref[d] += score[j] / sum * as_float(cache[std::size_t(j) * row_dim + v_offset + d]);
}

/// Whether an attention output is wrong: NaN, or off by more than 1e-2 of its reference plus 2e-2
/// of the outputs' RMS; its error relative to the RMS goes into out.attention_max_rel_err.
bool attention_wrong(double got, double want, double rms, CheckOutcome& out) {
    const double err = std::fabs(got - want);
    if (rms > 0 && (std::isnan(err) || err / rms > out.attention_max_rel_err))
        out.attention_max_rel_err = std::isnan(err) ? INFINITY : err / rms;
    return !(err <= 1e-2 * std::fabs(want) + 2e-2 * rms);
}

void tally_attention(long long checked, long long wrong, CheckOutcome& out) {
    out.attention_checked += checked;
    out.checked += checked;
    out.wrong += wrong;
}

}  // namespace

Status check_attention(RankEngine& engine, const PassPlan& plan, CheckOutcome& out) {
    const Attention* pass = nullptr;
    for (const Step& s : plan.steps)
        if (pass == nullptr && s.kind == Step::Kind::attention && mla_shape(s.attention) &&
            s.attention.context > 0)
            pass = &s.attention;
    const bool two_pass = two_pass_attention_chosen(), probs = probs_attention_chosen();
    const bool values = values_attention_chosen() || probs;  // the values kernel, fed S or P
    if (pass == nullptr || !(fused_attention_chosen() || two_pass || values)) return {};
    if (values && !(probs ? mla_probs_fits(pass->context) : mla_values_fits(pass->context)))
        return {};  // the pass runs the cuBLAS path then
    int sms = 0, device = 0;
    TPV_CUDA("check", cudaGetDevice(&device));
    TPV_CUDA("check", cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    TPV_CUDA("check", two_pass ? mla_two_pass_setup() : values ? mla_values_setup() : mla_setup());
    constexpr int dim = 576, vdim = 512;
    // Two cases: 80 query rows (two row blocks, one partial) over 1000 cached rows (a partial last
    // tile), split as the pass would split them and in one split; and the pass's own shape (its
    // heads x tokens rows over its context, its splits), every row computed, a sample of rows
    // (every 8th, the last too) against the reference.
    struct AttentionCase {
        int rows, context, stride;
        bool one_split;
    };
    // (The values form has no splits of its own: its one-split case is its only one.)
    const AttentionCase cases[] = {{80, 1000, 1, true}, {pass->rows * pass->heads, pass->context, 8, false}};
    std::mt19937_64 rng(777 + std::uint64_t(engine.comm().rank()));
    for (const AttentionCase& ac : cases) {
        const int rows = ac.rows, context = ac.context;
        std::vector<bf16> q(std::size_t(rows) * dim), cache(std::size_t(context) * dim);
        for (auto& v : q) v = as_bf16(float(int(rng() % 2001) - 1000) / 500.0f);
        for (auto& v : cache) v = as_bf16(float(int(rng() % 2001) - 1000) / 500.0f);
        std::vector<int> sampled;
        for (int r = 0; r < rows; r += ac.stride) sampled.push_back(r);
        if (sampled.back() != rows - 1) sampled.push_back(rows - 1);
        // Reference: softmax(q k / sqrt(576)) v, v = the first 512 of each cached row.
        std::vector<double> ref(std::size_t(rows) * vdim, 0.0);
        for (int r : sampled)
            reference_attention(q.data() + std::size_t(r) * dim, cache.data(), context, dim, dim, 0, vdim,
                                ref.data() + std::size_t(r) * vdim);
        double squares = 0;
        for (int r : sampled)
            for (int d = 0; d < vdim; ++d)
                squares += ref[std::size_t(r) * vdim + d] * ref[std::size_t(r) * vdim + d];
        const double rms = std::sqrt(squares / double(sampled.size() * vdim));
        Scratch scratch;
        bf16 *d_q = nullptr, *d_cache = nullptr, *d_out = nullptr;
        float* d_ws = nullptr;
        float* d_scores = nullptr;
        bf16* d_probs = nullptr;
        unsigned char* d_two_pass = nullptr;
        const int splits =
            two_pass ? mla_two_pass_splits(rows, context, sms) : mla_splits(rows, context, sms);
        TPV_TRY(scratch.alloc(d_q, q.size()));
        TPV_TRY(scratch.alloc(d_cache, cache.size()));
        TPV_TRY(scratch.alloc(d_out, std::size_t(rows) * vdim));
        cudaStream_t s = engine.stream();
        if (two_pass) {
            TPV_TRY(scratch.alloc(d_two_pass, mla_two_pass_bytes(rows, context)));
            TPV_CUDA("check", cudaMemsetAsync(d_two_pass, 0, mla_two_pass_bytes(rows, context), s));
        } else if (values) {
            TPV_TRY(scratch.alloc(d_scores, std::size_t(rows) * context));
            if (probs) TPV_TRY(scratch.alloc(d_probs, std::size_t(rows) * context));
        } else {
            TPV_TRY(scratch.alloc(d_ws, mla_workspace_floats(rows, std::max(splits, 1))));
        }
        TPV_CUDA("check", copy_in(d_q, q.data(), q.size() * 2, s));
        TPV_CUDA("check", copy_in(d_cache, cache.data(), cache.size() * 2, s));
        std::vector<int> uses{splits};
        if (ac.one_split && !values) uses.push_back(1);
        for (int use : uses) {
            // Two-pass: run twice, the second output checked, so that an accumulator or counter
            // the first call left behind shows.
            for (int run = 0; run < (two_pass ? 2 : 1); ++run) {
                TPV_CUDA("check", cudaMemsetAsync(d_out, 0xff, std::size_t(rows) * vdim * 2, s));  // NaN
                if (probs)
                    TPV_TRY(mla_probs_attention(engine.cublas(), d_q, d_cache, d_out, rows, context, d_scores,
                                                d_probs, s, "check"));
                else if (values)
                    TPV_TRY(mla_values_attention(engine.cublas(), d_q, d_cache, d_out, rows, context,
                                                 d_scores, s, "check"));
                else
                    TPV_CUDA("check",
                             two_pass ? mla_two_pass(d_q, d_cache, d_out, rows, context, use, d_two_pass, s)
                                      : mla_decode(d_q, d_cache, d_out, rows, context, use, d_ws, s));
            }
            std::vector<bf16> got(std::size_t(rows) * vdim);
            TPV_CUDA("check", cudaMemcpyAsync(got.data(), d_out, got.size() * 2, cudaMemcpyDeviceToHost, s));
            TPV_CUDA("check", cudaStreamSynchronize(s));
            long long wrong = 0, checked = 0;
            for (int r : sampled)
                for (int d = 0; d < vdim; ++d, ++checked) {
                    const std::size_t i = std::size_t(r) * vdim + d;
                    wrong += attention_wrong(as_float(got[i]), ref[i], rms, out);
                }
            tally_attention(checked, wrong, out);
            if (wrong > 0 && out.detail.empty())
                out.detail = std::string(two_pass                     ? "two-pass"
                                         : probs                      ? "probs"
                                         : values                     ? "values"
                                         : cluster_attention_chosen() ? "cluster"
                                                                      : "fused") +
                             " MLA decode attention (" + std::to_string(rows) + " rows, context " +
                             std::to_string(context) + ", " +
                             (values ? std::to_string(mla_values_parts()) + " parts"
                                     : std::to_string(use) + " splits") +
                             "): " + std::to_string(wrong) + " of " + std::to_string(checked) +
                             " outputs differ from the double-precision reference";
        }
    }
    return {};
}

Status check_head_attention(RankEngine& engine, const std::vector<const PassPlan*>& plans,
                            CheckOutcome& out) {
    if (!head_decode_chosen()) return {};
    const Attention* pass = nullptr;
    for (const PassPlan* plan : plans) {
        if (plan == nullptr) continue;  // no draft
        for (const Step& s : plan->steps)
            if (pass == nullptr && s.kind == Step::Kind::attention && head_decode_fits(s.attention))
                pass = &s.attention;
    }
    if (pass == nullptr) return {};
    int sms = 0, device = 0;
    TPV_CUDA("check", cudaGetDevice(&device));
    TPV_CUDA("check", cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    constexpr int dim = 128;
    // 3 KV heads of 3 query rows over 1,001 cached rows in 5 parts (the last shorter, each ending
    // in a partial chunk of 32) and in one; 2 rows over 700 in 3 parts; one row over 37 with K and
    // V apart in wider rows; then the pass's own shape and parts, every 8th KV head (and the last)
    // against the reference (the others hold zeros and are not looked at).
    struct HeadCase {
        int kv_heads, group_rows, context, row_dim, v_offset, parts, stride;
    };
    const HeadCase cases[] = {{3, 3, 1001, 256, 128, 5, 1},
                              {3, 3, 1001, 256, 128, 1, 1},
                              {2, 2, 700, 256, 128, 3, 1},
                              {2, 1, 37, 264, 136, 1, 1},
                              {pass->kv_heads, pass->group_rows(), pass->context, pass->row_dim,
                               pass->v_offset, head_decode_parts(pass->kv_heads, pass->context, sms), 8}};
    std::mt19937_64 rng(909 + std::uint64_t(engine.comm().rank()));
    auto random_bf16 = [&] { return as_bf16(float(int(rng() % 2001) - 1000) / 500.0f); };
    cudaStream_t s = engine.stream();
    for (const HeadCase& hc : cases) {
        std::vector<int> heads;
        for (int h = 0; h < hc.kv_heads; h += hc.stride) heads.push_back(h);
        if (heads.back() != hc.kv_heads - 1) heads.push_back(hc.kv_heads - 1);
        const std::size_t head_cache = std::size_t(hc.context) * hc.row_dim,
                          head_q = std::size_t(hc.group_rows) * dim;
        Scratch scratch;
        bf16 *d_q = nullptr, *d_cache = nullptr, *d_out = nullptr;
        float* d_work = nullptr;
        int* d_tickets = nullptr;
        TPV_TRY(scratch.alloc(d_q, head_q * hc.kv_heads));
        TPV_TRY(scratch.alloc(d_cache, head_cache * hc.kv_heads));
        TPV_TRY(scratch.alloc(d_out, head_q * hc.kv_heads));
        TPV_TRY(scratch.alloc(d_work, head_decode_floats(hc.kv_heads, hc.parts)));
        TPV_TRY(scratch.alloc(d_tickets, std::size_t(hc.kv_heads)));
        TPV_CUDA("check", cudaMemsetAsync(d_q, 0, head_q * hc.kv_heads * 2, s));
        TPV_CUDA("check", cudaMemsetAsync(d_cache, 0, head_cache * hc.kv_heads * 2, s));
        TPV_CUDA("check", cudaMemsetAsync(d_tickets, 0, std::size_t(hc.kv_heads) * sizeof(int), s));
        // The sampled heads' queries and caches, and their reference outputs.
        std::vector<bf16> q(head_q), cache(head_cache);
        std::vector<double> ref(head_q * heads.size(), 0.0);
        for (std::size_t i = 0; i < heads.size(); ++i) {
            for (auto& v : q) v = random_bf16();
            for (auto& v : cache) v = random_bf16();
            TPV_CUDA("check", copy_in(d_q + heads[i] * head_q, q.data(), q.size() * 2, s));
            TPV_CUDA("check", copy_in(d_cache + heads[i] * head_cache, cache.data(), cache.size() * 2, s));
            TPV_CUDA("check", cudaStreamSynchronize(s));  // q and cache are filled again next
            for (int r = 0; r < hc.group_rows; ++r)
                reference_attention(q.data() + std::size_t(r) * dim, cache.data(), hc.context, hc.row_dim,
                                    dim, hc.v_offset, dim, ref.data() + i * head_q + std::size_t(r) * dim);
        }
        double squares = 0;
        for (double x : ref) squares += x * x;
        const double rms = std::sqrt(squares / double(ref.size()));
        // Twice, the second output checked: a ticket the first call left behind shows.
        for (int run = 0; run < 2; ++run) {
            TPV_CUDA("check", cudaMemsetAsync(d_out, 0xff, head_q * hc.kv_heads * 2, s));  // NaN
            TPV_CUDA("check", head_decode(d_q, d_cache, d_out, hc.group_rows, hc.kv_heads, hc.context,
                                          hc.row_dim, hc.v_offset, hc.parts, d_work, d_tickets, s));
        }
        std::vector<bf16> got(head_q * hc.kv_heads);
        TPV_CUDA("check", cudaMemcpyAsync(got.data(), d_out, got.size() * 2, cudaMemcpyDeviceToHost, s));
        TPV_CUDA("check", cudaStreamSynchronize(s));
        long long wrong = 0, checked = 0;
        for (std::size_t i = 0; i < heads.size(); ++i)
            for (std::size_t j = 0; j < head_q; ++j, ++checked)
                wrong += attention_wrong(as_float(got[heads[i] * head_q + j]), ref[i * head_q + j], rms, out);
        tally_attention(checked, wrong, out);
        if (wrong > 0 && out.detail.empty())
            out.detail = "GQA decode attention (" + std::to_string(hc.kv_heads) + " KV heads x " +
                         std::to_string(hc.group_rows) + " rows, context " + std::to_string(hc.context) +
                         ", " + std::to_string(hc.parts) + " parts): " + std::to_string(wrong) + " of " +
                         std::to_string(checked) + " outputs differ from the double-precision reference";
    }
    return {};
}

Status check_stream_gemms(RankEngine& engine, const PassPlan& plan, CheckOutcome& out) {
    std::vector<Case> cases;
    // The first MoE layer's experts, both sides, as the pass launches them (up to 8 experts: the
    // 1-token pass's whole launch, where the stream-K kernel writes some items whole and some in
    // pieces).
    for (const Step& s : plan.steps) {
        if (s.kind != Step::Kind::experts || s.experts.count() == 0) continue;
        const Experts& x = s.experts;
        Case c;
        c.what = "W4A16/bf16 experts " + std::string(x.gate_up ? "gate_up" : "down") + " of " + s.label;
        c.format = x.int4 ? sg::Format::int4 : sg::Format::bf16;
        c.n = x.n;
        c.k = x.k;
        c.ldx = x.gate_up ? x.k : 2 * x.k;  // down reads the first half of each gate_up row
        // With fusion group expert_silu, down applies the SiLU-and-mul to those rows as it stages them.
        c.silu = !x.gate_up && kernel_fusion().expert_silu && streams(engine.gemm_path(), x.gemm(0), true);
        if (c.silu) c.what += " (SiLU-and-mul in its staging)";
        c.rows.assign(x.rows.begin(), x.rows.begin() + std::min(8, x.count()));
        if (!sg::fits(c.n, c.k)) continue;
        if (!x.int4 && engine.gemm_path() == GemmPath::cublas) continue;
        cases.push_back(c);
        if (!x.gate_up) break;
    }
    // Every bf16 GEMM shape the skinny or streaming kernel runs (up to 10), at the pass's rows.
    std::set<std::tuple<int, int, int>> shapes;
    for (const Step& s : plan.steps) {
        const bool skinny = skinny_chosen(engine.gemm_path(), s.gemm);
        if (s.kind != Step::Kind::gemm || s.gemm.int4 ||
            !(skinny || streams(engine.gemm_path(), s.gemm, false)))
            continue;
        if (!shapes.insert({s.gemm.m, s.gemm.n, s.gemm.k}).second || shapes.size() > 10) continue;
        // lm_head-sized matrices make a slow host reference; the kernel is the same at any n.
        if (std::uint64_t(s.gemm.n) * s.gemm.k > (64ull << 20)) continue;
        Case c;
        c.what = "bf16 GEMM " + s.label;
        c.n = s.gemm.n;
        c.k = s.gemm.k;
        c.ldx = s.gemm.k;
        c.rows = {s.gemm.m};
        c.through_run_gemm = true;
        c.row_major = skinny;
        cases.push_back(c);
    }
    std::uint64_t seed = 12345 + std::uint64_t(engine.comm().rank());
    for (const Case& c : cases) TPV_TRY(check_case(engine, c, seed++, out));
    TPV_TRY(check_skinny_group(engine, plan, seed++, out));
    for (const Step& s : plan.steps)
        if (s.kind == Step::Kind::op && s.op == Op::topk && plan.model.active_experts > 0) {
            TPV_TRY(check_topk(engine, s.op_rows, s.op_width, plan.model.active_experts, seed, out));
            break;
        }
    return {};
}

Status check_moe_streams(RankEngine& engine, const PassPlan& plan, CheckOutcome& out) {
    if (moe_streams() == MoeStreams::one) return {};
    std::size_t first = 0, steps = 0;
    for (; first < plan.steps.size(); ++first)
        if ((steps = moe_block_steps(plan, first, engine.gemm_path())) > 0) break;
    if (steps == 0) return {};
    const std::uint64_t elems = std::uint64_t(plan.tokens) * engine.hidden();
    // The block's input, the same for both runs; each run writes it to the normed buffer (NaN
    // until then) on the pass's stream after a 3 ms delay, and the second stream waits 1 ms after
    // its fork: a second stream that does not wait for the fork reads NaN (1 ms < 3 ms), a pass
    // that does not wait for the second stream sums the routed rows before the shared expert's
    // output is there (the routed path takes well under 1 ms: 0.3 ms for 31 experts at 4 tokens
    // on an H100). Both then differ from one stream, whatever order the SMs take the two streams'
    // blocks in (with 300 us and 100 us the missing join went unseen once at 4 tokens, where the
    // routed path is longer than the second stream's delay and shared expert together).
    Scratch scratch;
    bf16* input = nullptr;
    TPV_TRY(scratch.alloc(input, elems));
    cudaStream_t s = engine.stream();
    TPV_CUDA("check", fill_random(input, elems, 1.0f, 4242 + std::uint64_t(engine.comm().rank()), s));
    const RankEngine::Buffers buf = engine.buffers();
    auto layer_output = [&](MoeStreams streams, std::vector<unsigned short>& host) -> Status {
        TPV_TRY(engine.fill_activations(0xffff));  // NaN
        TPV_CUDA("check", fill_bits(buf.normed, elems, 0xffff, s));
        TPV_CUDA("check", cudaStreamSynchronize(s));
        engine.set_moe_check_delay(streams == MoeStreams::one ? 0 : 1000000);
        Status ran = engine.run_once(
            [&]() -> Status {
                TPV_CUDA("check", spin(3000000, s));
                TPV_CUDA("check", cudaMemcpyAsync(buf.normed, input, elems * 2, cudaMemcpyDeviceToDevice, s));
                return engine.enqueue_steps(plan, first, first + steps, PassKind::full, "check", false,
                                            streams);
            },
            "check");
        engine.set_moe_check_delay(0);
        TPV_TRY(ran);
        host.resize(elems);
        TPV_CUDA("check", cudaMemcpy(host.data(), buf.send, elems * 2, cudaMemcpyDeviceToHost));
        return {};
    };
    std::vector<unsigned short> one, two;
    TPV_TRY(layer_output(MoeStreams::one, one));
    TPV_TRY(layer_output(moe_streams(), two));
    TPV_TRY(engine.fill_activations(0));  // finite again for the timed passes
    long long wrong = 0, not_finite = 0;
    for (std::uint64_t i = 0; i < elems; ++i) {
        if ((one[i] & 0x7f80u) == 0x7f80u) ++not_finite;
        if (one[i] != two[i]) ++wrong;
    }
    out.moe_streams_checked += (long long)elems;
    out.checked += (long long)elems;
    out.wrong += wrong + not_finite;
    if (wrong + not_finite > 0 && out.detail.empty())
        out.detail = "MoE block " + plan.steps[first].label + " on two streams: " + std::to_string(wrong) +
                     " of " + std::to_string(elems) + " layer outputs differ from one stream, " +
                     std::to_string(not_finite) + " not finite on one stream";
    return {};
}

}  // namespace tpverify::cuda
