// The watcher on real-looking logs (tests/fixtures/logs): phases, metrics, failure classes
// and the context kept around a fatal line.
#include <csignal>

#include "tests/core/watcher_test_support.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

Watcher make_watcher(FakeClock& clock, SuccessRule success = SuccessRule::exit_zero,
                     std::shared_ptr<const RuleCatalog> catalog = builtin_catalog()) {
    WatcherOptions options;
    options.success = success;
    return Watcher(std::move(catalog), options, clock.t0);
}

}  // namespace

TEST_CASE("tpverify json events drive the phases and the result becomes metrics") {
    FakeClock clock;
    auto watcher = make_watcher(clock, SuccessRule::result_event);
    auto lines = fixture_lines("tpverify_events.jsonl");
    std::vector<WatchState> states;
    for (const auto& line : lines) states.push_back(feed(watcher, clock, line).state);
    CHECK(states == std::vector<WatchState>{WatchState::initializing, WatchState::initializing,
                                            WatchState::capturing, WatchState::capturing,
                                            WatchState::capturing, WatchState::initializing,
                                            WatchState::ready, WatchState::done});
    const auto& metrics = watcher.metrics();
    REQUIRE(metrics.count("tok_s") == 1);
    CHECK(metrics.at("tok_s") == std::vector<double>{54.8});
    CHECK(metrics.at("verify_us_p50") == std::vector<double>{30123.5});
    CHECK(metrics.at("samples") == std::vector<double>{200});
    CHECK(metrics.at("check_wrong") == std::vector<double>{-1});
    CHECK(metrics.at("timing.capture_s") == std::vector<double>{0.84});
    CHECK(metrics.count("graph") == 0);    // booleans are not metrics
    CHECK(metrics.count("backend") == 0);  // nor strings
    CHECK(watcher.effective_nccl().summary() ==
          "AllReduce 57344B: RING/LL ch0..0; env: NCCL_ALGO=allreduce:ring");
    auto end = watcher.on_exit(ExitInfo{0, 0}, clock.advance(0.01));
    CHECK(end.state == WatchState::done);
    CHECK(end.settled);
    CHECK_FALSE(end.end_now);
    REQUIRE(watcher.phase_times().capture_begin);
    CHECK(*watcher.phase_times().capture_begin == Approx(0.003));
    CHECK(*watcher.phase_times().ready == Approx(0.007));
}

TEST_CASE("tpverify capture failure: the NCCL line above the engine's error decides") {
    FakeClock clock;
    auto watcher = make_watcher(clock, SuccessRule::result_event);
    int kill_at = -1;
    feed_fixture(watcher, clock, "tpverify_capture_fail.log", &kill_at);
    CHECK(kill_at == 2);
    CHECK(watcher.must_kill_now());
    CHECK(watcher.state() == WatchState::failed);
    CHECK(watcher.failure_class() == "graph_capture");
    const auto& diag = watcher.diagnosis();
    CHECK(diag.rule == "cuda_capture_not_permitted");
    CHECK(diag.line.find("NCCL WARN Cuda failure 900") != std::string::npos);
    CHECK(any_contains(diag.before, "\"phase\":\"begin\""));
    CHECK(any_contains(diag.after, "tpverify: capture: ncclAllReduce failed"));
    watcher.on_exit(ExitInfo{1, 0}, clock.advance(0.1));
    CHECK(watcher.failure_class() == "graph_capture");
    CHECK(watcher.verdict().settled);
}

TEST_CASE("tpverify failure lines get their class from phase, api and error") {
    CHECK(tpverify_failure_class("capture", "ncclAllReduce", "invalid usage") == "graph_capture");
    CHECK(tpverify_failure_class("init", "ncclCommInitRank", "unhandled system error") == "nccl");
    CHECK(tpverify_failure_class("warmup", "cudaMalloc", "out of memory") == "oom");
    CHECK(tpverify_failure_class("replay", "cudaGraphLaunch", "an illegal memory access was encountered") ==
          "cuda");
    CHECK(tpverify_failure_class("replay", "ncclAllReduce", "timeout after 30 s, communicator aborted") ==
          "hang");
    CHECK(tpverify_failure_class("init", "preset", "unknown model") == "engine");

    FakeClock clock;
    auto watcher = make_watcher(clock);
    auto verdict = feed(watcher, clock,
                        "tpverify: init: ncclCommInitRank failed: unhandled system error (run with "
                        "NCCL_DEBUG=INFO for details)");
    CHECK(verdict.end_now);
    CHECK(watcher.failure_class() == "nccl");
    CHECK(watcher.diagnosis().rule == "tpverify_failure");
    CHECK(watcher.diagnosis().detail.find("ncclCommInitRank") != std::string::npos);
}

