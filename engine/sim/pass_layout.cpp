// What the sim takes off a pass for the CUDA backend's kernel layout: the launches its kernel
// groups remove, the MoE block's two streams (docs/engine.md, "Time of a pass").
#include "engine/sim/pass_layout.hpp"

#include <algorithm>

namespace tpverify::sim {

double saved_per_launch_us(const GpuModel& gpu, double launch_us) {
    return gpu.table_native ? 2.0 : launch_us;
}

bool skinny_gemm(const Gemm& g) {
    return !g.int4 && g.m >= 1 && g.m <= 8 && g.n % 16 == 0 && g.k % 32 == 0 && g.weight_bytes() <= 160e6;
}

bool skinny_gemm(const PassPlan& plan, std::size_t i) {
    return i < plan.steps.size() && plan.steps[i].kind == Step::Kind::gemm && skinny_gemm(plan.steps[i].gemm);
}

double kernel_us(const Step& step, const GpuModel& gpu) {
    if (step.kind == Step::Kind::gemm)
        return gpu.gemm_launch_us(step.gemm.int4, step.gemm.m, step.gemm.n, step.gemm.k, 1);
    if (step.kind == Step::Kind::op) return gpu.op_us(step.op, step.op_rows, step.op_width, step.bytes);
    return 0;
}

std::size_t moe_block_steps(const PassPlan& plan, std::size_t index) {
    return tpverify::moe_block_steps(plan, index, [](const Gemm& g) { return skinny_gemm(g); });
}

double moe_streams_saving_us(const PassPlan& plan, std::size_t index, const GpuModel& gpu, double launch_us) {
    const std::size_t steps = moe_block_steps(plan, index);
    if (steps == 0) return 0;
    const std::size_t routed = index + steps - 4;  // experts.gate_up; the shared steps lie before it
    // The shared experts' steps priced one after another, and their weights' bytes alone.
    double shared_us = 0, shared_bytes_us = 0;
    for (std::size_t i = index + 2; i < routed; ++i) {
        const Step& s = plan.steps[i];
        shared_us += kernel_us(s, gpu) + launch_us;
        if (s.kind == Step::Kind::gemm)
            shared_bytes_us += double(s.gemm.weight_bytes()) / (gpu.copy_bw_gbs() * 1e3);
    }
    // The routed path's kernels that read no weights: its top-k and its SiLU-and-mul.
    const double routed_idle_us =
        kernel_us(plan.steps[index + 1], gpu) + kernel_us(plan.steps[routed + 1], gpu) + 2 * launch_us;
    return std::max(0.0, shared_us - shared_bytes_us) + std::min(routed_idle_us, shared_bytes_us);
}

}  // namespace tpverify::sim
