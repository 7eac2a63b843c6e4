#pragma once
// How the CUDA backend lays a pass's kernels out beyond one after another on one stream, and what
// the sim takes off the sum of their prices for it (docs/engine.md, "Time of a pass"): the
// launches its kernel groups remove, and the MoE block whose shared expert runs on a second
// stream beside the routed path.
#include <cstddef>

#include "engine/model/model.hpp"
#include "engine/sim/sim_model.hpp"

namespace tpverify::sim {

/// What one launch fewer saves: 2 µs where the kernel table was measured on this GPU (the H200,
/// TPVERIFY_FUSE=none against the default: 699 µs at 4 tokens and 546 µs at 1 token for 304
/// launches, tests/fixtures/tpverify-kernels/run5-engine.log), else the modeled launch gap
/// `launch_us`, the least a launch fewer saves.
[[nodiscard]] double saved_per_launch_us(const GpuModel& gpu, double launch_us);

/// Step `i` of the plan is a bf16 GEMM the CUDA backend runs on its skinny kernel (the one its
/// kernel groups and the MoE block's second stream use).
[[nodiscard]] bool skinny_gemm(const PassPlan& plan, std::size_t i);
/// GEMM `g` (bf16, its rows and shape) is one the skinny kernel runs.
[[nodiscard]] bool skinny_gemm(const Gemm& g);

/// Device time of a gemm or op step as the sim prices it (launch gap not included); 0 for any
/// other kind of step.
[[nodiscard]] double kernel_us(const Step& step, const GpuModel& gpu);

/// The steps from `index` that form one MoE block the CUDA backend runs on two streams
/// (tpverify::moe_block_steps, engine/model/model.hpp, with skinny_gemm as its skinny kernel);
/// 0 when none starts there.
[[nodiscard]] std::size_t moe_block_steps(const PassPlan& plan, std::size_t index);

/// Pass time the two streams save on the MoE block at `index` (moe_block_steps > 0) against its
/// steps priced one after another with `launch_us` each: the shared expert's time beyond its
/// weights' bytes at the copy bandwidth (its latency, hidden behind the routed path), plus as
/// much of those bytes as stream while the routed path runs its top-k and SiLU-and-mul (kernels
/// that read no weights). Measured on the H200 only: the sim applies it where the kernel table
/// was measured on this GPU (GpuModel::table_native).
[[nodiscard]] double moe_streams_saving_us(const PassPlan& plan, std::size_t index, const GpuModel& gpu,
                                           double launch_us);

}  // namespace tpverify::sim
