#pragma once
// Drives a built NCCL tuner plugin through the v5 ABI the way NCCL 2.27/2.28 does: dlopen +
// dlsym("ncclTunerPlugin_v5") (src/plugin/tuner/tuner_v5.cc), init with nRanks/nNodes and a
// logger at communicator setup, and per collective getCollInfo on a cost table that starts
// with every entry ignored (-1) and has NCCL's model times where an algorithm/protocol is
// available, nMaxChannels starting at 0; NCCL then picks the cheapest non-ignored entry and
// keeps its own channel count while the plugin left 0 (src/enqueue.cc, ncclGetAlgoInfo).
#include <dlfcn.h>

#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tuner/nccl_tuner_abi.h"

#ifndef NCCLSWEEP_TUNER_PLUGIN_PATH
#error "the test target must define NCCLSWEEP_TUNER_PLUGIN_PATH (tests/CMakeLists.txt)"
#endif

namespace ncclsweep::test {

/// One line NCCL's logger received from the plugin.
struct LoggedLine {
    nst_log_level_t level;
    unsigned long flags;
    std::string text;
};

/// Lines logged through tuner_logger (tests run one case per process, so one list suffices).
inline std::vector<LoggedLine>& tuner_log() {
    static std::vector<LoggedLine> lines;
    return lines;
}

/// A logger with NCCL's signature that records what it is given.
inline void tuner_logger(nst_log_level_t level, unsigned long flags, const char*, int, const char* format,
                         ...) {
    char buffer[2048];
    va_list args;
    va_start(args, format);
    std::vsnprintf(buffer, sizeof(buffer), format, args);
    va_end(args);
    tuner_log().push_back({level, flags, buffer});
}

/// The lines containing `part`.
inline std::vector<LoggedLine> logged_with(const std::string& part) {
    std::vector<LoggedLine> out;
    for (const auto& line : tuner_log())
        if (line.text.find(part) != std::string::npos) out.push_back(line);
    return out;
}

/// NCCL's cost table for one collective: algorithms x protocols, -1 = not available.
using CostTable = std::array<std::array<float, nst_proto_count>, nst_algo_count>;

/// A table with every entry ignored, as NCCL's initCollCostTable leaves it.
inline CostTable ignored_table() {
    CostTable table{};
    for (auto& row : table) row.fill(NST_COST_IGNORED);
    return table;
}

/// A single-node 8-GPU PCIe table in the spirit of NCCL's model: ring and tree with LL and
/// Simple, LL128 not available (NCCL disables it off NVLink), nothing else.
inline CostTable pcie_table() {
    CostTable table = ignored_table();
    table[nst_algo_ring][nst_proto_ll] = 20.6f;
    table[nst_algo_tree][nst_proto_ll] = 20.8f;
    table[nst_algo_ring][nst_proto_simple] = 88.0f;
    table[nst_algo_tree][nst_proto_simple] = 64.0f;
    return table;
}

/// pcie_table() plus an NVLS/Simple entry cheaper than all: NCCL alone would pick NVLS, so a
/// ring or tree result can only come from the plugin.
inline CostTable nvls_favoured_table() {
    CostTable table = pcie_table();
    table[nst_algo_nvls][nst_proto_simple] = 1.0f;
    return table;
}

/// What NCCL ends up with after the plugin: cheapest non-ignored entry, and the channel count.
struct Selection {
    int algo = -1;
    int proto = -1;
    int channels = 0;  ///< nMaxChannels as the plugin left it; 0 = NCCL's own
};

inline Selection cheapest(const CostTable& table, int channels) {
    Selection s;
    s.channels = channels;
    float best = -1;
    for (int a = 0; a < nst_algo_count; ++a)
        for (int p = 0; p < nst_proto_count; ++p) {
            float cost = table[a][p];
            if (cost >= 0 && (best < 0 || cost < best)) {
                best = cost;
                s.algo = a;
                s.proto = p;
            }
        }
    return s;
}

/// The loaded plugin library.
class TunerPlugin {
public:
    explicit TunerPlugin(const char* path = NCCLSWEEP_TUNER_PLUGIN_PATH) {
        m_handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (m_handle == nullptr) {
            m_error = dlerror();
            return;
        }
        m_tuner = static_cast<const nst_tuner_v5_t*>(dlsym(m_handle, "ncclTunerPlugin_v5"));
        if (m_tuner == nullptr) m_error = "no symbol ncclTunerPlugin_v5";
    }
    ~TunerPlugin() {
        if (m_handle != nullptr) dlclose(m_handle);
    }
    TunerPlugin(const TunerPlugin&) = delete;
    TunerPlugin& operator=(const TunerPlugin&) = delete;

    [[nodiscard]] const nst_tuner_v5_t* tuner() const { return m_tuner; }
    [[nodiscard]] const std::string& error() const { return m_error; }

private:
    void* m_handle = nullptr;
    const nst_tuner_v5_t* m_tuner = nullptr;
    std::string m_error;
};

/// One communicator's tuner context: init at construction, finalize at destruction.
class TunerComm {
public:
    TunerComm(const nst_tuner_v5_t* tuner, std::size_t ranks, std::size_t nodes) : m_tuner(tuner) {
        nst_nvl_domain_info_v5_t nvl{1, static_cast<int>(ranks), static_cast<int>(ranks)};
        m_init_result = m_tuner->init(&m_context, 0x1234, ranks, nodes, tuner_logger, &nvl, &m_constants);
    }
    ~TunerComm() {
        if (m_init_result == nst_success) m_tuner->finalize(m_context);
    }
    TunerComm(const TunerComm&) = delete;
    TunerComm& operator=(const TunerComm&) = delete;

    [[nodiscard]] nst_result_t init_result() const { return m_init_result; }

    /// getCollInfo as src/enqueue.cc calls it; `table` is updated in place.
    nst_result_t call(nst_func_t func, std::size_t bytes, CostTable& table, int& channels) {
        channels = 0;
        return m_tuner->get_coll_info(m_context, func, bytes, /*numPipeOps=*/1,
                                      reinterpret_cast<float**>(table.data()), nst_algo_count,
                                      nst_proto_count,
                                      /*regBuff=*/0, &channels);
    }

    /// call() on `table`, then NCCL's pick.
    Selection select(nst_func_t func, std::size_t bytes, CostTable table) {
        int channels = 0;
        if (call(func, bytes, table, channels) != nst_success) return {};
        return cheapest(table, channels);
    }

private:
    const nst_tuner_v5_t* m_tuner;
    void* m_context = nullptr;
    nst_tuner_constants_v5_t m_constants{};
    nst_result_t m_init_result = nst_internal_error;
};

}  // namespace ncclsweep::test
