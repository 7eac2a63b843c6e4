#pragma once
// tpverify's command-line options (parsed by engine/options.cpp; no third-party deps).
#include <optional>
#include <string>
#include <vector>

namespace tpverify {

enum class BackendKind { automatic, cuda, sim };
enum class CaptureMode { thread_local_mode, global, relaxed };
enum class Topology { pcie_gen4, pcie_gen5, nvlink };
/// How the CUDA backend runs its ranks: one process per rank (as servers do; the default)
/// or one thread per rank in this process.
enum class ProcessModel { processes, threads };
/// How routed experts are stored: bf16, or INT4 group-quantized (the released Kimi-K2.5
/// checkpoint's format) run by a W4A16 GEMM.
enum class ExpertFormat { bf16, int4 };

/// Which server's process setup the CUDA backend reproduces: SGLang's NCCL environment and its
/// CUDA-graph capture (global mode, after two eager runs and a barrier), or bare NCCL.
enum class Server { sglang, none };

/// A fault to inject (sim backend; `--inject KIND[@PHASE][:SECONDS]`).
struct Injection {
    std::string kind;    ///< capture-fail, nccl-error, cuda-oom, hang, segv, exit, stale
    std::string phase;   ///< init, warmup, capture, replay ("" = the kind's natural phase)
    double seconds = 0;  ///< delay before the fault (hang: how long; 0 = forever)
};

/// Everything tpverify can be told.
struct Options {
    // model
    std::string model = "kimi-k2.5";
    std::optional<int> layers, hidden, heads, experts, active_experts, moe_intermediate, dense_intermediate,
        dense_layers, vocab;
    // parallelism and workload
    int tp = 1;      ///< ranks (one GPU each)
    int tokens = 4;  ///< tokens per verify pass (batch x draft tokens)
    int rank = -1;   ///< >= 0: one process per rank (NCCL_COMM_ID rendezvous)
    int nranks = 0;
    ProcessModel process_model = ProcessModel::processes;
    int context = 4096;   ///< KV-cache tokens the attention reads
    int draft_steps = 3;  ///< EAGLE-3 draft steps run per cycle (0: use --draft-us)
    /// Routed experts' format; unset: the model's own (INT4 for kimi-k2.5, as its checkpoint
    /// ships them, where the shapes allow it; bf16 otherwise). engine/model: pass_shape().
    std::optional<ExpertFormat> expert_format;
    Server server = Server::sglang;
    bool graph = true;
    /// The capture mode: --capture-mode, else the server's (sglang: global; none: thread-local).
    CaptureMode capture_mode = CaptureMode::global;
    bool capture_mode_given = false;
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
    double timeout_s = 60;  ///< a hung collective ends with an error after this
    // backend
    BackendKind backend = BackendKind::automatic;
    Topology topology = Topology::pcie_gen5;
    std::string topology_file;  ///< sim: `nvidia-smi topo -m` output (per-pair paths; engine/topo_matrix.hpp)
    std::optional<unsigned> seed;  ///< sim: seeded noise (none = deterministic)
    unsigned repeat = 0;           ///< from $NCCLSWEEP_REPEAT (see repeat_index)
    double noise = 0.0;            ///< sim: relative noise (e.g. 0.02)
    std::string calibration;       ///< sim: measured collective times (engine/sim/calibration.hpp)
    std::vector<Injection> inject;
    /// Flags given that only the sim backend uses (--topology, --topology-file, --noise,
    /// --calibration, and --inject of any kind but stale), in order.
    std::vector<std::string> sim_only_flags;
    // output
    bool json = false;
    /// --measure-collectives: instead of the pass, time NCCL all-reduce and all-gather at the
    /// pass's sizes and 1 KiB..1 MiB and print a calibration file (engine/cuda/measure.cu).
    /// Not an experiment parameter: --describe does not list it.
    bool measure_collectives = false;
    /// --measure-kernels: instead of the pass, time every distinct kernel of it on this GPU and
    /// print the sim's kernel table (engine/cuda/measure_kernels.cu). Not an experiment parameter.
    bool measure_kernels = false;
    /// The command line as given (written into measured files).
    std::string command_line;
};

/// Parses argv; on error returns a message (and `help` set when --help was asked).
struct ParseOutcome {
    Options options;
    std::string error;  ///< non-empty: bad usage (exit 2)
    bool help = false;  ///< --help was given: print usage() and exit 0
};
ParseOutcome parse_options(int argc, const char* const* argv);

/// The repeat index from $NCCLSWEEP_REPEAT, which ncclsweep sets for each repeat of an
/// experiment (0, 1, ...); 0 when unset or not a number. The sim mixes it into --seed.
unsigned repeat_index(const char* env_value);

/// The seed of the sim's noise generator: --seed for repeat 0 (so a run on its own is what it
/// always was), a different but fixed seed for each further repeat, so the repeats of one
/// experiment differ as real runs do while a rerun of the sweep reproduces every number.
unsigned noise_seed(unsigned seed, unsigned repeat);
/// The start event's `process_model`: "process-per-rank" or "threads".
const char* process_model_name(ProcessModel model);
/// "sglang" or "none".
const char* server_name(Server server);
/// The --help text.
std::string usage();

}  // namespace tpverify
