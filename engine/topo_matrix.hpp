#pragma once
// `nvidia-smi topo -m` as it prints it: the GPU-to-GPU connection matrix of a machine, read for
// the sim's --topology-file (and the topology block `ncclsweep calibrate` writes into a
// calibration). Accepts what real outputs contain: tabs or runs of spaces, ANSI colour codes, a
// "$ nvidia-smi topo -m" line above, NIC/mlx5 columns and rows, the CPU Affinity, NUMA Affinity
// and GPU NUMA ID columns, and the legend below. Only the GPU rows are kept.
#include <string>
#include <vector>

namespace tpverify {

/// How two GPUs are connected, as nvidia-smi names it (its legend, in order of distance).
enum class TopoLinkKind {
    self,    ///< X
    nvlink,  ///< NV# (a bonded set of # NVLinks)
    pix,     ///< PIX: at most one PCIe bridge (one switch)
    pxb,     ///< PXB: several PCIe bridges, no host bridge
    phb,     ///< PHB: through a PCIe host bridge (typically the CPU)
    node,    ///< NODE: between host bridges of one NUMA node
    sys,     ///< SYS (SOC in old drivers): across the SMP interconnect between NUMA nodes
};

/// One cell of the matrix.
struct TopoLink {
    TopoLinkKind kind = TopoLinkKind::sys;
    int nvlinks = 0;  ///< NV#: the number of links
    bool operator==(const TopoLink& o) const { return kind == o.kind && nvlinks == o.nvlinks; }
};

/// The GPU part of a `nvidia-smi topo -m` matrix.
struct TopoMatrix {
    std::string source;                       ///< where it was read from, for messages
    std::vector<std::vector<TopoLink>> link;  ///< [i][j] for GPUs i and j (i == j: self)
    /// Socket of each GPU: its NUMA Affinity, else its CPU Affinity (GPUs with the same CPU list
    /// share a socket), numbered 0, 1, ... in order of first appearance; all 0 when neither
    /// column is printed.
    std::vector<int> socket;
    [[nodiscard]] int gpus() const { return static_cast<int>(link.size()); }
    /// True when GPUs 0..n-1 are connected the same way in both matrices.
    [[nodiscard]] bool same_paths(const TopoMatrix& other, int n) const;
};

/// "X", "NV12", "PIX", ..., "SYS".
std::string topo_link_name(const TopoLink& link);

/// Parses the printed matrix. On error returns false with "NAME:LINE: what is wrong; what to do"
/// (LINE counted from `first_line`, for text embedded in another file).
bool parse_topo_matrix(const std::string& text, const std::string& name, TopoMatrix& out, std::string& error,
                       int first_line = 1);
/// Reads and parses a file (error "PATH: cannot read ..." when it cannot be read).
bool load_topo_matrix(const std::string& path, TopoMatrix& out, std::string& error);

}  // namespace tpverify
