// Decode attention: two strided-batched cuBLAS GEMMs around a row softmax.
#include <algorithm>
#include <cmath>

#include "engine/cuda/attention.cuh"
#include "engine/cuda/kernels.cuh"
#include "engine/cuda/skinny_gemm.cuh"
#include "engine/knobs.hpp"

namespace tpverify::cuda {
namespace {

constexpr int k_softmax_threads = 256;

// The block's max (is_max) or sum of v, every thread getting it: a shuffle tree in each warp,
// then the warps' results in order. `shared` holds 32 floats and is free again on return.
__device__ float block_reduce(float v, bool is_max, float* shared) {
    for (int o = 16; o > 0; o >>= 1) {
        const float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = is_max ? -INFINITY : 0.0f;
    for (int w = 0; w < int(blockDim.x / 32); ++w) v = is_max ? fmaxf(v, shared[w]) : v + shared[w];
    __syncthreads();  // shared is reused by the next reduction
    return v;
}

// One block per score row: p = exp(s*scale - max) / sum, written as bf16, the row read three
// times (any width; TPVERIFY_SOFTMAX=three-pass for every width).
__global__ void softmax_kernel(const float* scores, bf16* probs, int cols, float scale) {
    skinny::pdl_wait();  // launched early (TPVERIFY_SOFTMAX_PDL): the scores GEMM's writes first
    __shared__ float shared[32];
    const float* row = scores + std::uint64_t(blockIdx.x) * cols;
    bf16* out = probs + std::uint64_t(blockIdx.x) * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j] * scale);
    m = block_reduce(m, true, shared);
    float sum = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) sum += __expf(row[j] * scale - m);
    const float inv = 1.0f / block_reduce(sum, false, shared);
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        out[j] = __float2bfloat16(__expf(row[j] * scale - m) * inv);
}

// One block per score row, the row held in registers (k_row_per_thread floats a thread, read
// once as float4): the same p as softmax_kernel with one read of the row instead of three (a
// layer's attention 15.8 us instead of 19.4 on the H200, docs/benchmarks-gpu.md, 2026-12-04).
constexpr int k_row_threads = 512;
constexpr int k_row_per_thread = 16;  ///< rows up to 512 x 16 = 8,192 columns take this kernel

__global__ void __launch_bounds__(k_row_threads)
    softmax_row_kernel(const float* scores, bf16* probs, int cols, float scale) {
    skinny::pdl_wait();
    __shared__ float shared[32];
    const float4* row = reinterpret_cast<const float4*>(scores + std::uint64_t(blockIdx.x) * cols);
    bf16* out = probs + std::uint64_t(blockIdx.x) * cols;
    constexpr int vecs = k_row_per_thread / 4;
    const int nvec = cols / 4;
    float4 v[vecs];
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < vecs; ++i) {
        const int j = threadIdx.x + i * k_row_threads;
        v[i] = j < nvec ? row[j] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        m = fmaxf(m, fmaxf(fmaxf(v[i].x, v[i].y), fmaxf(v[i].z, v[i].w)));
    }
    m = block_reduce(m, true, shared) * scale;
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < vecs; ++i) {
        v[i].x = __expf(v[i].x * scale - m), v[i].y = __expf(v[i].y * scale - m);
        v[i].z = __expf(v[i].z * scale - m), v[i].w = __expf(v[i].w * scale - m);
        sum += (v[i].x + v[i].y) + (v[i].z + v[i].w);
    }
    const float inv = 1.0f / block_reduce(sum, false, shared);
#pragma unroll
    for (int i = 0; i < vecs; ++i) {
        const int j = threadIdx.x + i * k_row_threads;
        if (j >= nvec) continue;
        const __nv_bfloat162 lo = __floats2bfloat162_rn(v[i].x * inv, v[i].y * inv);
        const __nv_bfloat162 hi = __floats2bfloat162_rn(v[i].z * inv, v[i].w * inv);
        uint2 packed;
        packed.x = *reinterpret_cast<const unsigned*>(&lo);
        packed.y = *reinterpret_cast<const unsigned*>(&hi);
        reinterpret_cast<uint2*>(out)[j] = packed;
    }
}

// TPVERIFY_SOFTMAX=three-pass: softmax_kernel for every shape (the previous default, to compare).
bool three_pass_softmax() {
    static const bool chosen = env_is("TPVERIFY_SOFTMAX", "three-pass");
    return chosen;
}