TEST_CASE("SGLang capture failure: NCCL lines before, the Python traceback after") {
    FakeClock clock;
    auto watcher = make_watcher(clock);
    int kill_at = -1;
    feed_fixture(watcher, clock, "sglang_capture_failure.log", &kill_at);
    const auto lines = fixture_lines("sglang_capture_failure.log");
    REQUIRE(kill_at >= 0);
    CHECK(lines[static_cast<std::size_t>(kill_at)].find("NCCL WARN Cuda failure 900") != std::string::npos);
    CHECK(watcher.failure_class() == "graph_capture");
    const auto& diag = watcher.diagnosis();
    CHECK(diag.trigger_rule == "cuda_capture_not_permitted");
    CHECK(any_contains(diag.before, "Capture cuda graph begin"));
    CHECK(any_contains(diag.before, "AllReduce: 14336 Bytes -> Algo RING"));
    CHECK(any_contains(diag.after, "Scheduler hit an exception"));
    CHECK(any_contains(diag.after, "DistBackendError"));  // the traceback is kept to its end
    CHECK_FALSE(any_contains(diag.after, "Received sigquit"));
    CHECK(watcher.phase_times().capture_begin.has_value());
    CHECK_FALSE(watcher.phase_times().ready.has_value());
    const auto text = diag.text();
    CHECK(text.find("graph_capture while capturing: node1:41001:41001 [0] transport/shm.cc:597 NCCL WARN "
                    "Cuda failure 900") == 0);
    CHECK(text.find("> node1:41001:41001 [0] transport/shm.cc:597 NCCL WARN") != std::string::npos);
}

TEST_CASE("SGLang with NCCL_ALGO=Tree: the AllGather has no algorithm during capture") {
    FakeClock clock;
    auto watcher = make_watcher(clock);
    feed_fixture(watcher, clock, "sglang_nccl_algo_tree.log");
    CHECK(watcher.failure_class() == "graph_capture");  // an NCCL failure while capturing
    CHECK(watcher.diagnosis().phase == "capturing");
    CHECK(watcher.diagnosis().rule == "nccl_no_algo");
    CHECK(watcher.effective_nccl().summary() == "AllReduce 57344B: TREE/LL ch0..0; env: NCCL_ALGO=Tree");
}

TEST_CASE("a generic fatal line is refined by the specific line that follows it") {
    FakeClock clock;
    auto watcher = make_watcher(clock);
    int kill_at = -1;
    feed_fixture(watcher, clock, "sglang_oom.log", &kill_at);
    CHECK(kill_at == 1);  // the run has failed at once; the settle window only refines the cause
    CHECK(watcher.failure_class() == "oom");
    const auto& diag = watcher.diagnosis();
    CHECK(diag.rule == "oom_cuda");
    CHECK(diag.trigger_rule == "sglang_scheduler_exception");
    CHECK(diag.line.find("CUDA out of memory") != std::string::npos);
    CHECK(diag.detail.find("after sglang_scheduler_exception") != std::string::npos);
}

