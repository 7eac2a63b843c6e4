// NCCL 2.28's α-β tuning model for one node, re-stated (see docs/engine.md for the sources),
// and the simulated run time of what NCCL picks.
#include "engine/sim/sim_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>

namespace tpverify::sim {
namespace {

// NCCL 2.28's base latency per algorithm/protocol, µs (tuning.cc, baseLat). Rows: Tree, Ring.
constexpr double k_base_lat[2][k_protos] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};
// NCCL 2.28's per-hop latency, µs (tuning.cc, hwLat): [NVLink, PCI, NET][Tree, Ring][LL, LL128, Simple].
constexpr double k_hw_lat[3][2][k_protos] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}},
    {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}},
};
// NCCL 2.28's per-architecture caps for one node (tuning.cc, column N1 of llMaxBws,
// perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws), GB/s, by compute capability:
// [Volta, Ampere, Hopper, Blackwell].
constexpr double k_ll_max_bw[4] = {39.0, 87.7, 141.0, 2 * 141.0};
constexpr double k_per_ch_ring_ll128[4] = {20.0, 20.0, 36.7, 40.0};
constexpr double k_per_ch_tree_ll128[4] = {20.0, 20.0, 36.7, 55.6};
constexpr double k_per_ch_tree[4] = {26.5, 24.0, 38.7, 70.0};
constexpr double k_pci_bw = 12.0;  // NCCL's PCI_BW (topo.h): at or below it Ring/Simple uses 256 threads
// NCCL's tree correction factors by log2(bytes / 64), per protocol (tuning.cc, treeCorrectionFactor).
constexpr double k_tree_correction[k_protos][22] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .5, .5, .6, .6, .7, .8, .9},
};
// NCCL's per-thread work thresholds before it cuts channels/threads (comm.h, NCCL_*_THREAD_THRESHOLD).
constexpr double k_thread_threshold[k_protos] = {8, 8, 64};
constexpr int k_warp = 32;
constexpr int k_max_nthreads = 640;  // NCCL_MAX_NTHREADS
int log2i(std::uint64_t v) {
    int l = 0;
    while (v >>= 1) ++l;
    return l;
}

double tree_correction(Proto p, std::uint64_t bytes) {
    const int log_size = log2i(bytes >> 6);
    return log_size < 22 ? k_tree_correction[static_cast<int>(p)][log_size] : 1.0;
}

int compcap_index(int sm) {
    return sm >= 100 ? 3 : sm >= 90 ? 2 : sm >= 80 ? 1 : 0;
}

GpuModel h200() {
    GpuModel g;
    g.hbm_bw_gbs = 4266;  // measured: tpverify's device copy (read + write bytes) on an H200
    return g;
}

GpuModel l40s() {
    GpuModel g;
    g.name = "NVIDIA L40S";
    g.sm = 89;
    g.hbm_bw_gbs = 864;   // datasheet GDDR6 bandwidth
    g.peak_tflops = 362;  // datasheet dense bf16
    return g;
}

GpuModel rtx_pro_6000() {
    GpuModel g;
    g.name = "NVIDIA RTX PRO 6000 Blackwell Server Edition";
    g.sm = 120;
    g.hbm_bw_gbs = 1792;  // datasheet GDDR7 bandwidth
    g.peak_tflops = 500;  // estimate: datasheet 4 PFLOPS FP4 with sparsity / 8 (dense bf16)
    return g;
}

}  // namespace

double nvlink_bw_gbs(int sm) {
    return sm >= 100 ? 40.1 : sm >= 90 ? 20.6 : sm == 86 ? 12.0 : sm >= 80 ? 20.0 : sm >= 70 ? 20.0 : 18.0;
}

const char* path_name(Path p) {
    static const char* const k_names[k_paths] = {"LOC", "NVL", "NVB", "C2C", "PIX",
                                                 "PXB", "P2C", "PXN", "PHB", "SYS"};
    return k_names[static_cast<int>(p)];
}

