// Every assumption of the sim's collective model and of the fused kernel's price, with where its
// figure comes from (tpverify --describe; docs/engine.md "Assumptions" lists the same names).
#include <cstdio>

#include "engine/run/backend.hpp"
#include "engine/sim/one_shot.hpp"
#include "engine/sim/sim_model.hpp"

namespace tpverify {
namespace sim {
namespace {

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

}  // namespace

const std::vector<Assumption>& model_assumptions() {
    static const std::vector<Assumption> k_list = [] {
        std::vector<Assumption> a = {
            {"nccl_choice",
             "the allowed algorithm/protocol with the smallest estimate; channels and threads cut per call",
             "NCCL 2.28 src/enqueue.cc (topoGetAlgoInfo) and src/graph/tuning.cc (ncclTopoTuneModel)"},
            {"nccl_estimate",
             "time = base latency + hops x per-hop latency + bytes / bandwidth, the tables, caps and tree "
             "correction "
             "of NCCL 2.28; the channels the per-call cut keeps do not change it",
             "NCCL 2.28 src/graph/tuning.cc (baseLat, hwLat, llMaxBws, perChMax*Bws, treeCorrectionFactor)"},
            {"shm_bandwidth", number(k_shm_bw_factor) + " x P2P's bandwidth (no per-hop latency term)",
             "measured: 4 x RTX PRO 6000, all_reduce_perf 32 MB, 30.3 GB/s bus bandwidth with NCCL's default "
             "(SHM) "
             "vs 39.3 with NCCL_P2P_LEVEL=SYS (voipmonitor/rtx6kpro hardware/asus-esc8000a-e13p-broadcom-"
             "switches.md)"},
            {"net_transport", "priced as NCCL prices it (no term)",
             "no measurement: NCCL's own model has no transport term"},
            {"p2p_level", "P2P between two GPUs when their path is within NCCL_P2P_LEVEL, default PXB",
             "NCCL 2.28 src/graph/paths.cc (ncclTopoCheckP2p; SYS on AMD CPUs with at most 2 GPUs)"},
            {"pcie_link_bandwidth", "Gen5 x16 48 GB/s, Gen4 x16 24 GB/s per ring hop",
             "NCCL 2.28 src/graph/topo.cc (PCI link bandwidth = width x generation's rate / 80)"},
            {"nvlink_bandwidth", "NV# = # x per-link: SM 9.0 20.6, SM 10.0+ 40.1, SM 8.0 20.0 GB/s",
             "NCCL 2.28 src/graph/topo.h (SM*_NVLINK_BW)"},
            {"inter_socket_bandwidth", number(k_inter_socket_bw_gbs) + " GB/s for a ring hop across sockets",
             "NCCL 2.28 src/graph/topo.h (AMD_BW; topo -m does not name the CPU, the measured RTX PRO 6000 "
             "servers are AMD EPYC)"},
            {"ring_order", "by socket, then GPU index: one crossing each way",
             "NCCL 2.28 src/graph/search.cc keeps the ring of best bandwidth"},
            {"node_path", "nvidia-smi's NODE is NCCL's PHB",
             "NCCL's path types have no NODE (src/graph/topo.h)"},
            {"peer_access_across_sockets", "none: no fusion where a pair of the ranks' GPUs is SYS apart",
             "measured: a custom all-reduce over 8 GPUs on two sockets loses to NCCL beyond 8 KB "
             "(voipmonitor/"
             "rtx6kpro hardware/asus-esc8000a-e13p-broadcom-switches.md)"},
            {"graph_channels", "pcie-gen4/gen5 2, nvlink 16",
             "estimate of what NCCL's search finds (no measurement)"},
            {"nvlink_bus_bandwidth", "built-in nvlink: 360 GB/s", "estimate (no measurement)"},
            {"calibration_match",
             "a table prices a call when its setting makes NCCL choose the call's algorithm, protocol, "
             "channels and "
             "transport at that size; sizes interpolated in log(size), log(time)",
             "rule of the sim (docs/engine.md, \"Pricing\")"},
            {"relative_price", "model(choice) / model(reference) x measured(reference)",
             "rule of the sim: the model only says how much slower or faster"},
            {"fused_one_shot_estimate",
             "where nothing was measured: alpha + (p-1) x bytes / peer bandwidth, alpha 2/3.5/4 us, peer "
             "400/50/25 GB/s (nvlink, pcie-gen5, pcie-gen4)",
             "estimate (no measurement)"},
        };
        for (const OneShotTable& t : one_shot_tables()) {
            std::string points;
            for (const auto& [bytes, us] : t.points)
                points += (points.empty() ? "" : ", ") + std::to_string(bytes) + " B " + number(us) + " us";
            a.push_back({"fused_one_shot_" + std::to_string(t.nranks) + "_ranks", points,
                         "measured: " + t.machine + " (" + t.source + ")"});
        }
        return a;
    }();
    return k_list;
}

}  // namespace sim

std::vector<SimAssumption> sim_assumptions() {
    std::vector<SimAssumption> out;
    for (const sim::Assumption& a : sim::model_assumptions()) out.push_back({a.name, a.value, a.source});
    return out;
}

}  // namespace tpverify