// TPVERIFY_SOFTMAX_PDL=1 (and PDL on): the softmax launched with programmatic dependent launch,
// so that it is launched as the scores GEMM's last blocks end rather than after the whole grid
// (cuBLAS's kernels do not trigger early; the softmax waits for the GEMM before reading).
bool softmax_pdl() {
    static const bool chosen = env_is("TPVERIFY_SOFTMAX_PDL", "1") && skinny::pdl_enabled();
    return chosen;
}

// P = softmax(S * scale) by rows: the one-read row kernel where the row fits it, else the
// three-pass one.
cudaError_t launch_softmax(const float* scores, bf16* probs, int rows, int context, float scale,
                           cudaStream_t s) {
    const bool row_kernel =
        !three_pass_softmax() && context % 4 == 0 && context <= k_row_threads * k_row_per_thread;
    const cudaError_t e = row_kernel
                              ? skinny::launch_pdl(softmax_row_kernel, dim3(unsigned(rows)), k_row_threads, 0,
                                                   s, softmax_pdl(), scores, probs, context, scale)
                              : skinny::launch_pdl(softmax_kernel, dim3(unsigned(rows)), k_softmax_threads, 0,
                                                   s, softmax_pdl(), scores, probs, context, scale);
    return e != cudaSuccess ? e : cudaGetLastError();
}

// S = Q K^T for each of `kv_heads` KV heads (a strided batch): per head `group_rows` query rows
// of `qk_dim` against `context` cached rows of `row_dim` (the first qk_dim of each), fp32,
// unscaled, row-major rows x context (column-major views of row-major buffers, as in run_gemm).
Status scores_gemm(cublasHandle_t handle, const bf16* q, const bf16* cache, float* scores, int context,
                   int group_rows, int qk_dim, int row_dim, int kv_heads, const char* phase) {
    float one = 1.0f, zero = 0.0f;
    TPV_CUBLAS(phase,
               cublasGemmStridedBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, context, group_rows, qk_dim, &one,
                                          cache, CUDA_R_16BF, row_dim, (long long)context * row_dim, q,
                                          CUDA_R_16BF, qk_dim, (long long)group_rows * qk_dim, &zero, scores,
                                          CUDA_R_32F, context, (long long)group_rows * context, kv_heads,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return {};
}

std::uint64_t query_rows(const Attention& a) {
    return std::uint64_t(a.rows) * a.heads;
}

}  // namespace

AttentionSet::~AttentionSet() {
    for (void* p : m_allocations) cudaFree(p);
}

