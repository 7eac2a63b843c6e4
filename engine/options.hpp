#pragma once
// tpverify's command-line options (parsed by engine/options.cpp; no third-party deps).
#include <optional>
#include <string>
#include <vector>

namespace tpverify {

enum class BackendKind { automatic, cuda, sim };
enum class CaptureMode { thread_local_mode, global, relaxed };
enum class Topology { pcie_gen4, pcie_gen5, nvlink };

/// A fault to inject (sim backend; `--inject KIND[@PHASE][:SECONDS]`).
struct Injection {
    std::string kind;     ///< capture-fail, nccl-error, cuda-oom, hang, segv, exit
    std::string phase;    ///< init, warmup, capture, replay ("" = the kind's natural phase)
    double seconds = 0;   ///< delay before the fault (hang: how long; 0 = forever)
};

/// Everything tpverify can be told.
struct Options {
    // model
    std::string model = "kimi-k2.5";
    std::optional<int> layers, hidden, heads, experts, active_experts, moe_intermediate,
        dense_intermediate, dense_layers, vocab;
    // parallelism and workload
    int tp = 1;                 ///< ranks (one GPU each)
    int tokens = 4;             ///< tokens per verify pass (batch x draft tokens)
    int rank = -1;              ///< >= 0: one process per rank (NCCL_COMM_ID rendezvous)
    int nranks = 0;
    bool graph = true;
    CaptureMode capture_mode = CaptureMode::thread_local_mode;
    bool warmup_before_capture = true;
    bool fusion = false;
    bool check = false;
    // measurement
    int warmup = 5;
    int iters = 50;
    std::optional<double> target_rsd;  ///< stop when relative spread of the median < this
    double max_seconds = 20;           ///< time cap for --target-rsd
    double accept_len = 3.2;
    double draft_us = 2000;
    double timeout_s = 60;             ///< a hung collective ends with an error after this
    // backend
    BackendKind backend = BackendKind::automatic;
    Topology topology = Topology::pcie_gen5;
    std::optional<unsigned> seed;      ///< sim: seeded noise (none = deterministic)
    double noise = 0.0;                ///< sim: relative noise (e.g. 0.02)
    std::vector<Injection> inject;
    // output
    bool json = false;
};

/// Parses argv; on error returns a message (and `help` set when --help was asked).
struct ParseOutcome {
    Options options;
    std::string error;   ///< non-empty: bad usage (exit 2)
    bool help = false;   ///< --help was given: print usage() and exit 0
};
ParseOutcome parse_options(int argc, const char* const* argv);
/// The --help text.
std::string usage();

}  // namespace tpverify
