// Class, phase and cause of a failure (docs/watcher.md "Class, phase and cause"): the settle
// window after the first fatal line, the precedence of lines, and recorded real output
// (tests/fixtures/recorded/) replayed with its own timing.
#include <algorithm>
#include <functional>

#include "tests/core/watcher_test_support.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

Watcher cause_watcher(FakeClock& clock, SuccessRule success = SuccessRule::exit_zero) {
    WatcherOptions options;
    options.success = success;
    return Watcher(builtin_catalog(), options, clock.t0);
}

/// The SGLang-shaped TP=8 log, optionally without NCCL's own lines (as with NCCL_DEBUG unset).
std::vector<std::string> tp8_tree_lines(bool with_nccl_lines) {
    auto lines = fixture_lines("sglang_tp8_tree_capture.log");
    if (!with_nccl_lines)
        std::erase_if(lines, [](const std::string& l) {
            return l.find("NCCL INFO") != std::string::npos || l.find("NCCL WARN") != std::string::npos;
        });
    return lines;
}

/// Feeds lines 1 ms apart, then lets the settle window run out.
void feed_all_and_settle(Watcher& watcher, FakeClock& clock, const std::vector<std::string>& lines) {
    for (const auto& line : lines) feed(watcher, clock, line);
    watcher.tick(clock.advance(0.5));
}

}  // namespace

TEST_CASE("SGLang TP=8 Tree failure in capture: graph_capture while capturing with the NCCL WARN as cause") {
    FakeClock clock;
    auto watcher = cause_watcher(clock);
    feed_all_and_settle(watcher, clock, tp8_tree_lines(true));
    const auto& d = watcher.diagnosis();
    CHECK(watcher.failure_class() == "graph_capture");
    CHECK(d.phase == "capturing");
    CHECK(d.cause.find("NCCL WARN Error : no algorithm/protocol available for function AllGather") !=
          std::string::npos);
    CHECK(d.cause.find("NCCL_ALGO was set to Tree.") != std::string::npos);
    CHECK(d.rule == "nccl_no_algo");
    CHECK(d.headline().starts_with(
        "graph_capture while capturing: node1:52001:52001 [0] enqueue.cc:1838 NCCL WARN"));
    CHECK(watcher.verdict().settled);
}

TEST_CASE(
    "SGLang TP=8 Tree failure without NCCL lines: same class and phase with the invalid usage line as "
    "cause") {
    FakeClock clock;
    auto watcher = cause_watcher(clock);
    feed_all_and_settle(watcher, clock, tp8_tree_lines(false));
    const auto& d = watcher.diagnosis();
    CHECK(watcher.failure_class() == "graph_capture");
    CHECK(d.phase == "capturing");
    CHECK(d.trigger_rule == "sglang_scheduler_exception");
    CHECK(d.cause == "RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)");
    CHECK(d.cause.find("Received sigquit") == std::string::npos);
}

TEST_CASE("NCCL_DEBUG set or unset gives the same class for the same crash") {
    for (bool with_nccl_lines : {true, false}) {
        INFO("with NCCL lines: " << with_nccl_lines);
        FakeClock clock;
        auto watcher = cause_watcher(clock);
        feed_all_and_settle(watcher, clock, tp8_tree_lines(with_nccl_lines));
        CHECK(watcher.failure_class() == "graph_capture");
    }
    // tpverify's own shape: the WARN (only with NCCL_DEBUG=WARN) then its failure line.
    for (bool warn : {true, false}) {
        INFO("NCCL_DEBUG=WARN: " << warn);
        FakeClock clock;
        auto watcher = cause_watcher(clock, SuccessRule::result_event);
        feed(watcher, clock, R"({"event":"start","backend":"sim","tp":8})");
        if (warn)
            feed(watcher, clock,
                 "node1:4242:4242 [0] enqueue.cc:1838 NCCL WARN Error : no algorithm/protocol available for "
                 "function AllGather with datatype ncclBfloat16. NCCL_ALGO was set to Tree.");
        feed(watcher, clock,
             "tpverify: capture: ncclAllGather failed: invalid usage (run with NCCL_DEBUG=WARN for details)");
        watcher.on_exit(ExitInfo{1, 0}, clock.advance(0.01));
        CHECK(watcher.failure_class() == "graph_capture");
    }
}

