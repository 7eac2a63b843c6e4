// The simulation backend: the same phases, events and failures as the CUDA backend, with times
// from measured collectives (--calibration) or NCCL's α-β model, and a GEMM roofline instead of
// a GPU (docs/engine.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>

#include "engine/run/backend.hpp"
#include "engine/run/server_env.hpp"
#include "engine/run/start_event.hpp"
#include "engine/sim/calibration.hpp"
#include "engine/sim/inject.hpp"
#include "engine/sim/one_shot.hpp"
#include "engine/sim/pass_layout.hpp"
#include "engine/sim/pricing.hpp"
#include "engine/sim/sim_check.hpp"
#include "engine/sim/sim_model.hpp"
#include "engine/stats.hpp"
#include "engine/topo_matrix.hpp"

namespace tpverify {
namespace {

using sim::Choice;
using sim::Func;

constexpr const char* k_modeled_nccl_version = "2.28.3";
constexpr const char* k_invalid_usage = "invalid usage (run with NCCL_DEBUG=WARN for details)";
constexpr const char* k_unhandled_cuda = "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";

Func func_of(const Step& s) {
    return s.collective == CollectiveKind::all_gather ? Func::all_gather : Func::all_reduce;
}
const char* api_of(Func f) {
    return f == Func::all_gather ? "ncclAllGather" : "ncclAllReduce";
}

/// The communicator as the run sees it: remembers first uses (when NCCL prints its TUNING
/// line and, with lazy connection, sets up the algorithm's connections).
class SimComm {
public:
    SimComm(const sim::Comm& comm, const sim::NcclEnv& env, int rank)
        : m_comm(comm), m_env(env), m_rank(rank) {}

