// The catalog of NCCL_* variables the validator knows, and small helpers around it.
// Names follow NCCL's environment-variable documentation (2.2x); see docs/nccl-validation.md.
#include <algorithm>
#include <charconv>

#include "core/nccl/nccl.hpp"
#include "core/nccl/nccl_detail.hpp"

namespace ncclsweep::nccl::detail {

namespace {

std::vector<VariableInfo> build_catalog() {
    std::vector<VariableInfo> list = {
        // Algorithm / protocol selection.
        {"NCCL_ALGO", Kind::algo_list, "per-collective syntax since 2.24"},
        {"NCCL_PROTO", Kind::proto_list, "per-collective syntax since 2.24"},
        // Channels and threads.
        {"NCCL_NTHREADS", Kind::nthreads, "ignored by NCCL for small messages"},
        {"NCCL_MIN_CTAS", Kind::ctas, "ignored by NCCL for small messages"},
        {"NCCL_MAX_CTAS", Kind::ctas, "ignored by NCCL for small messages"},
        {"NCCL_MIN_NCHANNELS", Kind::ctas, "deprecated name of NCCL_MIN_CTAS"},
        {"NCCL_MAX_NCHANNELS", Kind::ctas, "deprecated name of NCCL_MAX_CTAS"},
        {"NCCL_NCHANNELS_PER_NET_PEER", Kind::positive, ""},
        {"NCCL_NVLS_NCHANNELS", Kind::positive, ""},
        // Buffers and chunks.
        {"NCCL_BUFFSIZE", Kind::size, "Simple protocol buffer (default 4 MiB)"},
        {"NCCL_LL_BUFFSIZE", Kind::size, "LL protocol buffer"},
        {"NCCL_LL128_BUFFSIZE", Kind::size, "LL128 protocol buffer"},
        {"NCCL_P2P_NET_CHUNKSIZE", Kind::size, ""},
        {"NCCL_P2P_NVL_CHUNKSIZE", Kind::size, ""},
        {"NCCL_P2P_PCI_CHUNKSIZE", Kind::size, ""},
        {"NCCL_WORK_FIFO_DEPTH", Kind::size, ""},
        // Transports.
        {"NCCL_P2P_LEVEL", Kind::path_level, ""},
        {"NCCL_NET_GDR_LEVEL", Kind::path_level, "formerly NCCL_IB_GDR_LEVEL"},
        {"NCCL_P2P_PXN_LEVEL", Kind::count, "0, 1 or 2"},
        {"NCCL_P2P_DISABLE", Kind::boolean, ""},
        {"NCCL_P2P_DIRECT_DISABLE", Kind::boolean, ""},
        {"NCCL_P2P_USE_CUDA_MEMCPY", Kind::boolean, ""},
        {"NCCL_SHM_DISABLE", Kind::boolean, ""},
        {"NCCL_SHM_USE_CUDA_MEMCPY", Kind::boolean, ""},
        {"NCCL_NVLS_ENABLE", Kind::tristate, "0 off, 1 on, 2 automatic (default)"},
        {"NCCL_NVB_DISABLE", Kind::boolean, ""},
        {"NCCL_PXN_DISABLE", Kind::boolean, ""},
        {"NCCL_CUMEM_ENABLE", Kind::boolean, ""},
        {"NCCL_CUMEM_HOST_ENABLE", Kind::boolean, ""},
        {"NCCL_DMABUF_ENABLE", Kind::boolean, ""},
        {"NCCL_RUNTIME_CONNECT", Kind::boolean, "lazy connection setup, default 1 since 2.22"},
        {"NCCL_GRAPH_MIXING_SUPPORT", Kind::boolean, ""},
        {"NCCL_GRAPH_REGISTER", Kind::boolean, ""},
        {"NCCL_LOCAL_REGISTER", Kind::boolean, ""},
        {"NCCL_ALLOC_P2P_NET_LL_BUFFERS", Kind::boolean, ""},
        {"NCCL_CROSS_NIC", Kind::tristate, ""},
        {"NCCL_COLLNET_ENABLE", Kind::boolean, ""},
        {"NCCL_COLLNET_NODE_THRESHOLD", Kind::count, ""},
        // Network.
        {"NCCL_IB_DISABLE", Kind::boolean, ""},
        {"NCCL_IB_HCA", Kind::free_text, ""},
        {"NCCL_IB_TIMEOUT", Kind::count, ""},
        {"NCCL_IB_RETRY_CNT", Kind::count, ""},
        {"NCCL_IB_GID_INDEX", Kind::count, ""},
        {"NCCL_IB_SL", Kind::count, ""},
        {"NCCL_IB_TC", Kind::count, ""},
        {"NCCL_IB_QPS_PER_CONNECTION", Kind::positive, ""},
        {"NCCL_IB_AR_THRESHOLD", Kind::count, ""},
        {"NCCL_IB_CUDA_SUPPORT", Kind::boolean, ""},
        {"NCCL_IB_PCI_RELAXED_ORDERING", Kind::tristate, ""},
        {"NCCL_IB_ADAPTIVE_ROUTING", Kind::boolean, ""},
        {"NCCL_NET_GDR_READ", Kind::boolean, ""},
        {"NCCL_NET_SHARED_BUFFERS", Kind::boolean, ""},
        {"NCCL_NET_SHARED_COMMS", Kind::boolean, ""},
        {"NCCL_NET", Kind::free_text, ""},
        {"NCCL_NET_PLUGIN", Kind::free_text, ""},
        {"NCCL_SOCKET_IFNAME", Kind::free_text, ""},
        {"NCCL_SOCKET_FAMILY", Kind::socket_family, ""},
        {"NCCL_SOCKET_NTHREADS", Kind::positive, ""},
        {"NCCL_NSOCKS_PERTHREAD", Kind::positive, ""},
        {"NCCL_COMM_ID", Kind::free_text, ""},
        {"NCCL_HOSTID", Kind::free_text, ""},
        // Debugging.
        {"NCCL_DEBUG", Kind::debug_level, ""},
        {"NCCL_DEBUG_SUBSYS", Kind::debug_subsys, ""},
        {"NCCL_DEBUG_FILE", Kind::free_text, ""},
        {"NCCL_CHECK_POINTERS", Kind::boolean, ""},
        {"NCCL_CHECKS_DISABLE", Kind::boolean, "deprecated"},
        {"NCCL_SET_THREAD_NAME", Kind::boolean, ""},
        {"NCCL_SET_STACK_SIZE", Kind::boolean, ""},
        {"NCCL_IGNORE_CPU_AFFINITY", Kind::boolean, ""},
        {"NCCL_RAS_ENABLE", Kind::boolean, ""},
        // Launch, files, plugins, thresholds.
        {"NCCL_LAUNCH_MODE", Kind::launch_mode, ""},
        {"NCCL_COMM_BLOCKING", Kind::boolean, ""},
        {"NCCL_CONF_FILE", Kind::free_text, "read before ~/.nccl.conf and /etc/nccl.conf"},
        {"NCCL_TUNER_PLUGIN", Kind::free_text, ""},
        {"NCCL_TUNER_CONFIG_FILE", Kind::free_text, "example tuner plugin CSV (default ./nccl_tuner.conf)"},
        {"NCCL_PROFILER_PLUGIN", Kind::free_text, ""},
        {"NCCL_TOPO_FILE", Kind::free_text, ""},
        {"NCCL_TOPO_DUMP_FILE", Kind::free_text, ""},
        {"NCCL_GRAPH_FILE", Kind::free_text, ""},
        {"NCCL_GRAPH_DUMP_FILE", Kind::free_text, ""},
        {"NCCL_P2P_LL_THRESHOLD", Kind::count, ""},
        {"NCCL_SINGLE_RING_THRESHOLD", Kind::count, "deprecated"},
        {"NCCL_LL_THRESHOLD", Kind::count, "deprecated"},
        {"NCCL_TREE_THRESHOLD", Kind::count, "deprecated"},
    };
    std::sort(list.begin(), list.end(),
              [](const VariableInfo& a, const VariableInfo& b) { return a.name < b.name; });
    return list;
}

}  // namespace

const std::vector<VariableInfo>& catalog() {
    static const std::vector<VariableInfo> k_catalog = build_catalog();
    return k_catalog;
}

const VariableInfo* find_variable(std::string_view name) {
    const auto& list = catalog();
    auto it = std::lower_bound(list.begin(), list.end(), name,
                               [](const VariableInfo& info, std::string_view n) { return info.name < n; });
    if (it == list.end() || it->name != name) return nullptr;
    return &*it;
}

std::string accepted_text(Kind kind) {
    switch (kind) {
        case Kind::algo_list:
            return "a comma list of Ring, Tree, CollnetDirect, CollnetChain, NVLS, NVLSTree, PAT (any case), "
                   "optionally starting with ^ to exclude, and per collective since NCCL 2.24 as "
                   "\"ring,tree;allreduce:tree\" (collectives: broadcast, reduce, allgather, reducescatter, "
                   "allreduce)";
        case Kind::proto_list:
            return "a comma list of LL, LL128, Simple (any case), optionally starting with ^ to exclude, and "
                   "per "
                   "collective since NCCL 2.24 as \"simple;allreduce:ll\" (collectives: broadcast, reduce, "
                   "allgather, reducescatter, allreduce)";
        case Kind::nthreads:
            return "a multiple of 32 from 64 to 512";
        case Kind::ctas:
            return "an integer from 1 to 64";
        case Kind::path_level:
            return "LOC, NVL, PIX, PXB, PHB, SYS or an integer 0..5";
        case Kind::boolean:
            return "0 or 1";
        case Kind::tristate:
            return "0, 1 or 2";
        case Kind::size:
            return "a positive number of bytes written as a plain integer (a power of two is recommended)";
        case Kind::count:
            return "a non-negative integer";
        case Kind::positive:
            return "a positive integer";
        case Kind::debug_level:
            return "VERSION, WARN, INFO, TRACE or ABORT";
        case Kind::debug_subsys:
            return "a comma list of INIT, COLL, P2P, SHM, NET, GRAPH, TUNING, ENV, ALLOC, CALL, PROXY, NVLS, "
                   "BOOTSTRAP, REG, PROFILE, RAS or ALL, optionally starting with ^ to exclude";
        case Kind::launch_mode:
            return "PARALLEL or GROUP";
        case Kind::socket_family:
            return "AF_INET or AF_INET6";
        case Kind::free_text:
            return "any text";
    }
    return "any text";
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
    if (text.empty()) return std::nullopt;
    bool negative = false;
    std::size_t pos = 0;
    if (text[0] == '-' || text[0] == '+') {
        negative = text[0] == '-';
        pos = 1;
    }
    int base = 10;
    if (text.size() > pos + 2 && text[pos] == '0' && (text[pos + 1] == 'x' || text[pos + 1] == 'X')) {
        base = 16;
        pos += 2;
    }
    if (pos >= text.size()) return std::nullopt;
    std::int64_t value = 0;
    const char* first = text.data() + pos;
    const char* last = text.data() + text.size();
    auto [end, ec] = std::from_chars(first, last, value, base);
    if (ec != std::errc() || end != last) return std::nullopt;
    return negative ? -value : value;
}

}  // namespace ncclsweep::nccl::detail

namespace ncclsweep::nccl {

std::vector<std::string> known_variables() {
    std::vector<std::string> names;
    for (const auto& info : detail::catalog()) names.emplace_back(info.name);
    return names;
}

}  // namespace ncclsweep::nccl
