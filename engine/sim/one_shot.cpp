// Published one-shot all-reduce measurements and the fused kernel's price (engine/sim/one_shot.hpp).
#include "engine/sim/one_shot.hpp"

#include "engine/sim/calibration.hpp"

namespace tpverify::sim {

const std::vector<OneShotTable>& one_shot_tables() {
    // Both on RTX PRO 6000 Blackwell (SM 12.0), PCIe Gen5 x16 with P2P, fp16, published in
    // voipmonitor/rtx6kpro (github.com/voipmonitor/rtx6kpro). NCCL's time on the same machine is
    // kept beside each figure: at 57 KB a one-shot ties NCCL there.
    static const std::vector<OneShotTable> k_tables = {
        {8,
         120,
         "8 x RTX PRO 6000 (Max-Q) behind three PCIe switches, one CPU, P2P enabled",
         "voipmonitor/rtx6kpro hardware/pcie-bandwidth.md, \"Custom Allreduce vs NCCL (Small Messages)\" "
         "(luke's custom all-reduce)",
         {{256, 7.5}, {1024, 7.5}, {8192, 9.2}, {32768, 16.5}, {65536, 25.9}, {262144, 73.6}},
         {24.6, 24.1, 24.2, 24.5, 24.1, 28.0}},
        {4,
         120,
         "4 x RTX PRO 6000 Server Edition of one socket (ASUS ESC8000A-E13P, Broadcom PEX890xx switches, ACS "
         "off)",
         "voipmonitor/rtx6kpro hardware/asus-esc8000a-e13p-broadcom-switches.md, \"AllReduce: Custom vs NCCL "
         "(4 GPU, fp16)\"",
         {{256, 6.9},
          {4096, 7.4},
          {16384, 9.2},
          {32768, 11.0},
          {65536, 14.0},
          {131072, 19.8},
          {262144, 32.8},
          {524288, 55.7},
          {1048576, 104.4}},
         {18.0, 15.4, 19.7, 17.6, 19.1, 28.3, 46.5, 87.1, 109.2}},
    };
    return k_tables;
}

OneShotPrice one_shot_price(const TopologyModel& topo, const Comm& comm, std::uint64_t bytes) {
    OneShotPrice price;
    const int nranks = comm.nranks();
    for (const OneShotTable& t : one_shot_tables()) {
        if (t.nranks != nranks || t.sm != topo.gpu.sm) continue;
        CalibrationTable table;
        table.points = t.points;
        if (auto us = interpolate(table, bytes)) {
            price.us = *us;
            price.measured = true;
            price.source = t.machine + " (" + t.source + ")";
            return price;
        }
        price.source = "estimate: " + std::to_string(bytes) + " B is outside the measured " +
                       std::to_string(t.points.front().first) + ".." + std::to_string(t.points.back().first) +
                       " B of " + t.machine;
    }
    if (price.source.empty())
        price.source = "estimate: no published one-shot measurement on " + topo.gpu.name + " at " +
                       std::to_string(nranks) + " ranks";
    price.us = comm.one_shot_model_us(bytes);
    return price;
}

}  // namespace tpverify::sim
