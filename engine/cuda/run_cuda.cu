// run_cuda: ranks as threads (or one rank per process), a watchdog for hangs, and the report.
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "engine/cuda/worker.cuh"
#include "engine/run/backend.hpp"
#include "engine/run/cuda_module.hpp"
#include "engine/run/server_env.hpp"
#include "engine/run/start_event.hpp"
#include "engine/stats.hpp"

namespace tpverify {

namespace {

using cuda::now_s;

std::string nccl_version_text() {
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
    return std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." + std::to_string(v % 100);
}

// The file of the NCCL library this process runs (its ncclGetVersion), "" when unknown.
std::string libnccl_path() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info) == 0 || info.dli_fname == nullptr) return {};
    return info.dli_fname;
}

int fail(Reporter& reporter, const cuda::Status& st) {
    reporter.error(st.phase, st.api, st.what);
    return static_cast<int>(Exit::failure);
}

// Ends the process after a failure or a hang: abort every communicator (bounded wait).
[[noreturn]] void abort_and_exit(cuda::SharedRun& run) {
    std::thread aborter([&run] {
        for (auto& slot : run.slots)
            if (cuda::RankComm* c = slot->comm.load()) c->abort();
    });
    aborter.detach();
    double until = now_s() + 5;
    while (now_s() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::fflush(nullptr);
    std::_Exit(static_cast<int>(Exit::failure));
}

// Waits for the rank threads; reports the first failure, an NCCL async error or a hang.
void watch(cuda::SharedRun& run, std::vector<std::thread>& threads) {
    const double timeout = run.options->timeout_s;
    for (;;) {
        bool all_done = true;
        for (auto& slot : run.slots) {
            if (slot->failed.load()) {
                run.reporter->error(slot->status.phase, slot->status.api, slot->status.what);
                abort_and_exit(run);
            }
            if (slot->done.load()) continue;
            all_done = false;
            if (cuda::RankComm* c = slot->comm.load()) {
                ncclResult_t async = ncclSuccess;
                if (c->comm() != nullptr && ncclCommGetAsyncError(c->comm(), &async) == ncclSuccess &&
                    async != ncclSuccess && async != ncclInProgress) {
                    run.reporter->error(slot->phase.load(), "ncclCommGetAsyncError",
                                        ncclGetErrorString(async));
                    abort_and_exit(run);
                }
            }
            double idle = now_s() - slot->stamp.load();
            if (timeout > 0 && idle > timeout) {
                char what[200];
                std::snprintf(what, sizeof what,
                              "no progress for %.0f s (a collective or kernel hung, or a rank never joined); "
                              "communicators aborted (raise --timeout if this step is legitimately slow)",
                              idle);
                run.reporter->error(slot->phase.load(), "watchdog", what);
                abort_and_exit(run);
            }
        }
        if (all_done) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (auto& t : threads) t.join();
}

double median(const std::vector<double>& v) {
    return v.empty() ? 0.0 : percentile(v, 0.5);
}

JsonLine start_fields(const cuda::SharedRun& run, const PassPlan& plan) {
    const Options& o = *run.options;
    std::string devices = "[";
    for (std::size_t i = 0; i < run.devices.size(); ++i) {
        cudaDeviceProp prop{};
        cudaGetDeviceProperties(&prop, run.devices[i]);
        devices += (i ? "," : "") + json_quote(prop.name);
    }
    devices += "]";
    StartFacts facts;
    facts.backend = "cuda";
    facts.nccl_version = nccl_version_text();
    facts.process_model = run.in_process ? ProcessModel::threads : ProcessModel::processes;
    facts.tp = run.nranks;
    facts.draft_steps = run.draft != nullptr ? o.draft_steps : 0;
    facts.draft_all_reduces = run.draft != nullptr ? run.draft->all_reduce_count() : 0;
    facts.draft_all_gathers = run.draft != nullptr ? run.draft->all_gather_count() : 0;
    facts.fusion_fallback = run.fusion_fallback;
    const std::vector<EnvSetting> env = process_server_environment(o.server, false);
    facts.nccl_env = env_json(env);
    facts.nccl_env_from_caller = caller_names_json(env);
    facts.libnccl = libnccl_path();
    JsonLine f = start_event_fields(o, plan, facts);
    const cuda::KernelFusion& fusion = cuda::kernel_fusion();
    f.add_raw("devices", devices)
        .add("gemm", cuda::gemm_path_name(run.gemm))
        .add("kernel_fusion", cuda::kernel_fusion_name(fusion))
        .add("moe_streams", cuda::moe_streams_name(cuda::moe_streams()))
        .add("omitted", cuda::omitted_name(cuda::omitted_steps()))
        .add("draft_weight_bytes",
             static_cast<std::int64_t>(run.draft != nullptr ? run.draft->weight_bytes() : 0));
    return f;
}

int report(cuda::SharedRun& run, const PassPlan& plan) {
    // Rank 0's figures (global rank 0 is local 0 in thread mode; in --rank mode, this process).
    const cuda::RankSlot& s = *run.slots.front();
    const Options& o = *run.options;
    long long wrong = 0, mismatch = 0;
    std::string detail;
    for (auto& slot : run.slots) {
        wrong += slot->check.wrong;
        mismatch += slot->check.fused_mismatch;
        if (detail.empty()) detail = slot->check.detail;
    }
    if (s.check_failed_somewhere || wrong + mismatch > 0) {
        run.reporter->error("check", "ncclAllReduce",
                            (detail.empty() ? std::string("another rank saw wrong results") : detail) +
                                "; this configuration corrupts data");
        return static_cast<int>(Exit::failure);
    }
    if (o.rank > 0) return static_cast<int>(Exit::ok);  // rank 0's process reports
    RunResult r;
    r.verify = summarize(s.verify_us);
    r.baseline_pass_us = median(s.baseline_us);
    r.baseline_tok_s = r.baseline_pass_us > 0 ? 1e6 / r.baseline_pass_us : 0;
    const double draft_us = run.draft != nullptr ? median(s.draft_us) : o.draft_us;
    r.tok_s = o.accept_len / ((r.verify.p50_us + draft_us) * 1e-6);
    r.init_s = s.init_s;
    r.capture_s = s.capture_s;
    r.comm_pass_us = median(s.comm_us);
    r.collective_us = plan.collective_count() > 0 ? r.comm_pass_us / plan.collective_count() : 0;
    r.check_wrong = o.check ? wrong : -1;
    double roofline_us = s.copy_gbps > 0 ? double(s.weight_bytes) / (s.copy_gbps * 1e3) : 0;
    double norm_pass = median(s.norm_us);
    auto norm_steps = std::count_if(plan.steps.begin(), plan.steps.end(), [](const Step& st) {
        return st.kind == Step::Kind::collective && st.fused_norm;
    });
    JsonLine parts;
    parts.add("gemm", median(s.gemm_us))
        .add("attention", median(s.attention_us))
        .add("comm", r.comm_pass_us)
        .add("norm", median(s.norm_kernels_us))
        .add("ops", median(s.ops_us))
        .add("draft", draft_us);
    JsonLine extra;
    extra.add_raw("parts_us", parts.str());
    // Bytes the pass reads from device memory: weights + KV caches (activations are noise).
    const double read_bytes = double(s.weight_bytes) + double(plan.attention_bytes());
    extra.add("read_bytes", read_bytes)
        .add("read_roofline_us", s.copy_gbps > 0 ? read_bytes / (s.copy_gbps * 1e3) : 0.0)
        .add("weight_arena_bytes", static_cast<std::int64_t>(s.weight_arena_bytes));
    if (!s.fallback_reason.empty() && o.fusion) extra.add("fusion_fallback", s.fallback_reason);
    extra.add("copy_gbps", s.copy_gbps)
        .add("weight_bytes", static_cast<std::int64_t>(s.weight_bytes))
        .add("roofline_us", roofline_us)
        .add("roofline_ratio", roofline_us > 0 ? r.verify.p50_us / roofline_us : 0.0)
        .add("reduce_norm_us", norm_steps > 0 ? norm_pass / double(norm_steps) : 0.0)
        .add("fused", o.fusion && !s.fused_fallback)
        .add("gemm", cuda::gemm_path_name(run.gemm))
        .add("to_result_s", now_s() - run.t_start);
    if (o.check)
        extra.add("check_elements", static_cast<std::int64_t>(s.check.checked))
            .add("check_replays", s.check_replays)
            .add("check_graph_replays", s.check.graph_replays)
            .add("check_gemm_outputs", static_cast<std::int64_t>(s.check.gemm_checked))
            .add("check_gemm_max_err", s.check.gemm_max_rel_err)
            .add("check_attention_outputs", static_cast<std::int64_t>(s.check.attention_checked))
            .add("check_attention_max_err", s.check.attention_max_rel_err)
            .add("check_moe_stream_outputs", static_cast<std::int64_t>(s.check.moe_streams_checked))
            .add("fused_max_err", s.check.fused_max_err);
    run.reporter->result(r, std::move(extra));
    return static_cast<int>(Exit::ok);
}

}  // namespace

namespace cuda {
int measure_kernels(const Options& options, const PassPlan& plan, Reporter& reporter,
                    const std::string& command);
}

static int run_backend(const Options& options, const PassPlan& plan, Reporter& reporter) {
    if (options.measure_kernels) return cuda::measure_kernels(options, plan, reporter, options.command_line);
    cuda::SharedRun run;
    run.t_start = now_s();
    run.options = &options;
    run.plan = &plan;
    run.reporter = &reporter;
    bool gemm_ok = true;
    run.gemm = cuda::gemm_path_from_env(gemm_ok);
    if (!gemm_ok) {
        reporter.error("init", "TPVERIFY_GEMM", "unknown value (use auto, cublas or skinny)");
        return static_cast<int>(Exit::usage);
    }
    const cuda::Omit& omit = cuda::omitted_steps();
    if (!omit.unknown.empty()) {
        reporter.error("init", "TPVERIFY_OMIT",
                       "unknown step '" + omit.unknown + "' (use attention, mla_ops, silu, expert_sum)");
        return static_cast<int>(Exit::usage);
    }
    if (omit.any() && options.check) {
        reporter.error("init", "TPVERIFY_OMIT",
                       "leaves " + cuda::omitted_name(omit) +
                           " out of the pass, so its outputs are not the model's: it is for measuring only, "
                           "not with --check");
        return static_cast<int>(Exit::usage);
    }
    if (omit.any() && options.rank <= 0)
        std::fprintf(stderr,
                     "tpverify: TPVERIFY_OMIT=%s: the passes leave these steps out (measuring only)\n",
                     cuda::omitted_name(omit).c_str());
    int count = 0;
    if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess)
        return fail(reporter, cuda::Status::fail("init", "cudaGetDeviceCount", cudaGetErrorString(e)));
    const int rank = options.rank >= 0 ? options.rank : 0;
    bool launched = false;
    if (cuda::Status st = cuda::make_unique_id(rank, run.id, launched); !st.ok) return fail(reporter, st);
    if (options.rank >= 0) {
        // One process per rank: started by tpverify (pipes), or by another launcher with
        // NCCL_COMM_ID as the rendezvous.
        if (!launched && std::getenv("NCCL_COMM_ID") == nullptr) {
            reporter.error("init", "ncclGetUniqueId",
                           "--rank/--nranks needs NCCL_COMM_ID=<host>:<port> in every rank's environment "
                           "(rank 0 listens there); tpverify never sets NCCL variables itself. Or leave "
                           "--rank out and let tpverify start the ranks (--tp N)");
            return static_cast<int>(Exit::usage);
        }
        if (launched && count < options.nranks) {
            reporter.error("init", "cudaGetDeviceCount",
                           "--tp " + std::to_string(options.nranks) + " needs " +
                               std::to_string(options.nranks) + " GPUs but " + std::to_string(count) +
                               " are visible (CUDA_VISIBLE_DEVICES?)");
            return static_cast<int>(Exit::failure);
        }
        run.nranks = options.nranks;
        run.in_process = false;
        run.ranks = {options.rank};
        run.devices = {options.rank % count};
    } else {
        run.nranks = options.tp;
        if (count < options.tp) {
            reporter.error("init", "cudaGetDeviceCount",
                           "--tp " + std::to_string(options.tp) + " needs " + std::to_string(options.tp) +
                               " GPUs but " + std::to_string(count) + " are visible (CUDA_VISIBLE_DEVICES?)");
            return static_cast<int>(Exit::failure);
        }
        for (int r = 0; r < options.tp; ++r) run.ranks.push_back(r), run.devices.push_back(r);
    }
    const PassShape shape = pass_shape(options, plan.model);
    PassPlan baseline = build_pass(plan.model, plan.tp, 1, shape);
    run.baseline = &baseline;
    PassPlan draft = build_draft_pass(plan.model, plan.tp, options.draft_steps, shape);
    if (options.draft_steps > 0) run.draft = &draft;
    run.fusion_fallback =
        cuda::fusion_fallback_before_start(options, plan.tokens, plan.model.hidden, run.devices.front());
    const int local = int(run.ranks.size());
    run.peers.buffers.assign(run.nranks, nullptr);
    run.peers.devices = run.devices;
    run.barrier = std::make_unique<cuda::ThreadBarrier>(local);
    for (int i = 0; i < local; ++i) run.slots.push_back(std::make_unique<cuda::RankSlot>());
    if (run.ranks.front() == 0) reporter.event("start", start_fields(run, plan));
    std::vector<std::thread> threads;
    for (int i = 0; i < local; ++i) {
        run.slots[i]->stamp.store(now_s());
        threads.emplace_back([&run, i] { cuda::run_rank(run, i); });
    }
    watch(run, threads);
    return report(run, plan);
}

}  // namespace tpverify

// The module's entry points (engine/run/cuda_module.hpp), found by dlsym.
extern "C" __attribute__((visibility("default"))) const char* tpverify_cuda_abi() {
    static const std::string abi = tpverify::cuda_module_abi();
    return abi.c_str();
}

extern "C" __attribute__((visibility("default"))) int tpverify_cuda_device_count() {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess ? count : -1;
}

extern "C" __attribute__((visibility("default"))) int tpverify_cuda_run(const tpverify::Options* options,
                                                                        const tpverify::PassPlan* plan,
                                                                        tpverify::Reporter* reporter) {
    return tpverify::run_backend(*options, *plan, *reporter);
}
