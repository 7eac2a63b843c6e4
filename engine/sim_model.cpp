// NCCL's α-β tuning model for one node, re-stated (see docs/engine.md for the sources), and the
// simulated run time of what NCCL picks.
#include "engine/sim_model.hpp"

#include <algorithm>
#include <cmath>

namespace tpverify::sim {
namespace {

// NCCL's base latency per algorithm/protocol, µs (tuning.cc, NCCL 2.2x). Rows: Tree, Ring.
constexpr double k_base_lat[2][k_protos] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};
// NCCL's per-hop latency, µs, by hardware: [NVLink, PCI, NET][Tree, Ring][LL, LL128, Simple].
constexpr double k_hw_lat[3][2][k_protos] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}},
    {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}},
};
constexpr double k_ll_max_bw = 141.0;             // LL bandwidth cap, Hopper single node (GB/s)
constexpr double k_ll128_per_channel_ar = 16.7;   // LL128 cap per channel, AllReduce (GB/s)
constexpr double k_ll128_per_channel_ag = 18.3;   // LL128 cap per channel, AllGather (GB/s)
constexpr double k_max_tree_bw = 110.0;           // tree bus bandwidth cap, <= 2 nodes (GB/s)
// NCCL's tree correction factors by log2(bytes / 64), per protocol.
constexpr double k_tree_correction[k_protos][22] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .5, .5, .6, .6, .7, .8, .9},
};
// NCCL's per-thread work thresholds before it cuts channels/threads for small messages.
constexpr double k_thread_threshold[k_protos] = {8, 8, 64};
// Transport penalties relative to direct P2P (estimates: host-memory bounce for SHM, TCP
// sockets for NET); added per algorithm step and applied to bandwidth.
constexpr double k_step_extra_us[3] = {0.0, 1.5, 8.0};
constexpr double k_transport_bw[3] = {1.0, 0.6, 0.25};

int log2i(std::uint64_t v) {
    int l = 0;
    while (v >>= 1) ++l;
    return l;
}

double tree_correction(Proto p, std::uint64_t bytes) {
    const int log_size = log2i(bytes >> 6);
    return log_size < 22 ? k_tree_correction[static_cast<int>(p)][log_size] : 1.0;
}

int path_rank(const std::string& level) {
    const char* const order[] = {"LOC", "NVL", "PIX", "PXB", "PHB", "SYS"};
    for (int i = 0; i < 6; ++i)
        if (level == order[i]) return i;
    return 3;  // NCCL's default P2P level: PXB
}

}  // namespace

TopologyModel topology_model(Topology t) {
    switch (t) {
    case Topology::nvlink: return {"nvlink", true, 360.0, 16, 2.0, 400.0};
    case Topology::pcie_gen4: return {"pcie-gen4", false, 24.0, 2, 4.0, 25.0};
    case Topology::pcie_gen5: break;
    }
    return {"pcie-gen5", false, 48.0, 2, 3.5, 50.0};
}

Comm::Comm(const TopologyModel& topo, const NcclEnv& env, int nranks) : m_topo(topo), m_env(env), m_nranks(nranks) {
    m_channels = topo.default_channels;
    if (env.min_ctas > 0) m_channels = std::max(m_channels, env.min_ctas);
    if (env.max_ctas > 0) m_channels = std::min(m_channels, env.max_ctas);
    m_channels = std::clamp(m_channels, 1, 64);

    // GPUs on NVLink are at path NVL; the PCIe boxes put GPUs behind the CPU's host bridge (PHB).
    const int path = topo.nvlink ? path_rank("NVL") : path_rank("PHB");
    const bool p2p = !env.p2p_disable && path <= path_rank(env.p2p_level.empty() ? "PXB" : env.p2p_level);
    m_transport = p2p ? Transport::p2p : env.shm_disable ? Transport::net : Transport::shm;

    const int simple_default = topo.bus_bw_gbs <= 24.0 ? 256 : 512;
    const int nt = env.nthreads;
    for (int a = 0; a < 2; ++a) {
        m_max_threads[a][0] = nt > 0 ? nt : 512;
        m_max_threads[a][1] = 640;
        m_max_threads[a][2] = nt > 0 ? nt : (a == 1 ? simple_default : 512);
    }

    const int p = nranks;
    const int hw = topo.nvlink ? 0 : 1;
    for (Func f : {Func::all_gather, Func::all_reduce}) {
        const int fi = static_cast<int>(f);
        const bool ar = f == Func::all_reduce;
        const int nsteps = ar ? 2 * (p - 1) : p - 1;
        for (int a = 0; a < 2; ++a) {
            const bool ring = a == static_cast<int>(Algo::ring);
            if (!ring && !ar) continue;  // on one node, tree exists only for AllReduce
            for (int pr = 0; pr < k_protos; ++pr) {
                double bus = topo.bus_bw_gbs;
                const double ll128_cap = (ar ? k_ll128_per_channel_ar : k_ll128_per_channel_ag) * topo.default_channels;
                if (ring && pr == 0) bus = std::min(k_ll_max_bw, bus * (ar ? 1.0 / 4.0 : 1.0 / 3.0));
                if (ring && pr == 1) bus = std::min(bus * 0.92, ll128_cap);
                if (!ring) bus = std::min(bus * 0.9, k_max_tree_bw);
                if (!ring && pr == 0) bus *= 1.0 / 3.8;
                if (!ring && pr == 1) bus = std::min(bus * 7.0 / 9.0, ll128_cap * 7.0 / 9.0);
                const double ratio = ring ? double(p) / nsteps : 0.5;
                m_bw[fi][a][pr] = bus * ratio;
                const double hop = k_hw_lat[hw][a][pr];
                m_lat[fi][a][pr] = k_base_lat[a][pr] + (ring ? nsteps * hop : 2.0 * (p - 1) * hop);

                int enable = env.proto_enable[fi][pr];
                if (enable == 2) enable = topo.nvlink ? 1 : 0;  // LL128 by default only over NVLink
                if (enable == 0 || env.algo_enable[fi][a] == 0) m_bw[fi][a][pr] = 0;
            }
        }
    }
}