Status AttentionSet::allocate(const std::vector<const PassPlan*>& plans, cudaStream_t stream) {
    std::uint64_t q = 1, scores = 1, out = 1;
    std::map<std::string, std::uint64_t> cache_elems;
    std::map<std::string, std::pair<int, int>> cache_shape;  // rows, row width
    for (const PassPlan* plan : plans)
        for (const Step& s : plan->steps) {
            if (s.kind != Step::Kind::attention) continue;
            const Attention& a = s.attention;
            q = std::max(q, query_rows(a) * a.qk_dim);
            scores = std::max(scores, query_rows(a) * std::uint64_t(std::max(a.context, 1)));
            out = std::max(out, query_rows(a) * a.v_dim);
            std::uint64_t elems = std::uint64_t(a.kv_heads) * std::max(a.context, 1) * a.row_dim;
            cache_elems[s.label] = std::max(cache_elems[s.label], elems);
            auto& shape = cache_shape[s.label];
            shape = {std::max(shape.first, std::max(a.context, 1)), a.row_dim};
        }
    auto alloc = [&](void*& p, std::uint64_t bytes) -> Status {
        TPV_CUDA("init", cudaMalloc(&p, bytes));
        m_allocations.push_back(p);
        return {};
    };
    m_fused = fused_attention_chosen();
    int device = 0;
    TPV_CUDA("init", cudaGetDevice(&device));
    TPV_CUDA("init", cudaDeviceGetAttribute(&m_sms, cudaDevAttrMultiProcessorCount, device));
    // The workspaces of the MLA kernels: the largest any MLA step needs, for each form.
    std::uint64_t mla_floats = 0, two_pass_bytes = 0;
    for (const PassPlan* plan : plans)
        for (const Step& s : plan->steps)
            if (s.kind == Step::Kind::attention && mla_shape(s.attention) && s.attention.context > 0) {
                const int r = s.attention.rows * s.attention.heads;
                mla_floats = std::max<std::uint64_t>(
                    mla_floats, mla_workspace_floats(r, mla_splits(r, s.attention.context, m_sms)));
                two_pass_bytes =
                    std::max<std::uint64_t>(two_pass_bytes, mla_two_pass_bytes(r, s.attention.context));
            }
    // head_decode's parts and tickets, when it is chosen: the most any of its steps needs (run()
    // takes the workspace's presence as the choice).
    std::uint64_t head_floats = 0;
    int head_tickets = 0;
    for (const PassPlan* plan : plans)
        for (const Step& s : plan->steps)
            if (head_decode_chosen() && s.kind == Step::Kind::attention && head_decode_fits(s.attention)) {
                const Attention& a = s.attention;
                head_floats = std::max<std::uint64_t>(
                    head_floats,
                    head_decode_floats(a.kv_heads, head_decode_parts(a.kv_heads, a.context, m_sms)));
                head_tickets = std::max(head_tickets, a.kv_heads);
            }
    if (head_floats > 0) {
        void *w = nullptr, *t = nullptr;
        TPV_TRY(alloc(w, head_floats * sizeof(float)));
        TPV_TRY(alloc(t, std::size_t(head_tickets) * sizeof(int)));
        TPV_CUDA("init", cudaMemsetAsync(t, 0, std::size_t(head_tickets) * sizeof(int), stream));
        m_head_work = static_cast<float*>(w);
        m_head_tickets = static_cast<int*>(t);
    }
    m_two_pass = two_pass_attention_chosen();
    m_values = values_attention_chosen();
    m_probs_form = probs_attention_chosen();
    if (m_values || m_probs_form) TPV_CUDA("init", mla_values_setup());
    if (m_two_pass && two_pass_bytes > 0) {
        TPV_TRY(alloc(m_two_pass_workspace, two_pass_bytes));
        TPV_CUDA("init", cudaMemsetAsync(m_two_pass_workspace, 0, two_pass_bytes, stream));
        TPV_CUDA("init", mla_two_pass_setup());
    }
    if (m_fused && mla_floats > 0) {
        void* w = nullptr;
        TPV_TRY(alloc(w, mla_floats * sizeof(float)));
        m_mla_workspace = static_cast<float*>(w);
        TPV_CUDA("init", mla_setup());
    }
    void *vq = nullptr, *vs = nullptr, *vp = nullptr, *vo = nullptr;
    TPV_TRY(alloc(vq, q * sizeof(bf16)));
    TPV_TRY(alloc(vs, scores * sizeof(float)));
    TPV_TRY(alloc(vp, scores * sizeof(bf16)));
    TPV_TRY(alloc(vo, out * sizeof(bf16)));
    m_q = static_cast<bf16*>(vq);
    m_scores = static_cast<float*>(vs);
    m_probs = static_cast<bf16*>(vp);
    m_out = static_cast<bf16*>(vo);
    TPV_CUDA("init", fill_random(m_q, q, 1.0f, 77, stream));
    std::uint64_t seed = 500;
    for (const auto& [label, elems] : cache_elems) {
        void* p = nullptr;
        TPV_TRY(alloc(p, elems * sizeof(bf16)));
        m_caches[label] = {static_cast<bf16*>(p), cache_shape[label].first, cache_shape[label].second};
        m_cache_bytes += elems * sizeof(bf16);
        TPV_CUDA("init", fill_random(static_cast<bf16*>(p), elems, 1.0f, ++seed, stream));
    }
    return {};
}

