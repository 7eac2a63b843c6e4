#pragma once
// The simulation backend's cost model: how NCCL 2.28 would pick and run a collective on a
// modeled topology under the NCCL_* environment, plus the GPU roofline for the GEMMs.
// Constants are NCCL 2.28's own tuning-model numbers (src/graph/tuning.cc, ncclTopoTuneModel;
// src/enqueue.cc, the channel/thread cut) where NCCL has them; the rest are labelled estimates
// (docs/engine.md lists each with its source).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/model/model.hpp"
#include "engine/options.hpp"
#include "engine/topo_matrix.hpp"

namespace tpverify::sim {

struct KernelTable;

/// NCCL's collective functions, in NCCL's order (prefixes of NCCL_ALGO/NCCL_PROTO).
enum class Func { broadcast, reduce, all_gather, reduce_scatter, all_reduce, send_recv, count };
/// NCCL's algorithms, in NCCL's order.
enum class Algo { tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat, count };
/// NCCL's protocols, in NCCL's order.
enum class Proto { ll, ll128, simple, count };
/// How ranks reach each other.
enum class Transport { p2p, shm, net };
/// NCCL's path types between two GPUs, in NCCL 2.28's order (src/include/topo.h): a lower
/// value is a closer path. NCCL_P2P_LEVEL names one of these.
enum class Path { loc, nvl, nvb, c2c, pix, pxb, p2c, pxn, phb, sys };
constexpr int k_paths = static_cast<int>(Path::sys) + 1;
const char* path_name(Path p);  ///< "LOC", "NVL", ..., "SYS"
/// NCCL_P2P_LEVEL as NCCL's ncclGetLevel (src/graph/paths.cc) reads it: an exact,
/// case-sensitive path name (LOC..SYS), else a value starting with a digit is the old
/// numbering 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and above SYS (strtol, so "3x" is 3); anything
/// else is ignored (returns -1).
int parse_p2p_level(const char* value);

constexpr int k_funcs = static_cast<int>(Func::count);
constexpr int k_algos = static_cast<int>(Algo::count);
constexpr int k_protos = static_cast<int>(Proto::count);

/// NCCL's spelling: "AllReduce", "RING"/"Ring", "LL128"...
const char* func_name(Func f);
const char* algo_name(Algo a);   ///< NCCL_ALGO token spelling ("Tree", "Ring", ...)
const char* algo_upper(Algo a);  ///< TUNING-line spelling ("TREE", "RING", ...)
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
    int p2p_level = -1;                  ///< a Path value from NCCL_P2P_LEVEL; -1: NCCL's default (PXB)
    bool p2p_disable = false;            ///< NCCL_P2P_DISABLE=1 (NCCL tests == 1, not != 0)
    bool shm_disable = false;            ///< NCCL_SHM_DISABLE=1
    bool runtime_connect = true;         ///< NCCL_RUNTIME_CONNECT (default 1 since 2.22)
    int debug_level = 0;                 ///< 0 none, 1 VERSION, 2 WARN, 3 INFO, 4 TRACE
    std::vector<std::string> subsys;     ///< enabled NCCL_DEBUG_SUBSYS names (upper case)
    std::vector<std::string> env_lines;  ///< "NCCL_X set by environment to V" lines, in order
    [[nodiscard]] bool info(const char* subsys_name) const;  ///< INFO enabled for this subsystem
};

/// What the sim puts in front of every NCCL-like line it prints, so that nobody takes them for
/// NCCL's own; the watcher's rules match inside the line and still see them.
constexpr const char* k_sim_line_marker = "[tpverify-sim] ";
/// Prints one NCCL debug line on stdout (where NCCL writes them), flushed:
/// "[tpverify-sim] host:pid:tid [rank] NCCL <level> <text>".
void print_nccl_line(int rank, const char* level, const std::string& text);

/// Reads and validates the environment through `getenv` (a stand-in for std::getenv in
/// tests). On NCCL-style invalid usage returns false and sets `warn` to NCCL's WARN text.
bool parse_nccl_env(const std::function<const char*(const char*)>& getenv, NcclEnv& env, std::string& warn);

