// The routed experts of a layer: batched launches, then the weighted sum.
#include <algorithm>

#include "engine/cuda/experts.cuh"
#include "engine/cuda/kernels.cuh"
#include "engine/cuda/ops.cuh"

namespace tpverify::cuda {

ExpertSet::~ExpertSet() {
    for (void* p : m_allocations) cudaFree(p);
}

Status ExpertSet::build(const std::vector<const PassPlan*>& plans, cudaStream_t stream) {
    std::uint64_t mid = 1, outs = 1;
    for (const PassPlan* plan : plans)
        for (std::size_t i = 0; i < plan->steps.size(); ++i) {
            const Step& s = plan->steps[i];
            if (s.kind == Step::Kind::experts) {
                const std::uint64_t rows = std::uint64_t(s.experts.total_rows());
                if (s.experts.gate_up)
                    mid = std::max(mid, rows * s.experts.n);
                else
                    outs = std::max(outs, rows * s.experts.n);
            }
            if (s.kind == Step::Kind::op && s.op == Op::expert_sum && !s.experts.slots.empty()) {
                void* dev = nullptr;
                const std::size_t bytes = s.experts.slots.size() * sizeof(int);
                TPV_CUDA("init", cudaMalloc(&dev, bytes));
                m_allocations.push_back(dev);
                // On the (non-blocking) stream its readers run on: a legacy-stream cudaMemcpy is not
                // ordered with them (engine/cuda/check_gemm.cu, copy_in).
                TPV_CUDA("init",
                         cudaMemcpyAsync(dev, s.experts.slots.data(), bytes, cudaMemcpyHostToDevice, stream));
                m_slots[{plan, i}] = static_cast<int*>(dev);
            }
        }
    for (auto [ptr, elems] : {std::make_pair(&m_mid, mid), std::make_pair(&m_outs, outs)}) {
        void* dev = nullptr;
        TPV_CUDA("init", cudaMalloc(&dev, elems * sizeof(bf16)));
        m_allocations.push_back(dev);
        TPV_CUDA("init", cudaMemsetAsync(dev, 0, elems * sizeof(bf16), stream));
        *ptr = static_cast<bf16*>(dev);
    }
    m_mid_elems = mid;
    m_outs_elems = outs;
    return {};
}

cudaError_t ExpertSet::fill(unsigned short bits, cudaStream_t stream) const {
    if (cudaError_t e = fill_bits(m_mid, m_mid_elems, bits, stream); e != cudaSuccess) return e;
    return fill_bits(m_outs, m_outs_elems, bits, stream);
}

Status ExpertSet::run(cublasHandle_t handle, GemmPath path, const sg::Workspace& ws,
                      const WeightPool& weights, const PassPlan& plan, std::size_t step, const bf16* input,
                      cudaStream_t stream, const char* phase, bool silu, const sg::ExpertSum& sum) const {
    const Experts& x = plan.steps[step].experts;
    if (silu && x.gate_up)
        return Status::fail(phase, "experts", "the SiLU-and-mul goes with down, not gate_up");
    if (sum.y != nullptr && !sum_fusable(path, plan, step))
        return Status::fail(phase, "experts", "the expert sum needs one streaming down launch");
    // Expert e's rows start at row0[e] of the stacked buffers.
    std::vector<std::uint64_t> row0(std::size_t(x.count()) + 1, 0);
    for (int e = 0; e < x.count(); ++e)
        row0[std::size_t(e) + 1] = row0[std::size_t(e)] + std::uint64_t(x.rows[std::size_t(e)]);
    const int mid_width = x.gate_up ? x.n : 2 * x.k;  // down reads the first half of each gate_up row
    auto in_of = [&](int e) -> const bf16* {
        return x.gate_up ? input : m_mid + row0[std::size_t(e)] * std::uint64_t(mid_width);
    };
    auto out_of = [&](int e) -> bf16* {
        return (x.gate_up ? m_mid : m_outs) + row0[std::size_t(e)] * std::uint64_t(x.n);
    };
    const int ldx = x.gate_up ? x.k : mid_width;
    const Gemm first = x.gemm(0);
    if (!streams(path, first, true)) {
        if (silu) TPV_CUDA(phase, silu_mul(m_mid, x.total_rows(), x.k, mid_width, stream));
        for (int e = 0; e < x.count(); ++e)
            TPV_TRY(run_gemm(handle, path, ws, x.gemm(e), weights.weight(plan, step, e), in_of(e), out_of(e),
                             false, stream, phase, ldx));
        return {};
    }
    for (const ExpertLaunch& l : expert_launches(x)) {
        sg::Batch batch;
        batch.count = l.count;
        for (int i = 0; i < l.count; ++i) {
            const int e = l.first + i;
            batch.w[i] = weights.weight(plan, step, e);
            batch.x[i] = in_of(e);
            batch.y[i] = out_of(e);
            batch.rows[i] = x.rows[std::size_t(e)];
        }
        TPV_CUDA(phase, sg::run(x.int4 ? sg::Format::int4 : sg::Format::bf16, batch, x.n, x.k, ldx, false, ws,
                                stream, silu, sum));
    }
    return {};
}

bool ExpertSet::sum_fusable(GemmPath path, const PassPlan& plan, std::size_t step) const {
    const Experts& x = plan.steps[step].experts;
    if (x.gate_up || x.count() == 0 || !streams(path, x.gemm(0), true)) return false;
    const std::vector<ExpertLaunch> launches = expert_launches(x);
    return launches.size() == 1 && launches.front().max_rows <= k_stream_rows_per_launch;
}

Status ExpertSet::sum_args(const PassPlan& plan, std::size_t step, const float* weights, bf16* y,
                           bool accumulate, const char* phase, sg::ExpertSum& out) const {
    const Step& s = plan.steps[step];
    auto it = m_slots.find({&plan, step});
    if (it == m_slots.end()) return Status::fail(phase, "expert_sum", "no routing table for " + s.label);
    out.outs = m_outs;
    out.slots = it->second;
    out.weights = weights;
    out.y = y;
    out.tokens = s.op_rows;
    out.k = s.op_rows > 0 ? int(s.experts.slots.size()) / s.op_rows : 0;
    out.accumulate = accumulate ? 1 : 0;
    return {};
}

Status ExpertSet::sum(const PassPlan& plan, std::size_t step, const float* weights, bf16* y, bool accumulate,
                      cudaStream_t stream, const char* phase) const {
    sg::ExpertSum a;
    TPV_TRY(sum_args(plan, step, weights, y, accumulate, phase, a));
    TPV_CUDA(phase, expert_sum(a.outs, a.slots, a.weights, a.tokens, a.k, plan.steps[step].op_width, a.y,
                               a.accumulate != 0, stream));
    return {};
}

}  // namespace tpverify::cuda