Status AttentionSet::run(cublasHandle_t handle, const Step& step, cudaStream_t stream,
                         const char* phase) const {
    const Attention& a = step.attention;
    if (a.context <= 0 || a.rows <= 0) return {};
    auto it = m_caches.find(step.label);
    if (it == m_caches.end()) return Status::fail(phase, "attention", "no KV cache for " + step.label);
    const bf16* cache = it->second.data;
    if (m_two_pass && m_two_pass_workspace != nullptr && mla_shape(a)) {
        const int r = a.rows * a.heads;
        TPV_CUDA(phase, mla_two_pass(m_q, cache, m_out, r, a.context,
                                     mla_two_pass_splits(r, a.context, m_sms), m_two_pass_workspace, stream));
        return {};
    }
    if (m_values && mla_shape(a) && mla_values_fits(a.context))
        return mla_values_attention(handle, m_q, cache, m_out, a.rows * a.heads, a.context, m_scores, stream,
                                    phase);
    if (m_probs_form && mla_shape(a) && mla_probs_fits(a.context))
        return mla_probs_attention(handle, m_q, cache, m_out, a.rows * a.heads, a.context, m_scores, m_probs,
                                   stream, phase);
    if (m_fused && m_mla_workspace != nullptr && mla_shape(a)) {
        const int r = a.rows * a.heads;
        TPV_CUDA(phase, mla_decode(m_q, cache, m_out, r, a.context, mla_splits(r, a.context, m_sms),
                                   m_mla_workspace, stream));
        return {};
    }
    const int group_rows = a.group_rows();
    if (m_head_work != nullptr && head_decode_fits(a)) {
        TPV_CUDA(phase, head_decode(m_q, cache, m_out, group_rows, a.kv_heads, a.context, a.row_dim,
                                    a.v_offset, head_decode_parts(a.kv_heads, a.context, m_sms), m_head_work,
                                    m_head_tickets, stream));
        return {};
    }
    // Per KV head: M = query rows of its heads, N = context, K = qk_dim (column-major views of
    // row-major buffers, as in run_gemm).
    const long long cache_stride = (long long)a.context * a.row_dim;
    const long long s_stride = (long long)group_rows * a.context;
    const long long o_stride = (long long)group_rows * a.v_dim;
    TPV_TRY(scores_gemm(handle, m_q, cache, m_scores, a.context, group_rows, a.qk_dim, a.row_dim, a.kv_heads,
                        phase));
    float one = 1.0f, zero = 0.0f;
    TPV_CUDA(phase, launch_softmax(m_scores, m_probs, group_rows * a.kv_heads, a.context,
                                   1.0f / std::sqrt(float(a.qk_dim)), stream));
    TPV_CUBLAS(phase, cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, a.v_dim, group_rows,
                                                 a.context, &one, cache + a.v_offset, CUDA_R_16BF, a.row_dim,
                                                 cache_stride, m_probs, CUDA_R_16BF, a.context, s_stride,
                                                 &zero, m_out, CUDA_R_16BF, a.v_dim, o_stride, a.kv_heads,
                                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return {};
}

bool fused_attention_chosen() {
    // Unset: k_fused_default, the faster of the two on the H200 (docs/benchmarks-gpu.md).
    constexpr bool k_fused_default = false;
    const std::string choice = env_or("TPVERIFY_ATTENTION");
    return choice.empty() ? k_fused_default : choice == "fused" || choice == "cluster";
}

bool values_attention_chosen() {
    return env_is("TPVERIFY_ATTENTION", "values");
}

namespace {

constexpr int k_mla_dim = 576;  ///< absorbed MLA's q and cached row width

// The cuBLAS path's scores GEMM for MLA's one KV head.
Status mla_scores(cublasHandle_t handle, const bf16* q, const bf16* cache, int rows, int context,
                  float* scores, const char* phase) {
    return scores_gemm(handle, q, cache, scores, context, rows, k_mla_dim, k_mla_dim, 1, phase);
}

}  // namespace

Status mla_values_attention(cublasHandle_t handle, const bf16* q, const bf16* cache, bf16* out, int rows,
                            int context, float* scores, cudaStream_t s, const char* phase) {
    TPV_TRY(mla_scores(handle, q, cache, rows, context, scores, phase));
    TPV_CUDA(phase, mla_values(scores, cache, out, rows, context, s));
    return {};
}

Status mla_probs_attention(cublasHandle_t handle, const bf16* q, const bf16* cache, bf16* out, int rows,
                           int context, float* scores, bf16* probs, cudaStream_t s, const char* phase) {
    TPV_TRY(mla_scores(handle, q, cache, rows, context, scores, phase));
    TPV_CUDA(phase, launch_softmax(scores, probs, rows, context, 1.0f / std::sqrt(float(k_mla_dim)), s));
    TPV_CUDA(phase, mla_probs_values(probs, cache, out, rows, context, s));
    return {};
}

bool probs_attention_chosen() {
    return env_is("TPVERIFY_ATTENTION", "probs");
}

bool cluster_attention_chosen() {
    return env_is("TPVERIFY_ATTENTION", "cluster");
}

bool two_pass_attention_chosen() {
    return env_is("TPVERIFY_ATTENTION", "two-pass");
}

bool mla_shape(const Attention& a) {
    return a.kv_heads == 1 && a.row_dim == 576 && a.qk_dim == 576 && a.v_offset == 0 && a.v_dim == 512;
}

bf16* AttentionSet::cache(const std::string& label) const {
    auto it = m_caches.find(label);
    return it == m_caches.end() ? nullptr : it->second.data;
}

int AttentionSet::rows(const std::string& label) const {
    auto it = m_caches.find(label);
    return it == m_caches.end() ? 0 : it->second.rows;
}

int AttentionSet::row_width(const std::string& label) const {
    auto it = m_caches.find(label);
    return it == m_caches.end() ? 0 : it->second.row_width;
}

}  // namespace tpverify::cuda