/// GPU model for the non-collective kernels.
struct GpuModel {
    std::string name = "NVIDIA H200";
    int sm = 90;                   ///< compute capability x 10 (NCCL picks its per-arch caps by it)
    double hbm_bw_gbs = 4300;      ///< device-memory copy bandwidth (GB/s)
    double peak_tflops = 790;      ///< dense bf16 GEMM throughput (TFLOP/s)
    double gemm_efficiency = 0.8;  ///< small-m GEMMs reach ~80% of copy bandwidth (estimate)
    double kernel_floor_us = 2.0;  ///< shortest kernel duration (estimate)
    double launch_eager_us = 4.0;  ///< per-kernel launch cost without graphs (estimate)
    double launch_graph_us = 1.0;  ///< per-kernel gap inside a replayed graph (estimate)
    /// Measured kernel times (engine/sim/kernel_table.hpp) the prices below come from; null:
    /// the roofline estimates only. `table_native`: they were measured on this GPU.
    const KernelTable* table = nullptr;
    bool table_native = false;
    /// Device time of one bf16 GEMM: max(weights / bandwidth, flops / peak, floor).
    [[nodiscard]] double gemm_us(std::uint64_t weight_bytes, double flops) const;
    /// Device time of one launch of the weight-streaming GEMM (engine/model, expert_launches):
    /// `count` matrices [n x k] of the format, `rows` rows of x (engine/sim/gpu_price.cpp).
    [[nodiscard]] double gemm_launch_us(bool int4, int rows, int n, int k, int count) const;
    /// Device time of one decode attention step.
    [[nodiscard]] double attention_us(const Attention& a) const;
    /// Device time of one small kernel of the layer.
    [[nodiscard]] double op_us(Op op, int rows, int width, std::uint64_t bytes) const;
    /// Where the prices come from, for the result event: "measured on GPU (source)", and the
    /// assumption that carries them to this GPU when it is another.
    [[nodiscard]] std::string price_source() const;
    [[nodiscard]] std::string price_assumption() const;
    /// Residual add + RMSNorm over `bytes` of activations.
    [[nodiscard]] double norm_us(std::uint64_t bytes) const;
    /// An elementwise kernel that moves `bytes` (reads + writes) through device memory.
    [[nodiscard]] double stream_us(std::uint64_t bytes) const;
    /// The copy bandwidth (GB/s) the prices are relative to: the kernel table's, measured, where
    /// it was measured on this GPU; the model's elsewhere.
    [[nodiscard]] double copy_bw_gbs() const;
};

/// SHM's bandwidth relative to P2P, measured: 8 x RTX PRO 6000 Blackwell Server Edition (ASUS
/// ESC8000A-E13P, Broadcom PEX890xx switches), 4-GPU all_reduce_perf at 32 MB: bus bandwidth
/// 30.3 GB/s with NCCL's default (SHM between NODE pairs) vs 39.3 GB/s with NCCL_P2P_LEVEL=SYS
/// (P2P everywhere) (voipmonitor/rtx6kpro, hardware/asus-esc8000a-e13p-broadcom-switches.md,
/// "NCCL Configuration"). NCCL's own model prices every transport alike; no per-hop latency term
/// is added (none was measured), and the network transport (sockets) has no measured figure.
constexpr double k_shm_bw_factor = 30.3 / 39.3;
/// NCCL 2.28's bandwidth of the link between two CPU sockets, GB/s (topo.h AMD_BW; Intel's are
/// 6 to 40 by generation). nvidia-smi topo -m does not name the CPU; the RTX PRO 6000 servers
/// measured above are AMD EPYC machines.
constexpr double k_inter_socket_bw_gbs = 16.0;
/// NCCL 2.28's bandwidth of one NVLink by compute capability x 10 (topo.h SM*_NVLINK_BW), GB/s.
double nvlink_bw_gbs(int sm);

/// Prices `gpu`'s kernels from the kernel table tpverify carries (builtin:h200), measured on an
/// H200: as measured when `gpu` is one, carried over by price_assumption() otherwise.
void attach_kernel_table(GpuModel& gpu);

/// The modeled machine: --topology, and with --topology-file the machine's own GPU-to-GPU paths.
struct TopologyModel {
    std::string name;
    GpuModel gpu;
    bool nvlink = false;           ///< NVLink (NCCL hw NVLINK) or PCIe (hw PCI)
    Path path = Path::phb;         ///< path between two GPUs of the ring (NCCL's typeIntra)
    double bus_bw_gbs = 0;         ///< ring bus bandwidth of the whole graph (GB/s)
    int default_channels = 0;      ///< channels NCCL's graph search finds
    bool peer_access = true;       ///< cudaDeviceCanAccessPeer between the GPUs (hardware)
    double one_shot_alpha_us = 0;  ///< fused one-shot all-reduce: write + flag-poll latency (estimate)
    double peer_bw_gbs = 0;        ///< one GPU's write bandwidth to its peers (GB/s, estimate)
    /// --topology-file: the machine's `nvidia-smi topo -m` (per-pair paths and sockets); without
    /// one every pair of GPUs is `path` apart.
    std::vector<std::vector<TopoLink>> pairs;
    std::vector<int> socket;  ///< per GPU, with `pairs`
    std::string file;         ///< the topology file's name ("" without one)
};
TopologyModel topology_model(Topology t);
/// `base` with the paths of `matrix` (its GPU model, channels and PCIe generation stay).
TopologyModel with_matrix(TopologyModel base, const TopoMatrix& matrix);
/// NCCL's path type between GPUs a and b: nvidia-smi's NV# is NVL, PIX and PXB are themselves,
/// PHB and NODE are PHB (NCCL has no NODE: both traverse the CPU's host bridge), SYS is SYS.
Path pair_path(const TopologyModel& topo, int a, int b);

