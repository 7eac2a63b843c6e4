// The built-in watcher rules (docs/watcher.md). Order is priority: when several fatal rules
// match one line, the first decides the class, so specific rules come before generic ones.
// Every rule carries a real-looking example line; tests/core/test_rules_builtin.cpp checks
// that each one fires on it and docs/watcher.md lists them all.
#include "core/watch/rule_catalog.hpp"

namespace ncclsweep::inline watch {
namespace {

// Metric number: 54.8, 3, 1.2e3 (validated again with from_chars).
#define NUM "[-+]?[0-9]*\\.?[0-9]+(?:e[-+]?[0-9]+)?"

Rule make(std::string name, std::string pattern, std::string cls, Severity severity, std::string example,
          PhaseEffect effect = PhaseEffect::none, Extract extract = Extract::named_groups,
          bool generic = false) {
    Rule rule;
    rule.name = std::move(name);
    rule.pattern = std::move(pattern);
    rule.failure_class = std::move(cls);
    rule.severity = severity;
    rule.effect = effect;
    rule.extract = extract;
    rule.generic = generic;
    rule.example = std::move(example);
    return rule;
}

Rule fatal(std::string name, std::string pattern, std::string cls, std::string example,
           bool generic = false) {
    return make(std::move(name), std::move(pattern), std::move(cls), Severity::fatal, std::move(example),
                PhaseEffect::none, Extract::named_groups, generic);
}

Rule phase(std::string name, std::string pattern, PhaseEffect effect, std::string example) {
    return make(std::move(name), std::move(pattern), "", Severity::progress, std::move(example), effect);
}

Rule metric(std::string name, std::string pattern, std::string example) {
    return make(std::move(name), std::move(pattern), "", Severity::progress, std::move(example));
}

Rule json_event(std::string name, const char* event, PhaseEffect effect, std::string example) {
    return make(std::move(name), std::string(R"(^\s*\{.*"event"\s*:\s*")") + event + "\"", "",
                Severity::progress, std::move(example), effect, Extract::json_event);
}

std::vector<Rule> build() {
    std::vector<Rule> r;
    // tpverify --json events (docs/engine.md "Output events"). The JSON is parsed only on a hit.
    r.push_back(json_event(
        "tpverify_start", "start", PhaseEffect::none,
        R"({"event":"start","backend":"sim","model":"kimi-k2.5","tp":8,"tokens":4,"collectives":124,"bytes_per_collective":57344})"));
    r.push_back(json_event("tpverify_capture", "capture", PhaseEffect::none,
                           R"({"event":"capture","phase":"begin","mode":"thread_local"})"));
    r.push_back(json_event("tpverify_ready", "ready", PhaseEffect::ready, R"({"event":"ready"})"));
    r.push_back(json_event(
        "tpverify_result", "result", PhaseEffect::done,
        R"({"event":"result","tok_s":54.8,"verify_us_p50":30123.5,"verify_us_p10":29950.1,"samples":200})"));
    // tpverify's stderr: "tpverify: <phase>: <api> failed: <error string>".
    r.push_back(
        make("tpverify_failure", R"(^tpverify: (?P<phase>[\w-]+): (?P<api>\S+) failed: (?P<what>.*))",
             "engine", Severity::fatal,
             "tpverify: capture: ncclAllReduce failed: invalid usage (run with NCCL_DEBUG=WARN for details)",
             PhaseEffect::none, Extract::tpverify_error));
    // The sitecustomize raised: Python went on without the environment -> wrong config measured.
    r.push_back(fatal("sitecustomize_error", R"(Error in sitecustomize; set PYTHONVERBOSE for traceback)",
                      "sitecustomize", "Error in sitecustomize; set PYTHONVERBOSE for traceback:"));
    // Graph capture.
    r.push_back(fatal("sglang_capture_failed", R"(Capture cuda graph failed)", "graph_capture",
                      "Exception: Capture cuda graph failed: CUDA error: operation not permitted when stream "
                      "is capturing"));
    r.push_back(fatal("cuda_capture_not_permitted", R"(operation not permitted when stream is capturing)",
                      "graph_capture",
                      "RuntimeError: CUDA error: operation not permitted when stream is capturing"));
    r.push_back(fatal("cuda_capture_invalidated",
                      R"(operation failed due to a previous error during capture)", "graph_capture",
                      "RuntimeError: CUDA error: operation failed due to a previous error during capture"));
    r.push_back(fatal("cuda_capture_event",
                      R"(operation not permitted on an event last recorded in a capturing stream)",
                      "graph_capture",
                      "CUDA error: operation not permitted on an event last recorded in a capturing stream"));
    r.push_back(fatal(
        "cuda_capture_other",
        R"(capture sequence contains a fork that was not joined|attempt to terminate a thread-local capture sequence from another thread|the capture was not initiated in this stream|operation would make the legacy stream depend on a capturing blocking stream)",
        "graph_capture",
        "CUDA error: capture sequence contains a fork that was not joined to the primary stream"));
    // Out of memory (before the generic CUDA error: "CUDA error: out of memory" is an OOM).
    r.push_back(fatal("oom_cuda", R"(CUDA out of memory)", "oom",
                      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
                      "total capacity of 139.72 GiB of which 1.02 GiB is free."));
    r.push_back(fatal("oom_generic", R"(\bout of memory\b|OutOfMemoryError)", "oom",
                      "misc/nvmlwrap.cc:182 NCCL WARN Cuda failure 'out of memory'"));
    // CUDA.
    r.push_back(fatal("cuda_illegal_address", R"(an illegal memory access was encountered)", "cuda",
                      "RuntimeError: CUDA error: an illegal memory access was encountered"));
    // NCCL (specific ones first; "NCCL WARN" alone is a warning).
    r.push_back(fatal("nccl_no_algo", R"(No algorithm/protocol available)", "nccl",
                      "node1:1234:1234 [0] NCCL WARN Error : no algorithm/protocol available for function "
                      "AllGather with datatype ncclInt8. NCCL_ALGO was set to Tree."));
    r.push_back(
        fatal("nccl_unrecognized_token", R"(Unrecognized element token)", "nccl",
              "node1:1234:1234 [0] NCCL WARN Unrecognized element token \"trees\" when parsing NCCL_ALGO"));
    r.push_back(fatal("nccl_invalid_usage", R"(nccl.*invalid usage|invalid usage \(run with NCCL_DEBUG)",
                      "nccl",
                      "torch.distributed.DistBackendError: NCCL error in: "
                      "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, invalid usage (run with "
                      "NCCL_DEBUG=WARN for details), NCCL version 2.21.5"));
    r.push_back(fatal("nccl_unhandled_cuda", R"(unhandled cuda error)", "nccl",
                      "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, "
                      "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5"));
    r.push_back(fatal(
        "nccl_internal_error", R"(nccl.*internal error|internal error - please report this issue)", "nccl",
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, internal error - "
        "please report this issue to the NCCL developers, NCCL version 2.27.3"));
    r.push_back(fatal("nccl_watchdog_timeout", R"(Watchdog caught collective operation timeout)", "hang",
                      "[rank3]:[E601 10:00:01.123456 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught "
                      "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=7168, "
                      "NumelOut=7168, Timeout(ms)=600000) ran for 600021 milliseconds before timing out."));
    r.push_back(fatal("nccl_error", R"(NCCL error)", "nccl",
                      "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote "
                      "process exited or there was a network error, NCCL version 2.21.5"));
    // Generic CUDA (a more specific line in the next moments refines the class). A kernel's
    // assert prints one line per failing thread at the next synchronisation; the program's own
    // error (e.g. torch.AcceleratorError: CUDA error: device-side assert triggered) follows.
    r.push_back(fatal(
        "cuda_device_assert",
        R"(block: \[[0-9]+,[0-9]+,[0-9]+\], thread: \[[0-9]+,[0-9]+,[0-9]+\] Assertion .* failed)", "cuda",
        "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:111: operator(): block: [0,0,0], thread: "
        "[2,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.",
        true));
    r.push_back(fatal("cuda_error", R"(CUDA error:)", "cuda",
                      "RuntimeError: CUDA error: unspecified launch failure", true));
    r.push_back(fatal("torch_accelerator_error", R"(torch\.AcceleratorError)", "cuda",
                      "torch.AcceleratorError: CUDA error: misaligned address", true));
    // Crashes.
    r.push_back(fatal("python_fatal_error", R"(Fatal Python error:)", "crash",
                      "Fatal Python error: Segmentation fault"));
    // Servers dying (generic: the traceback that follows usually names the real cause).
    r.push_back(fatal(
        "sglang_scheduler_exception", R"(Scheduler hit an exception)", "server",
        "[2025-06-01 10:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):", true));
    r.push_back(fatal(
        "sglang_sigquit", R"(Received sigquit from a child process)", "server",
        "[2025-06-01 10:00:02] Received sigquit from a child process. It usually means the child failed.",
        true));
    r.push_back(fatal("sglang_scheduler_died", R"(scheduler died during initialization)", "server",
                      "Exception: Rank 0 scheduler died during initialization", true));
    r.push_back(fatal(
        "vllm_engine_failed", R"(EngineCore failed to start)", "server",
        "(EngineCore_0 pid=4242) ERROR 06-01 10:00:01 [core.py:700] EngineCore failed to start.", true));
    r.push_back(fatal("python_traceback", R"(Traceback \(most recent call last\):)", "python",
                      "Traceback (most recent call last):", true));
    r.push_back(fatal("sglang_watchdog_timeout", R"(watchdog timeout)", "hang",
                      "[2025-06-01 10:05:00 TP0] Watchdog timeout (self.watchdog_timeout=300)"));
    // Warnings.
    r.push_back(make("nccl_warn", R"(NCCL WARN)", "nccl", Severity::warning,
                     "node1:1234:1240 [2] NCCL WARN NET/Socket : peer 10.0.0.2<41234> message truncated"));
    // Phases.
    r.push_back(phase("sglang_capture_begin", R"(Capture cuda graph begin)", PhaseEffect::capture_begin,
                      "[2025-06-01 10:00:00 TP0] Capture cuda graph begin. This can take up to several "
                      "minutes. avail mem=12.34 GB"));
    r.push_back(phase("sglang_capture_end", R"(Capture cuda graph end)", PhaseEffect::capture_end,
                      "[2025-06-01 10:00:12 TP0] Capture cuda graph end. Time elapsed: 11.87 s. mem "
                      "usage=0.52 GB. avail mem=11.80 GB."));
    r.push_back(phase("sglang_ready", R"(The server is fired up and ready to roll)", PhaseEffect::ready,
                      "[2025-06-01 10:00:20] The server is fired up and ready to roll!"));
    r.push_back(phase("vllm_capture_begin", R"(Capturing CUDA graphs?\b|Capturing cudagraphs)",
                      PhaseEffect::capture_begin,
                      "INFO 06-01 10:00:00 [gpu_model_runner.py:2000] Capturing CUDA graph shapes: "
                      "100%|██████████| 67/67"));
    r.push_back(phase(
        "vllm_capture_end", R"(Graph capturing finished)", PhaseEffect::capture_end,
        "INFO 06-01 10:00:12 [gpu_model_runner.py:2050] Graph capturing finished in 12 secs, took 0.53 GiB"));
    r.push_back(phase("vllm_ready", R"(Application startup complete)", PhaseEffect::ready,
                      "INFO:     Application startup complete."));
    // Measured values (named groups become metrics).
    r.push_back(metric("bench_output_throughput",
                       R"(Output token throughput \(tok/s\):\s*(?P<output_tok_s>)" NUM ")",
                       "Output token throughput (tok/s):          54.80"));
    r.push_back(metric("bench_accept_length", R"(Accept length:\s*(?P<accept_length>)" NUM ")",
                       "Accept length:                           3.21"));
    r.push_back(
        metric("sglang_decode_accept_len", R"(accept len:\s*(?P<accept_len>)" NUM ")",
               "[2025-06-01 10:01:00 TP0] Decode batch. #running-req: 1, #token: 1544, token usage: 0.00, "
               "accept len: 3.20, cuda graph: True, gen throughput (token/s): 54.81, #queue-req: 0"));
    r.push_back(metric("sglang_gen_throughput", R"(gen throughput \(token/s\):\s*(?P<gen_tok_s>)" NUM ")",
                       "[2025-06-01 10:01:00 TP0] Decode batch. #running-req: 1, #token: 1290, token usage: "
                       "0.00, cuda graph: True, gen throughput (token/s): 90.12, #queue-req: 0"));
    r.push_back(metric("vllm_generation_throughput", R"(Avg generation throughput:\s*(?P<gen_tok_s>)" NUM ")",
                       "INFO 06-01 10:01:00 [loggers.py:118] Engine 000: Avg prompt throughput: 0.0 "
                       "tokens/s, Avg generation throughput: 52.3 tokens/s"));
    // NCCL's own account of what it used (effective configuration), and what our tuner plugin
    // (tuner/plugin.c) applied; its WARN lines stay with nccl_warn above.
    r.push_back(make("nccl_tuner_plugin", R"(ncclsweep tuner: )", "", Severity::info,
                     "node1:1234:1234 [0] NCCL INFO ncclsweep tuner: AllReduce 57344 bytes -> algo TREE "
                     "proto LL channels 0 (/etc/p.txt:8)",
                     PhaseEffect::none, Extract::nccl_effective));
    r.push_back(make(
        "nccl_tuning", R"(Bytes -> Algo )", "", Severity::info,
        "node1:1234:1234 [0] NCCL INFO AllReduce: 14336 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}",
        PhaseEffect::none, Extract::nccl_effective));
    r.push_back(make("nccl_env", R"(NCCL_[A-Z0-9_]+ set by environment to )", "", Severity::info,
                     "node1:1234:1234 [0] NCCL INFO NCCL_ALGO set by environment to allreduce:tree",
                     PhaseEffect::none, Extract::nccl_effective));
    return r;
}

#undef NUM

}  // namespace

const std::vector<Rule>& builtin_rules() {
    static const std::vector<Rule> k_rules = build();
    return k_rules;
}

}  // namespace ncclsweep::inline watch
