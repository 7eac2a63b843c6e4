// Batched expert GEMMs: one cublasGemmBatchedEx for all gate_up, one for all down, then a sum.
#include "engine/cuda/moe.cuh"

namespace tpverify::cuda {
namespace {

__global__ void sum_experts_kernel(const bf16* outs, int experts, std::uint64_t elems, bf16* y,
                                   int accumulate) {
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < elems;
         i += std::uint64_t(gridDim.x) * blockDim.x) {
        float acc = accumulate ? __bfloat162float(y[i]) : 0.0f;
        for (int e = 0; e < experts; ++e) acc += __bfloat162float(outs[e * elems + i]);
        y[i] = __float2bfloat16(acc);
    }
}

// Enqueues one side (gate_up or down) of an INT4 group in launches of up to k_w4_max_batch.
cudaError_t run_int4_side(const std::vector<const void*>& ptrs, int pairs, const Gemm& g, int ldx,
                          cudaStream_t s) {
    for (int first = 0; first < pairs; first += k_w4_max_batch) {
        W4Batch batch;
        batch.count = std::min(k_w4_max_batch, pairs - first);
        for (int e = 0; e < batch.count; ++e) {
            batch.w[e] = ptrs[first + e];
            batch.x[e] = static_cast<const bf16*>(ptrs[pairs + first + e]);
            batch.y[e] = static_cast<bf16*>(const_cast<void*>(ptrs[2 * pairs + first + e]));
        }
        if (cudaError_t err = run_w4a16(batch, g.m, g.n, g.k, ldx, false, s); err != cudaSuccess) return err;
    }
    return cudaSuccess;
}

}  // namespace

ExpertBatches::~ExpertBatches() {
    for (void* p : m_allocations) cudaFree(p);
}

Status ExpertBatches::build(const PassPlan& plan, const WeightPool& weights, const bf16* input, int hidden,
                            cudaStream_t stream) {
    auto& groups = m_groups[&plan];
    std::vector<std::size_t> gemm_index(plan.steps.size(), 0);
    std::size_t count = 0;
    for (std::size_t i = 0; i < plan.steps.size(); ++i)
        if (plan.steps[i].kind == Step::Kind::gemm) gemm_index[i] = count++;
    // The same runs the sim prices as batches (engine/model/model.cpp, expert_runs).
    std::vector<ExpertGroup> found;
    for (const ExpertRun& run : expert_runs(plan, hidden)) {
        ExpertGroup g;
        g.first_step = run.first_step;
        g.first_gemm = gemm_index[run.first_step];
        g.pairs = run.pairs;
        g.gate_up = plan.steps[run.first_step].gemm;
        g.down = plan.steps[run.first_step + 1].gemm;
        found.push_back(g);
    }
    std::uint64_t mid = 0, outs = 0;
    for (const ExpertGroup& g : found) {
        mid = std::max<std::uint64_t>(mid, std::uint64_t(g.pairs) * g.gate_up.m * g.gate_up.n);
        outs = std::max<std::uint64_t>(outs, std::uint64_t(g.pairs) * g.down.m * g.down.n);
    }
    if (mid > m_mid_elems || outs > m_out_elems) {
        // Sized for the largest plan; build() is called for the largest plan first.
        void *a = nullptr, *b = nullptr;
        TPV_CUDA("init", cudaMalloc(&a, mid * sizeof(bf16)));
        m_allocations.push_back(a);
        TPV_CUDA("init", cudaMalloc(&b, outs * sizeof(bf16)));
        m_allocations.push_back(b);
        TPV_CUDA("init", cudaMemsetAsync(a, 0, mid * sizeof(bf16), stream));
        m_mid = static_cast<bf16*>(a);
        m_outs = static_cast<bf16*>(b);
        m_mid_elems = mid;
        m_out_elems = outs;
    }
    for (ExpertGroup& g : found) {
        std::vector<const void*> up(3 * g.pairs), down(3 * g.pairs);
        for (int e = 0; e < g.pairs; ++e) {
            bf16* mid_e = m_mid + std::uint64_t(e) * g.gate_up.m * g.gate_up.n;
            up[e] = weights.weight(plan, g.first_gemm + 2 * e);
            up[g.pairs + e] = input;
            up[2 * g.pairs + e] = mid_e;
            down[e] = weights.weight(plan, g.first_gemm + 2 * e + 1);
            down[g.pairs + e] = mid_e;
            down[2 * g.pairs + e] = m_outs + std::uint64_t(e) * g.down.m * g.down.n;
        }
        for (auto* list : {&up, &down}) {
            void* dev = nullptr;
            TPV_CUDA("init", cudaMalloc(&dev, list->size() * sizeof(void*)));
            m_allocations.push_back(dev);
            TPV_CUDA("init",
                     cudaMemcpy(dev, list->data(), list->size() * sizeof(void*), cudaMemcpyHostToDevice));
            (list == &up ? g.up_ptrs : g.down_ptrs) = static_cast<const void**>(dev);
        }
        g.host_up = up;
        g.host_down = down;
        groups[g.first_step] = g;
    }
    return {};
}

const ExpertGroup* ExpertBatches::at(const PassPlan& plan, std::size_t step) const {
    auto p = m_groups.find(&plan);
    if (p == m_groups.end()) return nullptr;
    auto g = p->second.find(step);
    return g == p->second.end() ? nullptr : &g->second;
}

Status ExpertBatches::run(cublasHandle_t handle, const ExpertGroup& g, bf16* y, bool accumulate,
                          cudaStream_t stream, const char* phase) const {
    float alpha = 1.0f, beta = 0.0f;
    const Gemm &u = g.gate_up, &d = g.down;
    if (u.int4) {
        TPV_CUDA(phase, run_int4_side(g.host_up, g.pairs, u, u.k, stream));
        TPV_CUDA(phase, run_int4_side(g.host_down, g.pairs, d, u.n, stream));
    } else {
        // Column-major: C^T [n x m] = W (k x n, transposed) * X^T [k x m]; down reads the first
        // half of each gate_up row (ldb = 2k), as after SiLU-and-mul.
        TPV_CUBLAS(phase,
                   cublasGemmBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, u.n, u.m, u.k, &alpha, g.up_ptrs,
                                       CUDA_R_16BF, u.k, g.up_ptrs + g.pairs, CUDA_R_16BF, u.k, &beta,
                                       const_cast<void**>(g.up_ptrs + 2 * g.pairs), CUDA_R_16BF, u.n, g.pairs,
                                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        TPV_CUBLAS(phase,
                   cublasGemmBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, d.n, d.m, d.k, &alpha, g.down_ptrs,
                                       CUDA_R_16BF, d.k, g.down_ptrs + g.pairs, CUDA_R_16BF, u.n, &beta,
                                       const_cast<void**>(g.down_ptrs + 2 * g.pairs), CUDA_R_16BF, d.n,
                                       g.pairs, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    std::uint64_t elems = std::uint64_t(d.m) * d.n;
    unsigned blocks = unsigned(std::min<std::uint64_t>((elems + 255) / 256, 1024));
    sum_experts_kernel<<<blocks, 256, 0, stream>>>(m_outs, g.pairs, elems, y, accumulate ? 1 : 0);
    TPV_CUDA(phase, cudaGetLastError());
    return {};
}

}  // namespace tpverify::cuda