int parse_p2p_level(const char* value) {
    if (value == nullptr) return -1;
    for (int i = 0; i < k_paths; ++i)
        if (std::strcmp(value, path_name(static_cast<Path>(i))) == 0) return i;
    if (value[0] >= '0' && value[0] <= '9') {
        static const Path k_old_to_new[] = {Path::loc, Path::pix, Path::pxb, Path::phb, Path::sys, Path::sys};
        const long old = std::strtol(value, nullptr, 0);
        const long top = static_cast<long>(std::size(k_old_to_new)) - 1;
        return static_cast<int>(k_old_to_new[std::clamp(old, 0L, top)]);
    }
    return -1;
}

TopologyModel topology_model(Topology t) {
    TopologyModel m;
    auto set = [&m](const char* name, GpuModel gpu, bool nvlink, Path path, double bus, int channels,
                    double alpha, double peer_bw) {
        m.name = name;
        m.gpu = std::move(gpu);
        m.nvlink = nvlink;
        m.path = path;
        m.bus_bw_gbs = bus;
        m.default_channels = channels;
        m.peer_access = true;
        m.one_shot_alpha_us = alpha;
        m.peer_bw_gbs = peer_bw;
    };
    switch (t) {
        case Topology::nvlink:
            set("nvlink", h200(), true, Path::nvl, 360.0, 16, 2.0, 400.0);
            m.gpu.name = "NVIDIA H200 (SXM, NVLink)";
            return m;
        case Topology::pcie_gen4:
            set("pcie-gen4", l40s(), false, Path::phb, 24.0, 2, 4.0, 25.0);
            return m;
        case Topology::pcie_gen5:
            break;
    }
    set("pcie-gen5", rtx_pro_6000(), false, Path::phb, 48.0, 2, 3.5, 50.0);
    return m;
}

TopologyModel with_matrix(TopologyModel base, const TopoMatrix& matrix) {
    base.pairs = matrix.link;
    base.socket = matrix.socket;
    base.file = matrix.source;
    base.name += " + " + matrix.source;
    return base;
}

Path pair_path(const TopologyModel& topo, int a, int b) {
    if (a == b) return Path::loc;
    if (topo.pairs.empty()) return topo.path;
    switch (topo.pairs[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)].kind) {
        case TopoLinkKind::self:
            return Path::loc;
        case TopoLinkKind::nvlink:
            return Path::nvl;
        case TopoLinkKind::pix:
            return Path::pix;
        case TopoLinkKind::pxb:
            return Path::pxb;
        case TopoLinkKind::phb:
        case TopoLinkKind::node:
            return Path::phb;
        case TopoLinkKind::sys:
            return Path::sys;
    }
    return Path::sys;
}

RingGraph ring_graph(const TopologyModel& topo, int nranks) {
    RingGraph g;
    for (int r = 0; r < nranks; ++r) g.order.push_back(r);
    if (topo.pairs.empty() || nranks < 2) {
        g.type_intra = nranks < 2 ? Path::loc : topo.path;
        g.bus_bw_gbs = topo.bus_bw_gbs;
        return g;
    }
    // NCCL's search (search.cc) keeps the ring with the best bandwidth: it crosses between sockets
    // as few times as it can, once each way.
    std::stable_sort(g.order.begin(), g.order.end(), [&](int a, int b) {
        return topo.socket[static_cast<std::size_t>(a)] < topo.socket[static_cast<std::size_t>(b)];
    });
    g.bus_bw_gbs = -1;
    for (int i = 0; i < nranks; ++i) {
        const int a = g.order[static_cast<std::size_t>(i)];
        const int b = g.order[static_cast<std::size_t>((i + 1) % nranks)];
        const Path p = pair_path(topo, a, b);
        g.type_intra = std::max(g.type_intra, p);
        double bw = topo.bus_bw_gbs;  // a PCIe hop: the generation's link bandwidth
        if (p == Path::nvl)
            bw = topo.pairs[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)].nvlinks *
                 nvlink_bw_gbs(topo.gpu.sm);
        if (p == Path::sys) {
            bw = std::min(bw, k_inter_socket_bw_gbs);
            g.crosses_sockets = true;
        }
        g.bus_bw_gbs = g.bus_bw_gbs < 0 ? bw : std::min(g.bus_bw_gbs, bw);
    }
    return g;
}