TEST_CASE("refinement happens only inside the after-context window") {
    FakeClock clock;
    auto late = make_watcher(clock);
    feed(late, clock, "Traceback (most recent call last):");
    CHECK_FALSE(late.verdict().settled);
    feed(late, clock, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", 1.0);
    CHECK(late.failure_class() == "python");
    CHECK(late.diagnosis().after.empty());
    CHECK(late.verdict().settled);

    auto specific = make_watcher(clock);
    feed(specific, clock, "RuntimeError: CUDA error: an illegal memory access was encountered");
    feed(specific, clock, "torch.OutOfMemoryError: CUDA out of memory.");
    CHECK(specific.failure_class() == "cuda");  // a specific class is never replaced
    CHECK(specific.diagnosis().after.size() == 1);
}

TEST_CASE("5 lines are stored after the fatal line outside a traceback and the verdict settles after 0.3 s") {
    FakeClock clock;
    auto watcher = make_watcher(clock);
    feed(watcher, clock, "RuntimeError: CUDA error: an illegal memory access was encountered");
    for (int i = 0; i < 10; ++i) feed(watcher, clock, "line " + std::to_string(i));
    CHECK(watcher.diagnosis().after.size() == 5);
    CHECK(watcher.diagnosis().after.back() == "line 4");
    CHECK_FALSE(watcher.verdict().settled);
    watcher.tick(clock.advance(0.3));
    CHECK(watcher.verdict().settled);
}

TEST_CASE("SGLang success: capture, ready, decode metrics, then a deliberate shutdown") {
    FakeClock clock;
    auto watcher = make_watcher(clock, SuccessRule::any_metric);
    std::vector<WatchState> states;
    for (const auto& line : fixture_lines("sglang_ready_decode.log"))
        states.push_back(feed(watcher, clock, line).state);
    CHECK(states[5] == WatchState::capturing);
    CHECK(states[9] == WatchState::initializing);
    CHECK(states[12] == WatchState::ready);
    CHECK(states[15] == WatchState::ready);
    CHECK(states.back() == WatchState::measuring);
    CHECK(watcher.metrics().at("accept_len") == std::vector<double>{3.20, 3.15});
    CHECK(watcher.metrics().at("gen_tok_s") == std::vector<double>{54.81, 53.90});
    CHECK(watcher.effective_nccl().choices().size() == 3);
    watcher.expect_shutdown(clock.now);
    auto verdict = feed(
        watcher, clock,
        "[2025-06-01 12:11:00] Received sigquit from a child process. It usually means the child failed.");
    CHECK_FALSE(verdict.end_now);
    CHECK(watcher.warnings().size() == 1);
    auto end = watcher.on_exit(ExitInfo{0, SIGTERM}, clock.advance(1));
    CHECK(end.state == WatchState::done);
    CHECK(watcher.failure_class().empty());
}

TEST_CASE("vLLM startup: capture, ready and generation throughput") {
    FakeClock clock;
    auto watcher = make_watcher(clock);
    std::vector<WatchState> states;
    for (const auto& line : fixture_lines("vllm_startup.log"))
        states.push_back(feed(watcher, clock, line).state);
    CHECK(states[6] == WatchState::capturing);
    CHECK(states[7] == WatchState::initializing);
    CHECK(states[11] == WatchState::ready);
    CHECK(states[12] == WatchState::measuring);
    CHECK(watcher.metrics().at("gen_tok_s") == std::vector<double>{52.3});
}

TEST_CASE("benchmark client summary lines become metrics") {
    FakeClock clock;
    auto watcher = make_watcher(clock, SuccessRule::any_metric);
    feed_fixture(watcher, clock, "bench_serving_result.log");
    CHECK(watcher.metrics().at("output_tok_s") == std::vector<double>{54.81});
    CHECK(watcher.metrics().at("accept_length") == std::vector<double>{3.21});
    CHECK(watcher.on_exit(ExitInfo{0, 0}, clock.advance(0.1)).state == WatchState::done);
}

TEST_CASE("each fixture failure gets its class at the right line") {
    struct Case {
        const char* fixture;
        const char* failure_class;
        const char* rule;
        int kill_at;
    };
    for (const auto& c : {Case{"sitecustomize_error.log", "sitecustomize", "sitecustomize_error", 0},
                          Case{"illegal_memory_access.log", "cuda", "cuda_illegal_address", 1},
                          Case{"watchdog_timeout.log", "hang", "nccl_watchdog_timeout", 1}}) {
        INFO(c.fixture);
        FakeClock clock;
        auto watcher = make_watcher(clock);
        int kill_at = -1;
        feed_fixture(watcher, clock, c.fixture, &kill_at);
        CHECK(kill_at == c.kill_at);
        CHECK(watcher.failure_class() == c.failure_class);
        CHECK(watcher.diagnosis().rule == c.rule);
    }
}