/// The ring NCCL builds over `nranks` GPUs, as the sim prices it.
struct RingGraph {
    std::vector<int> order;       ///< GPUs in ring order: by socket, then index (one crossing each way)
    Path type_intra = Path::loc;  ///< the farthest path of the ring (NCCL's graph typeIntra)
    double bus_bw_gbs = 0;        ///< the ring's bandwidth: its slowest hop
    bool crosses_sockets = false;
};
/// NCCL's own figures for one hop: a PCIe link at the generation's bandwidth (topo.cc: 48 GB/s
/// for Gen5 x16, 24 for Gen4), an NVLink bundle at # x the per-link bandwidth of the GPU's
/// architecture (topo.h SM*_NVLINK_BW), the inter-socket link at NCCL's AMD_BW (16 GB/s).
RingGraph ring_graph(const TopologyModel& topo, int nranks);

/// One assumption of the sim's collective model and where its figure comes from.
struct Assumption {
    std::string name;    ///< short key, e.g. "shm_bandwidth"
    std::string value;   ///< the figure as the sim uses it
    std::string source;  ///< where it comes from: a measurement, NCCL's source, or "estimate"
};
/// Every assumption of the collective model and the fused kernel's price (tpverify --describe).
const std::vector<Assumption>& model_assumptions();

/// Ranks the CUDA backend's one-shot kernel supports (engine/cuda/kernels.cuh, k_max_peers).
constexpr int k_fusion_max_ranks = 8;
/// Whether the CUDA backend would run the fused one-shot all-reduce on this machine: peer
/// access between every pair of the ranks' GPUs and at most k_fusion_max_ranks ranks. In the
/// sim, NCCL_P2P_DISABLE=1 stands for a machine without peer access (the reason people set it);
/// with --topology-file, GPUs a SYS path apart (across sockets) are taken to have none. Sets
/// `reason` when not.
bool fusion_possible(const TopologyModel& topo, const NcclEnv& env, int nranks, std::string& reason);

/// What NCCL chose for one collective and what it costs.
struct Choice {
    bool ok = false;
    Algo algo = Algo::ring;
    Proto proto = Proto::simple;
    int channels = 1;                      ///< channels actually used after the small-message cut
    int threads = 0;                       ///< threads per channel after the cut
    Transport transport = Transport::p2p;  ///< how the ring's hops move data
    double model_us = 0;                   ///< NCCL's own estimate (what it ranks by)
    double time_us = 0;  ///< the sim's model of the run: NCCL's estimate with SHM's measured bandwidth
    /// Equal algorithm, protocol, channels and transport: NCCL's effective choice.
    [[nodiscard]] bool same_effective(const Choice& o) const {
        return algo == o.algo && proto == o.proto && channels == o.channels && transport == o.transport;
    }
};

/// A simulated communicator: NCCL's latency/bandwidth tables for this topology and env.
class Comm {
public:
    Comm(const TopologyModel& topo, const NcclEnv& env, int nranks);
    /// Picks algorithm/protocol like NCCL (fastest model time among allowed ones).
    [[nodiscard]] Choice choose(Func f, std::uint64_t bytes) const;
    /// NCCL's WARN text when `choose` fails ("Error : no algorithm/protocol available ...").
    [[nodiscard]] std::string no_algo_warning(Func f) const;
    /// The ring's transport: P2P when every hop's path is within NCCL_P2P_LEVEL, else SHM (or
    /// the network with NCCL_SHM_DISABLE=1).
    [[nodiscard]] Transport transport() const { return m_transport; }
    [[nodiscard]] const RingGraph& graph() const { return m_graph; }
    [[nodiscard]] int channels() const { return m_channels; }
    [[nodiscard]] int nranks() const { return m_nranks; }
    /// True when LL128 runs over a path NCCL would not enable it on (data corruption risk).
    [[nodiscard]] bool ll128_unsafe() const { return !ll128_default(); }
    /// NCCL 2.28's default for LL128 here (tuning.cc): on when the path is NVLink-class
    /// (typeIntra <= NVB) and the GPU is Volta or newer.
    [[nodiscard]] bool ll128_default() const;
    /// The fused one-shot all-reduce's modelled time: alpha + (p-1) n / peer bandwidth, with the
    /// topology's estimates (engine/sim/one_shot.hpp prices it from measurements where it can).
    [[nodiscard]] double one_shot_model_us(std::uint64_t bytes) const;

private:
    TopologyModel m_topo;
    NcclEnv m_env;
    int m_nranks;
    int m_channels;
    RingGraph m_graph;
    Transport m_transport;
    int m_max_threads[k_algos][k_protos] = {};
    double m_lat[k_funcs][k_algos][k_protos] = {};
    double m_bw[k_funcs][k_algos][k_protos] = {};  ///< algorithm bandwidth, GB/s; 0 = unavailable
};

}  // namespace tpverify::sim