bool fusion_possible(const TopologyModel& topo, const NcclEnv& env, int nranks, std::string& reason) {
    if (nranks <= 1) return true;
    if (nranks > k_fusion_max_ranks) {
        reason = "the one-shot kernel supports at most " + std::to_string(k_fusion_max_ranks) + " ranks";
        return false;
    }
    if (!topo.peer_access) {
        reason = "the GPUs of topology " + topo.name + " cannot access each other's memory";
        return false;
    }
    if (env.p2p_disable) {
        reason = "NCCL_P2P_DISABLE=1: the simulated machine has no peer access between GPUs";
        return false;
    }
    for (int a = 0; a < nranks; ++a)
        for (int b = a + 1; b < nranks; ++b)
            if (pair_path(topo, a, b) == Path::sys) {
                reason = topo.file + ": GPU" + std::to_string(a) + " and GPU" + std::to_string(b) +
                         " are SYS apart (across sockets), taken to have no peer access; measured one-shot "
                         "kernels lose to NCCL across sockets beyond 8 KB";
                return false;
            }
    return true;
}

Comm::Comm(const TopologyModel& topo, const NcclEnv& env, int nranks)
    : m_topo(topo), m_env(env), m_nranks(nranks) {
    m_channels = topo.default_channels;
    if (env.min_ctas > 0) m_channels = std::max(m_channels, env.min_ctas);
    if (env.max_ctas > 0) m_channels = std::min(m_channels, env.max_ctas);
    m_channels = std::clamp(m_channels, 1, 64);

    // P2P between two ranks when allowed and their path is within NCCL_P2P_LEVEL (default PXB;
    // paths.cc, ncclTopoCheckP2p), else host memory (SHM), else the network transport. The ring
    // runs at its slowest hop: one hop through host memory makes it an SHM ring.
    m_graph = ring_graph(topo, nranks);
    const int level = env.p2p_level >= 0 ? env.p2p_level : static_cast<int>(Path::pxb);
    bool p2p = !env.p2p_disable;
    for (int i = 0; i < nranks && p2p && nranks > 1; ++i) {
        const int a = m_graph.order[static_cast<std::size_t>(i)];
        const int b = m_graph.order[static_cast<std::size_t>((i + 1) % nranks)];
        p2p = static_cast<int>(pair_path(topo, a, b)) <= level;
    }
    m_transport = p2p ? Transport::p2p : env.shm_disable ? Transport::net : Transport::shm;

    // Threads per channel (tuning.cc, ncclTopoTuneModel / getNthreads).
    const int nt = env.nthreads;
    const int simple_default = m_graph.bus_bw_gbs <= k_pci_bw ? 256 : 512;
    for (int a = 0; a < 2; ++a) {
        m_max_threads[a][0] = nt > 0 ? nt : 512;
        m_max_threads[a][1] = 640;
        m_max_threads[a][2] = nt > 0 ? nt : (a == static_cast<int>(Algo::ring) ? simple_default : 512);
    }

    const int cc = compcap_index(topo.gpu.sm);
    const int p = nranks;
    // NCCL's latency table by the ring's farthest path (tuning.cc: NVLink when typeIntra is NVL).
    const int hw = m_graph.type_intra == Path::nvl ? 0 : 1;
    const int nch = topo.default_channels;
    const bool ll128_on = ll128_default();
    for (Func f : {Func::all_gather, Func::all_reduce}) {
        const int fi = static_cast<int>(f);
        const bool ar = f == Func::all_reduce;
        const int nsteps = ar ? 2 * (p - 1) : p - 1;
        for (int a = 0; a < 2; ++a) {
            const bool ring = a == static_cast<int>(Algo::ring);
            if (!ring && !ar) continue;  // on one node, tree exists only for AllReduce
            for (int pr = 0; pr < k_protos; ++pr) {
                double bus = m_graph.bus_bw_gbs;
                const auto proto = static_cast<Proto>(pr);
                if (ring && proto == Proto::ll) bus = std::min(k_ll_max_bw[cc], bus * 0.5);
                if (ring && proto == Proto::ll128) bus = std::min(bus * 0.92, nch * k_per_ch_ring_ll128[cc]);
                if (!ring) bus = std::min(bus * 0.92, nch * k_per_ch_tree[cc]);
                if (!ring && proto == Proto::ll) bus = std::min(bus / 3.8, k_ll_max_bw[cc]);
                if (!ring && proto == Proto::ll128)
                    bus = std::min(bus * 7.0 / 9.0, nch * k_per_ch_tree_ll128[cc]);
                const double ratio = ring ? double(p) / nsteps : 0.5;
                m_bw[fi][a][pr] = bus * ratio;
                const double hop = k_hw_lat[hw][a][pr];
                m_lat[fi][a][pr] = k_base_lat[a][pr] + (ring ? nsteps * hop : 2.0 * (p - 1) * hop);

                int enable = env.proto_enable[fi][pr];
                if (enable == 2) enable = ll128_on ? 1 : 0;
                if (enable == 0 || env.algo_enable[fi][a] == 0) m_bw[fi][a][pr] = 0;
            }
        }
    }
}