Choice Comm::choose(Func f, std::uint64_t bytes) const {
    Choice c;
    if (m_nranks <= 1) {  // NCCL runs a one-rank collective as a local copy, no algorithm choice
        c.ok = true;
        c.channels = 1;
        c.time_us = 1.0 + 2.0 * static_cast<double>(bytes) / 4300e3;
        c.model_us = 0;
        return c;
    }
    const int fi = static_cast<int>(f);
    double best = -1;
    for (int a = 0; a < 2; ++a) {
        for (int pr = 0; pr < k_protos; ++pr) {
            double bw = m_bw[fi][a][pr];
            if (bw <= 0) continue;
            if (a == static_cast<int>(Algo::tree)) bw *= tree_correction(static_cast<Proto>(pr), bytes);
            const double t = m_lat[fi][a][pr] + static_cast<double>(bytes) / (1000.0 * bw);
            if (best < 0 || t < best) {
                best = t;
                c.algo = static_cast<Algo>(a);
                c.proto = static_cast<Proto>(pr);
            }
        }
    }
    if (best < 0) return c;
    c.ok = true;
    c.model_us = best;

    const int a = static_cast<int>(c.algo), pr = static_cast<int>(c.proto);
    int nc = m_channels;
    int nt = m_max_threads[a][pr];
    if (c.proto == Proto::simple) nt += 32 + (c.algo == Algo::tree ? 128 : 0);
    double threshold = k_thread_threshold[pr] * ((c.algo == Algo::ring && c.proto == Proto::ll) ? m_nranks : 1);
    while (static_cast<double>(bytes) < double(nc) * nt * threshold) {
        if (nc >= 2) --nc;
        else if (nt % 128 == 0) nt /= 2;
        else break;
    }
    c.channels = nc;
    c.threads = nt;

    // Simulated time: NCCL's latency, bandwidth scaled to the channels really used, transport.
    const bool ring = c.algo == Algo::ring;
    const int steps = ring ? (f == Func::all_reduce ? 2 * (m_nranks - 1) : m_nranks - 1) : 2 * (m_nranks - 1);
    const int ti = static_cast<int>(m_transport);
    // Channels only matter once a message is big enough to keep several busy: up to 64 KB per
    // channel the graph's bandwidth is reached with one, so the cut (or any knob) changes nothing.
    const double useful = std::min<double>(m_topo.default_channels, std::ceil(static_cast<double>(bytes) / 65536.0));
    const double channel_share = std::min(1.0, double(nc) / std::max(1.0, useful));
    double bw = m_bw[fi][a][pr] * channel_share * k_transport_bw[ti];
    if (!ring) bw *= tree_correction(c.proto, bytes);
    double t = m_lat[fi][a][pr] + steps * k_step_extra_us[ti] + static_cast<double>(bytes) / (1000.0 * bw);
    if (c.proto == Proto::simple) {  // Simple moves the data in NCCL_BUFFSIZE/8 chunks per step
        const double chunk = static_cast<double>(m_env.buffsize > 0 ? m_env.buffsize : (4 << 20)) / 8.0;
        const double rounds = std::ceil(static_cast<double>(bytes) / nc / (m_nranks * chunk));
        const int hw = m_topo.nvlink ? 0 : 1;
        t += std::max(0.0, rounds - 1) * k_hw_lat[hw][a][pr];
    }
    c.time_us = t;
    return c;
}

std::string Comm::no_algo_warning(Func f) const {
    std::string w = std::string("Error : no algorithm/protocol available for function ") + func_name(f) +
                    " with datatype ncclBfloat16.";
    if (!m_env.algo_str.empty()) w += " NCCL_ALGO was set to " + m_env.algo_str + ".";
    if (!m_env.proto_str.empty()) w += " NCCL_PROTO was set to " + m_env.proto_str + ".";
    return w;
}

double Comm::one_shot_us(std::uint64_t bytes) const {
    if (m_nranks <= 1) return 0;
    return m_topo.one_shot_alpha_us + (m_nranks - 1) * static_cast<double>(bytes) / (1000.0 * m_topo.peer_bw_gbs);
}

double GpuModel::gemm_us(std::uint64_t weight_bytes, double flops) const {
    const double memory = static_cast<double>(weight_bytes) / (hbm_bw_gbs * gemm_efficiency * 1e3);
    const double compute = flops / (peak_tflops * 1e6);
    return std::max({kernel_floor_us, memory, compute});
}

double GpuModel::norm_us(std::uint64_t bytes) const {
    return std::max(kernel_floor_us, 3.0 * static_cast<double>(bytes) / (hbm_bw_gbs * 1e3));
}

}  // namespace tpverify::sim
