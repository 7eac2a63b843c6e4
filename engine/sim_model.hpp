#pragma once
// The simulation backend's cost model: how NCCL would pick and run a collective on a modeled
// topology under the NCCL_* environment, plus the GPU roofline for the GEMMs.
// Constants are NCCL's own tuning-model numbers (src/graph/tuning.cc) where NCCL has them;
// the rest are labelled estimates (docs/engine.md lists each with its source).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/options.hpp"

namespace tpverify::sim {

/// NCCL's collective functions, in NCCL's order (prefixes of NCCL_ALGO/NCCL_PROTO).
enum class Func { broadcast, reduce, all_gather, reduce_scatter, all_reduce, send_recv, count };
/// NCCL's algorithms, in NCCL's order.
enum class Algo { tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat, count };
/// NCCL's protocols, in NCCL's order.
enum class Proto { ll, ll128, simple, count };
/// How ranks reach each other.
enum class Transport { p2p, shm, net };

constexpr int k_funcs = static_cast<int>(Func::count);
constexpr int k_algos = static_cast<int>(Algo::count);
constexpr int k_protos = static_cast<int>(Proto::count);

/// NCCL's spelling: "AllReduce", "RING"/"Ring", "LL128"...
const char* func_name(Func f);
const char* algo_name(Algo a);      ///< NCCL_ALGO token spelling ("Tree", "Ring", ...)
const char* algo_upper(Algo a);     ///< TUNING-line spelling ("TREE", "RING", ...)
const char* proto_name(Proto p);
const char* transport_name(Transport t);  ///< as in NCCL's channel lines: "P2P/CUMEM", "SHM/direct/direct"

/// The NCCL_* variables the model reads, already parsed and validated.
struct NcclEnv {
    std::string algo_str, proto_str;      ///< raw values ("" when unset)
    int algo_enable[k_funcs][k_algos];    ///< 1 allowed, 0 excluded
    int proto_enable[k_funcs][k_protos];  ///< 1 on, 0 off, 2 NCCL's default (LL128: only on NVLink)
    int min_ctas = -1, max_ctas = -1;     ///< after merging the deprecated *_NCHANNELS names
    int nthreads = -1;
    long long buffsize = -1;
    std::string p2p_level;                ///< LOC NVL PIX PXB PHB SYS ("" = NCCL's default, PXB)
    bool p2p_disable = false, shm_disable = false;
    bool runtime_connect = true;          ///< NCCL_RUNTIME_CONNECT (default 1 since 2.22)
    int debug_level = 0;                  ///< 0 none, 1 VERSION, 2 WARN, 3 INFO, 4 TRACE
    std::vector<std::string> subsys;      ///< enabled NCCL_DEBUG_SUBSYS names (upper case)
    std::vector<std::string> env_lines;   ///< "NCCL_X set by environment to V" lines, in order
    [[nodiscard]] bool info(const char* subsys_name) const;  ///< INFO enabled for this subsystem
};

/// Prints one NCCL debug line on stdout (where NCCL writes them), flushed:
/// "host:pid:tid [rank] NCCL <level> <text>".
void print_nccl_line(int rank, const char* level, const std::string& text);

/// Reads and validates the environment through `getenv` (a stand-in for std::getenv in
/// tests). On NCCL-style invalid usage returns false and sets `warn` to NCCL's WARN text.
bool parse_nccl_env(const std::function<const char*(const char*)>& getenv, NcclEnv& env, std::string& warn);

/// The modeled machine for --topology.
struct TopologyModel {
    std::string name;
    bool nvlink = false;          ///< NVLink (hw NVLINK, path NVL) or PCIe (hw PCI, path PHB)
    double bus_bw_gbs = 0;        ///< ring bus bandwidth of the whole graph (GB/s)
    int default_channels = 0;     ///< channels NCCL's graph search finds
    double one_shot_alpha_us = 0; ///< fused one-shot all-reduce: write + flag-poll latency
    double peer_bw_gbs = 0;       ///< one GPU's write bandwidth to its peers (GB/s)
};
TopologyModel topology_model(Topology t);

/// What NCCL chose for one collective and what it costs.
struct Choice {
    bool ok = false;
    Algo algo = Algo::ring;
    Proto proto = Proto::simple;
    int channels = 1;     ///< channels actually used after the small-message cut
    int threads = 0;      ///< threads per channel after the cut
    double model_us = 0;  ///< NCCL's own estimate (what it ranks by)
    double time_us = 0;   ///< what the simulated run takes (device time, no launch overhead)
};

/// A simulated communicator: NCCL's latency/bandwidth tables for this topology and env.
class Comm {
public:
    Comm(const TopologyModel& topo, const NcclEnv& env, int nranks);
    /// Picks algorithm/protocol like NCCL (fastest model time among allowed ones).
    [[nodiscard]] Choice choose(Func f, std::uint64_t bytes) const;
    /// NCCL's WARN text when `choose` fails ("Error : no algorithm/protocol available ...").
    [[nodiscard]] std::string no_algo_warning(Func f) const;
    [[nodiscard]] Transport transport() const { return m_transport; }
    [[nodiscard]] int channels() const { return m_channels; }
    [[nodiscard]] int nranks() const { return m_nranks; }
    /// True when LL128 runs over a path NCCL would not enable it on (data corruption risk).
    [[nodiscard]] bool ll128_unsafe() const { return !m_topo.nvlink; }
    /// Fused one-shot all-reduce (+ residual + RMSNorm) over peer memory: alpha + (p-1) n beta.
    [[nodiscard]] double one_shot_us(std::uint64_t bytes) const;

private:
    TopologyModel m_topo;
    NcclEnv m_env;
    int m_nranks;
    int m_channels;
    Transport m_transport;
    int m_max_threads[k_algos][k_protos] = {};
    double m_lat[k_funcs][k_algos][k_protos] = {};
    double m_bw[k_funcs][k_algos][k_protos] = {};  ///< algorithm bandwidth, GB/s; 0 = unavailable
};

/// GPU model for the non-collective kernels (H200-like defaults).
struct GpuModel {
    double hbm_bw_gbs = 4300;     ///< measured copy bandwidth (NCCL-FACTS §3)
    double peak_tflops = 790;     ///< measured bf16 GEMM throughput (NCCL-FACTS §3)
    double gemm_efficiency = 0.8; ///< small-m GEMMs reach ~80% of copy bandwidth (estimate)
    double kernel_floor_us = 2.0; ///< shortest kernel duration (estimate)
    double launch_eager_us = 4.0; ///< per-kernel launch cost without graphs (estimate)
    double launch_graph_us = 1.0; ///< per-kernel gap inside a replayed graph (estimate)
    /// Device time of one bf16 GEMM: max(weights / bandwidth, flops / peak, floor).
    [[nodiscard]] double gemm_us(std::uint64_t weight_bytes, double flops) const;
    /// Residual add + RMSNorm over `bytes` of activations.
    [[nodiscard]] double norm_us(std::uint64_t bytes) const;
};

}  // namespace tpverify::sim