    /// Choice for a collective; prints NCCL's TUNING line on first use. `new_connection` is set
    /// when this use is the first of its algorithm/protocol (a lazy connect would happen here).
    Choice use(Func f, std::uint64_t bytes, bool* new_connection = nullptr) {
        auto key = std::make_pair(static_cast<int>(f), bytes);
        if (auto it = m_seen.find(key); it != m_seen.end()) return it->second;
        Choice c = m_comm.choose(f, bytes);
        if (!c.ok) return c;
        m_seen.emplace(key, c);
        const int conn = static_cast<int>(c.algo) * 8 + static_cast<int>(c.proto);
        const bool fresh = m_comm.nranks() > 1 && m_connected.emplace(conn, true).second;
        if (new_connection) *new_connection = fresh;
        if (m_env.info("TUNING"))
            sim::print_nccl_line(m_rank, "INFO",
                                 std::string(sim::func_name(f)) + ": " + std::to_string(bytes) +
                                     " Bytes -> Algo " + sim::algo_upper(c.algo) + " proto " +
                                     sim::proto_name(c.proto) + " channel{Lo..Hi}={0.." +
                                     std::to_string(c.channels - 1) + "}");
        return c;
    }
    [[nodiscard]] const sim::Comm& comm() const { return m_comm; }

private:
    const sim::Comm& m_comm;
    const sim::NcclEnv& m_env;
    int m_rank;
    std::map<std::pair<int, std::uint64_t>, Choice> m_seen;
    std::map<int, bool> m_connected;
};

/// Modeled cost of one pass.
struct PassCost {
    double pass_us = 0;  ///< whole pass
    double comm_us = 0;  ///< its collectives alone (comm-only pass)
    double gemm_us = 0, attention_us = 0, norm_us = 0, ops_us = 0;  ///< the other parts (parts_us)
    int kernels = 0;
    bool ll128 = false;  ///< some NCCL collective ran LL128
};

/// `fusion`: the fused one-shot kernel really runs (requested and possible). `skip`: the pass
/// calls no collective (collectives_skipped(): the server at one rank), only the norms after them.
PassCost cost_pass(const PassPlan& plan, const sim::TopologyModel& topo, const sim::Comm& comm,
                   sim::Pricer& pricer, bool graph, bool fusion, bool skip) {
    const sim::GpuModel& gpu = topo.gpu;
    PassCost c;
    const double launch = graph ? gpu.launch_graph_us : gpu.launch_eager_us;
    auto kernel = [&](double us) {
        c.pass_us += us + launch;
        ++c.kernels;
        return us + launch;
    };
    // The launches the CUDA backend's kernel groups remove (engine/cuda/rank.cu enqueue_fused,
    // TPVERIFY_FUSE's default mla,moe): an MLA layer's q_a..kv_write run as 4 launches instead of
    // 8 (2 GEMM and 2 small-kernel launches fewer), a MoE layer's router and shared gate_up as
    // one; each saves saved_per_launch_us (engine/sim/pass_layout.hpp).
    const double saved_per_launch = sim::saved_per_launch_us(gpu, launch);
    auto is_op = [&](std::size_t i, Op op) {
        return i < plan.steps.size() && plan.steps[i].kind == Step::Kind::op && plan.steps[i].op == op;
    };
    auto skinny = [&](std::size_t i) { return sim::skinny_gemm(plan, i); };
    for (std::size_t i = 0; i < plan.steps.size(); ++i) {
        if (skinny(i) && skinny(i + 1) && is_op(i + 2, Op::q_norm) && is_op(i + 3, Op::kv_norm) &&
            skinny(i + 4) && skinny(i + 5) && is_op(i + 6, Op::rope) && is_op(i + 7, Op::kv_write)) {
            c.gemm_us -= 2 * saved_per_launch, c.ops_us -= 2 * saved_per_launch;
            c.pass_us -= 4 * saved_per_launch, c.kernels -= 4;
        } else if (const std::size_t block = gpu.table_native ? sim::moe_block_steps(plan, i) : 0;
                   block > 0) {
            // The full pass runs the MoE block on two streams (engine/cuda/rank.cu
            // enqueue_moe_streams, TPVERIFY_MOE_STREAMS unset or 2), without the router + shared
            // gate_up group: the pass saves the overlap (moe_streams_saving_us) and launches
            // every step. The parts are measured one kind at a time on one stream, where the
            // group still runs: gemm_us keeps its launch fewer, and nothing of the overlap.
            // Only where the overlap was measured (the kernel table's GPU); elsewhere the block
            // is priced as one stream with the group, below, as the incident's calibration
            // (experiments/incident-pcie.calibration) was derived.
            c.gemm_us -= saved_per_launch;
            c.pass_us -= sim::moe_streams_saving_us(plan, i, gpu, launch);
            i += block - 1;
        } else if (skinny(i) && is_op(i + 1, Op::topk) && skinny(i + 2)) {
            c.gemm_us -= saved_per_launch, c.pass_us -= saved_per_launch, c.kernels -= 1;
        }
    }
    for (const Step& s : plan.steps) {
        switch (s.kind) {
            case Step::Kind::gemm:
                c.gemm_us += kernel(sim::kernel_us(s, gpu));
                break;
            case Step::Kind::experts:
                // As the CUDA backend launches them (engine/cuda/experts.cu): up to
                // k_stream_max_batch experts and k_stream_rows_per_launch rows of x per launch.
                for (const ExpertLaunch& l : expert_launches(s.experts))
                    for (int r0 = 0; r0 < l.max_rows; r0 += k_stream_rows_per_launch)
                        c.gemm_us += kernel(gpu.gemm_launch_us(
                            s.experts.int4, std::min(k_stream_rows_per_launch, l.max_rows - r0), s.experts.n,
                            s.experts.k, l.count));
                break;
            case Step::Kind::attention:
                c.attention_us += kernel(gpu.attention_us(s.attention));
                break;
            case Step::Kind::op:
                c.ops_us += kernel(sim::kernel_us(s, gpu));
                break;
            case Step::Kind::norm:
                c.norm_us += kernel(gpu.norm_us(s.bytes));
                break;
            case Step::Kind::collective:
                if (skip) {
                    if (s.fused_norm) c.norm_us += kernel(gpu.norm_us(s.bytes));
                } else if (fusion && s.fused_norm) {  // one kernel: all-reduce + residual + RMSNorm
                    const sim::OneShotPrice one_shot = sim::one_shot_price(topo, comm, s.bytes);
                    const double us = pricer.fused(one_shot.us, one_shot.measured, one_shot.source).us;
                    c.comm_us += kernel(us + gpu.norm_us(s.bytes));
                } else {
                    const Choice ch = comm.choose(func_of(s), s.bytes);
                    c.ll128 = c.ll128 || (comm.nranks() > 1 && ch.proto == sim::Proto::ll128);
                    c.comm_us += kernel(pricer.collective(func_of(s), s.bytes, ch).us);
                    if (s.fused_norm) c.norm_us += kernel(gpu.norm_us(s.bytes));
                }
                break;
        }
    }
    return c;
}

/// FNV-1a: the experiment's fingerprint for the noise seed.
std::uint32_t fnv1a(const std::string& text) {
    std::uint32_t h = 2166136261u;
    for (unsigned char ch : text) {
        h ^= ch;
        h *= 16777619u;
    }
    return h;
}

/// What makes one experiment differ from another: its NCCL setting and the flags that change
/// the pass. Two experiments of one sweep draw different noise; repeats of one differ by repeat.
std::string experiment_fingerprint(const Options& o, const std::string& setting) {
    return setting + "|" + o.model + "|" + std::to_string(o.tp) + "|" + std::to_string(o.tokens) + "|" +
           std::to_string(o.fusion) + std::to_string(o.graph) + "|" +
           std::to_string(static_cast<int>(o.topology)) + "|" +
           std::to_string(static_cast<int>(o.capture_mode)) + "|" + o.calibration;
}

JsonLine start_fields(const Options& o, const PassPlan& plan, const sim::TopologyModel& topo, double noise,
                      const std::string& backend_fallback, const std::string& fusion_fallback) {
    StartFacts facts;
    const PassPlan draft = build_draft_pass(plan.model, plan.tp, o.draft_steps, pass_shape(o, plan.model));
    facts.draft_all_reduces = draft.all_reduce_count();
    facts.draft_all_gathers = draft.all_gather_count();
    // What the CUDA backend would run with (the sim models no NVLS or cuMem, and sets nothing).
    const std::vector<EnvSetting> env = process_server_environment(o.server, false);
    facts.nccl_env = env_json(env);
    facts.nccl_env_from_caller = caller_names_json(env);
    facts.backend = "sim";
    facts.nccl_version = std::string(k_modeled_nccl_version) + " (modeled by sim)";
    facts.process_model = o.process_model;
    facts.tp = plan.tp;
    facts.draft_steps = o.draft_steps;
    facts.fusion_fallback = fusion_fallback;
    JsonLine f = start_event_fields(o, plan, facts);
    f.add("topology", topo.name).add("gpu", topo.gpu.name).add("noise", noise);
    sim::GpuModel priced = topo.gpu;
    sim::attach_kernel_table(priced);
    f.add("gpu_prices", priced.price_source());
    if (const std::string assumption = priced.price_assumption(); !assumption.empty())
        f.add("gpu_price_assumption", assumption);
    if (!backend_fallback.empty()) f.add("backend_fallback", backend_fallback);
    if (!o.calibration.empty()) f.add("calibration", o.calibration);
    if (o.seed) f.add("seed", static_cast<std::int64_t>(*o.seed));
    if (o.repeat > 0) f.add("repeat", static_cast<std::int64_t>(o.repeat));
    return f;
}

/// Reports NCCL's "no algorithm" failure the way NCCL and tpverify show it.
void report_no_algo(const SimComm& comm, const sim::NcclEnv& env, int rank, Func f, const char* phase,
                    Reporter& reporter) {
    if (env.debug_level >= 2) sim::print_nccl_line(rank, "WARN", comm.comm().no_algo_warning(f));
    reporter.error(phase, api_of(f), k_invalid_usage);
}

}  // namespace

int run_sim(const Options& options, const PassPlan& plan, Reporter& reporter,
            const std::string& backend_fallback) {
    const int fail = static_cast<int>(Exit::failure);
    sim::NcclEnv env;
    std::string warn;
    const bool env_ok = sim::parse_nccl_env([](const char* name) { return std::getenv(name); }, env, warn);
    const int rank = options.rank >= 0 ? options.rank : 0;
    sim::TopologyModel topo = sim::topology_model(options.topology);
    if (!options.topology_file.empty()) {
        TopoMatrix matrix;
        std::string error;
        if (!load_topo_matrix(options.topology_file, matrix, error)) {
            std::fprintf(stderr, "tpverify: --topology-file: %s\n", error.c_str());
            return static_cast<int>(Exit::usage);
        }
        if (matrix.gpus() < plan.tp) {
            std::fprintf(stderr,
                         "tpverify: --topology-file: %s: the matrix has %d GPUs and --tp %d needs %d\n",
                         options.topology_file.c_str(), matrix.gpus(), plan.tp, plan.tp);
            return static_cast<int>(Exit::usage);
        }
        topo = sim::with_matrix(topo, matrix);
    }
    // GEMMs, attention and the small kernels priced from the measured kernel table where this
    // is the GPU it was measured on (engine/sim/gpu_price.cpp).
    sim::attach_kernel_table(topo.gpu);
    const double noise = options.noise > 0 ? options.noise : (options.seed ? 0.02 : 0.0);
    const Injector injector(options.inject, options.timeout_s, env.debug_level >= 2, rank);
    const std::string setting = sim::setting_key(sim::nccl_environment());

    sim::Calibration calibration;
    if (!options.calibration.empty()) {
        std::string error;
        if (!sim::load_calibration(options.calibration, calibration, error)) {
            std::fprintf(stderr, "tpverify: --calibration: %s\n", error.c_str());
            return static_cast<int>(Exit::usage);
        }
    }
    std::string fusion_fallback;
    const bool fused = options.fusion && sim::fusion_possible(topo, env, plan.tp, fusion_fallback);
    const bool skip = collectives_skipped(options);  // as the CUDA backend: no collective at one rank
    if (!options.fusion) fusion_fallback.clear();

    reporter.event("start", start_fields(options, plan, topo, noise, backend_fallback, fusion_fallback));
    if (!fusion_fallback.empty())
        std::fprintf(stderr,
                     "tpverify: fusion: the one-shot all-reduce cannot run here (%s); falling back to NCCL "
                     "all-reduce + a separate residual+RMSNorm kernel\n",
                     fusion_fallback.c_str());

    // init: NCCL reads its environment and builds the communicator.
    if (env.debug_level >= 1)
        sim::print_nccl_line(
            rank, "INFO",
            std::string("NCCL version ") + k_modeled_nccl_version + "+sim (modeled by tpverify)");
    if (env.info("ENV"))
        for (const std::string& line : env.env_lines) sim::print_nccl_line(rank, "INFO", line);
    if (!env_ok) {
        if (env.debug_level >= 2) sim::print_nccl_line(rank, "WARN", warn);
        reporter.error("init", "ncclCommInitRank", k_invalid_usage);
        return fail;
    }
    if (auto rc = injector.at_phase(Phase::init, reporter)) return *rc;
    const sim::Comm base_comm(topo, env, plan.tp);
    SimComm comm(base_comm, env, rank);
    if (env.info("INIT")) {
        const std::vector<int>& ring = base_comm.graph().order;
        const auto at = std::find(ring.begin(), ring.end(), rank);
        const int next = at == ring.end() ? (rank + 1) % plan.tp
                                          : ring[(std::size_t(at - ring.begin()) + 1) % ring.size()];
        for (int ch = 0; ch < base_comm.channels() && plan.tp > 1; ++ch)
            sim::print_nccl_line(rank, "INFO",
                                 "Channel " + std::string(ch < 10 ? "0" : "") + std::to_string(ch) +
                                     "/0 : " + std::to_string(rank) + "[" + std::to_string(rank) + "] -> " +
                                     std::to_string(next) + "[" + std::to_string(next) + "] via " +
                                     sim::transport_name(base_comm.transport()));
        sim::print_nccl_line(rank, "INFO",
                             "comm rank " + std::to_string(rank) + " nRanks " + std::to_string(plan.tp) +
                                 " nNodes 1 localRanks " + std::to_string(plan.tp) + " - Init COMPLETE");
    }

    // warmup: every collective and size once, eagerly, so NCCL connects outside any capture.
    const bool eager_warmup = options.graph ? options.warmup_before_capture : options.warmup > 0;
    if (auto rc = injector.at_phase(Phase::warmup, reporter)) return *rc;
    if (eager_warmup) {
        for (const Step& s : plan.steps) {
            if (s.kind != Step::Kind::collective || skip || (fused && s.fused_norm)) continue;
            if (!comm.use(func_of(s), s.bytes).ok) {
                report_no_algo(comm, env, rank, func_of(s), "warmup", reporter);
                return fail;
            }
        }
    }

    // Prices: the calibration where it measured NCCL's effective choice, relative to a measured
    // reference where it did not, NCCL's estimate where nothing was measured (pricing.hpp).
    sim::NcclEnv no_env;
    sim::parse_nccl_env([](const char*) -> const char* { return nullptr; }, no_env, warn);
    const sim::Comm defaults_comm(topo, no_env, plan.tp);
    std::optional<sim::CalibrationIndex> index;
    if (!options.calibration.empty()) index.emplace(calibration, topo, setting, plan.tp);
    const sim::CalibrationIndex* measured = index ? &*index : nullptr;
    sim::Pricer pricer(base_comm, defaults_comm, measured);
    PassCost cost = cost_pass(plan, topo, base_comm, pricer, options.graph, fused, skip);
    double capture_s = 0;
    if (options.graph) {
        reporter.event("capture", JsonLine().add("phase", "begin"));
        if (auto rc = injector.at_phase(Phase::capture, reporter)) return *rc;
        for (const Step& s : plan.steps) {  // first uses inside the capture (no eager warm-up)
            if (s.kind != Step::Kind::collective || skip || (fused && s.fused_norm)) continue;
            bool new_connection = false;
            const Choice c = comm.use(func_of(s), s.bytes, &new_connection);
            const bool lazy_alloc_in_global_capture =
                c.ok && new_connection && env.runtime_connect && options.capture_mode == CaptureMode::global;
            if (!c.ok || lazy_alloc_in_global_capture) {
                if (!c.ok) {
                    report_no_algo(comm, env, rank, func_of(s), "capture", reporter);
                } else {
                    if (env.debug_level >= 2)
                        sim::print_nccl_line(
                            rank, "WARN", "Cuda failure 'operation not permitted when stream is capturing'");
                    reporter.error("capture", api_of(func_of(s)), k_unhandled_cuda);
                }
                reporter.error("capture", "cudaStreamEndCapture",
                               "operation failed due to a previous error during capture "
                               "(cudaErrorStreamCaptureInvalidated)");
                return fail;
            }
        }
        capture_s = 0.005 + cost.kernels * 25e-6;  // estimate: ~25 µs per captured kernel
        reporter.event("capture", JsonLine().add("phase", "end").add("seconds", capture_s));
    }
    reporter.event("ready", JsonLine());

    // replay: measure.
    if (auto rc = injector.at_phase(Phase::replay, reporter)) return *rc;
    for (const Step& s : plan.steps) {  // eager runs without warm-up meet their collectives here
        if (s.kind != Step::Kind::collective || skip || (fused && s.fused_norm)) continue;
        if (!comm.use(func_of(s), s.bytes).ok) {
            report_no_algo(comm, env, rank, func_of(s), "replay", reporter);
            return fail;
        }
    }
    // Noise like a machine's (docs/engine.md): one offset for the whole run (what differs
    // between two runs of one experiment) and jitter per sample with rare stragglers, drawn from
    // a generator seeded by --seed, the experiment's fingerprint and the repeat.
    const unsigned seed =
        options.seed
            ? noise_seed(*options.seed ^ fnv1a(experiment_fingerprint(options, setting)), options.repeat)
            : std::random_device{}();
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    const double run_offset = noise > 0 ? 1.0 + noise * std::clamp(normal(rng), -3.0, 3.0) : 1.0;
    StopRule stop(options);
    std::vector<double> samples;
    double elapsed_s = 0;
    while (!stop.done(samples, elapsed_s)) {
        double factor = run_offset;
        if (noise > 0) {
            factor *= std::max(0.5, 1.0 + 0.5 * noise * normal(rng));
            if (uniform(rng) < 0.03) factor += noise * 4.0 * std::fabs(normal(rng));  // occasional straggler
        }
        samples.push_back(cost.pass_us * factor);
        elapsed_s += samples.back() * 1e-6;
    }

    RunResult r;
    if (options.check) {
        const bool corrupt = cost.ll128 && base_comm.ll128_unsafe();
        // --inject stale: the collective hands back the previous call's data. The check's inputs
        // change with every call (as on CUDA), so every element of the result is stale.
        const bool stale = std::any_of(options.inject.begin(), options.inject.end(),
                                       [](const Injection& f) { return f.kind == "stale"; });
        const sim::CheckOutcome chk =
            sim::host_check(plan.tp, plan.tokens, plan.model.hidden, plan.model.rms_eps, fused && plan.tp > 1,
                            stale     ? 1.0
                            : corrupt ? 0.002
                                      : 0.0,
                            options.seed.value_or(1234));
        r.check_wrong = chk.wrong;
        if (chk.wrong > 0) {
            reporter.error("replay", "ncclAllReduce",
                           "result check: " + std::to_string(chk.wrong) + " of " +
                               std::to_string(chk.elements) + " elements differ from the host reference (" +
                               (stale ? "the collective returned the previous call's data"
                                      : "LL128 on a path NCCL does not enable it for by default") +
                               "); this configuration corrupts data");
            return fail;
        }
    }
    const PassShape shape = pass_shape(options, plan.model);
    const PassPlan one = build_pass(plan.model, plan.tp, 1, shape);
    sim::Pricer baseline_pricer(base_comm, defaults_comm, measured);
    const PassCost baseline = cost_pass(one, topo, base_comm, baseline_pricer, options.graph, fused, skip);
    const PassPlan draft_plan = build_draft_pass(plan.model, plan.tp, options.draft_steps, shape);
    sim::Pricer draft_pricer(base_comm, defaults_comm, measured);
    const double draft_us =
        options.draft_steps > 0
            ? cost_pass(draft_plan, topo, base_comm, draft_pricer, options.graph, fused, skip).pass_us
            : options.draft_us;
    const PassCost comm_only = cost;
    r.verify = summarize(samples);
    r.baseline_pass_us = baseline.pass_us;
    r.tok_s = options.accept_len / (r.verify.p50_us + draft_us) * 1e6;
    r.baseline_tok_s = 1e6 / baseline.pass_us;
    r.init_s = 0.25 + 0.05 * plan.tp + static_cast<double>(plan.weight_bytes()) / 200e9;  // estimate
    r.capture_s = capture_s;
    r.comm_pass_us = comm_only.comm_us;
    r.collective_us = plan.collective_count() > 0 ? comm_only.comm_us / plan.collective_count() : 0;

    JsonLine parts;
    parts.add("gemm", cost.gemm_us)
        .add("attention", cost.attention_us)
        .add("comm", cost.comm_us)
        .add("norm", cost.norm_us)
        .add("ops", cost.ops_us)
        .add("draft", draft_us);
    JsonLine extra;
    extra.add("backend", "sim").add_raw("parts_us", parts.str());
    for (auto [f, bytes] : {std::make_pair(Func::all_reduce, plan.all_reduce_bytes()),
                            std::make_pair(Func::all_gather, plan.all_gather_bytes())}) {
        const Choice c = base_comm.choose(f, bytes);
        const std::string p = f == Func::all_reduce ? "all_reduce_" : "all_gather_";
        extra.add(p + "algo", plan.tp > 1 ? sim::algo_upper(c.algo) : "LOCAL")
            .add(p + "proto", plan.tp > 1 ? sim::proto_name(c.proto) : "COPY")
            .add(p + "channels", c.channels);
    }
    extra.add("transport", plan.tp > 1 ? sim::transport_name(base_comm.transport()) : "none");
    extra.add("fused", fused);
    // What the prices rest on (the verify pass, and the draft pass when it is timed: both make
    // tok/s), and the fused kernel's price per call when it ran.
    const sim::PriceSource source =
        options.draft_steps > 0 ? std::max(pricer.source(), draft_pricer.source()) : pricer.source();
    extra.add("collective_times", sim::price_source_name(source));
    if (!options.calibration.empty())
        extra.add("calibrated_collectives", pricer.calibrated)
            .add("relative_collectives", pricer.relative)
            .add("modelled_collectives", pricer.modelled);
    std::string note = pricer.notes();
    if (options.calibration.empty())
        note =
            "no --calibration: collective times are NCCL 2.28's own tuning estimate for this topology, not "
            "measurements" +
            std::string(note.empty() ? "" : "; " + note);
    if (!note.empty()) extra.add("calibration_note", note);
    if (pricer.fused_calls > 0) {
        const sim::OneShotPrice one_shot = sim::one_shot_price(topo, base_comm, plan.all_reduce_bytes());
        extra.add("fused_us", pricer.fused_us_sum / pricer.fused_calls)
            .add("fused_price", one_shot.measured ? "measured" : "estimate")
            .add("fused_source", one_shot.source);
    }
    if (options.target_rsd) extra.add("stopped_by", stop.hit_time_cap() ? "max-seconds" : "target-rsd");
    reporter.result(r, extra);
    return static_cast<int>(Exit::ok);
}

}  // namespace tpverify
