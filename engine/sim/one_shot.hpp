#pragma once
// The fused one-shot all-reduce's price: published measurements of custom one-shot all-reduce
// kernels where the machine, rank count and size match one, the topology's estimate otherwise
// (docs/engine.md, "The fused kernel"). It is a what-if: no NCCL setting runs it, a server must.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/sim/sim_model.hpp"

namespace tpverify::sim {

/// One published measurement of a custom one-shot all-reduce (µs per call by bytes per rank).
struct OneShotTable {
    int nranks = 0;
    int sm = 0;           ///< the GPU's compute capability x 10 it was measured on
    std::string machine;  ///< what it ran on
    std::string source;   ///< where it is published
    std::vector<std::pair<std::uint64_t, double>> points;  ///< (bytes, µs), bytes increasing
    std::vector<double> nccl_us;  ///< NCCL's all-reduce on the same machine at the same sizes
};
/// The published measurements the sim knows.
const std::vector<OneShotTable>& one_shot_tables();

/// How one fused call is priced.
struct OneShotPrice {
    double us = 0;          ///< the all-reduce part of the fused kernel, per call
    bool measured = false;  ///< from a published measurement (else the topology's estimate)
    std::string source;     ///< the measurement's machine and source, or why the estimate
};
/// The fused one-shot all-reduce of `bytes` per rank over `nranks` GPUs of `topo`: interpolated
/// (log size, log time) in the measurement of this GPU and rank count when `bytes` lies within
/// it, else Comm::one_shot_model_us.
OneShotPrice one_shot_price(const TopologyModel& topo, const Comm& comm, std::uint64_t bytes);

}  // namespace tpverify::sim