bool Comm::ll128_default() const {
    const Path type_intra = m_nranks > 1 ? m_graph.type_intra : m_topo.path;
    return static_cast<int>(type_intra) <= static_cast<int>(Path::nvb) && m_topo.gpu.sm >= 70;
}

Choice Comm::choose(Func f, std::uint64_t bytes) const {
    Choice c;
    if (m_nranks <= 1) {  // NCCL runs a one-rank collective as a local copy, no algorithm choice
        c.ok = true;
        c.channels = 1;
        c.time_us = 1.0 + 2.0 * static_cast<double>(bytes) / (m_topo.gpu.hbm_bw_gbs * 1e3);
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

    // The channel and thread cut for small messages, then Simple's extra warp(s) (enqueue.cc,
    // topoGetAlgoInfo): the extra warp comes after the cut, so it does not change the cut.
    const int a = static_cast<int>(c.algo), pr = static_cast<int>(c.proto);
    int nc = m_channels;
    int nt = m_max_threads[a][pr];
    const double threshold =
        k_thread_threshold[pr] * ((c.algo == Algo::ring && c.proto == Proto::ll) ? m_nranks : 1);
    const auto b = static_cast<double>(bytes);
    while (b < double(nc) * nt * threshold && nc >= 2) --nc;
    while (b < double(nc) * nt * threshold && nt % 128 == 0) nt /= 2;
    if (c.proto == Proto::simple) nt += c.algo == Algo::ring ? k_warp : 4 * k_warp;
    nt = std::max(nt, 3 * k_warp);
    if (c.algo == Algo::tree) nt = k_max_nthreads;
    c.channels = nc;
    c.threads = nt;

    // The sim's time: NCCL's own estimate for its choice (tuning.cc prices the communicator's
    // graph, whatever the per-collective cut keeps), with SHM's measured bandwidth ratio.
    c.transport = m_transport;
    const bool ring = c.algo == Algo::ring;
    double bw = m_bw[fi][a][pr] * (m_transport == Transport::shm ? k_shm_bw_factor : 1.0);
    if (!ring) bw *= tree_correction(c.proto, bytes);
    c.time_us = m_lat[fi][a][pr] + b / (1000.0 * bw);
    return c;
}

std::string Comm::no_algo_warning(Func f) const {
    std::string w = std::string("Error : no algorithm/protocol available for function ") + func_name(f) +
                    " with datatype ncclBfloat16.";
    if (!m_env.algo_str.empty()) w += " NCCL_ALGO was set to " + m_env.algo_str + ".";
    if (!m_env.proto_str.empty()) w += " NCCL_PROTO was set to " + m_env.proto_str + ".";
    return w;
}

double Comm::one_shot_model_us(std::uint64_t bytes) const {
    if (m_nranks <= 1) return 0;
    return m_topo.one_shot_alpha_us +
           (m_nranks - 1) * static_cast<double>(bytes) / (1000.0 * m_topo.peer_bw_gbs);
}

double GpuModel::gemm_us(std::uint64_t weight_bytes, double flops) const {
    const double memory = static_cast<double>(weight_bytes) / (hbm_bw_gbs * gemm_efficiency * 1e3);
    const double compute = flops / (peak_tflops * 1e6);
    return std::max({kernel_floor_us, memory, compute});
}

double GpuModel::stream_us(std::uint64_t bytes) const {
    return std::max(kernel_floor_us, static_cast<double>(bytes) / (hbm_bw_gbs * 1e3));
}

}  // namespace tpverify::sim