TEST_CASE("a CUDA failure while capturing is graph_capture and the same line outside capture is cuda") {
    for (bool capturing : {true, false}) {
        FakeClock clock;
        auto watcher = cause_watcher(clock);
        if (capturing) feed(watcher, clock, "[2026-11-30 09:21:44 TP0] Capture cuda graph begin.");
        feed(watcher, clock, "RuntimeError: CUDA error: an illegal memory access was encountered");
        watcher.tick(clock.advance(0.5));
        CHECK(watcher.failure_class() == (capturing ? "graph_capture" : "cuda"));
        CHECK(watcher.diagnosis().phase == (capturing ? "capturing" : "initializing"));
        CHECK(watcher.diagnosis().cause ==
              "RuntimeError: CUDA error: an illegal memory access was encountered");
    }
}

TEST_CASE("an out-of-memory error while capturing stays oom") {
    FakeClock clock;
    auto watcher = cause_watcher(clock);
    feed(watcher, clock, "Capture cuda graph begin.");
    feed(watcher, clock, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.");
    watcher.tick(clock.advance(0.5));
    CHECK(watcher.failure_class() == "oom");
    CHECK(watcher.diagnosis().phase == "capturing");
}

TEST_CASE("a 40-frame traceback written at once ending in an illegal memory access is cuda not python") {
    FakeClock clock;
    auto watcher = cause_watcher(clock);
    feed(watcher, clock,
         "[2026-11-30 09:30:00 TP3] Decode batch. #running-req: 1, gen throughput (token/s): 54.8");
    std::vector<std::string> lines{"Traceback (most recent call last):"};
    for (int i = 0; i < 40; ++i) {
        lines.push_back("  File \"/sgl-workspace/sglang/python/sglang/srt/layer_" + std::to_string(i) +
                        ".py\", line " + std::to_string(100 + i) + ", in forward");
        lines.push_back("    hidden = self.layers[" + std::to_string(i) +
                        "](hidden)  # CUDA error: see below");
    }
    lines.push_back("RuntimeError: CUDA error: an illegal memory access was encountered");
    lines.push_back(
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect.");
    // All in one go: the same instant, as one write would deliver them.
    const auto when = clock.advance(0.001);
    for (const auto& text : lines) {
        OutputLine line;
        line.text = text;
        line.when = when;
        watcher.feed(line, when);
    }
    CHECK(watcher.settle_may_end_when_quiet());  // the traceback has ended
    watcher.end_settle(when);
    CHECK(watcher.failure_class() == "cuda");
    CHECK(watcher.diagnosis().cause == "RuntimeError: CUDA error: an illegal memory access was encountered");
    CHECK(watcher.diagnosis().trigger_rule == "python_traceback");
    CHECK(watcher.diagnosis().phase == "measuring");
    CHECK(watcher.diagnosis().after.size() <= 60);  // stored context stays bounded
    CHECK(*watcher.settle_latency() < 1.0);
}

TEST_CASE("settle window: not final while a traceback is open and final once it ended or after 0.3 s") {
    FakeClock clock;
    auto open = cause_watcher(clock);
    feed(open, clock, "Traceback (most recent call last):");
    feed(open, clock, "  File \"x.py\", line 1, in <module>");
    CHECK(open.verdict().end_now);
    CHECK_FALSE(open.verdict().settled);
    CHECK_FALSE(open.settle_may_end_when_quiet());
    open.tick(clock.advance(0.2));
    CHECK_FALSE(open.verdict().settled);
    open.tick(clock.advance(0.11));
    CHECK(open.verdict().settled);  // 0.3 s after the fatal line, even without the exception line
    CHECK(*open.settle_latency() == Approx(0.312).margin(0.002));
    CHECK(open.failure_class() == "python");

    auto plain = cause_watcher(clock);
    feed(plain, clock, "misc/nvmlwrap.cc:182 NCCL WARN Cuda failure 'out of memory'");
    CHECK_FALSE(plain.settle_may_end_when_quiet());  // no traceback to wait for: the window runs its time
    plain.tick(clock.advance(0.29));
    CHECK_FALSE(plain.verdict().settled);
    plain.tick(clock.advance(0.02));
    CHECK(plain.verdict().settled);
}

TEST_CASE("settle window: a flood of lines is capped") {
    FakeClock clock;
    WatcherOptions options;
    options.settle_max_lines = 100;
    Watcher watcher(builtin_catalog(), options, clock.t0);
    feed(watcher, clock, "Traceback (most recent call last):");
    for (int i = 0; i < 99; ++i) feed(watcher, clock, "  File \"spam.py\", line 1", 0.0);
    CHECK_FALSE(watcher.verdict().settled);
    feed(watcher, clock, "  File \"spam.py\", line 1", 0.0);
    CHECK(watcher.verdict().settled);
    feed(watcher, clock, "RuntimeError: CUDA error: an illegal memory access was encountered", 0.0);
    CHECK(watcher.failure_class() == "python");     // read after the window: not considered
    CHECK(watcher.diagnosis().after.size() <= 60);  // what is stored stays bounded
}

TEST_CASE("recorded: torch host sync in graph capture is graph_capture while capturing within 1 s") {
    for (const char* name : {"torch_capture_host_sync", "torch_capture_host_sync_nccl_warn"}) {
        INFO(name);
        FakeClock clock;
        auto watcher = cause_watcher(clock);
        const double failed_at = feed_recording(watcher, clock, name);
        REQUIRE(failed_at > 0);
        const auto& d = watcher.diagnosis();
        CHECK(watcher.failure_class() == "graph_capture");
        CHECK(d.phase == "capturing");
        CHECK(d.cause ==
              "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing");
        CHECK(d.trigger_rule == "python_traceback");
        REQUIRE(watcher.settle_latency());
        CHECK(*watcher.settle_latency() <= 1.0);
    }
}

TEST_CASE("recorded: illegal memory access and CUDA OOM and tpverify's OOM get their classes") {
    struct Case {
        const char* name;
        const char* failure_class;
        const char* cause_part;
    };
    for (const auto& c :
         {Case{"torch_illegal_access", "cuda",
               "torch.AcceleratorError: CUDA error: an illegal memory access"},
          Case{"cuda_illegal_access", "cuda",
               "CUDA error: an illegal memory access was encountered (cudaErrorIllegalAddress)"},
          Case{"torch_oom", "oom",
               "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 400.00 GiB"},
          Case{"tpverify_cuda_oom", "oom", "tpverify: init: cudaMalloc failed: out of memory"}}) {
        INFO(c.name);
        FakeClock clock;
        auto watcher = cause_watcher(clock);
        REQUIRE(feed_recording(watcher, clock, c.name) > 0);
        CHECK(watcher.failure_class() == c.failure_class);
        CHECK(watcher.diagnosis().cause.starts_with(c.cause_part));
        CHECK(watcher.verdict().settled);
    }
}

TEST_CASE("recorded: a device-side assert is cuda with the traceback's exception line as cause") {
    FakeClock clock;
    auto watcher = cause_watcher(clock);
    REQUIRE(feed_recording(watcher, clock, "torch_device_assert") > 0);
    const auto& d = watcher.diagnosis();
    CHECK(watcher.failure_class() == "cuda");
    CHECK(d.phase == "initializing");
    CHECK(d.cause == "torch.AcceleratorError: CUDA error: device-side assert triggered");
    CHECK(d.rule == "cuda_error");
    // The kernel's first assert line gave the failure away; the exception line named it.
    CHECK(d.trigger_rule == "cuda_device_assert");
    CHECK(d.trigger_line.find("thread: [0,0,0] Assertion `-sizes[i] <= index") != std::string::npos);
    CHECK(any_contains(d.after, "Traceback (most recent call last):"));
    CHECK(d.headline() ==
          "cuda while initializing: torch.AcceleratorError: CUDA error: device-side assert triggered");
    CHECK(watcher.verdict().settled);
    REQUIRE(watcher.settle_latency());
    CHECK(*watcher.settle_latency() <= 1.0);
}

namespace {

/// The records of a recording before its exit record.
std::vector<RecordedLine> output_of(const std::string& name) {
    auto records = recorded_lines(name);
    REQUIRE((records.back().stream == "exit" || records.back().stream == "signal"));
    records.pop_back();
    return records;
}

/// Feeds `texts`, each at `when(i)`, then lets the settle window run out.
template <typename When>
void feed_timed(Watcher& watcher, FakeClock& clock, const std::vector<std::string>& texts, When when) {
    for (std::size_t i = 0; i < texts.size(); ++i) {
        OutputLine line;
        line.text = texts[i];
        line.when = clock.t0 + std::chrono::duration_cast<Watcher::Clock::duration>(
                                   std::chrono::duration<double>(when(i)));
        clock.now = line.when;
        watcher.feed(line, line.when);
    }
    watcher.tick(clock.advance(0.5));
}

}  // namespace

TEST_CASE("the device-side assert is cuda with the same cause whatever the write boundaries") {
    std::vector<std::string> texts;
    for (const auto& record : output_of("torch_device_assert")) texts.push_back(record.text);
    struct Case {
        const char* name;
        std::function<double(std::size_t)> when;
    };
    for (const auto& c :
         {Case{"all lines in one read", [](std::size_t) { return 4.0; }},
          Case{"every line its own write, 0.1 ms apart", [](std::size_t i) { return 4.0 + 1e-4 * i; }},
          Case{"every line 0.9 ms apart", [](std::size_t i) { return 4.0 + 9e-4 * i; }}}) {
        INFO(c.name);
        FakeClock clock;
        auto watcher = cause_watcher(clock);
        feed_timed(watcher, clock, texts, c.when);
        CHECK(watcher.failure_class() == "cuda");
        CHECK(watcher.diagnosis().cause ==
              "torch.AcceleratorError: CUDA error: device-side assert triggered");
        CHECK(watcher.verdict().settled);
    }
    // Without the kernel's assert lines (a program that sends them elsewhere) the traceback's
    // header is the fatal line, class python, until the exception line names the error.
    const std::vector<std::string> traceback(texts.begin() + 3, texts.end());
    REQUIRE(traceback.front() == "Traceback (most recent call last):");
    FakeClock clock;
    auto watcher = cause_watcher(clock);
    feed_timed(watcher, clock, traceback, [](std::size_t) { return 4.0; });
    CHECK(watcher.diagnosis().trigger_rule == "python_traceback");
    CHECK(watcher.failure_class() == "cuda");
    CHECK(watcher.diagnosis().cause == "torch.AcceleratorError: CUDA error: device-side assert triggered");
}

TEST_CASE("the exception line ending a traceback decides over the generic lines before it") {
    struct Case {
        const char* name;
        std::vector<std::string> lines;
        const char* failure_class;
        const char* cause;
    };
    const std::string header = "Traceback (most recent call last):";
    const std::string frame = "  File \"server.py\", line 9, in step";
    for (const auto& c : {
             Case{"a generic rule names the exception",
                  {header, frame, "    torch.cuda.synchronize()",
                   "torch.AcceleratorError: CUDA error: misaligned address"},
                  "cuda",
                  "torch.AcceleratorError: CUDA error: misaligned address"},
             Case{"no rule names it: still the cause, class python",
                  {header, frame, "ValueError: max_tokens must be positive"},
                  "python",
                  "ValueError: max_tokens must be positive"},
             Case{"behind SGLang's generic line: the exception decides the class",
                  {"[2026-12-01 10:00:01 TP0] Scheduler hit an exception: " + header, frame,
                   "KeyError: 'layers.61.mlp'"},
                  "python",
                  "KeyError: 'layers.61.mlp'"},
             Case{"a chained exception a rule names replaces one no rule names",
                  {header, frame, "KeyError: 'x'", "",
                   "During handling of the above exception, another exception occurred:", "", header, frame,
                   "torch.AcceleratorError: CUDA error: unspecified launch failure"},
                  "cuda",
                  "torch.AcceleratorError: CUDA error: unspecified launch failure"},
             Case{"a wrapper no rule names does not replace the CUDA error it wraps",
                  {header, frame, "torch.AcceleratorError: CUDA error: unspecified launch failure", "",
                   "The above exception was the direct cause of the following exception:", "", header, frame,
                   "RuntimeError: worker 3 failed"},
                  "cuda",
                  "torch.AcceleratorError: CUDA error: unspecified launch failure"},
             Case{"a quoted source line is no exception line",
                  {header, frame, "    raise RuntimeError(\"CUDA error: see above\")"},
                  "python",
                  "Traceback (most recent call last):"},
             Case{"a log line after the traceback is no exception line",
                  {header, frame, "RuntimeError: boom",
                   "[2026-12-01 10:00:02] Received sigquit from a child process."},
                  "python",
                  "RuntimeError: boom"},
             Case{
                 "a specific line before the traceback stays the cause",
                 {"CUDA error: an illegal memory access was encountered (cudaErrorIllegalAddress) at k.cu:13",
                  header, frame, "torch.AcceleratorError: CUDA error: unspecified launch failure"},
                 "cuda",
                 "CUDA error: an illegal memory access was encountered (cudaErrorIllegalAddress) at k.cu:13"},
         }) {
        INFO(c.name);
        FakeClock clock;
        auto watcher = cause_watcher(clock);
        feed_all_and_settle(watcher, clock, c.lines);
        CHECK(watcher.failure_class() == c.failure_class);
        CHECK(watcher.diagnosis().cause == c.cause);
    }
}

TEST_CASE("recorded: tpverify on one GPU ignores NCCL_ALGO=Bogus or Tree and --inject and succeeds") {
    for (const char* name : {"tpverify_cuda_ok", "tpverify_cuda_algo_bogus", "tpverify_cuda_algo_bogus_warn",
                             "tpverify_cuda_algo_tree_warn", "tpverify_cuda_inject_capture_fail"}) {
        INFO(name);
        FakeClock clock;
        auto watcher = cause_watcher(clock, SuccessRule::result_event);
        CHECK(feed_recording(watcher, clock, name) < 0);
        CHECK(watcher.state() == WatchState::done);
    }
}

TEST_CASE("timeouts and exits carry their phase and a cause") {
    FakeClock clock;
    WatcherOptions options;
    options.timeouts.capture = 5;
    Watcher watcher(builtin_catalog(), options, clock.t0);
    feed(watcher, clock, "Capture cuda graph begin.");
    watcher.tick(clock.advance(6));
    CHECK(watcher.failure_class() == "timeout");
    CHECK(watcher.diagnosis().phase == "capturing");
    CHECK(watcher.diagnosis().cause.find("capture timeout") == 0);
    CHECK(watcher.verdict().settled);

    auto exited = cause_watcher(clock);
    feed(exited, clock, "loading");
    exited.on_exit(ExitInfo{3, 0}, clock.advance(0.1));
    CHECK(exited.diagnosis().phase == "initializing");
    CHECK(exited.diagnosis().cause.find("exited with status 3") == 0);
}

TEST_CASE("vLLM's prefixed traceback: the exception line is found behind the logger prefix") {
    FakeClock clock;
    auto watcher = cause_watcher(clock);
    const std::string prefix = "(EngineCore_DP0 pid=4242) ERROR 11-30 09:40:01 [core.py:700] ";
    feed(watcher, clock, prefix + "EngineCore failed to start.");
    feed(watcher, clock, prefix + "Traceback (most recent call last):");
    feed(watcher, clock,
         prefix + "  File \"/opt/vllm/vllm/v1/worker/gpu_model_runner.py\", line 2301, in capture_model");
    feed(watcher, clock,
         prefix + "    raise RuntimeError(\"CUDA error: an illegal memory access was encountered\")");
    CHECK_FALSE(watcher.settle_may_end_when_quiet());
    CHECK(watcher.diagnosis().rule == "vllm_engine_failed");  // the quoted source line names no cause
    feed(watcher, clock, prefix + "RuntimeError: CUDA error: an illegal memory access was encountered");
    CHECK(watcher.settle_may_end_when_quiet());
    CHECK(watcher.failure_class() == "cuda");
    CHECK(watcher.diagnosis().cause ==
          prefix + "RuntimeError: CUDA error: an illegal memory access was encountered");
}
